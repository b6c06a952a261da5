/**
 * The delivery loop (docs/design.md#delivery): claims messages from the outbox under a
 * lease, delivers each with `Mailbox.process` on its destination chain, records the outcome.
 *
 * Per message: already delivered on chain (`delivered(id)`) → recorded with the transaction that
 * delivered it (its `ProcessId` log); else the ISM's metadata; `process` simulated first (a
 * message that would revert costs no gas; a revert `already delivered` is a delivery); then
 * sent, the lease extended while it waits for its confirmations, and recorded delivered.
 *
 * Failures are retried with exponential backoff and jitter and become final after maxAttempts.
 * "Not ready" (a CCIP-read gateway saying the attestation is not there yet) is not a failure: it
 * is polled again (5 s backing off to 60 s) without counting toward maxAttempts, until the pending
 * deadline. The outbox counts claims in `attempts`, pending polls included, so the worker keeps its
 * own count in `last_error`, which every worker reads back on the next claim: the state survives a
 * restart and moves between workers with the message. Its form is
 * `<kind>: <detail> (failures F/M[; pending since <ISO time>, poll P])`.
 *
 * Stop: no new claims; a message not yet sent is released (queued again at once, its last_error
 * kept); one whose transaction is out is followed to its receipt (bounded by stopGraceMs, after
 * which its lease lapses and the next worker finds it delivered on chain).
 */
