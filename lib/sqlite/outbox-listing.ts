/**
 * The operator's side of the SQLite outbox (docs/outbox.md#listing-and-bulk-requeue): list() and
 * requeueFailed(), beside the consumer API of lib/sqlite/outbox.ts, which hands in how it reads a
 * row and requeue()'s own statement, so both requeue the same way.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { checkList, checkRequeueFailed, type OutboxRecord } from '../outbox/index.ts';
import type { Transaction } from './transaction.ts';

export interface SqliteListingParts<Row> {
  db: DatabaseSync;
  transaction: Transaction;
  /** The select list of a row, and its record. */
  columns: string;
  toRecord: (row: Row) => OutboxRecord;
  /** requeue()'s statement: one parameter, the id. */
  redrive: StatementSync;
}

/**
 * list()'s statements, one per shape, so each reads its index in order and stops at the limit
 * (docs/outbox.md#listing-and-bulk-requeue): a status through outbox_status, every one not
 * delivered through outbox_undelivered (schema migration 12); neither grows with the delivered rows.
 */
export function listSql(columns: string): { status: string; undelivered: string } {
  const order = 'AND (:destination IS NULL OR destination = :destination) ORDER BY enqueued_at, rowid LIMIT :limit';
  return {
    status: `SELECT ${columns} FROM outbox WHERE status = :status ${order}`,
    undelivered: `SELECT ${columns} FROM outbox WHERE status <> 'delivered' ${order}`,
  };
}

export function createSqliteListing<Row>(parts: SqliteListingParts<Row>) {
  const { db, transaction, columns, toRecord, redrive } = parts;
  const sql = listSql(columns);
  const selectStatus = db.prepare(sql.status);
  const selectUndelivered = db.prepare(sql.undelivered);
  const selectFailed = db.prepare(
    "SELECT id FROM outbox WHERE status = 'failed' AND (:destination IS NULL OR destination = :destination) " +
      'ORDER BY enqueued_at, rowid LIMIT :limit',
  );
  return {
    list(opts?: Parameters<typeof checkList>[0]): OutboxRecord[] {
      const { status, destination, limit } = checkList(opts);
      const rows =
        status === null
          ? selectUndelivered.all({ destination, limit })
          : selectStatus.all({ status, destination, limit });
      return (rows as unknown as Row[]).map(toRecord);
    },
    requeueFailed(opts?: Parameters<typeof checkRequeueFailed>[0]): string[] {
      const { destination, limit } = checkRequeueFailed(opts);
      return transaction(() => {
        const picked = selectFailed.all({ destination, limit }) as unknown as { id: string }[];
        for (const { id } of picked) redrive.run(id);
        return picked.map(({ id }) => id);
      });
    },
  };
}
