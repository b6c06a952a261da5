/**
 * The node:sqlite store (`./sqlite` export, docs/design.md#sqlite): merkle tree insertions and
 * the relay outbox in one database file, behind the asynchronous RelayerStore interface.
 *
 * One worker thread owns the connection (lib/sqlite/worker.ts): disk flushes and lock waits stop
 * that thread, never the server's event loop. Writes are group-committed (one transaction and one
 * fsync for all the writes waiting), each acknowledged only after the fsync that covers it, with
 * WAL and synchronous=FULL (lib/sqlite/database.ts). This module never loads node:sqlite itself.
 */
import { createChangeHub, type ChangeHub } from '../outbox/change-feed.ts';
import { systemClock, type Clock } from '../clock.ts';
import { SchemaVersionError } from '../errors/classes.ts';
import type { RelayerStore } from '../store/bundle.ts';
import type { MerkleStore } from '../types.ts';
import { startWorker, type Proxied } from './client.ts';
import { packMerkle, type MerkleTable } from './merkle.ts';
import type { SqliteOutbox } from './outbox.ts';
import { SCHEMA_VERSION } from './schema.ts';
import type { SqliteVersions } from './versions.ts';

export { SCHEMA_VERSION, SchemaVersionError, type SqliteOutbox, type SqliteVersions, type Proxied };
export * from '../errors/family.ts';

/** The SQLite store: a RelayerStore, plus what tests and tools read directly. */
export interface SqliteStore extends RelayerStore {
  /**
   * The outbox, every method of lib/sqlite/outbox.ts answered by the worker, and its change feed
   * (lib/outbox/change-feed.ts): what the worker thread sees change in the file, whoever wrote it.
   */
  outbox: Proxied<SqliteOutbox> & Proxied<SqliteVersions> & { readonly changes: ChangeHub };
  merkle: MerkleStore;
  merkleRowCount(): Promise<number>;
  /**
   * Resolves once close() has ended the store's worker thread. Rejects when the thread ends any
   * other way (a crash, out of memory): from then on every call rejects at once with the same
   * error, a RelayError `store_unavailable`, and the store stays unusable; the process should be
   * restarted (relayer-server exits with code 1) or the store opened again. Nothing needs to
   * listen: an ignored rejection does not end the process.
   */
  readonly closed: Promise<void>;
}

export interface OpenSqliteStoreOptions {
  /**
   * The time the tables see (enqueue times, leases); the injected clock of the server. The
   * worker thread reads it when a call runs inside its transaction (lock held), not when the
   * call was sent: through `clock.sharedTime` when the clock has one (the tests' fake clock),
   * else as the reading at sending plus the wall time elapsed since.
   */
  clock?: Clock;
  /**
   * Milliseconds a write waits for another connection's write lock (an operator's sqlite3 shell,
   * a backup) before the request answers 503 store_unavailable with nothing written. Default 2 s.
   */
  busyTimeoutMs?: number;
  /** Milliseconds any store call may take in all before it is given up. Default busyTimeoutMs + 5 s. */
  callTimeoutMs?: number;
  /**
   * How often the change feed looks for other connections' commits (PRAGMA data_version), once
   * something follows it. Default 100 ms. The store's own writes are seen as they commit.
   */
  changeCheckMs?: number;
}

export const DEFAULT_CHANGE_CHECK_MS = 100;

export const DEFAULT_BUSY_TIMEOUT_MS = 2_000;

/**
 * Opens (creating if needed) and migrates the database at `path` (a file or ":memory:") in the
 * store's worker thread. Rejects with SchemaVersionError for a database of a newer release.
 */
export async function openSqliteStore(path: string, options: OpenSqliteStoreOptions = {}): Promise<SqliteStore> {
  const lockTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  const worker = await startWorker({
    path,
    clock: options.clock ?? systemClock,
    lockTimeoutMs,
    callTimeoutMs: options.callTimeoutMs ?? lockTimeoutMs + 5_000,
  });
  const table = worker.proxy<MerkleTable>('merkle');
  const changes: ChangeHub = createChangeHub(() =>
    worker.watch(options.changeCheckMs ?? DEFAULT_CHANGE_CHECK_MS, (ids, txs) => changes.publish({ ids, txs })),
  );
  return {
    outbox: Object.assign(worker.proxy<SqliteOutbox>('outbox'), worker.proxy<SqliteVersions>('versions'), { changes }),
    merkle: {
      insertMerkle(records) {
        const packed = packMerkle(records);
        return packed === undefined
          ? table.insert(records)
          : (worker.call(
              'merkle',
              'insertPacked',
              [packed],
              [packed.numbers.buffer, packed.ids.buffer],
            ) as Promise<number>);
      },
      listMerkle: table.list,
    },
    merkleRowCount: table.count,
    async ping() {
      await worker.call('health', 'ping', []);
    },
    close: () => worker.close(),
    closed: worker.closed,
  };
}
