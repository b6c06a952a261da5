/**
 * The delivery loop (docs/delivery.md#the-delivery-loop): claims messages from the outbox under a
 * lease, runs one attempt per message (lib/worker/loop/attempt.ts), which returns its outcome as
 * a value, and records that outcome once (lib/worker/loop/record.ts).
 *
 * The loop holds up to `concurrency` messages at once; each destination's transaction sender
 * gives concurrent sends to one chain consecutive nonces of one book (lib/worker/tx/nonces.ts), so
 * several sends to a chain are in flight together.
 *
 * Stop: no new claims; a message not yet sent is released (queued again at once, unchanged); one
 * whose transaction is out is followed to its receipt, for stopGraceSeconds at most. Then the worker
 * has ended: every follow still running ends at its next look (its wait hook throws: lease.ts),
 * the message is released and the next holder finds the transaction in the journal; stop()
 * resolves once they have (or after ENDING_MS more).
 */
import type { ChangeFeed } from '../../outbox/change-feed.ts';
import { systemClock, type Clock } from '../../clock.ts';
import { silentLogger, type Logger } from '../../log.ts';
import type { ClaimedMessage } from '../../outbox/index.ts';
import { describe } from '../errors.ts';
import {
  loopConfig,
  WORKER_DEFAULTS,
  workerSettings,
  type DeliveryEvents,
  type DeliveryLoopConfig,
  type DeliveryOutbox,
  type DeliveryPolicy,
  type DeliveryResult,
  type Destination,
} from '../types.ts';
import { attempt } from './attempt.ts';
import { holdLease, type Hold } from './lease.ts';
import { createRecorder } from './record.ts';

/**
 * The loop's settings are the config's `worker` keys, with their names and units
 * (docs/worker-configuration.md#the-worker-section): `createDeliveryWorker({ ...config.worker, outbox,
 * destinations })`. Each is optional, its default the config's (WORKER_DEFAULTS).
 */
export interface DeliveryWorkerOptions extends Partial<DeliveryLoopConfig> {
  outbox: DeliveryOutbox;
  /** By Hyperlane domain. */
  destinations: ReadonlyMap<number, Destination>;
  clock?: Clock;
  /** [0, 1): the jitter of backoff delays. */
  random?: () => number;
  logger?: Logger;
  events?: Partial<DeliveryEvents>;
  /** The outbox's change feed (default `outbox.changes`, which every engine has); null: poll only. */
  changes?: ChangeFeed | null;
  /** Gas payment enforcement and the gas limit (lib/worker/gas/gate.ts); default none, the simulation's gas. */
  policy?: DeliveryPolicy;
}

export interface DeliveryWorker {
  /** Claims and delivers until stop(); resolves once stopped. */
  run(): Promise<void>;
  /** One claim (up to `batch`, bounded by concurrency) and its deliveries; for tests and embedders. */
  runOnce(): Promise<DeliveryResult[]>;
  /** Stops claiming, releases what is not sent, waits for what is (stopGraceSeconds). Idempotent. */
  stop(): Promise<void>;
  /** Messages held right now. */
  inFlight(): number;
  /** True once a claim answered (the store is reachable); false after a claim failed. */
  storeReachable(): boolean;
}

