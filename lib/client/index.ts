/**
 * relayer-api/client (docs/design.md#client): a typed client of the relay API for bridge UIs and
 * scripts. Web APIs only (fetch, AbortSignal, timers), so it runs in browsers as it is; zero
 * dependencies.
 *
 * Retries: an answer whose reason says "try again" (timeout, rate_limited, cache_full,
 * store_unavailable) or no answer at all (network_error) is tried again after its Retry-After
 * (else after a doubling backoff), at most `maxAttempts` tries and `maxTotalMs` in all, waits
 * included: a wait that would end past the budget is not started, the last error is thrown at
 * once with its `retryAfterSeconds`. duplicate_tx and every 4xx other than 408/429 are final.
 * Retrying POST /relay is safe: the server enqueues idempotently, and a retry of a request that
 * did reach it answers duplicate_tx, which relay() resolves by looking the transaction up.
 *
 * Every call takes an AbortSignal; an abort rejects with the signal's reason (the fetch and any
 * wait are cancelled). Time comes from an injectable Clock, so tests drive the waits.
 */
import { sleep, systemClock, type Clock } from '../clock.ts';
import { RelayApiError, type ClientFailureCode, type Reason, InvalidArgumentError } from '../errors/classes.ts';
import type { GasPaymentJson, MessageStatusJson, MessagesOfTxJson } from '../relay/message-status.ts';
import type { FetchLike, MessageSummary, RelayRequest, RelayResponse } from '../types.ts';
import { createWatchers, positive, type WatchMethods } from './watch.ts';

export type { EventSourceConstructor, EventSourceLike, WatchMethods, WatchOptions } from './watch.ts';

export {
  RelayApiError,
  type ClientFailureCode,
  type GasPaymentJson,
  type MessageStatusJson,
  type MessagesOfTxJson,
  type MessageSummary,
  type Reason,
  type RelayRequest,
};

export type { FetchLike };
export * from '../errors/family.ts';

export interface RelayClientOptions {
  /** Where the API is, e.g. "https://relayer.example.org" ("" in a page served by the relayer's host). */
  baseUrl: string;
  /** Defaults to the global fetch. */
  fetch?: FetchLike;
  /** Defaults to the system clock; tests pass a fake one. */
  clock?: Clock;
  /** Tries per call, the first included. Default 5. */
  maxAttempts?: number;
  /** Time budget of one call, requests and waits included, in ms. Default 60 000. */
  maxTotalMs?: number;
  /** First wait when an answer carries no Retry-After (then doubled per try), in ms. Default 1 000. */
  backoffMs?: number;
  /**
   * On duplicate_tx (the transaction was already submitted, by this page or another), relay() looks
   * up the messages accepted from it and returns them with `alreadySubmitted: true`; when there are
   * none yet (the first submission is still being processed, or held no eligible message) it throws
   * the duplicate_tx error. false: always throw it. Default true.
   */
  lookupDuplicates?: boolean;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface RelayResult extends RelayResponse {
  /** true when the relayer had already accepted this transaction (answered from a lookup). */
  alreadySubmitted: boolean;
}

export interface WaitOptions extends CallOptions {
  /** Time between two looks at the message, in ms. Default 3 000. */
  pollIntervalMs?: number;
  /** How long to wait in all, in ms; then deadline_exceeded. Default 30 minutes. */
  timeoutMs?: number;
  /** Called with the message at the first look and whenever its status or attempts change. */
  onUpdate?: (message: MessageStatusJson) => void;
}

export interface RelayClient extends WatchMethods {
  /** POST /relay: submits a transaction; resolves with the messages the relayer accepted. */
  relay(request: RelayRequest, options?: CallOptions): Promise<RelayResult>;
  /** GET /relay/{message_id}: one message's status (throws not_found for an unknown id). */
  message(messageId: string, options?: CallOptions): Promise<MessageStatusJson>;
  /** GET /relay?origin_chain=&tx_hash=: the messages accepted from one transaction (maybe none). */
  messagesOfTx(originChain: string, txHash: string, options?: CallOptions): Promise<MessageStatusJson[]>;
  /**
   * Polls a message until its status is final and resolves with it: `delivered`, or `failed` (the
   * relayer gave up: check `status`). Throws deadline_exceeded after `timeoutMs`.
   */
  waitForDelivery(messageId: string, options?: WaitOptions): Promise<MessageStatusJson>;
}

const RETRYABLE: ReadonlySet<string> = new Set<Reason | ClientFailureCode>([
  'timeout',
  'rate_limited',
  'cache_full',
  'store_unavailable',
  'network_error',
]);
const FINAL_STATUSES: ReadonlySet<string> = new Set(['delivered', 'failed']);

/** Seconds of a Retry-After header in its delta-seconds form (the one this API sends). */
function retryAfter(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  return value !== null && /^\d+$/.test(value.trim()) ? Number(value) : undefined;
}

function isErrorBody(value: unknown): value is { reason: string; message: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { reason?: unknown }).reason === 'string' &&
    typeof (value as { message?: unknown }).message === 'string'
  );
}

