/**
 * Every outbox engine (memory, SQLite on a file, PostgreSQL in a fresh schema), each opened on the
 * test's fake clock, so the status endpoints and the client run on all of them
 * (docs/design.md#message-lifecycle). The SQLite store is one file shared by the tests of the test
 * file, emptied for each (test/helpers/shared-sqlite.ts says why that is safe), removed when the
 * file's tests end.
 */
import { createMemoryOutbox, type Outbox } from '../../lib/outbox.ts';
import { openPostgresStore } from '../../lib/postgres/index.ts';
import { testConfig } from './config.ts';
import type { FakeClock } from './fake-clock.ts';
import { testSchema } from './postgres.ts';
import { sharedSqlite } from './shared-sqlite.ts';

export interface OutboxEngine {
  name: string;
  open(clock: FakeClock): Promise<{ outbox: Outbox; close(): void | Promise<void> }>;
}

/** The engines; `prefix` names the temporary folder and its database file. Call it when the test file loads. */
export function outboxEngines(prefix: string): OutboxEngine[] {
  const shared = sharedSqlite(prefix);
  return [
    { name: 'memory outbox', open: async (clock) => ({ outbox: createMemoryOutbox(clock), close() {} }) },
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
        const t = await testSchema();
        const store = await openPostgresStore(t.pool, { relayApi: testConfig().relayApi, schema: t.schema, clock });
        return { outbox: store.outbox, close: () => t.close() };
      },
    },
  ];
}
