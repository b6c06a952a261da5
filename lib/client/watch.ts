/**
 * relayer-api/client's watch() and watchTx() (docs/api.md#status-events): a message's status, or a
 * transaction's messages, as they change, as an async iterator that ends after a final status.
 * Over the browser's EventSource when there is one (the server pushes each change; EventSource
 * reconnects by itself and resumes with Last-Event-ID); by polling the status lookups where there
 * is none, or when the server refuses the stream (too many streams, a proxy that does not pass
 * event streams): the same values either way, each state once. Web APIs only.
 *
 * The server ends every stream after its lifetime (server.streamMaxSeconds): EventSource
 * reconnects with Last-Event-ID and the iterator goes on, each state still once. A transaction
 * stream that found no message within server.txStreamWaitSeconds ends with a `timeout` event:
 * watchTx() then throws that RelayApiError (code `timeout`) instead of reconnecting.
 */
import { sleep, type Clock } from '../clock.ts';
import { OutOfRangeError, RelayApiError } from '../errors/classes.ts';
import type { MessageStatusJson } from '../relay/message-status.ts';

/** What watch() needs of an EventSource (the browser's, or a polyfill's). */
export interface EventSourceLike {
  readonly readyState: number;
  close(): void;
  addEventListener(type: string, listener: (event: { data?: unknown }) => void): void;
}

export type EventSourceConstructor = new (url: string) => EventSourceLike;

export interface WatchOptions {
  signal?: AbortSignal;
  /** Time between two looks when polling, in ms. Default 3 000. */
  pollIntervalMs?: number;
  /** The EventSource to use: default the global one (none: polling); null always polls. */
  EventSource?: EventSourceConstructor | null;
}

export interface WatchMethods {
  /**
   * GET /relay/{message_id}/events: the message's status now (what message() answers, with
   * `gas_payment`), then at each change of its status, attempts, last_error, destination_tx_hash
   * or gas_payment (a top-up, the required gas, gas spent); ends after `delivered` or `failed`. Throws the
   * API's error (not_found for an unknown id) or the signal's reason.
   */
  watch(messageId: string, options?: WatchOptions): AsyncIterableIterator<MessageStatusJson>;
  /**
   * GET /relay/events?origin_chain=&tx_hash=: the transaction's messages now (an empty list until a
   * POST /relay accepts it), then at each change of one of them; ends once all are final. Over
   * EventSource, throws RelayApiError `timeout` when no message was accepted within the server's
   * wait (server.txStreamWaitSeconds); polling waits until the signal aborts.
   */
  watchTx(originChain: string, txHash: string, options?: WatchOptions): AsyncIterableIterator<MessageStatusJson[]>;
}

const FINAL: ReadonlySet<string> = new Set(['delivered', 'failed']);
const CLOSED = 2; // EventSource.CLOSED: the server refused the stream; EventSource will not retry

export function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!(value > 0) || !Number.isFinite(value)) throw new OutOfRangeError(`${name} must be a positive number`);
  return value;
}

export function createWatchers(deps: {
  base: string;
  clock: Clock;
  message(id: string, options: { signal?: AbortSignal }): Promise<MessageStatusJson>;
  messagesOfTx(chain: string, hash: string, options: { signal?: AbortSignal }): Promise<MessageStatusJson[]>;
}): WatchMethods {
  const { base, clock } = deps;

  function follow<T>(
    path: string,
    event: string,
    unwrap: (data: unknown) => T,
    read: (signal: AbortSignal) => Promise<T>,
    done: (value: T) => boolean,
    options: WatchOptions = {},
  ): AsyncIterableIterator<T> {
    const interval = positive(options.pollIntervalMs, 3_000, 'pollIntervalMs');
    const stop = new AbortController();
    const queue: T[] = [];
    let finished = false;
    let failure: unknown;
    let wake: (() => void) | undefined;
    let source: EventSourceLike | undefined;
    let last = '';

    const settle = (error?: unknown) => {
      if (finished) return;
      finished = true;
      failure = error;
      source?.close();
      stop.abort();
      wake?.();
    };
    // Each state once: a value equal to the last one (a poll that found nothing new, an event sent
    // again after a reconnection) is skipped.
    const offer = (value: T) => {
      const key = JSON.stringify(value);
      if (finished || key === last) return;
      last = key;
      queue.push(value);
      wake?.();
      if (done(value)) settle();
    };

    async function poll(): Promise<void> {
      try {
        while (!finished) {
          offer(await read(stop.signal));
          if (!finished) await sleep(clock, interval, stop.signal);
        }
      } catch (error) {
        if (!stop.signal.aborted) settle(error);
      }
    }

    const EventSourceClass =
      options.EventSource === undefined
        ? (globalThis as { EventSource?: EventSourceConstructor }).EventSource
        : options.EventSource;
    if (options.signal?.aborted) settle(options.signal.reason);
    else if (EventSourceClass) {
      const opened = new EventSourceClass(base + path);
      source = opened;
      opened.addEventListener(event, (e) => {
        try {
          offer(unwrap(JSON.parse(String(e.data))));
        } catch (error) {
          settle(error);
        }
      });
      // The server gave up waiting (a transaction stream with no message): an error, not a reconnection.
      opened.addEventListener('timeout', (e) => {
        let body: { reason?: unknown; message?: unknown } = {};
        try {
          body = JSON.parse(String(e.data));
        } catch {
          // Not JSON: the fixed message below.
        }
        const message = typeof body.message === 'string' ? body.message : 'the server stopped waiting';
        settle(new RelayApiError('timeout', message, { status: 408 }));
      });
      opened.addEventListener('error', () => {
        // CONNECTING: EventSource reconnects by itself. CLOSED: refused (404, 429, 503…): poll,
        // whose first look throws the API's own error when there is one (an unknown message).
        if (opened.readyState !== CLOSED || finished) return;
        source = undefined;
        void poll();
      });
    } else void poll();
    options.signal?.addEventListener('abort', () => settle(options.signal!.reason), { once: true });

    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next() {
        while (queue.length === 0 && !finished) await new Promise<void>((resolve) => (wake = resolve));
        if (queue.length > 0) return { value: queue.shift() as T, done: false };
        if (failure !== undefined) throw failure;
        return { value: undefined, done: true };
      },
      async return() {
        settle();
        queue.length = 0;
        return { value: undefined, done: true };
      },
    };
  }

  return {
    watch(messageId, options) {
      return follow(
        `/relay/${encodeURIComponent(messageId)}/events`,
        'status',
        (data) => data as MessageStatusJson,
        (signal) => deps.message(messageId, { signal }),
        (m) => FINAL.has(m.status),
        options,
      );
    },
    watchTx(originChain, txHash, options) {
      const query = new URLSearchParams({ origin_chain: originChain, tx_hash: txHash });
      return follow(
        `/relay/events?${query}`,
        'messages',
        (data) => (data as { messages: MessageStatusJson[] }).messages,
        (signal) => deps.messagesOfTx(originChain, txHash, { signal }),
        (list) => list.length > 0 && list.every((m) => FINAL.has(m.status)),
        options,
      );
    },
  };
}