export function createRelayClient(options: RelayClientOptions): RelayClient {
  if (typeof options?.baseUrl !== 'string') throw new InvalidArgumentError('baseUrl must be a string');
  const base = options.baseUrl.replace(/\/+$/, '');
  // Called unbound, the global fetch throws "Illegal invocation" in browsers.
  const fetchFn: FetchLike = options.fetch ?? ((input, init) => fetch(input, init));
  const clock = options.clock ?? systemClock;
  const maxAttempts = Math.floor(positive(options.maxAttempts, 5, 'maxAttempts'));
  const maxTotalMs = positive(options.maxTotalMs, 60_000, 'maxTotalMs');
  const backoffMs = positive(options.backoffMs, 1_000, 'backoffMs');
  const lookupDuplicates = options.lookupDuplicates ?? true;

  /** One HTTP exchange, cancelled by the caller's signal or at `deadline`. */
  async function exchange<T>(
    method: string,
    path: string,
    body: string | undefined,
    signal: AbortSignal | undefined,
    deadline: number,
  ): Promise<T> {
    const url = base + path;
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal!.reason);
    if (signal?.aborted) throw signal.reason;
    signal?.addEventListener('abort', onAbort, { once: true });
    let pastDeadline = false;
    const timer = clock.setTimeout(
      () => {
        pastDeadline = true;
        controller.abort();
      },
      Math.max(0, deadline - clock.now()),
    );
    const noAnswer = (error: unknown): unknown => {
      if (signal?.aborted) return signal.reason;
      if (pastDeadline)
        return new RelayApiError('deadline_exceeded', `${method} ${path}: no answer within the call's time budget`, {
          status: 0,
        });
      return new RelayApiError('network_error', `${method} ${path}: no answer from ${base || 'the relayer'}`, {
        status: 0,
        cause: error,
      });
    };
    try {
      let response: Response;
      let text: string;
      try {
        response = await fetchFn(url, {
          method,
          headers:
            body === undefined
              ? { accept: 'application/json' }
              : { accept: 'application/json', 'content-type': 'application/json' },
          body,
          signal: controller.signal,
        });
        text = await response.text();
      } catch (error) {
        throw noAnswer(error);
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      if (response.ok && json !== undefined) return json as T;
      const answer = {
        status: response.status,
        retryAfterSeconds: retryAfter(response),
        requestId: response.headers.get('x-request-id') ?? undefined,
      };
      if (!response.ok && isErrorBody(json)) throw new RelayApiError(json.reason as Reason, json.message, answer);
      throw new RelayApiError(
        'bad_response',
        `${method} ${path}: HTTP ${response.status} without the API's JSON body`,
        answer,
      );
    } finally {
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** An exchange with the retry policy; `until` caps the call's own budget (waitForDelivery's). */
  async function call<T>(
    method: string,
    path: string,
    body: string | undefined,
    signal: AbortSignal | undefined,
    until = Infinity,
  ): Promise<T> {
    const deadline = Math.min(clock.now() + maxTotalMs, until);
    for (let attempt = 1; ; attempt++) {
      try {
        return await exchange<T>(method, path, body, signal, deadline);
      } catch (error) {
        if (!(error instanceof RelayApiError) || !RETRYABLE.has(error.code) || attempt >= maxAttempts) throw error;
        const wait =
          error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1_000 : backoffMs * 2 ** (attempt - 1);
        if (clock.now() + wait >= deadline) throw error;
        await sleep(clock, wait, signal);
      }
    }
  }

  function message(messageId: string, options: CallOptions = {}, until?: number): Promise<MessageStatusJson> {
    return call<MessageStatusJson>('GET', `/relay/${encodeURIComponent(messageId)}`, undefined, options.signal, until);
  }

  async function messagesOfTx(
    originChain: string,
    txHash: string,
    options: CallOptions = {},
  ): Promise<MessageStatusJson[]> {
    const query = new URLSearchParams({ origin_chain: originChain, tx_hash: txHash });
    return (await call<MessagesOfTxJson>('GET', `/relay?${query}`, undefined, options.signal)).messages;
  }

  return {
    ...createWatchers({ base, clock, message, messagesOfTx }),
    async relay(request, options = {}) {
      const body = JSON.stringify({ origin_chain: request.origin_chain, tx_hash: request.tx_hash });
      try {
        const { messages } = await call<RelayResponse>('POST', '/relay', body, options.signal);
        return { messages, alreadySubmitted: false };
      } catch (error) {
        if (!lookupDuplicates || !(error instanceof RelayApiError) || error.code !== 'duplicate_tx') throw error;
        let found: MessageStatusJson[];
        try {
          found = await messagesOfTx(request.origin_chain, request.tx_hash, options);
        } catch {
          throw error; // the lookup is a convenience: its failure does not replace the answer
        }
        if (found.length === 0) throw error;
        return {
          messages: found.map((m) => ({
            message_id: m.message_id,
            origin: m.origin,
            destination: m.destination,
            nonce: m.nonce,
          })),
          alreadySubmitted: true,
        };
      }
    },

    message,
    messagesOfTx,

    async waitForDelivery(messageId, options = {}) {
      const pollIntervalMs = positive(options.pollIntervalMs, 3_000, 'pollIntervalMs');
      const timeoutMs = positive(options.timeoutMs, 30 * 60_000, 'timeoutMs');
      const deadline = clock.now() + timeoutMs;
      let seen = '';
      for (;;) {
        const current = await message(messageId, options, deadline);
        const state = `${current.status}/${current.attempts}`;
        if (state !== seen) {
          seen = state;
          options.onUpdate?.(current);
        }
        if (FINAL_STATUSES.has(current.status)) return current;
        if (clock.now() + pollIntervalMs >= deadline) {
          throw new RelayApiError(
            'deadline_exceeded',
            `message ${messageId} is still ${current.status} after ${timeoutMs} ms`,
            { status: 0 },
          );
        }
        await sleep(clock, pollIntervalMs, options.signal);
      }
    },
  };
}
