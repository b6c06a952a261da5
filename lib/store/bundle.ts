/**
 * The storage bundle a relayer runs on (docs/design.md#storage): the outbox, the merkle store
 * and, for engines shared by several replicas, the dedup store and rate limiter. Every method may
 * answer with a promise; the pipeline and the handler await them.
 *
 * A store call that fails with anything but a RelayError it chose to throw (duplicate_tx,
 * cache_full…) is classified here, once (docs/api.md, "Errors"): a store that cannot be used
 * right now (unreachable, locked or busy past its wait, cancelled by a timeout, out of
 * connections) answers 503 `store_unavailable` with Retry-After, worth retrying; anything else (a
 * constraint violation, a bug) answers 500 `internal_error`, which retrying will not fix. Either
 * way nothing is acknowledged, the dedup reservation is released and the cause goes to the log
 * only.
 */
import type { Clock } from '../clock.ts';
import type { DedupStore } from '../relay/dedup.ts';
import { RelayError, StoreUnavailableError } from '../errors/classes.ts';

export { StoreUnavailableError };
import type { Outbox, OutboxMessage } from '../outbox/index.ts';
import type { ClientRateLimiter } from '../relay/client-rate-limit.ts';
import type { RateLimiter } from '../relay/rate-limit.ts';
import type { MerkleStore } from '../types.ts';

export interface RelayerStore {
  outbox: Outbox;
  merkle: MerkleStore;
  /** Shared engines (PostgreSQL) provide these; otherwise the process keeps its own. */
  dedup?: DedupStore;
  rateLimiter?: RateLimiter;
  /**
   * Shared per-client buckets (docs/api.md#per-client-limits), one budget per `name`; engines
   * without (one process) keep them in memory.
   */
  clientRateLimiter?(name: string, bucket: { burst: number; perMinute: number }): ClientRateLimiter;
  /**
   * The engine's shorter form of POST /relay's store work, when it has one (PostgreSQL): the
   * pipeline then takes the token and the reservation in one call and stores the rows with the
   * commit in another, instead of four. It acts on this store's rateLimiter, dedup and outbox.
   */
  admission?: RelayAdmission;
  /** Resolves when the store answers (GET /ready). */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Engines that can stop on their own for good (SQLite: its worker thread died) reject this with
   * the error every call answers from then on; relayer-server then exits 1 to be restarted.
   */
  readonly closed?: Promise<void>;
}

/**
 * POST /relay's store work in two steps (docs/design.md, Storage): `admit` takes a token of the
 * rate limiter and reserves the dedup key together, and throws the RelayError the two would
 * (rate_limited, duplicate_tx, cache_full) with nothing reserved; `complete` stores the accepted
 * messages and commits the reservation atomically, and is durable when it resolves. The result
 * is the same as rateLimiter.take() → dedup.reserve() → queue.enqueue() → reservation.commit().
 */
export interface RelayAdmission {
  admit(key: string): Promise<AdmittedRelay>;
}

export interface AdmittedRelay {
  /** Enqueues `batch` (possibly empty) and commits the reservation, in one durable transaction. */
  complete(batch: readonly OutboxMessage[]): Promise<void>;
  /** Gives the key back (a failed request), as Reservation.release. */
  release(): Promise<void>;
}

/** Seconds a client is asked to wait after `store_unavailable`: a lock wait or a failover is short. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/**
 * PostgreSQL SQLSTATEs that mean "not now" rather than "never": connection exceptions (class
 * 08), insufficient resources (53: too many connections, disk full, out of memory), the
 * statement or lock timeout (57014 query_canceled, 55P03 lock_not_available), the server
 * shutting down or refusing connections (57P01..57P05), and serialization failures and
 * deadlocks (40001, 40P01), which a retry resolves.
 */
function isTransientSqlState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    code.startsWith('57P0') ||
    code === '57014' ||
    code === '55P03' ||
    code === '40001' ||
    code === '40P01'
  );
}

/** Node's socket and resolver errors: the database host cannot be reached right now. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLite primary result codes that mean "not now": SQLITE_BUSY (5) and SQLITE_LOCKED (6), another
 * connection holds the lock past the wait; SQLITE_NOMEM (7) and SQLITE_FULL (13), out of memory or
 * disk, like PostgreSQL's class 53. SQLITE_CONSTRAINT (19) and the rest are 500.
 */
const SQLITE_TRANSIENT: ReadonlySet<number> = new Set([5, 6, 7, 13]);

/** Whether a store's failure means it cannot be used right now (503) rather than a fault (500). */
export function isStoreUnavailable(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  if (error === null || typeof error !== 'object') return false;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return true;
    // A SQLSTATE is five digits or upper-case letters (pg's DatabaseError.code).
    if (/^[0-9A-Z]{5}$/.test(code)) return isTransientSqlState(code);
  }
  // node:sqlite's errors carry the extended result code; its low byte is the primary one.
  if (typeof errcode === 'number') return SQLITE_TRANSIENT.has(errcode & 0xff);
  return false;
}

/**
 * The RelayError a failed store call answers with: a RelayError thrown by the store is kept,
 * unavailability (isStoreUnavailable) is 503 `store_unavailable`, anything else 500
 * `internal_error`. The cause stays on the error for the log, never in the answer.
 */
export function toStoreError(error: unknown): RelayError {
  if (error instanceof RelayError) return error;
  if (!isStoreUnavailable(error)) return new RelayError('internal_error', 'internal error', { cause: error });
  return new RelayError('store_unavailable', 'the store is unavailable; nothing was stored, retry shortly', {
    retryAfterSeconds: STORE_RETRY_AFTER_SECONDS,
    cause: error,
  });
}

/**
 * Awaits a store call, mapping its failure (a synchronous throw included) with toStoreError.
 * A synchronous result is returned as a resolved promise without a second tick of wrapping.
 */
export async function callStore<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toStoreError(error);
  }
}

export function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as PromiseLike<T> | null)?.then === 'function';
}

/** Settles like `value`, or rejects with `store_unavailable` when `ms` pass first on `clock`. */
export function withDeadline<T>(value: T | Promise<T>, ms: number, clock: Clock, what: string): Promise<T> {
  if (!isPromiseLike(value)) return Promise.resolve(value);
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimeout(
      () => reject(toStoreError(new StoreUnavailableError(`${what} did not answer within ${ms} ms`))),
      ms,
    );
    value.then(
      (result) => {
        clock.clearTimeout(timer);
        resolve(result);
      },
      (error: unknown) => {
        clock.clearTimeout(timer);
        reject(toStoreError(error));
      },
    );
  });
}
