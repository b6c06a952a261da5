/**
 * The relay pipeline of POST /relay: request → accepted messages, or a RelayError. The order of
 * checks is docs/design.md#check-order: rate limit → validation → dedup reservation → receipt →
 * extraction → limits and eligibility → policy → enqueue. The reservation is committed only when
 * the request succeeds and released on every failure (including an exception from the queue or
 * the fetcher) before the error propagates, so an immediate retry is never `duplicate_tx`.
 *
 * Every store (rate limiter, dedup, queue) may answer with a promise and is awaited; a store that
 * fails makes the request `store_unavailable` (lib/store/bundle.ts), with the reservation released.
 */
import { extractMessages } from '../codec/cctp.ts';
import { systemClock, type Clock } from '../clock.ts';
import { createMemoryDedupStore, type DedupStore } from './dedup.ts';
import { gasPaymentsIn, type GasPayment } from '../gas/payment.ts';
import { DecodeError, RelayError, toRelayError } from '../errors/classes.ts';
import { callStore, isPromiseLike, toStoreError, type RelayAdmission } from '../store/bundle.ts';
import { createPolicy } from './policy.ts';
import { createTokenBucket, rateLimitedError, type RateLimiter, type TakeResult } from './rate-limit.ts';
import { createReceiptFetcher, type Receipt, type ReceiptFetchEvent, type ReceiptSource } from '../rpc/receipt.ts';
import type { RpcFetch } from '../rpc/client.ts';
import type { OutboxMessage, RelayQueue } from '../outbox/index.ts';
import type { HyperlaneMessage } from '../codec/message.ts';
import type { ChainConfig, RelayResponse, RelayerConfig } from '../types.ts';
import { parseJsonBody, validateRelayRequest } from './validate.ts';

export interface RelayPipelineOptions {
  config: RelayerConfig;
  /** Where accepted messages go (the SQLite outbox, or createMemoryOutbox()). */
  queue: RelayQueue;
  clock?: Clock;
  /** Used by the default receipt fetcher; defaults to the global fetch. */
  fetch?: RpcFetch;
  /** Replaces the JSON-RPC receipt fetcher altogether. */
  fetchReceipt?: ReceiptSource;
  /** Replaces the per-process dedup cache (e.g. with a shared store, docs/replicas.md#how-replicas-agree). */
  dedup?: DedupStore;
  /** Replaces the per-process token bucket. */
  rateLimiter?: RateLimiter;
  /** Observes every JSON-RPC attempt (metrics). */
  onReceiptAttempt?: (event: ReceiptFetchEvent) => void;
  /**
   * The store's two-step form of the token, reservation, enqueue and commit (lib/store/bundle.ts). It
   * must act on `rateLimiter`, `dedup` and `queue`; the answers are the same either way.
   */
  admission?: RelayAdmission;
}

export interface RelayCallOptions {
  signal?: AbortSignal;
  /**
   * Called once the request is valid, with the chain name and lower-case tx hash (for logs: a
   * request whose client leaves early is still logged with them).
   */
  onValid?: (request: { originChain: string; txHash: string }) => void;
}

export interface RelayPipeline {
  /** Runs the pipeline on an already parsed body. */
  relay(body: unknown, options?: RelayCallOptions): Promise<RelayResponse>;
  /** Runs the pipeline on the raw body text: the rate limit is taken before the JSON is parsed. */
  relayText(text: string, options?: RelayCallOptions): Promise<RelayResponse>;
  readonly dedup: DedupStore;
  readonly rateLimiter: RateLimiter;
}

