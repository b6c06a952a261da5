/**
 * The relay outbox (DESIGN.md §3, §7, §11) on PostgreSQL, shared by every replica and every
 * delivery worker. A batch is one INSERT … ON CONFLICT (id) DO NOTHING over unnest()ed arrays:
 * atomic, idempotent by id (also within the batch), one round trip. claim() picks rows with
 * FOR UPDATE SKIP LOCKED inside the UPDATE that leases them, so concurrent workers on any
 * replica never get the same message and never wait on each other's rows.
 *
 * Batches and consumer calls are checked by the same helpers as the memory and SQLite engines
 * (lib/outbox.ts), so all three refuse the same input with the same error; the table's CHECK
 * constraints are the second line. Raw bytes travel as hex text, which every driver passes the
 * same way.
 */
import type { Clock } from '../clock.ts';
import { bytesToHex, hexToBytes } from '../hex.ts';
import {
  checkClaim,
  checkMarkDelivered,
  checkMarkFailed,
  recordFromRow,
  validateOutboxBatch,
  type ClaimedMessage,
  type MarkDeliveredOptions,
  type MarkFailedOptions,
  type Outbox,
  type OutboxMessage,
  type OutboxRecord,
  type OutboxRow,
} from '../outbox.ts';
import { nowSql, run, type PgPool } from './pool.ts';

/** The Outbox with its asynchronous return types spelled out. */
export interface PostgresOutbox extends Outbox {
  enqueue(batch: readonly OutboxMessage[]): Promise<number>;
  get(id: string): Promise<OutboxRecord | undefined>;
  byTx(originChain: string, txHash: string): Promise<OutboxRecord[]>;
  depth(): Promise<number>;
  claim(limit: number, leaseMs: number): Promise<ClaimedMessage[]>;
  markDelivered(id: string, opts: MarkDeliveredOptions): Promise<boolean>;
  markFailed(id: string, opts: MarkFailedOptions): Promise<boolean>;
}

/** origin, destination, nonce and seq arrive as float8 (see columns()); raw as hex text. */
interface Row extends OutboxRow {
  raw: string;
  lease: string | null;
  seq: number;
}

/** The columns of Row from table alias `t`: numbers as float8 (drivers return bigint as a string), raw as hex. */
function columns(t: string): string {
  return `${t}.id, ${t}.origin_chain, ${t}.tx_hash, ${t}.origin::float8 AS origin, ${t}.destination::float8 AS destination,
    ${t}.nonce::float8 AS nonce, encode(${t}.raw, 'hex') AS raw, ${t}.enqueued_at, ${t}.status, ${t}.attempts, ${t}.last_error,
    ${t}.delivered_at, ${t}.destination_tx_hash, ${t}.claimed_until, ${t}.retry_at, ${t}.lease, ${t}.seq::float8 AS seq`;
}

function toRecord(row: Row): OutboxRecord {
  return recordFromRow(row, hexToBytes(`0x${row.raw}`)!);
}

export function createPostgresOutbox(pool: PgPool, s: string, clock?: Clock): PostgresOutbox {
  const now = () => clock?.now() ?? null;

  // WITH ORDINALITY … ORDER BY: identity values follow the batch's order (its tie-break).
  const insertSql = `
    INSERT INTO ${s}.outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at)
    SELECT id, origin_chain, tx_hash, origin, destination, nonce, decode(raw, 'hex'), enqueued_at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::text[], $8::float8[])
      WITH ORDINALITY AS b(id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, n)
    ORDER BY n
    ON CONFLICT (id) DO NOTHING`;
  const claimSql = `
    UPDATE ${s}.outbox o SET status = 'delivering', claimed_until = t.now + $3, retry_at = NULL,
      attempts = o.attempts + 1, lease = gen_random_uuid()::text
    FROM (SELECT ${nowSql(1)} AS now) t, (
      SELECT q.id FROM ${s}.outbox q, (SELECT ${nowSql(1)} AS now) t
      WHERE (q.status = 'queued' AND (q.retry_at IS NULL OR q.retry_at <= t.now))
         OR (q.status = 'delivering' AND q.claimed_until <= t.now)
      ORDER BY q.enqueued_at, q.seq LIMIT $2
      FOR UPDATE OF q SKIP LOCKED
    ) picked
    WHERE o.id = picked.id
    RETURNING ${columns('o')}`;
  const deliverSql = `
    UPDATE ${s}.outbox SET status = 'delivered', delivered_at = ${nowSql(1)}, destination_tx_hash = $3,
      claimed_until = NULL, retry_at = NULL, lease = NULL
    WHERE id = $2 AND status IN ('queued', 'delivering') AND ($4::text IS NULL OR (status = 'delivering' AND lease = $4))`;
  const failSql = `
    UPDATE ${s}.outbox SET status = CASE WHEN $4::float8 IS NULL THEN 'failed' ELSE 'queued' END,
      retry_at = $4, last_error = $3, claimed_until = NULL, lease = NULL
    WHERE id = $1 AND status = 'delivering' AND ($2::text IS NULL OR lease = $2)`;

  return {
    async enqueue(batch) {
      validateOutboxBatch(batch);
      if (batch.length === 0) return 0;
      const column = <T>(pick: (m: OutboxMessage) => T) => batch.map(pick);
      const { rowCount } = await run(pool, insertSql, [
        column((m) => m.id),
        column((m) => m.originChain),
        column((m) => m.txHash),
        column((m) => m.origin),
        column((m) => m.destination),
        column((m) => m.nonce),
        column((m) => bytesToHex(m.raw).slice(2)),
        column((m) => m.enqueuedAt),
      ]);
      return rowCount ?? 0;
    },
    async get(id) {
      const { rows } = await run<Row>(pool, `SELECT ${columns('o')} FROM ${s}.outbox o WHERE id = $1`, [String(id).toLowerCase()]);
      return rows.length === 0 ? undefined : toRecord(rows[0]);
    },
    async byTx(originChain, txHash) {
      const { rows } = await run<Row>(pool, `SELECT ${columns('o')} FROM ${s}.outbox o WHERE origin_chain = $1 AND tx_hash = $2 ORDER BY seq`, [
        originChain,
        String(txHash).toLowerCase(),
      ]);
      return rows.map(toRecord);
    },
    async depth() {
      const { rows } = await run<{ n: number }>(pool, `SELECT count(*)::integer AS n FROM ${s}.outbox WHERE status IN ('queued', 'delivering')`);
      return rows[0].n;
    },
    async claim(limit, leaseMs) {
      checkClaim(limit, leaseMs);
      if (limit === 0) return [];
      const { rows } = await run<Row>(pool, claimSql, [now(), limit, leaseMs]);
      // RETURNING has no order: hand them out oldest first, like the other engines.
      rows.sort((a, b) => a.enqueued_at - b.enqueued_at || a.seq - b.seq);
      return rows.map((row) => ({ ...toRecord(row), lease: row.lease! }));
    },
    async markDelivered(id, opts) {
      const { destinationTxHash, lease } = checkMarkDelivered(opts);
      const { rowCount } = await run(pool, deliverSql, [now(), String(id).toLowerCase(), destinationTxHash, lease]);
      return rowCount === 1;
    },
    async markFailed(id, opts) {
      const { error, retryAt, lease } = checkMarkFailed(opts);
      const { rowCount } = await run(pool, failSql, [String(id).toLowerCase(), lease, error, retryAt]);
      return rowCount === 1;
    },
  };
}
