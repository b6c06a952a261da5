/**
 * Global rate limit for POST /relay (docs/design.md#rate-limit): a token bucket that
 * starts full with `burst` tokens and refills continuously at `perMinute` per minute, capped at
 * `burst`. An interface so a shared store can replace it when running several replicas
 * (docs/replicas.md#how-replicas-agree).
 */
import type { Clock } from '../clock.ts';
import { RelayError, secondsToWait, OutOfRangeError } from '../errors/classes.ts';

export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

export interface RateLimiter {
  take(): TakeResult | Promise<TakeResult>;
}

export interface TokenBucket extends RateLimiter {
  take(): TakeResult;
}

export interface TokenBucketOptions {
  clock: Clock;
  burst: number;
  perMinute: number;
}

// Tokens are counted in 1/60 000ths so that with whole milliseconds and a whole perMinute the
// refill is exact integer arithmetic: one token is UNIT, and one ms adds `perMinute` units.
export const UNIT = 60_000;

/** Throws RangeError for a bucket no engine can run (shared with lib/postgres/rate-limit.ts). */
export function checkBucket(burst: number, perMinute: number): void {
  if (!Number.isFinite(burst) || burst < 1) throw new OutOfRangeError('burst must be at least 1');
  if (!Number.isFinite(perMinute) || perMinute <= 0) throw new OutOfRangeError('perMinute must be positive');
}

/** POST /relay's answer to a refused token (429 rate_limited). */
export function rateLimitedError(retryAfterSeconds: number): RelayError {
  return new RelayError('rate_limited', 'global rate limit exceeded; retry after a short backoff', {
    retryAfterSeconds,
  });
}

/** The refusal of a bucket holding `units` (< UNIT): Retry-After when the next token is in. */
export function refused(units: number, perMinute: number): TakeResult {
  return { ok: false, retryAfterSeconds: secondsToWait((UNIT - units) / perMinute) };
}

export function createTokenBucket(opts: TokenBucketOptions): TokenBucket {
  const { clock, burst, perMinute } = opts;
  checkBucket(burst, perMinute);
  const capacity = burst * UNIT;

  let units = capacity;
  let updatedAt = clock.now();

  function refill(now: number): void {
    // A clock that steps backwards must not drain the bucket.
    const elapsed = Math.max(0, now - updatedAt);
    units = Math.min(capacity, units + elapsed * perMinute);
    updatedAt = now;
  }

  return {
    take() {
      refill(clock.now());
      if (units >= UNIT) {
        units -= UNIT;
        return { ok: true };
      }
      return refused(units, perMinute);
    },
  };
}
