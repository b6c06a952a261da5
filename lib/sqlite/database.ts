/**
 * Opens the database and builds its tables. Runs only inside the store's worker thread
 * (lib/sqlite/worker.ts): every method here is synchronous node:sqlite, which the main thread
 * never calls (docs/design.md#storage).
 *
 * Durability: WAL with synchronous=FULL. WAL alone (even with synchronous=NORMAL) keeps every
 * committed transaction across a process crash or SIGKILL, since the commit is in the OS page
 * cache; FULL also fsyncs the WAL at each commit, so an acknowledged relay survives power loss
 * or a kernel crash too. The worker commits concurrent requests together (group commit), so the
 * fsync is paid once per group, not once per request.
 */
import { DatabaseSync } from 'node:sqlite';
import type { Clock } from '../clock.ts';
import { SchemaVersionError } from '../errors/classes.ts';
import { createSqliteMerkleTable, type MerkleTable } from './merkle.ts';
import { createSqliteOutbox, type SqliteOutbox } from './outbox.ts';
import { createSqliteVersions, type SqliteVersions } from './versions.ts';
import { migrate, readSchemaVersion, SCHEMA_VERSION } from './schema.ts';
import { createTransaction, type Transaction } from './transaction.ts';

/** The objects whose methods the worker serves, by name (the proxy's `target`). */
export interface Tables {
  outbox: SqliteOutbox;
  /** The outbox's versioned reads (status push). */
  versions: SqliteVersions;
  merkle: MerkleTable;
  /** GET /ready: a query answered means the thread and the database answer. */
  health: { ping(): true };
}

export interface Database {
  db: DatabaseSync;
  tables: Tables;
  /** The tables' all-or-nothing wrapper; the worker's group commit uses it too. */
  transaction: Transaction;
}

function configure(db: DatabaseSync, path: string): void {
  // An in-memory database has no file to log ahead of; it keeps its "memory" journal.
  if (path !== ':memory:' && path !== '') db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
}

/**
 * Opens (creating if needed) and migrates the database at `path` (a file or ":memory:"),
 * waiting up to `openTimeoutMs` for another connection's lock while migrating.
 */
export function openDatabase(path: string, clock: Clock, openTimeoutMs: number): Database {
  const db = new DatabaseSync(path, { timeout: openTimeoutMs });
  const transaction = createTransaction(db);
  try {
    // Refuse a newer schema before touching the file's journal mode.
    const found = readSchemaVersion(db);
    if (found > SCHEMA_VERSION) throw new SchemaVersionError(found, SCHEMA_VERSION);
    configure(db, path);
    migrate(db, transaction);
    // From here on no statement waits inside SQLite: a busy lock is retried by the worker's own
    // loop, which keeps answering reads meanwhile (lib/sqlite/worker.ts).
    db.exec('PRAGMA busy_timeout = 0');
  } catch (err) {
    db.close();
    throw err;
  }
  const select1 = db.prepare('SELECT 1');
  return {
    db,
    transaction,
    tables: {
      outbox: createSqliteOutbox(db, transaction, clock),
      versions: createSqliteVersions(db),
      merkle: createSqliteMerkleTable(db, transaction),
      health: {
        ping() {
          select1.get();
          return true;
        },
      },
    },
  };
}
