/**
 * The statements that carry several relays at once (coalesce.ts, docs/replicas.md#coalesced-statements):
 * the same work as relay.ts's admit and complete, each relay answered from its own row.
 */
import { UNIT } from '../relay/rate-limit.ts';
import { gasPaymentInsertSql } from './gas-payments.ts';
import { outboxInsertSql } from './outbox.ts';
import { prepared, nowSql, timeOrDatabaseNow, type PgQueryConfig } from './pool.ts';
import { bucketRefill, num } from './rate-limit.ts';

/**
 * Tokens and reservations for several keys (distinct), in one statement committed with
 * synchronous_commit = off. $1 the time (or null: the database's), $2 the keys in arrival order.
 * The bucket row is locked and read first (FOR UPDATE: the version the previous taker left), then
 * gives min(keys, whole tokens) tokens to the first keys; each of those reserves as the single
 * admit does, the first ones while the dedup row count leaves room (capacity minus the count). One row per key, in order, shaped as the single admit's.
 * The reservations are inserted in key order, so two such statements lock dedup rows in the same
 * order.
 */
export function admitManySql(
  s: string,
  name: string,
  bucket: { burst: number; perMinute: number },
  dedup: { pendingMs: number; capacity: number },
): (values: unknown[]) => PgQueryConfig {
  const t = nowSql(1);
  return prepared(`
    WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
    req AS (SELECT key, n FROM unnest($2::text[]) WITH ORDINALITY AS q(key, n)),
    cur AS (
      SELECT ${bucketRefill(bucket.burst, bucket.perMinute, t)} AS refilled, greatest(updated_at, ${t}) AS updated
      FROM ${s}.token_buckets, async WHERE name = '${name}' FOR UPDATE OF token_buckets
    ),
    g AS (SELECT cur.*, least((SELECT count(*) FROM req), floor(cur.refilled / ${UNIT})) AS k FROM cur),
    b AS (
      UPDATE ${s}.token_buckets SET units = g.refilled - g.k * ${UNIT}, taken = g.k > 0, updated_at = g.updated
      FROM g WHERE name = '${name}'
      RETURNING g.k, units
    ),
    r AS (
      INSERT INTO ${s}.dedup AS d (key, token, committed, expires_at)
      SELECT req.key, gen_random_uuid(), false, ${t} + ${num(dedup.pendingMs)}
      FROM req, b, ${s}.dedup_rows AS room WHERE req.n <= b.k AND req.n <= ${num(dedup.capacity)} - room.n
      ORDER BY req.key
      ON CONFLICT (key) DO UPDATE SET token = excluded.token, committed = false, expires_at = excluded.expires_at
        WHERE d.expires_at <= ${t}
      RETURNING key, token
    )
    SELECT req.n <= b.k AS taken, b.units, r.token,
      CASE WHEN req.n <= b.k AND r.token IS NULL
        THEN (SELECT expires_at FROM ${s}.dedup WHERE key = req.key AND expires_at > ${t}) END AS live_until,
      ${t} AS now
    FROM req CROSS JOIN b LEFT JOIN r ON r.key = req.key
    ORDER BY req.n`);
}

/**
 * The rows and committed reservations of several relays, one durable commit: $1 keys, $2 tokens,
 * $3 each one's time (or null), $4 the window, then the outbox columns of all their messages in
 * order (`writeRows`, outbox.ts's CTEs from $5: the messages and their gas payments).
 */
export function completeManySql(s: string, writeRows: string): (values: unknown[]) => PgQueryConfig {
  return prepared(`
    WITH ${writeRows}
    UPDATE ${s}.dedup AS d SET committed = true,
      expires_at = ${timeOrDatabaseNow('c.at')} + $4
    FROM unnest($1::text[], $2::uuid[], $3::float8[]) AS c(key, token, at)
    WHERE d.key = c.key AND d.token = c.token`);
}

/**
 * The CTEs that write a batch given as outboxColumns() from `$first`: `ins` (the messages) and
 * `gas` (their gas payments), for the completing statements above and in relay.ts.
 */
export function outboxWriteCtes(s: string, first: number): string {
  return `ins AS (${outboxInsertSql(s, first)}), gas AS (${gasPaymentInsertSql(s, first + 8)})`;
}
