/**
 * Every outbox engine (memory, SQLite on a file, PostgreSQL in a fresh schema), each opened on the
 * test's fake clock, so the status endpoints and the client run on all of them
 * (docs/design.md#message-lifecycle). The SQLite files live in one temporary folder per test
 * file, removed when the file's tests end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { createMemoryOutbox, type Outbox } from '../../lib/outbox.ts';
import { openPostgresStore } from '../../lib/postgres/index.ts';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { testConfig } from './config.ts';
import type { FakeClock } from './fake-clock.ts';
import { testSchema } from './postgres.ts';

export interface OutboxEngine {
  name: string;
  open(clock: FakeClock): Promise<{ outbox: Outbox; close(): void | Promise<void> }>;
}

/** The engines; `prefix` names the temporary folder and its database files. */
export function outboxEngines(prefix: string): OutboxEngine[] {
  const dir = mkdtempSync(join(tmpdir(), `relayer-${prefix}-`));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let files = 0;
  return [
    { name: 'memory outbox', open: async (clock) => ({ outbox: createMemoryOutbox(clock), close() {} }) },
    {
      name: 'SQLite outbox (file)',
      async open(clock) {
        const store = await openSqliteStore(join(dir, `${prefix}-${++files}.db`), { clock });
        return { outbox: store.outbox, close: () => store.close() };
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
