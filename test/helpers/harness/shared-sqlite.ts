/**
 * One SQLite store on a file, shared by the tests of a test file that each want an empty store
 * of their own. Opening a store starts its worker thread (docs/design.md#storage), about 80 ms of
 * CPU; a suite that opened one per test spent most of its CPU there. Tests that are about opening,
 * migrating, crashing, closing or the file itself open their own store instead.
 *
 * Sharing is safe, whatever the order of the tests:
 * - node:test runs the tests of a file one at a time, and lease() refuses a second lease while
 *   one is held, so two tests never use the store at once;
 * - lease() first waits until every write sent by the previous holder is committed (a write sent
 *   after them, through each connection), then empties every table through a connection of its
 *   own (plain node:sqlite on the same file; WAL lets the store's connections see it at once),
 *   so each test starts from an empty database, as a fresh file would be;
 * - the store's worker reads the holder's fake clock: the store is opened on a time buffer of its
 *   own, into which the holder's clock writes its time until release (FakeClock.shareTimeWith).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after } from 'node:test';
import { systemClock } from '../../../lib/clock.ts';
import { openSqliteStore, type SqliteStore } from '../../../lib/sqlite/index.ts';
import { createSharedTime, readSharedTime } from '../../../lib/sqlite/shared-time.ts';
import type { FakeClock } from '../fakes/clock.ts';

export interface SqliteLease {
  store: SqliteStore;
  /** Another connection to the same file (a replica): shared too, at most `connections` of them. */
  connect(): Promise<SqliteStore>;
  /** Ends the lease; the store stays open for the next test. */
  release(): void;
}

export interface SharedSqlite {
  lease(clock: FakeClock): Promise<SqliteLease>;
}

/**
 * A shared store on a file in a temporary folder named after `prefix`, closed and removed after
 * the file's tests. Call it when the test file loads (not inside a test or hook, whose after()
 * would end it with that test); the store itself opens at the first lease.
 */
export function sharedSqlite(prefix: string): SharedSqlite {
  const dir = mkdtempSync(join(tmpdir(), `relayer-${prefix}-`));
  const file = join(dir, `${prefix}.db`);
  const time = createSharedTime(0);
  const clock = { ...systemClock, now: () => readSharedTime(time), sharedTime: time };
  const stores: SqliteStore[] = [];
  let opening: Promise<SqliteStore> | undefined;
  let cleaner: DatabaseSync | undefined;
  let held = false;

  after(async () => {
    for (const store of stores) await store.close();
    cleaner?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function open(): Promise<SqliteStore> {
    const store = await openSqliteStore(file, { clock });
    stores.push(store);
    return store;
  }

  return {
    async lease(testClock) {
      if (held) throw new Error(`the shared SQLite store of ${prefix} is already leased: release it first`);
      held = true;
      const stop = testClock.shareTimeWith(time);
      let store: SqliteStore;
      try {
        opening ??= open();
        store = await opening;
        // Every write of the previous holder, on every connection, is committed before the tables are emptied.
        await Promise.all(stores.map((s) => s.outbox.enqueue([])));
        cleaner ??= new DatabaseSync(file, { timeout: 5_000 });
        const tables = cleaner
          .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
          .all() as { name: string }[];
        for (const { name } of tables) cleaner.exec(`DELETE FROM "${name}"`);
      } catch (error) {
        // This test fails with the reason; the next one may lease again.
        stop();
        held = false;
        throw error;
      }
      let connections = 0;
      return {
        store,
        async connect() {
          // The first store is the holder's own; the others are handed out in turn.
          connections++;
          return stores[connections] ?? (await open());
        },
        release() {
          stop();
          held = false;
        },
      };
    },
  };
}
