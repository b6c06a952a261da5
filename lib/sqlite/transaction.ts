/**
 * All-or-nothing writes. Outside a transaction: BEGIN IMMEDIATE … COMMIT, ROLLBACK on any throw
 * (IMMEDIATE takes the write lock up front, so a concurrent writer waits at BEGIN instead of
 * failing with SQLITE_BUSY halfway through a batch). Inside one (the worker's group-commit
 * transaction, lib/sqlite/worker.ts): a SAVEPOINT, so a failing batch rolls back only itself and
 * the others of the group still commit. Statements are prepared once.
 */
import type { DatabaseSync } from 'node:sqlite';

export type Transaction = <T>(work: () => T) => T;

export function createTransaction(db: DatabaseSync): Transaction {
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const rollback = db.prepare('ROLLBACK');
  const savepoint = db.prepare('SAVEPOINT batch');
  const release = db.prepare('RELEASE batch');
  const rollbackTo = db.prepare('ROLLBACK TO batch');
  return (work) => {
    const nested = db.isTransaction;
    (nested ? savepoint : begin).run();
    try {
      const result = work();
      (nested ? release : commit).run();
      return result;
    } catch (err) {
      // SQLite rolls back the whole transaction by itself on some errors (SQLITE_FULL,
      // SQLITE_IOERR…), leaving no savepoint: a second ROLLBACK would throw and hide this error.
      if (db.isTransaction && nested) {
        rollbackTo.run();
        release.run();
      } else if (db.isTransaction) {
        rollback.run();
      }
      throw err;
    }
  };
}