export function createRelayPipeline(options: RelayPipelineOptions): RelayPipeline {
  const { config, queue } = options;
  const clock = options.clock ?? systemClock;
  const chains = new Map(Object.entries(config.chains));
  const api = config.relayApi;
  const dedup =
    options.dedup ??
    createMemoryDedupStore({ clock, windowMs: api.dedupWindowSeconds * 1000, capacity: api.dedupCapacity });
  const rateLimiter = options.rateLimiter ?? createTokenBucket({ clock, ...api.rateLimit });
  const fetchReceipt =
    options.fetchReceipt ??
    createReceiptFetcher({
      fetch: options.fetch,
      clock,
      timeoutMs: api.receiptTimeoutSeconds * 1000,
      onAttempt: options.onReceiptAttempt,
    });
  const checkPolicy = createPolicy(config);
  const admission = options.admission;

  function checkToken(taken: TakeResult): void {
    if (!taken.ok) throw rateLimitedError(taken.retryAfterSeconds);
  }

  /** Takes a token; the per-process bucket answers synchronously and costs no extra tick. */
  function takeToken(): void | Promise<void> {
    let taken: TakeResult | Promise<TakeResult>;
    try {
      taken = rateLimiter.take();
    } catch (error) {
      throw toStoreError(error);
    }
    if (!isPromiseLike(taken)) return checkToken(taken);
    return taken.then(checkToken, (error: unknown) => {
      throw toStoreError(error);
    });
  }

  /** `body` is read after the token is taken: relayText parses no JSON for a refused request. */
  async function run(body: () => unknown, { signal, onValid }: RelayCallOptions = {}): Promise<RelayResponse> {
    const taking = takeToken();
    if (taking) await taking;
    const { chain, txHash } = validateRelayRequest(body(), chains);
    onValid?.({ originChain: chain.name, txHash });
    const reservation = await callStore(() => dedup.reserve(`${chain.name}\n${txHash}`));
    return acceptReserved(chain, txHash, signal, {
      async complete(batch) {
        if (batch.length > 0) await callStore(() => queue.enqueue(batch));
        await callStore(() => reservation.commit());
      },
      release: () => reservation.release(),
    });
  }

  /**
   * The same steps with the store's admission (lib/store/bundle.ts): the token and the reservation in one
   * call, the rows and the commit in another. The body is validated first, so that a valid
   * request takes its token with its reservation; an invalid one still takes a token alone before
   * its 400 (a client over the limit is told 429 either way, as in run()).
   */
  async function runAdmitted(
    admission: RelayAdmission,
    body: () => unknown,
    { signal, onValid }: RelayCallOptions = {},
  ): Promise<RelayResponse> {
    let request: ReturnType<typeof validateRelayRequest>;
    try {
      request = validateRelayRequest(body(), chains);
    } catch (invalid) {
      const taking = takeToken();
      if (taking) await taking;
      throw invalid;
    }
    const { chain, txHash } = request;
    onValid?.({ originChain: chain.name, txHash });
    const admitted = await callStore(() => admission.admit(`${chain.name}\n${txHash}`));
    return acceptReserved(chain, txHash, signal, {
      complete: (batch) => callStore(() => admitted.complete(batch)),
      release: () => admitted.release(),
    });
  }

  /**
   * Accepts a reserved request: `complete` stores its rows and commits the reservation; on any
   * failure the reservation is released and the request's own error is the answer.
   */
  async function acceptReserved(
    chain: ChainConfig,
    txHash: string,
    signal: AbortSignal | undefined,
    reserved: { complete(batch: OutboxMessage[]): Promise<void>; release(): unknown },
  ): Promise<RelayResponse> {
    try {
      const { messages, batch } = await accept(chain, txHash, signal);
      await reserved.complete(batch);
      return { messages };
    } catch (error) {
      try {
        await reserved.release();
      } catch {
        // The reservation expires one window after it was taken; the request's own error is the answer.
      }
      throw toRelayError(error);
    }
  }

  /** Receipt → messages → policy: what a reserved request accepts, and its outbox rows. */
  async function accept(chain: ChainConfig, txHash: string, signal: AbortSignal | undefined) {
    const receipt = await fetchReceipt(chain, txHash, signal);
    const messages = extract(receipt, chain);
    for (const message of messages) checkPolicy(message);
    const payments = gasPayments(receipt, chain, txHash, messages);
    return {
      messages: messages.map((m) => ({
        message_id: m.id,
        origin: m.origin,
        destination: m.destination,
        nonce: m.nonce,
      })),
      batch: messages.map((m) => toOutbox(m, chain, txHash, clock, payments)),
    };
  }

  /**
   * The receipt's GasPayment logs of the chain's InterchainGasPaymaster that pay for the accepted
   * messages (docs/gas.md#gas-payment-enforcement), stored with them.
   */
  function gasPayments(receipt: Receipt, chain: ChainConfig, txHash: string, messages: HyperlaneMessage[]) {
    if (chain.interchainGasPaymaster === undefined || messages.length === 0) return [];
    try {
      return gasPaymentsIn(receipt.logs, txHash, chain.interchainGasPaymaster, messages);
    } catch (error) {
      // A real paymaster cannot emit a malformed event either: the RPC is lying or broken.
      if (error instanceof DecodeError) {
        throw new RelayError(
          'internal_error',
          'the origin chain RPC returned a receipt with a malformed gas payment log',
          {
            cause: error,
          },
        );
      }
      throw error;
    }
  }

  function extract(receipt: Receipt, chain: ChainConfig): HyperlaneMessage[] {
    try {
      return extractMessages(receipt, chain, api.maxMessagesPerTx);
    } catch (error) {
      // A real Mailbox or MessageTransmitter cannot emit a malformed event: the RPC is lying or broken.
      if (error instanceof DecodeError) {
        throw new RelayError('internal_error', 'the origin chain RPC returned a receipt with a malformed message log', {
          cause: error,
        });
      }
      throw error;
    }
  }

  return {
    dedup,
    rateLimiter,
    relay: (body, options) => (admission ? runAdmitted(admission, () => body, options) : run(() => body, options)),
    relayText: (text, options) =>
      admission ? runAdmitted(admission, () => parseJsonBody(text), options) : run(() => parseJsonBody(text), options),
  };
}

function toOutbox(
  message: HyperlaneMessage,
  chain: ChainConfig,
  txHash: string,
  clock: Clock,
  payments: readonly GasPayment[],
): OutboxMessage {
  const row: OutboxMessage = {
    id: message.id,
    originChain: chain.name,
    txHash,
    origin: message.origin,
    destination: message.destination,
    nonce: message.nonce,
    raw: message.raw,
    enqueuedAt: Math.floor(clock.now()),
  };
  const own = payments.filter((p) => p.messageId === message.id);
  if (own.length > 0) row.gasPayments = own;
  return row;
}
