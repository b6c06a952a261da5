/**
 * Status reads do not starve writes (docs/operations.md, "Reads and writes"; measured in
 * BENCHMARKS.md, "Status reads and writes"): a bounded flood (waves of 150 simultaneous
 * connections on GET /relay/{id}, GET /relay?origin_chain=&tx_hash= and /metrics) against a real
 * SQLite store and a real PostgreSQL store, with relays sent in the middle of each wave. Every
 * relay answers 200 and is stored; every read answers 200. The store's reads are counted as they
 * reach it, to show the flood really had them queued in the store at once.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { openSqliteStore } from '../../../lib/sqlite/index.ts';
import type { RelayerStore } from '../../../lib/store/bundle.ts';
import { openPostgresStore } from '../../../lib/postgres/index.ts';
import { testSchema } from '../../helpers/harness/postgres.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { hyperlaneMessage, messageId, rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { httpRequest, postJson, type RawResponse } from '../../helpers/harness/http.ts';
import { startApi } from '../../helpers/harness/server.ts';
import { tempDir } from '../../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-read-flood-');

const WAVES = 4;
const READERS = 150;
const RELAYS = 20;

/** The store with its outbox's reads counted as they reach it: how many are pending at most. */
function counted(store: RelayerStore): { store: RelayerStore; maxPending(): number; reads(): number } {
  let pending = 0;
  let max = 0;
  let total = 0;
  const count =
    <A extends unknown[], R>(read: (...args: A) => R | Promise<R>) =>
    async (...args: A): Promise<R> => {
      total++;
      max = Math.max(max, ++pending);
      try {
        return await read(...args);
      } finally {
        pending--;
      }
    };
  const outbox = store.outbox;
  return {
    store: {
      ...store,
      outbox: {
        ...outbox,
        enqueue: outbox.enqueue.bind(outbox),
        get: count(outbox.get.bind(outbox)),
        byTx: count(outbox.byTx.bind(outbox)),
        depth: count(outbox.depth.bind(outbox)),
      },
    },
    maxPending: () => max,
    reads: () => total,
  };
}

async function flood(t: TestContext, store: RelayerStore): Promise<void> {
  const probe = counted(store);
  const table: ReceiptTable = new Map();
  const { url } = await startApi(t, {
    // The read budget off (server.readRateLimit): this measures the store under the flood itself.
    config: testConfig({ relayApi: { rateLimit: { burst: 1000, perMinute: 1000 } }, server: { readRateLimit: null } }),
    store: probe.store,
    clock: createFakeClock(),
    fetch: fakeRpcFetch(table).fetch,
  });
  const mined = (n: number) => {
    const hash = txHash(n);
    table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: n })));
    return hash;
  };
  const seeded = mined(1);
  assert.equal((await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: seeded })).status, 200);
  const id = messageId(hyperlaneMessage({ nonce: 1 }));
  const paths = [`/relay/${id}`, `/relay?origin_chain=ethereum&tx_hash=${seeded}`, '/metrics'];

  const relays: Promise<RawResponse>[] = [];
  for (let wave = 0; wave < WAVES; wave++) {
    const reads = Array.from({ length: READERS }, (_, i) => httpRequest(url, { path: paths[i % paths.length] }));
    // Relays sent in the middle of the wave, while its reads are arriving.
    for (let i = 0; i < RELAYS / WAVES; i++)
      relays.push(postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: mined(100 + wave * 10 + i) }));
    for (const res of await Promise.all(reads)) assert.equal(res.status, 200, res.text);
  }
  for (const res of await Promise.all(relays)) assert.equal(res.status, 200, res.text);
  // At least two reads in the store at once: the flood overlapped them (a fast PostgreSQL answers
  // each in well under a millisecond, so how many overlap depends on the machine, not the code).
  assert.ok(probe.maxPending() >= 2, `the flood had reads waiting in the store at once (${probe.maxPending()})`);
  assert.equal(await store.outbox.depth(), 1 + RELAYS, 'every relay sent during the flood is stored');
}

describe('a flood of status reads', () => {
  test('SQLite: every relay sent during the flood is answered 200 and stored; every read answers', async (t) => {
    const store = await openSqliteStore(join(dir, 'flood.db'));
    t.after(() => store.close());
    await flood(t, store);
  });

  test('PostgreSQL: the same', async (t) => {
    const { pool, schema, close } = await testSchema({ max: 10 });
    t.after(close);
    const store = await openPostgresStore(pool, { schema, relayApi: testConfig().relayApi });
    t.after(() => store.close());
    await flood(t, store);
  });

  test('memory outbox: every read of the flood answers 200', async (t) => {
    const outbox = createMemoryOutbox();
    const table: ReceiptTable = new Map();
    const hash = txHash(7);
    table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: 7 })));
    const { url } = await startApi(t, { outbox, fetch: fakeRpcFetch(table).fetch });
    assert.equal((await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash })).status, 200);
    const id = messageId(hyperlaneMessage({ nonce: 7 }));
    const answers = await Promise.all(
      Array.from({ length: READERS }, () => httpRequest(url, { path: `/relay/${id}` })),
    );
    assert.deepEqual(new Set(answers.map((res) => res.status)), new Set([200]));
  });
});
