/**
 * The global POST /relay token bucket shared by every replica (DESIGN.md §3, §8): one row,
 * refilled and taken from in one UPDATE. PostgreSQL's row lock serialises concurrent takes, and
 * each UPDATE re-reads the row as the previous one left it, so N replicas together pass at most
 * `burst` requests plus the refill — the limit configured, not N times it.
 *
 * Same arithmetic as lib/rate-limit.ts (tokens in 1/60 000ths, refill per ms = perMinute units),
 * in double precision; a clock that steps backwards neither drains nor refills the bucket.
 */
import type { Clock } from '../clock.ts';
import type { TakeResult } from '../rate-limit.ts';
import { nowSql, run, type PgPool } from './pool.ts';

export interface PostgresTokenBucketOptions {
  burst: number;
  perMinute: number;
  /** Row name, so several buckets can share the table. Default 'relay'. */
  name?: string;
  clock?: Clock;
}

export interface PostgresRateLimiter {
  take(): Promise<TakeResult>;
}

const UNIT = 60_000;

export function createPostgresTokenBucket(pool: PgPool, s: string, opts: PostgresTokenBucketOptions): PostgresRateLimiter {
  const { burst, perMinute, clock } = opts;
  const name = opts.name ?? 'relay';
  if (!Number.isFinite(burst) || burst < 1) throw new RangeError('burst must be at least 1');
  if (!Number.isFinite(perMinute) || perMinute <= 0) throw new RangeError('perMinute must be positive');
  const capacity = burst * UNIT;

  // $1 now, $2 name, $3 capacity, $4 perMinute, $5 unit. `refilled` is spelled out twice:
  // PostgreSQL has no per-row variables in UPDATE, and both uses read the same old row.
  const refilled = `least($3::double precision, units + greatest(0, ${nowSql(1)} - updated_at) * $4)`;
  const takeSql = `
    UPDATE ${s}.token_buckets SET
      units = ${refilled} - CASE WHEN ${refilled} >= $5 THEN $5 ELSE 0 END,
      taken = ${refilled} >= $5,
      updated_at = greatest(updated_at, ${nowSql(1)})
    WHERE name = $2
    RETURNING taken, units`;
  const createSql = `
    INSERT INTO ${s}.token_buckets (name, units, updated_at) VALUES ($2, $3, ${nowSql(1)})
    ON CONFLICT (name) DO NOTHING`;

  return {
    async take() {
      const now = clock?.now() ?? null;
      const args = [now, name, capacity, perMinute, UNIT];
      let { rows } = await run<{ taken: boolean; units: number }>(pool, takeSql, args);
      if (rows.length === 0) {
        // First take on this database: the bucket starts full.
        await run(pool, createSql, [now, name, capacity]);
        ({ rows } = await run<{ taken: boolean; units: number }>(pool, takeSql, args));
      }
      const { taken, units } = rows[0];
      if (taken) return { ok: true };
      const waitMs = (UNIT - units) / perMinute;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    },
  };
}