import type { Hash, Hex } from 'viem';
import { sleep, systemClock, type Clock } from '../clock.ts';
import { bytesToHex } from '../hex.ts';
import { silentLogger, type Logger } from '../log.ts';
import type { ClaimedMessage, MarkDeliveredOptions, MarkFailedOptions } from '../outbox.ts';
import { DeliveryError, toDeliveryError } from './errors.ts';

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
  /** eth_estimateGas of process(metadata, message): throws on a revert (TransactionError kind revert). */
  simulate(metadata: Hex, message: Hex): Promise<void>;
  /** Sends process(metadata, message), waits for its confirmations calling onWait meanwhile. */
  process(
    metadata: Hex,
    message: Hex,
    onWait: () => Promise<void>,
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

/** The worker's own count of a message's attempts, read back from its last_error. */
export interface AttemptState {
  failures: number;
  pendingSince: number | null;
  polls: number;
}

const STATE = /\(failures (\d+)\/\d+(?:; pending since (\d{4}-\d\d-\d\dT[\d:.]+Z), poll (\d+))?(?:, final)?\)$/;

export function readAttemptState(lastError: string | null): AttemptState {
  const match = lastError?.match(STATE);
  if (!match) return { failures: 0, pendingSince: null, polls: 0 };
  const since = match[2] === undefined ? NaN : Date.parse(match[2]);
  return {
    failures: Number(match[1]),
    pendingSince: Number.isFinite(since) ? since : null,
    polls: match[3] === undefined ? 0 : Number(match[3]),
  };
}

export function formatAttemptState(
  kind: string,
  detail: string,
  state: AttemptState,
  maxAttempts: number,
  final = false,
): string {
  const pending =
    state.pendingSince === null
      ? ''
      : `; pending since ${new Date(state.pendingSince).toISOString()}, poll ${state.polls}`;
  return `${kind}: ${detail} (failures ${state.failures}/${maxAttempts}${pending}${final ? ', final' : ''})`;
}

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
  const held = new Map<string, { promise: Promise<DeliveryResult>; release: AbortController; sent: boolean }>();
  let reachable = false;
  let running: Promise<void> | undefined;
  let stopped: Promise<void> | undefined;

  /** Exponential with "equal jitter": half the delay fixed, half random. */
  function backoff(base: number, max: number, n: number): number {
    const delay = Math.min(max, base * 2 ** Math.max(0, n - 1));
    return Math.round(delay / 2 + random() * (delay / 2));
  }

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
    entry.promise = handle(m, entry).finally(() => held.delete(m.id));
    held.set(m.id, entry);
    return entry.promise;
  }

  async function handle(
    m: ClaimedMessage,
    entry: { release: AbortController; sent: boolean },
  ): Promise<DeliveryResult> {
    const id = m.id as Hex;
    const message = bytesToHex(m.raw) as Hex;
    const destination = destinations.get(m.destination);
    const name = destination?.name ?? String(m.destination);
    const log = { message_id: m.id, destination: name, attempt: m.attempts };
    logger.debug('claimed', log);

    // The lease is renewed a third of the way through, while anything is awaited (metadata,
    // simulation, confirmations). A renewal refused means another worker holds it now.
    let lastExtended = clock.now();
    let lost = false;
    const keepAlive = async () => {
      if (lost || clock.now() - lastExtended < o.leaseMs / 3) return;
      lastExtended = clock.now();
      try {
        if (!(await outbox.extend(m.id, m.lease, o.leaseMs))) {
          lost = true;
          entry.release.abort();
          logger.warn('lease lost', log);
        }
      } catch (error) {
        logger.warn('lease extension failed', { ...log, error: toDeliveryError(error).message });
      }
    };
    let timer: unknown;
    const tick = () => {
      timer = clock.setTimeout(() => void keepAlive().finally(() => !done && tick()), Math.ceil(o.leaseMs / 3));
    };
    let done = false;
    tick();
    const checkReleased = () => {
      if (entry.release.signal.aborted)
        throw new DeliveryError('stopped', lost ? 'lease lost' : 'the worker is stopping');
    };

    try {
      if (!destination)
        throw new DeliveryError('config', `no chain configured for destination domain ${m.destination}`);
      const prior = await destination.deliveredBy(id);
      if (prior) return await recordDelivered(m, name, prior, true, log);
      checkReleased();
      const metadata = await destination.metadata(message, entry.release.signal);
      checkReleased();
      try {
        await destination.simulate(metadata, message);
      } catch (error) {
        const failure = toDeliveryError(error);
        if (failure.kind === 'revert' && /already delivered/i.test(failure.message)) {
          const by = await destination.deliveredBy(id);
          if (by) return await recordDelivered(m, name, by, true, log);
        }
        throw failure;
      }
      checkReleased();
      entry.sent = true;
      const sent = await destination.process(metadata, message, keepAlive);
      if (sent.status === 'reverted') {
        const by = await destination.deliveredBy(id);
        if (by) return await recordDelivered(m, name, by, true, log);
        throw new DeliveryError('revert', `process reverted in ${sent.hash}`);
      }
      return await recordDelivered(m, name, sent.hash, false, log);
    } catch (error) {
      return await recordFailure(m, name, toDeliveryError(error), log);
    } finally {
      done = true;
      clock.clearTimeout(timer);
    }
  }

  async function recordDelivered(
    m: ClaimedMessage,
    name: string,
    txHash: string,
    already: boolean,
    log: Record<string, unknown>,
  ): Promise<DeliveryResult> {
    // false: the lease was lost and the new holder records it (it finds the message delivered).
    const recorded = await outbox.markDelivered(m.id, { lease: m.lease, destinationTxHash: txHash });
    const seconds = Math.max(0, (clock.now() - m.enqueuedAt) / 1000);
    if (recorded) events.delivered?.(name, already, seconds);
    logger.info(already ? 'already delivered' : 'delivered', {
      ...log,
      tx_hash: txHash,
      recorded,
      seconds: Math.round(seconds * 1000) / 1000,
    });
    return { id: m.id, outcome: 'delivered', txHash, already, recorded };
  }

  async function recordFailure(
    m: ClaimedMessage,
    name: string,
    failure: DeliveryError,
    log: Record<string, unknown>,
  ): Promise<DeliveryResult> {
    const now = clock.now();
    const state = readAttemptState(m.lastError);
    if (failure.kind === 'stopped') {
      // Released: queued again at once with its last_error as it was (the count is kept).
      const recorded = await safely(() =>
        outbox.markFailed(m.id, {
          lease: m.lease,
          error: m.lastError ?? 'released: a worker stopped before delivering it',
          retryAt: now,
        }),
      );
      logger.info('released', { ...log, reason: failure.message, recorded });
      return { id: m.id, outcome: 'released', recorded };
    }
    if (failure.kind === 'pending') {
      const since = state.pendingSince ?? now;
      const next = { ...state, pendingSince: since, polls: state.polls + 1 };
      if (now - since >= o.pendingDeadlineMs) {
        const error = formatAttemptState(
          'pending',
          `deadline passed, proof still not ready: ${failure.message}`,
          next,
          o.maxAttempts,
          true,
        );
        return final(m, name, 'pending', error, log);
      }
      const retryAt = now + backoff(o.pendingBaseMs, o.pendingMaxMs, next.polls);
      const error = formatAttemptState('pending', failure.message, next, o.maxAttempts);
      const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, retryAt }));
      events.retried?.(name, 'pending');
      logger.info('pending', { ...log, retry_at: new Date(retryAt).toISOString(), error, recorded });
      return { id: m.id, outcome: 'pending', error, retryAt, recorded };
    }
    const next = { ...state, failures: state.failures + 1 };
    if (failure.final) return final(m, name, failure.kind, failure.message, log);
    if (next.failures >= o.maxAttempts)
      return final(
        m,
        name,
        failure.kind,
        formatAttemptState(failure.kind, failure.message, next, o.maxAttempts, true),
        log,
      );
    const retryAt = now + backoff(o.retryBaseMs, o.retryMaxMs, next.failures);
    const error = formatAttemptState(failure.kind, failure.message, next, o.maxAttempts);
    const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, retryAt }));
    events.retried?.(name, failure.kind);
    logger.warn('retry', { ...log, retry_at: new Date(retryAt).toISOString(), error, recorded });
    return { id: m.id, outcome: 'retry', error, retryAt, recorded };
  }

  async function final(
    m: ClaimedMessage,
    name: string,
    kind: string,
    error: string,
    log: Record<string, unknown>,
  ): Promise<DeliveryResult> {
    const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, final: true }));
    events.failed?.(name, kind);
    logger.error('failed', { ...log, error, recorded });
    return { id: m.id, outcome: 'failed', error, recorded };
  }

  /** A store call whose failure leaves the lease to lapse (the next claim retries the message). */
  async function safely(call: () => boolean | Promise<boolean>): Promise<boolean> {
    try {
      return await call();
    } catch (error) {
      reachable = false;
      logger.warn('recording the outcome failed; the lease will lapse', { error: toDeliveryError(error).message });
      return false;
    }
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
