/**
 * The relay outbox (docs/design.md#enqueue, #postgresql, docs/outbox.md#message-lifecycle) on PostgreSQL,
 * shared by every replica and every delivery worker. A batch is one INSERT … ON CONFLICT (id) DO
 * NOTHING over unnest()ed arrays: atomic, idempotent by id (also within the batch), one round
 * trip. claim() picks rows with FOR UPDATE SKIP LOCKED inside the UPDATE that leases them, so
 * concurrent workers on any replica never get the same message and never wait on each other's rows.
 *
 * Time for leases is the database's clock read while the statement runs (clock_timestamp(), so a
 * statement that waited for a row lock reads it after the wait), never the time the call was sent:
 * replicas with skewed clocks agree on every lease. An injected Clock (tests) replaces it with its
 * reading at the time of the call.
 *
 * Batches and consumer calls are checked by the same helpers as the memory and SQLite engines
 * (lib/outbox/types.ts), so all three refuse the same input with the same error; the table's CHECK
 * constraints are the second line. Raw bytes travel as hex text, which every driver passes the
 * same way.
 */
import type { Clock } from '../clock.ts';
import { bytesToHex, parseHex } from '../codec/hex.ts';
import {
  checkClaim,
  claimedMessage,
  checkExtend,
  checkMarkDelivered,
  checkMarkFailed,
  recordFromRow,
  validateOutboxBatch,
  type Outbox,
  type Asynchronous,
  type OutboxMessage,
  type OutboxRecord,
  type OutboxRow,
} from '../outbox/index.ts';
import { batchPaymentColumns, createPostgresGasPayments, gasPaymentInsertSql } from './gas-payments.ts';
import { createPostgresJournal } from './journal.ts';
import { createPostgresListing } from './outbox-listing.ts';
import { createPostgresPrune } from './retention.ts';
import { createPostgresSignerLeases } from './signer-leases.ts';
import { run, type PgPool } from './pool.ts';

/**
 * What requeue() (and requeueFailed()) set on a failed row: queued, claimable at once, with a fresh
 * attempt count (failures, pending polls, expired leases back to 0).
 */
const REDRIVE_SET =
  "status = 'queued', retry_at = NULL, lease_expiries = 0, failures = 0, pending_since = NULL, polls = 0";

/** The Outbox with its asynchronous return types. */
export type PostgresOutbox = Asynchronous<Outbox>;

/** origin, destination, nonce and seq arrive as float8 (see columns()); raw as hex text. */
export interface Row extends OutboxRow {
  raw: string;
  lease: string | null;
  seq: number;
}

/** The columns of Row from table alias `t`: numbers as float8 (drivers return bigint as a string), raw as hex. */
export function columns(t: string): string {
  return `${t}.id, ${t}.origin_chain, ${t}.tx_hash, ${t}.origin::float8 AS origin, ${t}.destination::float8 AS destination,
    ${t}.nonce::float8 AS nonce, encode(${t}.raw, 'hex') AS raw, ${t}.enqueued_at, ${t}.status, ${t}.attempts, ${t}.lease_expiries, ${t}.last_error,
    ${t}.delivered_at, ${t}.destination_tx_hash, ${t}.claimed_until, ${t}.retry_at, ${t}.lease, ${t}.seq::float8 AS seq,
    ${t}.failures, ${t}.pending_since, ${t}.polls,
    ${t}.required_gas::text AS required_gas, ${t}.gas_spent::text AS gas_spent, ${t}.gas_spent_wei::text AS gas_spent_wei`;
}

/**
 * "now" in ms where it is evaluated: `$n` is the injected clock's reading or null, and null reads
 * the database's clock at that moment (volatile: a single-row UPDATE that waited for the row's
 * lock evaluates it again after the wait, with its WHERE).
 */
function nowSql(n: number): string {
  return `coalesce($${n}::double precision, extract(epoch from clock_timestamp()) * 1000)`;
}

export function toRecord(row: Row): OutboxRecord {
  return recordFromRow(row, parseHex(`0x${row.raw}`)!);
}

/**
 * A batch as the insert's eight array parameters (id, origin chain, tx hash, origin, destination,
 * nonce, raw hex without 0x, enqueued at): one round trip whatever the batch's size. The outbox's
 * enqueue and the relay hot path's completing statement both send this.
 */
