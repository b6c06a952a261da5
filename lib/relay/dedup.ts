/**
 * Deduplication of POST /relay per (origin_chain, tx_hash) (docs/design.md#deduplication,
 * #replicas).
 *
 * A request first reserves its key; the reservation is committed when the request succeeds (the
 * window then runs from the commit) or released when it fails (the key is free at once). The store
 * is an interface so a shared engine (Redis SET NX PX, for one) can replace this per-process cache.
 *
 * Memory: one Map entry per live key, key → expiry time (a number), with a separate set for the
 * keys still in flight. No per-entry timer: expired entries are dropped lazily on access, by one
 * sweeping timer, and before a full cache refuses a reservation.
 */
import type { Clock } from '../clock.ts';
import { RelayError, secondsToWait, OutOfRangeError } from '../errors/classes.ts';

export interface Reservation {
  /** Keeps the key for the window, counted from now. Idempotent; no-op after release. */
  commit(): void | Promise<void>;
  /** Frees the key at once. Idempotent; no-op after commit. */
  release(): void | Promise<void>;
}

export interface DedupStore {
  /** Reserves `key` or throws RelayError `duplicate_tx` / `cache_full`. */
  reserve(key: string): Reservation | Promise<Reservation>;
  /** Number of live (pending or committed, unexpired) entries. */
  size(): number | Promise<number>;
}

/** The per-process cache answers synchronously; its callers (tests, metrics) may rely on it. */
export interface MemoryReservation extends Reservation {
  commit(): void;
  release(): void;
}

export interface MemoryDedupStore extends DedupStore {
  reserve(key: string): MemoryReservation;
  size(): number;
}

export interface DedupCacheOptions {
  clock: Clock;
  windowMs: number;
  capacity: number;
}

/**
 * The sweep only reclaims memory (every read checks expiry itself), so under steady traffic it
 * runs at most once a second and drops everything expired by then in one pass.
 */
const SWEEP_MIN_INTERVAL_MS = 1000;

/** Throws RangeError for a window or capacity no engine can keep (shared with lib/postgres/dedup.ts). */
export function checkDedupLimits(windowMs: number, capacity: number): void {
  if (!(windowMs > 0)) throw new OutOfRangeError('windowMs must be positive');
  if (!Number.isInteger(capacity) || capacity < 1) throw new OutOfRangeError('capacity must be a positive integer');
}

/** The refusal of a key that is live for `ms` more, in every engine's words. */
export function duplicateTx(ms: number): RelayError {
  return new RelayError('duplicate_tx', 'this transaction was already submitted within the deduplication window', {
    retryAfterSeconds: secondsToWait(ms),
  });
}

/** The refusal of a full store whose oldest entry expires in `ms`. */
export function cacheFull(ms: number): RelayError {
  return new RelayError('cache_full', 'the deduplication cache is full', { retryAfterSeconds: secondsToWait(ms) });
}

export function createMemoryDedupStore(opts: DedupCacheOptions): MemoryDedupStore {
  const { clock, windowMs, capacity } = opts;
  checkDedupLimits(windowMs, capacity);

  // key → expiry. Map order is insertion order; a commit re-inserts its key, and every expiry is
  // `insertion time + windowMs`, so expiries are non-decreasing along the map and the first entry
  // is always the next to expire.
  const expiries = new Map<string, number>();
  // Keys reserved and neither committed nor released yet, each with a token so that a stale
  // reservation (expired, then the key reserved again) cannot commit or release the new one.
  const inFlight = new Map<string, object>();
  let sweepTimer: unknown;

  function drop(key: string): void {
    expiries.delete(key);
    inFlight.delete(key);
  }

  function dropExpired(now: number): void {
    for (const [key, expiry] of expiries) {
      if (expiry > now) break;
      drop(key);
    }
  }

  function scheduleSweep(): void {
    if (sweepTimer !== undefined || expiries.size === 0) return;
    const first = expiries.values().next().value as number;
    // Background: expired entries need no sweeping once nothing else keeps the process alive.
    sweepTimer = clock.setTimeout(
      () => {
        sweepTimer = undefined;
        dropExpired(clock.now());
        scheduleSweep();
      },
      Math.max(SWEEP_MIN_INTERVAL_MS, first - clock.now()),
      { background: true },
    );
  }

  function insert(key: string, expiry: number): void {
    expiries.delete(key); // re-insert at the end to keep the map ordered by expiry
    expiries.set(key, expiry);
    scheduleSweep();
  }

  function refuseIfLive(key: string, now: number): void {
    const expiry = expiries.get(key);
    if (expiry === undefined) return;
    if (expiry <= now) return drop(key);
    throw duplicateTx(expiry - now);
  }

  function refuseIfFull(now: number): void {
    if (expiries.size < capacity) return;
    dropExpired(now);
    if (expiries.size < capacity) return;
    const oldest = expiries.values().next().value as number;
    throw cacheFull(oldest - now);
  }

  function reserve(key: string): MemoryReservation {
    const now = clock.now();
    refuseIfLive(key, now);
    refuseIfFull(now);
    const token = {};
    // A pending entry expires one window after reservation at the latest, so a request that never
    // settles (a bug, a lost promise) cannot hold its key forever.
    insert(key, now + windowMs);
    inFlight.set(key, token);

    let settled = false;
    const mine = () => inFlight.get(key) === token;
    return {
      commit() {
        if (settled) return;
        settled = true;
        if (!mine()) return;
        inFlight.delete(key);
        insert(key, clock.now() + windowMs);
      },
      release() {
        if (settled) return;
        settled = true;
        if (mine()) drop(key);
      },
    };
  }

  return {
    reserve,
    size() {
      dropExpired(clock.now());
      return expiries.size;
    },
  };
}