export function createDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const o = workerSettings({ ...WORKER_DEFAULTS, ...loopConfig(options) });
  const { outbox, destinations } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const events = options.events ?? {};
  const stopping = new AbortController();
  /** Aborted once stop()'s grace is over: the follows of sent transactions end too. */
  const ended = new AbortController();
  const held = new Map<string, { hold: Hold; promise: Promise<DeliveryResult> }>();
  let reachable = false;
  let running: Promise<void> | undefined;
  let stopped: Promise<void> | undefined;
  const record = createRecorder({
    outbox,
    settings: o,
    clock,
    random: options.random ?? Math.random,
    logger,
    events,
    storeFailed: () => {
      reachable = false;
    },
  });

  async function claim(limit: number): Promise<ClaimedMessage[]> {
    const claimed = await outbox.claim(limit, o.leaseMs, { maxLeaseExpiries: o.maxLeaseExpiries });
    reachable = true;
    const now = clock.now();
    const oldest = claimed.reduce((min, m) => Math.min(min, m.enqueuedAt), Infinity);
    events.claimed?.(claimed.length, claimed.length === 0 ? 0 : Math.max(0, (now - oldest) / 1000));
    return claimed;
  }

  async function deliver(m: ClaimedMessage, hold: Hold): Promise<DeliveryResult> {
    const destination = destinations.get(m.destination);
    const name = destination?.name ?? String(m.destination);
    const log = { message_id: m.id, destination: name, attempt: m.attempts };
    logger.debug('claimed', log);
    try {
      const outcome = await attempt(
        { outbox, destination, leaseMs: o.leaseMs, maxLeaseExpiries: o.maxLeaseExpiries, policy: options.policy },
        m,
        hold,
      );
      return await record(m, name, outcome, log);
    } finally {
      hold.close();
    }
  }

  function start(m: ClaimedMessage): Promise<DeliveryResult> {
    const hold = holdLease({
      outbox,
      message: m,
      clock,
      leaseMs: o.leaseMs,
      logger,
      log: { message_id: m.id },
      ended: ended.signal,
    });
    if (stopping.signal.aborted) hold.stop();
    const promise = deliver(m, hold).finally(() => held.delete(m.id));
    held.set(m.id, { hold, promise });
    return promise;
  }

  const stopRequested = new Promise<void>((resolve) =>
    stopping.signal.addEventListener('abort', () => resolve(), { once: true }),
  );

  // New work wakes the loop (docs/delivery.md#the-delivery-loop): a change seen while a claim was
  // running makes the next claim follow at once; one seen while idle ends the wait.
  const feed = options.changes === undefined ? outbox.changes : options.changes;
  let changed = false;
  let wake: (() => void) | undefined;

  /** Waits pollMs, or less: until a change or stop(). */
  function idle(): Promise<void> {
    if (changed || stopping.signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clock.clearTimeout(timer);
        stopping.signal.removeEventListener('abort', done);
        wake = undefined;
        resolve();
      };
      const timer = clock.setTimeout(done, o.pollMs);
      stopping.signal.addEventListener('abort', done, { once: true });
      wake = done;
    });
  }

  async function loop(): Promise<void> {
    const unsubscribe = feed?.subscribe(() => {
      changed = true;
      wake?.();
    });
    // Until the feed is up (or if it cannot start) the loop polls every pollMs.
    feed?.ready().catch((error) => logger.warn('change feed not started; polling', { error: describe(error) }));
    try {
      // Transactions of this worker's signers the journal holds (a restart), read before the first
      // claim so that no send of this run is taken for one; then followed in the background
      // (docs/transactions.md#nonces).
      const recovered = [...destinations.values()].map((d) =>
        d
          .recover?.(stopping.signal)
          .catch((error) => logger.warn('recovery failed', { destination: d.name, error: describe(error) })),
      );
      await Promise.race([stopRequested, Promise.all(recovered)]);
      await claimUntilStopped();
    } finally {
      unsubscribe?.();
    }
  }

  async function claimUntilStopped(): Promise<void> {
    while (!stopping.signal.aborted) {
      const room = o.concurrency - held.size;
      if (room <= 0) {
        await Promise.race([stopRequested, ...[...held.values()].map((h) => h.promise)]);
        continue;
      }
      let claimed: ClaimedMessage[];
      changed = false;
      try {
        claimed = await claim(Math.min(o.batch, room));
      } catch (error) {
        reachable = false;
        logger.warn('claim failed', { error: describe(error) });
        claimed = [];
      }
      for (const m of claimed) void start(m);
      if (claimed.length === 0) await idle();
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
        for (const h of held.values()) h.hold.stop();
        await running;
        const all = Promise.all([...held.values()].map((h) => h.promise));
        let timer: unknown;
        const grace = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, o.stopGraceMs)));
        await Promise.race([all, grace]);
        clock.clearTimeout(timer);
        // Follows still running end at their next look (a block, or pollMs): the sends held (they
        // release their messages) and any they started (a self-transfer filling a gap).
        ended.abort();
        if (held.size === 0) return;
        logger.warn('stopped with transactions still unconfirmed; left to the journal', { in_flight: held.size });
        const ending = new Promise<void>((resolve) => (timer = clock.setTimeout(resolve, ENDING_MS)));
        await Promise.race([all, ending]);
        clock.clearTimeout(timer);
      })();
      return stopped;
    },
    inFlight: () => held.size,
    storeReachable: () => reachable,
  };
}

/** After stop()'s grace, how long it waits for the follows it ended to let go of their messages. */
const ENDING_MS = 5_000;
