/**
 * The operator's side of the PostgreSQL outbox (docs/outbox.md#listing-and-bulk-requeue): list()
 * and requeueFailed(), beside the consumer API of lib/postgres/outbox.ts, which hands in how it
 * reads a row and how requeue() sets one back to queued, so both requeue the same way.
 */
import { checkList, checkRequeueFailed, type Asynchronous, type Outbox, type OutboxRecord } from '../outbox/index.ts';
import { run, type PgPool } from './pool.ts';

export interface PostgresListingParts<Row> {
  pool: PgPool;
  /** The quoted schema name. */
  schema: string;
  /** The select list of a row from table alias `o`, and its record. */
  columns: string;
  toRecord: (row: Row) => OutboxRecord;
  /** requeue()'s SET clause. */
  redriveSet: string;
}

/**
 * list()'s statements (parameters: destination, limit, then the status), one per shape, so each
 * reads its index in order and stops at the limit (docs/outbox.md#listing-and-bulk-requeue): a
 * status through outbox_status, every one not delivered through outbox_undelivered (schema
 * migration 13); neither grows with the delivered rows.
 */
export function listSql(s: string, columns: string): { status: string; undelivered: string } {
  const order = 'AND ($1::bigint IS NULL OR o.destination = $1::bigint) ORDER BY o.enqueued_at, o.seq LIMIT $2';
  return {
    status: `SELECT ${columns} FROM ${s}.outbox o WHERE o.status = $3::text ${order}`,
    undelivered: `SELECT ${columns} FROM ${s}.outbox o WHERE o.status <> 'delivered' ${order}`,
  };
}

export function createPostgresListing<Row>(
  parts: PostgresListingParts<Row>,
): Pick<Asynchronous<Outbox>, 'list' | 'requeueFailed'> {
  const { pool, schema: s, columns, toRecord, redriveSet } = parts;
  const { status: statusSql, undelivered: undeliveredSql } = listSql(s, columns);
  // SKIP LOCKED: two operators requeueing at once never take the same row.
  const requeueFailedSql = `
    WITH picked AS (
      SELECT id FROM ${s}.outbox
      WHERE status = 'failed' AND ($1::bigint IS NULL OR destination = $1::bigint)
      ORDER BY enqueued_at, seq LIMIT $2
      FOR UPDATE SKIP LOCKED
    )
    UPDATE ${s}.outbox o SET ${redriveSet}
    FROM picked WHERE o.id = picked.id AND o.status = 'failed'
    RETURNING o.id, o.enqueued_at, o.seq::float8 AS seq`;

  return {
    async list(opts) {
      const { status, destination, limit } = checkList(opts);
      const { rows } =
        status === null
          ? await run<Row & object>(pool, undeliveredSql, [destination, limit])
          : await run<Row & object>(pool, statusSql, [destination, limit, status]);
      return rows.map(toRecord);
    },
    async requeueFailed(opts) {
      const { destination, limit } = checkRequeueFailed(opts);
      const { rows } = await run<{ id: string; enqueued_at: number; seq: number }>(pool, requeueFailedSql, [
        destination,
        limit,
      ]);
      // RETURNING has no order: oldest first, like the other engines.
      rows.sort((a, b) => a.enqueued_at - b.enqueued_at || a.seq - b.seq);
      return rows.map((row) => row.id);
    },
  };
}
