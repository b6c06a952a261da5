/**
 * The node:sqlite store (`./sqlite` export, DESIGN.md §7): merkle tree insertions and the relay
 * outbox in one database file.
 *
 * Durability: WAL with synchronous=FULL. WAL alone (even with synchronous=NORMAL) keeps every
 * committed transaction across a process crash or SIGKILL, since the commit is in the OS page
 * cache; FULL also fsyncs the WAL at each commit, so an acknowledged relay survives power loss
 * or a kernel crash too. The price is one fsync per commit, i.e. per request (merkle batches
 * are one transaction), far below the default rate limit of 100 relays per minute.
 * busy_timeout lets a second process (an operator's sqlite3 shell, a backup) hold the lock
 * briefly; it blocks the event loop while waiting, so keep other writers rare.
 */
import { DatabaseSync } from 'node:sqlite';
import { systemClock, type Clock } from '../clock.ts';
import type { MerkleInsertion } from '../types.ts';
import { createMerkleTable } from './merkle.ts';
import { createSqliteOutbox, type SqliteOutbox } from './outbox.ts';
import { migrate, readSchemaVersion, SCHEMA_VERSION, SchemaVersionError } from './schema.ts';
import { createTransaction } from './transaction.ts';

export { SCHEMA_VERSION, SchemaVersionError, type SqliteOutbox };

export interface RelayerStore {
  /** The relay outbox; synchronous, usable wherever an Outbox or RelayQueue is expected. */
  outbox: SqliteOutbox;
  /** One transaction; INSERT OR REPLACE on (chain, leaf_index). Returns rows written. */
  insertMerkle(records: readonly MerkleInsertion[]): number;
  /** Inclusive range, ordered by leaf_index. */
  listMerkle(domain: number, start: number, end: number): MerkleInsertion[];
  merkleRowCount(): number;
  /** Closes the database; later calls do nothing. */
  close(): void;
}

export interface OpenStoreOptions {
  /** The outbox's time: claim leases, retryAt checks, deliveredAt. Tests pass a fake clock. */
  clock?: Clock;
  /** Milliseconds to wait for another connection's lock before failing with SQLITE_BUSY. */
  busyTimeoutMs?: number;
}

function configure(db: DatabaseSync, path: string): void {
  // An in-memory database has no file to log ahead of; it keeps its "memory" journal.
  if (path !== ':memory:' && path !== '') db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
}

/** Opens (creating if needed) and migrates the database at `path` (a file or ":memory:"). */
export function openStore(path: string, options: OpenStoreOptions = {}): RelayerStore {
  const db = new DatabaseSync(path, { timeout: options.busyTimeoutMs ?? 5_000 });
  try {
    // Refuse a newer schema before touching the file's journal mode.
    const found = readSchemaVersion(db);
    if (found > SCHEMA_VERSION) throw new SchemaVersionError(found, SCHEMA_VERSION);
    configure(db, path);
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  const transaction = createTransaction(db);
  const merkle = createMerkleTable(db, transaction);
  const outbox = createSqliteOutbox(db, transaction, options.clock ?? systemClock);
  let open = true;
  return {
    outbox,
    insertMerkle: merkle.insert,
    listMerkle: merkle.list,
    merkleRowCount: merkle.count,
    close() {
      if (!open) return;
      open = false;
      db.close();
    },
  };
}
