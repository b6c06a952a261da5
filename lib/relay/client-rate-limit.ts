/**
 * Per-client token buckets (docs/api.md#per-client-limits): the same bucket as the global one
 * (lib/relay/rate-limit.ts: `burst` tokens, refilled at `perMinute`), one per client, so one client at
 * ten times its rate takes its own share and no more. An interface so that replicas share them in
 * PostgreSQL (lib/postgres/client-rate-limit.ts); this is the in-process engine.
 *
 * Bounded: at most `maxClients` buckets. A bucket that refilled completely is the same as none and
 * is dropped when met; beyond the bound the least recently used goes first (its client starts
 * again from a full bucket: more lenient, never stricter).
 */
import type { Clock } from '../clock.ts';
import { checkBucket, refused, UNIT, type TakeResult } from './rate-limit.ts';

export interface ClientRateLimiter {
  take(client: string): TakeResult | Promise<TakeResult>;
}

export interface ClientBucketsOptions {
  clock: Clock;
  burst: number;
  perMinute: number;
  /** Buckets kept at most. Default 100 000. */
  maxClients?: number;
}

export const DEFAULT_MAX_CLIENTS = 100_000;

export function createClientBuckets(options: ClientBucketsOptions): {
  take(client: string): TakeResult;
  size(): number;
} {
  const { clock, burst, perMinute } = options;
  checkBucket(burst, perMinute);
  const capacity = burst * UNIT;
  const maxClients = options.maxClients ?? DEFAULT_MAX_CLIENTS;
  // Map order is the order of last use: a take moves its bucket to the end.
  const buckets = new Map<string, { units: number; updatedAt: number }>();

  return {
    take(client) {
      const now = clock.now();
      let bucket = buckets.get(client);
      if (bucket === undefined) {
        bucket = { units: capacity, updatedAt: now };
        while (buckets.size >= maxClients) buckets.delete(buckets.keys().next().value as string);
      } else {
        buckets.delete(client);
        bucket.units = Math.min(capacity, bucket.units + Math.max(0, now - bucket.updatedAt) * perMinute);
        bucket.updatedAt = Math.max(bucket.updatedAt, now);
      }
      buckets.set(client, bucket);
      if (bucket.units < UNIT) return refused(bucket.units, perMinute);
      bucket.units -= UNIT;
      return { ok: true };
    },
    size: () => buckets.size,
  };
}