export function outboxColumns(batch: readonly OutboxMessage[]): unknown[][] {
  const column = <T>(pick: (m: OutboxMessage) => T) => batch.map(pick);
  return [
    column((m) => m.id),
    column((m) => m.originChain),
    column((m) => m.txHash),
    column((m) => m.origin),
    column((m) => m.destination),
    column((m) => m.nonce),
    column((m) => bytesToHex(m.raw).slice(2)),
    column((m) => m.enqueuedAt),
  ];
}

/**
 * The insert of a batch given as outboxColumns() in parameters `$first` to `$first + 7`. WITH
 * ORDINALITY … ORDER BY: identity values follow the batch's order (its tie-break).
 */
export function outboxInsertSql(s: string, first: number): string {
  const [id, chain, tx, origin, destination, nonce, raw, at] = Array.from({ length: 8 }, (_, i) => `$${first + i}`);
  return `
    INSERT INTO ${s}.outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at)
    SELECT id, origin_chain, tx_hash, origin, destination, nonce, decode(raw, 'hex'), enqueued_at
    FROM unnest(${id}::text[], ${chain}::text[], ${tx}::text[], ${origin}::bigint[], ${destination}::bigint[], ${nonce}::bigint[], ${raw}::text[], ${at}::float8[])
      WITH ORDINALITY AS b(id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, n)
    ORDER BY n
    ON CONFLICT (id) DO NOTHING`;
}

