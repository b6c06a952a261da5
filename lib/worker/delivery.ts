/**
 * The delivery loop (docs/design.md#delivery): claims messages from the outbox under a
 * lease, delivers each with `Mailbox.process` on its destination chain (lib/worker/message-delivery.ts),
 * records the outcome (lib/worker/outcomes.ts).
 *
 * Failures are retried with exponential backoff and jitter and become final after maxAttempts.
 * "Not ready" (a CCIP-read gateway saying the attestation is not there yet) is not a failure: it
 * is polled again (5 s backing off to 60 s) without counting toward maxAttempts, until the pending
 * deadline.
 *
 * Stop: no new claims; a message not yet sent is released (queued again at once, its last_error
 * kept); one whose transaction is out is followed to its receipt (bounded by stopGraceMs, after
 * which its lease lapses and the next worker finds it delivered on chain).
 */
import type { Hash, Hex } from 'viem';
import { sleep, systemClock, type Clock } from '../clock.ts';
import { silentLogger, type Logger } from '../log.ts';
import type { ClaimedMessage, MarkDeliveredOptions, MarkFailedOptions } from '../outbox/index.ts';
import { toDeliveryError } from './errors.ts';
import { deliverMessage, type Hold } from './message-delivery.ts';
import { createOutcomeRecorder } from './outcomes.ts';

export { type AttemptState, formatAttemptState } from './outcomes.ts';

/** What the loop needs of the outbox: its consumer API (docs/design.md, Leases). */
export interface DeliveryOutbox {
  claim(
    limit: number,
    leaseMs: number,
    options?: { maxAttempts?: number },
  ): ClaimedMessage[] | Promise<ClaimedMessage[]>;
  extend(id: string, lease: string, leaseMs: number): boolean | Promise<boolean>;
  markDelivered(id: string, opts: MarkDeliveredOptions): boolean | Promise<boolean>;
  markFailed(id: string, opts: MarkFailedOptions): boolean | Promise<boolean>;
}

/** One destination chain as the loop sees it (lib/worker/destination.ts builds the real one). */
export interface Destination {
  name: string;
  domain: number;
  /** The transaction that delivered `id` on this chain, or null while it is not delivered. */
  deliveredBy(id: Hex): Promise<Hash | null>;
  /** The metadata the recipient's ISM wants (throws DeliveryError, CcipReadError). */
  metadata(message: Hex, signal?: AbortSignal): Promise<Hex>;
  /**
   * eth_estimateGas of process(metadata, message): throws on a revert (TransactionError kind
   * revert). What it resolves with (the destination's own business: the real one resolves with
   * the sender's SimulateResult) is handed back to `process` for the same call.
   */
  simulate(metadata: Hex, message: Hex): Promise<unknown>;
  /**
   * Sends process(metadata, message), waits for its confirmations calling onWait meanwhile.
   * `simulated`: what `simulate` of this call resolved with just before (the real destination
   * signs its gas limit instead of estimating again).
   */
  process(
    metadata: Hex,
    message: Hex,
    onWait: () => Promise<void>,
    simulated?: unknown,
  ): Promise<{ hash: Hash; status: 'success' | 'reverted' }>;
}

export type DeliveryResult =
  | { id: string; outcome: 'delivered'; txHash: string; already: boolean; recorded: boolean }
  | { id: string; outcome: 'retry' | 'pending'; error: string; retryAt: number; recorded: boolean }
  | { id: string; outcome: 'failed'; error: string; recorded: boolean }
  | { id: string; outcome: 'released'; recorded: boolean };

/** What the ops server's /metrics reports (lib/worker/ops.ts). */
export interface DeliveryEvents {
  delivered(destination: string, already: boolean, enqueuedToDeliveredSeconds: number): void;
  failed(destination: string, kind: string): void;
  retried(destination: string, kind: string): void;
  /** Age of the oldest message a claim returned (0 when a claim returned nothing). */
  claimed(count: number, oldestAgeSeconds: number): void;
}

export interface DeliveryWorkerOptions {
  outbox: DeliveryOutbox;
  /** By Hyperlane domain. */
  destinations: ReadonlyMap<number, Destination>;
  clock?: Clock;
  /** [0, 1): the jitter of backoff delays. */
  random?: () => number;
  logger?: Logger;
  events?: Partial<DeliveryEvents>;
  /** How long a claim holds a message before another worker may take it (default 60 s). */
  leaseMs?: number;
  /** Messages per claim (default 10). */
  batch?: number;
  /** Messages delivered at once (default 4). */
  concurrency?: number;
  /** Failures (pending polls not counted) before a message is final (default 5). */
  maxAttempts?: number;
  /** Claims whose lease expired (the worker died) before the outbox gives a message up (default 5). */
  maxLeaseExpiries?: number;
  /** First retry delay, doubling per failure up to retryMaxMs (defaults 5 s, 10 min). */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** First poll of a pending proof, doubling up to pendingMaxMs (defaults 5 s, 60 s). */
  pendingBaseMs?: number;
  pendingMaxMs?: number;
  /** How long a proof may stay pending before the message is final (default 48 h). */
  pendingDeadlineMs?: number;
  /** Wait after a claim that found nothing (default 1 s). */
  pollMs?: number;
  /** How long stop() waits for transactions already sent (default 30 s). */
  stopGraceMs?: number;
}

