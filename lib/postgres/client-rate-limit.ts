/**
 * Per-client token buckets shared by every replica (docs/api.md#per-client-limits): one row per
 * (budget, client) in `client_buckets`, refilled and taken from in one upsert, so N replicas
 * together give a client its `burst` plus the refill, not N times it. The arithmetic is the global
 * bucket's (rate-limit.ts, bucketRefill), committed without waiting for the WAL flush like it (a
 * database crash can at worst hand out again the tokens of its last moments).
 *
 * Bounded: at most every 10 s per replica, a sweep deletes the rows that refilled completely (the
 * same as no row) and, beyond `maxClients` rows of the budget, the least recently used.
 */
import type { Clock } from '../clock.ts';
import type { ClientRateLimiter } from '../relay/client-rate-limit.ts';
import { DEFAULT_MAX_CLIENTS } from '../relay/client-rate-limit.ts';
import { InvalidArgumentError } from '../errors/classes.ts';
import { checkBucket, refused, UNIT } from '../relay/rate-limit.ts';
import { nowSql, prepared, run, type PgPool } from './pool.ts';
import { bucketRefill, num } from './rate-limit.ts';

export interface PostgresClientBucketsOptions {
  /** The budget's name ('relay', 'read'): budgets share the table. */
  name: string;
  burst: number;
  perMinute: number;
  maxClients?: number;
  clock?: Clock;
}

const SWEEP_INTERVAL_MS = 10_000;

export function createPostgresClientBuckets(
  pool: PgPool,
  s: string,
  options: PostgresClientBucketsOptions,
): ClientRateLimiter & { sweep(): Promise<number> } {
  const { name, burst, perMinute, clock } = options;
  checkBucket(burst, perMinute);
  if (!/^[a-z0-9_]{1,64}$/.test(name)) throw new InvalidArgumentError('name must be 1-64 of a-z, 0-9, _');
  const maxClients = options.maxClients ?? DEFAULT_MAX_CLIENTS;
  const capacity = burst * UNIT;
  const t = nowSql(1);
  const refill = bucketRefill(burst, perMinute, t)
    .replaceAll('units', 'b.units')
    .replaceAll('updated_at', 'b.updated_at');
  // $1 now (or null: the database's clock), $2 budget, $3 client. A new client's bucket starts full
  // and gives its first token at once.
  const takeSql = prepared(`
    WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
    INSERT INTO ${s}.client_buckets AS b (name, client, units, updated_at, taken)
    SELECT $2::text, $3::text, ${num(capacity - UNIT)}, ${t}, true FROM async
    ON CONFLICT (name, client) DO UPDATE SET
      units = ${refill} - CASE WHEN ${refill} >= ${UNIT} THEN ${UNIT} ELSE 0 END,
      taken = ${refill} >= ${UNIT},
      updated_at = greatest(b.updated_at, ${t})
    RETURNING taken, units`);
  // $1 now, $2 budget. Full again after burst / perMinute minutes. Both deletes see the table as
  // it was, so the least recently used beyond maxClients are counted with the full ones among them.
  const sweepSql = prepared(`
    WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
    full_again AS (
      DELETE FROM ${s}.client_buckets USING async WHERE name = $2 AND updated_at < ${t} - ${num((burst / perMinute) * 60_000)}
      RETURNING client
    ),
    least_recent AS (
      DELETE FROM ${s}.client_buckets USING async WHERE name = $2 AND client IN (
        SELECT client FROM ${s}.client_buckets WHERE name = $2 ORDER BY updated_at DESC OFFSET ${num(maxClients)})
      RETURNING client
    )
    SELECT count(*)::int AS deleted FROM (SELECT client FROM full_again UNION SELECT client FROM least_recent) d`);
  let lastSweep = -Infinity;
  const now = () => clock?.now() ?? null;
  const sweep = async () => (await run<{ deleted: number }>(pool, sweepSql([now(), name]))).rows[0].deleted;

  return {
    /** Deletes the budget's buckets that are full again and the least recently used beyond maxClients; how many. */
    sweep,
    async take(client) {
      const at = Date.now();
      if (at - lastSweep >= SWEEP_INTERVAL_MS) {
        lastSweep = at;
        // Beside the request; a failed sweep waits for the next.
        void sweep().catch(() => {});
      }
      const { rows } = await run<{ taken: boolean; units: number }>(pool, takeSql([now(), name, client]));
      const { taken, units } = rows[0];
      return taken ? { ok: true } : refused(units, perMinute);
    },
  };
}
