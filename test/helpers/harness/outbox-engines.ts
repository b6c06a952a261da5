/**
 * Every outbox engine (memory, SQLite on a file, PostgreSQL), each opened on the test's fake
 * clock, so the status endpoints and the client run on all of them
 * (docs/outbox.md#message-lifecycle). The SQLite store (one file) and the PostgreSQL schema are
 * shared by the tests of the test file and emptied for each (test/helpers/harness/shared-sqlite.ts and
 * test/helpers/harness/shared-postgres.ts say why that is safe), removed when the file's tests end.
 */
import { createMemoryOutbox, type Outbox } from '../../../lib/outbox/index.ts';
import { openPostgresStore } from '../../../lib/postgres/index.ts';
import { testConfig } from '../fixtures/config.ts';
import type { FakeClock } from '../fakes/clock.ts';
import { sharedPostgres } from './shared-postgres.ts';
import { sharedSqlite } from './shared-sqlite.ts';

export interface OutboxEngine {
  name: string;
  open(clock: FakeClock): Promise<{ outbox: Outbox; close(): void | Promise<void> }>;
}

/** The engines; `prefix` names the temporary folder and its database file. Call it when the test file loads. */
export function outboxEngines(prefix: string): OutboxEngine[] {
  const shared = sharedSqlite(prefix);
  const schema = sharedPostgres();
  return [
    { name: 'memory outbox', open: async (clock) => ({ outbox: createMemoryOutbox({ clock }), close() {} }) },
    {
      name: 'SQLite outbox (file)',
      async open(clock) {
        const { store, release } = await shared.lease(clock);
        return { outbox: store.outbox, close: release };
      },
    },
    {
      name: 'PostgreSQL outbox',
      async open(clock) {
        const { pool, schema: name, release } = await schema.lease();
        const store = await openPostgresStore(pool, { relayApi: testConfig().relayApi, schema: name, clock });
        return {
          outbox: store.outbox,
          async close() {
            await store.close();
            release();
          },
        };
      },
    },
  ];
}