export const WORKER_DEFAULTS = Object.freeze({
  leaseMs: 60_000,
  batch: 10,
  concurrency: 4,
  maxAttempts: 5,
  maxLeaseExpiries: 5,
  retryBaseMs: 5_000,
  retryMaxMs: 600_000,
  pendingBaseMs: 5_000,
  pendingMaxMs: 60_000,
  pendingDeadlineMs: 48 * 3_600_000,
  pollMs: 1_000,
  stopGraceMs: 30_000,
});

/** The loop's settings: WORKER_DEFAULTS with the options given. */
export type WorkerSettings = { readonly [K in keyof typeof WORKER_DEFAULTS]: number };

export interface DeliveryWorker {
  /** Claims and delivers until stop(); resolves once stopped. */
  run(): Promise<void>;
  /** One claim (up to `batch`, bounded by concurrency) and its deliveries; for tests and embedders. */
  runOnce(): Promise<DeliveryResult[]>;
  /** Stops claiming, releases what is not sent, waits for what is (stopGraceMs). Idempotent. */
  stop(): Promise<void>;
  /** Messages held right now. */
  inFlight(): number;
  /** True once a claim answered (the store is reachable); false after a claim failed. */
  storeReachable(): boolean;
}

export function createDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const o = { ...WORKER_DEFAULTS, ...definedOnly(options) };
  const { outbox, destinations } = options;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const logger = options.logger ?? silentLogger;
  const events = options.events ?? {};
  const stopping = new AbortController();
  const held = new Map<string, Hold & { promise: Promise<DeliveryResult> }>();
  let reachable = false;
  let running: Promise<void> | undefined;
  let stopped: Promise<void> | undefined;
  const record = createOutcomeRecorder({
    outbox,
    settings: o,
    clock,
    random,
    logger,
    events,
    storeFailed: () => {
      reachable = false;
    },
  });
  const delivery = { outbox, destinations, clock, logger, leaseMs: o.leaseMs, record };

  async function claim(limit: number): Promise<ClaimedMessage[]> {
    const claimed = await outbox.claim(limit, o.leaseMs, { maxAttempts: o.maxLeaseExpiries });
    reachable = true;
    const now = clock.now();
    const oldest = claimed.reduce((min, m) => Math.min(min, m.enqueuedAt), Infinity);
    events.claimed?.(claimed.length, claimed.length === 0 ? 0 : Math.max(0, (now - oldest) / 1000));
    return claimed;
  }

  function start(m: ClaimedMessage): Promise<DeliveryResult> {
    const release = new AbortController();
    const entry = { promise: undefined as unknown as Promise<DeliveryResult>, release, sent: false };
    if (stopping.signal.aborted) release.abort();
    entry.promise = deliverMessage(delivery, m, entry).finally(() => held.delete(m.id));
    held.set(m.id, entry);
    return entry.promise;
  }

  const stopRequested = new Promise<void>((resolve) =>
    stopping.signal.addEventListener('abort', () => resolve(), { once: true }),
  );

  async function loop(): Promise<void> {
    while (!stopping.signal.aborted) {
      const room = o.concurrency - held.size;
      if (room <= 0) {
        await Promise.race([stopRequested, ...[...held.values()].map((h) => h.promise)]);
        continue;
      }
      let claimed: ClaimedMessage[];
      try {
        claimed = await claim(Math.min(o.batch, room));
      } catch (error) {
        reachable = false;
        logger.warn('claim failed', { error: toDeliveryError(error).message });
        claimed = [];
      }
      for (const m of claimed) void start(m);
      if (claimed.length === 0) await sleep(clock, o.pollMs, stopping.signal).catch(() => {});
    }
  }

  return {
    run() {
      running ??= loop();
      return running;
    },
    async runOnce() {
      const room = Math.max(0, o.concurrency - held.size);
      const claimed = await claim(Math.min(o.batch, room));
      return Promise.all(claimed.map((m) => start(m)));
    },
    stop() {
      stopped ??= (async () => {
        stopping.abort();
        for (const h of held.values()) if (!h.sent) h.release.abort();
        await running;
        const all = Promise.all([...held.values()].map((h) => h.promise));
        let timer: unknown;
        const grace = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, o.stopGraceMs)));
        await Promise.race([all, grace]);
        clock.clearTimeout(timer);
        if (held.size > 0)
          logger.warn('stopped with transactions still unconfirmed; their leases will lapse', { in_flight: held.size });
      })();
      return stopped;
    },
    inFlight: () => held.size,
    storeReachable: () => reachable,
  };
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}
