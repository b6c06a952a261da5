/**
 * The outbox's versioned reads on node:sqlite (docs/design.md#change-feed): get and byTx with
 * each row's change version, which schema migration 7's triggers keep. A table of its own for the
 * store's worker, beside the outbox's.
 */
import type { DatabaseSync } from 'node:sqlite';
import { recordFromRow, type Synchronous, type VersionedReads, type VersionedRecord } from '../outbox/index.ts';
import { COLUMNS, type Row } from './outbox.ts';

/** The versioned reads with their synchronous return types. */
export type SqliteVersions = Synchronous<VersionedReads>;

const toVersioned = (row: Row & { version: number }): VersionedRecord => ({
  ...recordFromRow(row, row.raw),
  version: row.version,
});

export function createSqliteVersions(db: DatabaseSync): SqliteVersions {
  const one = db.prepare(`SELECT ${COLUMNS}, version FROM outbox WHERE id = ?`);
  const ofTx = db.prepare(
    `SELECT ${COLUMNS}, version FROM outbox WHERE origin_chain = ? AND tx_hash = ? ORDER BY rowid`,
  );
  return {
    getVersioned(id) {
      const row = one.get(String(id).toLowerCase()) as (Row & { version: number }) | undefined;
      return row === undefined ? undefined : toVersioned(row);
    },
    byTxVersioned(originChain, txHash) {
      return (ofTx.all(originChain, String(txHash).toLowerCase()) as unknown as (Row & { version: number })[]).map(
        toVersioned,
      );
    },
  };
}
