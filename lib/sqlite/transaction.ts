/**
 * All-or-nothing writes: BEGIN IMMEDIATE … COMMIT, ROLLBACK on any throw. IMMEDIATE takes the
 * write lock up front, so a concurrent writer waits (busy_timeout) at BEGIN instead of failing
 * with SQLITE_BUSY halfway through a batch. The three statements are prepared once.
 */
import type { DatabaseSync } from 'node:sqlite';

export type Transaction = <T>(work: () => T) => T;

export function createTransaction(db: DatabaseSync): Transaction {
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const rollback = db.prepare('ROLLBACK');
  return (work) => {
    begin.run();
    try {
      const result = work();
      commit.run();
      return result;
    } catch (err) {
      // SQLite rolls back by itself on some errors (SQLITE_FULL, SQLITE_IOERR…); a second
      // ROLLBACK would throw and hide the original error.
      if (db.isTransaction) rollback.run();
      throw err;
    }
  };
}
