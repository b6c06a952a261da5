/**
 * The dedup, rate-limit and merkle contracts on every engine that has them: the per-process
 * memory engines, SQLite on a file, and PostgreSQL on a real server (test/helpers/postgres.ts).
 * The outbox contract runs from test/outbox.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { createDedupCache } from '../lib/dedup.ts';
import { createMemoryMerkleStore } from '../lib/merkle.ts';
import { openPostgresStore, type PostgresStoreOptions } from '../lib/postgres/index.ts';
import { createTokenBucket } from '../lib/rate-limit.ts';
import { openStore } from '../lib/sqlite/index.ts';
import { dedupContract } from './dedup-contract.ts';
import { createFakeClock, type FakeClock } from './helpers/fake-clock.ts';
import { testSchema } from './helpers/postgres.ts';
import { merkleContract } from './merkle-contract.ts';
import { rateLimitContract } from './rate-limit-contract.ts';

const WINDOW_MS = 300_000;
const CAPACITY = 20;

function relayApi(burst = 100, perMinute = 100, receiptTimeoutSeconds = 10): PostgresStoreOptions['relayApi'] {
  return { rateLimit: { burst, perMinute }, dedupWindowSeconds: WINDOW_MS / 1000, dedupCapacity: CAPACITY, receiptTimeoutSeconds };
}

async function postgresStore(clock: FakeClock, api = relayApi()) {
  const t = await testSchema();
  const store = await openPostgresStore(t.pool, { relayApi: api, schema: t.schema, clock });
  return {
    store,
    t,
    close: async () => {
      await store.close();
      await t.close();
    },
  };
}

dedupContract('memory (lib/dedup.ts)', { windowMs: WINDOW_MS, pendingMs: WINDOW_MS, capacity: CAPACITY }, async () => {
  const clock = createFakeClock();
  return { dedup: createDedupCache({ clock, windowMs: WINDOW_MS, capacity: CAPACITY }), clock, close() {} };
});

// receiptTimeoutSeconds 10: a pending reservation lives 10 s + 5 s (DESIGN.md §8).
dedupContract('PostgreSQL', { windowMs: WINDOW_MS, pendingMs: 15_000, capacity: CAPACITY }, async () => {
  const clock = createFakeClock();
  const { store, close } = await postgresStore(clock);
  return { dedup: store.dedup, clock, close };
});

rateLimitContract('memory (lib/rate-limit.ts)', async (burst, perMinute) => {
  const clock = createFakeClock();
  return { limiter: createTokenBucket({ clock, burst, perMinute }), clock, close() {} };
});

rateLimitContract('PostgreSQL', async (burst, perMinute) => {
  const clock = createFakeClock();
  const { store, close } = await postgresStore(clock, relayApi(burst, perMinute));
  return { limiter: store.rateLimiter, clock, close };
});

const dir = mkdtempSync(join(tmpdir(), 'relayer-contract-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

merkleContract('memory (lib/merkle.ts)', async () => {
  const merkle = createMemoryMerkleStore();
  return { merkle, count: async () => merkle.size(), close() {} };
});

merkleContract('SQLite :memory:', async () => {
  const store = await openStore(':memory:');
  return { merkle: store.merkle, count: () => store.merkleRowCount(), close: () => store.close() };
});

merkleContract('SQLite file (WAL)', async () => {
  const store = await openStore(join(dir, `merkle-${++files}.db`));
  return { merkle: store.merkle, count: () => store.merkleRowCount(), close: () => store.close() };
});

merkleContract('PostgreSQL', async () => {
  const { store, t, close } = await postgresStore(createFakeClock());
  const count = async () => Number((await t.pool.query(`SELECT count(*) AS n FROM "${t.schema}".merkle_insertions`)).rows[0].n);
  return { merkle: store.merkle, count, close };
});
