/**
 * The storage bundle a relayer runs on (DESIGN.md §7): the outbox, the merkle store and, for
 * engines shared by several replicas, the dedup store and rate limiter. Every method may answer
 * with a promise; the pipeline and the handler await them.
 *
 * A store call that fails for any reason other than a RelayError it chose to throw (duplicate_tx,
 * cache_full…) means the store could not be used: the request answers 503 `store_unavailable`,
 * nothing is acknowledged and the dedup reservation is released. The mapping lives here, once.
 */
import type { Clock } from './clock.ts';
import type { DedupStore } from './dedup.ts';
import { RelayError } from './errors.ts';
import type { Outbox } from './outbox.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { MerkleStore } from './types.ts';

export interface RelayerStore {
  outbox: Outbox;
  merkle: MerkleStore;
  /** Shared engines (PostgreSQL) provide these; otherwise the process keeps its own. */
  dedup?: DedupStore;
  rateLimiter?: RateLimiter;
  /** Resolves when the store answers (GET /ready). */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Engines that can stop on their own for good (SQLite: its worker thread died) reject this with
   * the error every call answers from then on; relayer-server then exits 1 to be restarted.
   */
  readonly closed?: Promise<void>;
}

/** Seconds a client is asked to wait after `store_unavailable`: a lock wait or a failover is short. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/** The RelayError a failed store call answers with; a RelayError thrown by the store is kept. */
export function toStoreError(error: unknown): RelayError {
  if (error instanceof RelayError) return error;
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
    const timer = clock.setTimeout(() => reject(toStoreError(new Error(`${what} did not answer within ${ms} ms`))), ms);
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
