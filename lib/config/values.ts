/**
 * The value parsers the sections of the configuration share (docs/configuration.md): optional
 * integers, token buckets, origins and the longest duration a timer takes.
 */
import { ConfigError } from '../errors/classes.ts';
import { integer, join, nonEmptyString, object, type Obj } from './fields.ts';
import type { RateLimitConfig } from '../types.ts';

/** Durations become timers: 2^31-1 ms is the largest setTimeout delay. */
export const MAX_TIMER_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

export function optionalInt(obj: Obj, name: string, key: string, fallback: number, min: number, max: number): number {
  return obj[name] === undefined ? fallback : integer(obj[name], join(key, name), min, max);
}

/**
 * An optional bucket: absent is `absent` (default none), null is none; otherwise both numbers are
 * required.
 */
export function optionalBucket(
  value: unknown,
  key: string,
  absent: RateLimitConfig | null = null,
): RateLimitConfig | null {
  if (value === undefined) return absent === null ? null : { ...absent };
  if (value === null) return null;
  const obj = object(value, key, ['burst', 'perMinute'], '{"burst": N, "perMinute": N} or null');
  const max = Number.MAX_SAFE_INTEGER;
  if (obj.burst === undefined) throw new ConfigError(join(key, 'burst'), 'is required');
  if (obj.perMinute === undefined) throw new ConfigError(join(key, 'perMinute'), 'is required');
  return {
    burst: integer(obj.burst, join(key, 'burst'), 1, max),
    perMinute: integer(obj.perMinute, join(key, 'perMinute'), 1, max),
  };
}

/** scheme://host[:port] and at most a trailing slash, as its URL origin; `"*"` too when `star`. */
export function parseOrigin(value: unknown, key: string, star = true): string {
  const s = nonEmptyString(value, key);
  if (s === '*' && star) return s;
  // No credentials, path, query or fragment.
  const bad = () =>
    new ConfigError(
      key,
      `expected ${star ? '"*" or ' : ''}an origin like "https://app.example.org", got ${JSON.stringify(s)}`,
    );
  if (!/^https?:\/\/[^/?#@\\]+\/?$/i.test(s)) throw bad();
  try {
    return new URL(s).origin;
  } catch {
    throw bad();
  }
}