export function createPostgresOutbox(pool: PgPool, s: string, clock?: Clock): PostgresOutbox {
  const now = () => clock?.now() ?? null;

  const insertSql = `WITH gas AS (${gasPaymentInsertSql(s, 9)}) ${outboxInsertSql(s, 1)}`;
  // One reading of the time for the whole claim (the CTE t is evaluated once). Picking with
  // SKIP LOCKED never waits for a lock, so it is read once the statement runs. `dead` fails the
  // expired rows that reached maxLeaseExpiries ($4, null: none); `picked` leaves them out, since both
  // see the same snapshot. Its text is deadLetterError's (lib/outbox/types.ts).
  const claimSql = `
    WITH t AS (SELECT ${nowSql(1)} AS now),
    dead AS (
      UPDATE ${s}.outbox d SET status = 'failed', lease_expiries = d.lease_expiries + 1, claimed_until = NULL, lease = NULL,
        last_error = 'dead letter: its lease expired ' || (d.lease_expiries + 1) || ' times with no outcome recorded (maxLeaseExpiries ' || $4::integer || ')'
      WHERE d.id IN (
        SELECT q.id FROM ${s}.outbox q, t
        WHERE $4::integer IS NOT NULL AND q.status = 'delivering' AND q.claimed_until <= t.now AND q.lease_expiries >= $4::integer
        FOR UPDATE OF q SKIP LOCKED)
      RETURNING d.id
    ),
    picked AS (
      SELECT q.id FROM ${s}.outbox q, t
      WHERE (q.status = 'queued' AND (q.retry_at IS NULL OR q.retry_at <= t.now))
         OR (q.status = 'delivering' AND q.claimed_until <= t.now AND ($4::integer IS NULL OR q.lease_expiries < $4::integer))
      ORDER BY q.enqueued_at, q.seq LIMIT $2
      FOR UPDATE OF q SKIP LOCKED
    )
    UPDATE ${s}.outbox o SET status = 'delivering', claimed_until = t.now + $3, retry_at = NULL,
      attempts = o.attempts + 1, lease_expiries = o.lease_expiries + CASE WHEN o.status = 'delivering' THEN 1 ELSE 0 END,
      lease = gen_random_uuid()::text
    FROM t, picked
    WHERE o.id = picked.id
    RETURNING ${columns('o')}`;
  // Only the holder of the lease, expired or not, as long as nobody claimed the message since.
  const extendSql = `
    UPDATE ${s}.outbox SET claimed_until = ${nowSql(1)} + $3
    WHERE id = $2 AND status = 'delivering' AND lease = $4`;
  // The journal's slot holding the delivering transaction is settled in the same statement.
  const deliverSql = `
    WITH d AS (
      UPDATE ${s}.outbox SET status = 'delivered', delivered_at = ${nowSql(1)}, destination_tx_hash = $3,
        claimed_until = NULL, retry_at = NULL, lease = NULL
      WHERE id = $2 AND status = 'delivering' AND lease = $4
      RETURNING id
    ),
    slot AS (
      SELECT j.chain_id, j.signer, j.nonce FROM ${s}.outbox_journal j, d
      WHERE j.hash = lower($3) AND j.message_id = d.id AND j.closed_at IS NULL
    ),
    settled AS (
      UPDATE ${s}.outbox_journal j SET closed_at = ${nowSql(1)},
        outcome = CASE WHEN j.hash = lower($3) THEN 'mined' ELSE 'replaced' END
      FROM slot WHERE j.chain_id = slot.chain_id AND j.signer = slot.signer AND j.nonce = slot.nonce AND j.closed_at IS NULL
      RETURNING 1
    )
    SELECT count(*)::integer AS n FROM d`;
  // $5 true: the attempt-state columns stay as they are (a release).
  const failSql = `
    UPDATE ${s}.outbox SET status = CASE WHEN $4::float8 IS NULL THEN 'failed' ELSE 'queued' END,
      retry_at = $4, last_error = $3, claimed_until = NULL, lease = NULL,
      failures = CASE WHEN $5 THEN failures ELSE $6::integer END,
      pending_since = CASE WHEN $5 THEN pending_since ELSE $7::float8 END,
      polls = CASE WHEN $5 THEN polls ELSE $8::integer END
    WHERE id = $1 AND status = 'delivering' AND lease = $2`;
  const requeueSql = `UPDATE ${s}.outbox SET ${REDRIVE_SET} WHERE id = $1 AND status = 'failed'`;

  return {
    ...createPostgresGasPayments(pool, s),
    async enqueue(batch) {
      validateOutboxBatch(batch);
      if (batch.length === 0) return 0;
      const { rowCount } = await run(pool, insertSql, [...outboxColumns(batch), ...batchPaymentColumns(batch)]);
      return rowCount ?? 0;
    },
    async get(id) {
      const { rows } = await run<Row>(pool, `SELECT ${columns('o')} FROM ${s}.outbox o WHERE id = $1`, [
        String(id).toLowerCase(),
      ]);
      return rows.length === 0 ? undefined : toRecord(rows[0]);
    },
    async byTx(originChain, txHash) {
      const { rows } = await run<Row>(
        pool,
        `SELECT ${columns('o')} FROM ${s}.outbox o WHERE origin_chain = $1 AND tx_hash = $2 ORDER BY seq`,
        [originChain, String(txHash).toLowerCase()],
      );
      return rows.map(toRecord);
    },
    async depth() {
      const { rows } = await run<{ n: number }>(
        pool,
        `SELECT count(*)::integer AS n FROM ${s}.outbox WHERE status IN ('queued', 'delivering')`,
      );
      return rows[0].n;
    },
    async claim(limit, leaseMs, opts) {
      const maxLeaseExpiries = checkClaim(limit, leaseMs, opts);
      if (limit === 0) return [];
      const { rows } = await run<Row>(pool, claimSql, [now(), limit, leaseMs, maxLeaseExpiries]);
      // RETURNING has no order: hand them out oldest first, like the other engines.
      rows.sort((a, b) => a.enqueued_at - b.enqueued_at || a.seq - b.seq);
      return rows.map((row) => claimedMessage(toRecord(row), row.lease!, maxLeaseExpiries));
    },
    async extend(id, lease, leaseMs) {
      const token = checkExtend(lease, leaseMs);
      const { rowCount } = await run(pool, extendSql, [now(), String(id).toLowerCase(), leaseMs, token]);
      return rowCount === 1;
    },
    async markDelivered(id, opts) {
      const { destinationTxHash, lease } = checkMarkDelivered(opts);
      const { rows } = await run<{ n: number }>(pool, deliverSql, [
        now(),
        String(id).toLowerCase(),
        destinationTxHash,
        lease,
      ]);
      return rows[0].n === 1;
    },
    async markFailed(id, opts) {
      const { error, retryAt, lease, state } = checkMarkFailed(opts);
      const { rowCount } = await run(pool, failSql, [
        String(id).toLowerCase(),
        lease,
        error,
        retryAt,
        state === null,
        state?.failures ?? 0,
        state?.pendingSince ?? null,
        state?.polls ?? 0,
      ]);
      return rowCount === 1;
    },
    async requeue(id) {
      const { rowCount } = await run(pool, requeueSql, [String(id).toLowerCase()]);
      return rowCount === 1;
    },
    ...createPostgresJournal({ pool, schema: s, now }),
    ...createPostgresSignerLeases(pool, s, now),
    ...createPostgresListing({ pool, schema: s, columns: columns('o'), toRecord, redriveSet: REDRIVE_SET }),
    prune: createPostgresPrune(pool, s),
  };
}
