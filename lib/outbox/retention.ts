/**
 * Retention (docs/configuration.md#retention): what prune() takes and answers, and the check every
 * engine runs on its arguments, so all of them refuse the same input with the same error.
 */
import type { Clock } from '../clock.ts';
import { InvalidArgumentError, OutOfRangeError } from '../errors/classes.ts';

/** prune()'s options: delivered messages and closed journal rows older than `before` (ms), `limit` of each at most. */
export interface PruneOptions {
  before: number;
  limit: number;
}

/** What one prune() deleted. */
export interface Pruned {
  messages: number;
  journal: number;
}

/** The most rows of each kind one prune() deletes: a batch is one short transaction. */
export const MAX_PRUNE_LIMIT = 10_000;

export function checkPrune(opts: PruneOptions): PruneOptions {
  if (typeof opts !== 'object' || opts === null) throw new InvalidArgumentError('prune: options must be an object');
  const { before, limit } = opts;
  if (typeof before !== 'number' || !Number.isFinite(before))
    throw new InvalidArgumentError('prune: before must be a finite number (ms)');
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PRUNE_LIMIT)
    throw new OutOfRangeError(`prune: limit must be an integer from 1 to ${MAX_PRUNE_LIMIT}`);
  return { before, limit };
}

/** Rows of each kind one batch of the retention loop deletes. */
export const PRUNE_BATCH = 200;
/** How often the retention loop looks for old rows. */
export const PRUNE_EVERY_MS = 60_000;
/**
 * The pause between two batches of one look: a backlog (retention just turned on, or shortened)
 * is worked off at most PRUNE_BATCH rows of each kind a second, and other writers have the store
 * to themselves in between (on SQLite a batch holds the only write lock: 116-182 ms under load in
 * BENCHMARKS.md#growth-node-benchgrowthts).
 */
export const PRUNE_PAUSE_MS = 1_000;

export interface RetentionOptions {
  /** The outbox's prune(). */
  prune(opts: PruneOptions): Pruned | Promise<Pruned>;
  clock: Clock;
  /** What is older than this (ms) goes. */
  retentionMs: number;
  /** Rows per batch (default PRUNE_BATCH) and the time between two looks (default PRUNE_EVERY_MS). */
  batch?: number;
  everyMs?: number;
  /** After each look that deleted something: the totals of that look. */
  onPruned?(pruned: Pruned): void;
  /** A batch that failed (the store unreachable): the loop looks again at its next time. */
  onError?(error: unknown): void;
}

export interface Retention {
  /** Stops looking; resolves once a batch in flight has ended. */
  stop(): Promise<void>;
}

/**
 * The retention loop (docs/configuration.md#retention): at once, then every `everyMs`, deletes
 * batches of old rows until a batch deletes fewer than `batch` of both kinds. Each batch is one
 * call (one short transaction), and the next starts PRUNE_PAUSE_MS after it ended: other writers
 * get the store between two. Its timers are background ones (they keep no process alive).
 */
export function startRetention(options: RetentionOptions): Retention {
  const { clock, retentionMs, batch = PRUNE_BATCH, everyMs = PRUNE_EVERY_MS } = options;
  let stopped = false;
  let timer: unknown;
  let running: Promise<void> = Promise.resolve();
  /** Ends the pause between two batches at once (stop()). */
  let wake = () => {};
  const look = async () => {
    const total = { messages: 0, journal: 0 };
    try {
      for (;;) {
        if (stopped) break;
        const pruned = await options.prune({ before: clock.now() - retentionMs, limit: batch });
        total.messages += pruned.messages;
        total.journal += pruned.journal;
        if ((pruned.messages < batch && pruned.journal < batch) || stopped) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = clock.setTimeout(resolve, PRUNE_PAUSE_MS, { background: true });
        });
      }
    } catch (error) {
      options.onError?.(error);
    }
    if (total.messages + total.journal > 0) options.onPruned?.(total);
    if (!stopped) timer = clock.setTimeout(() => (running = look()), everyMs, { background: true });
  };
  running = look();
  return {
    async stop() {
      stopped = true;
      clock.clearTimeout(timer);
      wake();
      await running;
    },
  };
}
