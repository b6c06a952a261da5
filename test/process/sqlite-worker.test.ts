/**
 * SQLite off the main thread (docs/design.md#sqlite,
 * BENCHMARKS.md#storage-off-the-event-loop-node-benchstorets-node-benchmerklets): the worker owns
 * the connection, so a write waiting for a lock held by another connection (an operator's sqlite3
 * shell: BEGIN IMMEDIATE) stops nothing else. The lock here is held by a real second connection
 * on the same file, in this process; it is released or kept by the test, never timed by a sleep.
 * The waiting write ends in 200 (lock released) or 503 store_unavailable (past the store's lock
 * wait), never a hang, never a partial write. And node:sqlite is never loaded on the server's
 * main thread.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, test, type TestContext } from 'node:test';
import type { RelayServer } from '../../lib/http/server.ts';
import { openSqliteStore, type SqliteStore } from '../../lib/sqlite/index.ts';
import { spawnTracked } from '../helpers/harness/processes.ts';
import { fileChains, testConfig } from '../helpers/fixtures/config.ts';
import { createFakeClock } from '../helpers/fakes/clock.ts';
import { fakeRpcFetch, startFakeRpcServer, type ReceiptTable } from '../helpers/fakes/rpc.ts';
import { hyperlaneMessage, messageId, rpcReceipt, transferLogs, txHash } from '../helpers/fixtures/builders.ts';
import { httpRequest, postJson, type RawResponse } from '../helpers/harness/http.ts';
import { startApi, startRelayerServer } from '../helpers/harness/server.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-worker-');
let files = 0;

/** A lock wait the tests end themselves by releasing the lock (never reached on a loaded machine). */
const LONG_WAIT_MS = 60_000;
/** A lock wait the tests let run out: short, so the refused write answers quickly. */
const SHORT_WAIT_MS = 300;

interface Harness {
  url: string;
  file: string;
  store: SqliteStore;
  server: RelayServer;
  table: ReceiptTable;
}

async function start(t: TestContext, busyTimeoutMs = LONG_WAIT_MS): Promise<Harness> {
  const file = join(dir, `locked-${++files}.db`);
  const clock = createFakeClock();
  const store = await openSqliteStore(file, { busyTimeoutMs, clock });
  const table: ReceiptTable = new Map();
  const { url, server } = await startApi(t, {
    config: testConfig({ relayApi: { rateLimit: { burst: 1000, perMinute: 1000 } } }),
    store,
    clock,
    fetch: fakeRpcFetch(table).fetch,
  });
  t.after(() => store.close());
  return { url, file, store, server, table };
}

/** A second connection holding the database's write lock, as `sqlite3 relayer.db` + BEGIN IMMEDIATE does. */
function holdWriteLock(file: string): { release(): void } {
  const db = new DatabaseSync(file);
  db.exec('BEGIN IMMEDIATE');
  return {
    release() {
      db.exec('ROLLBACK');
      db.close();
    },
  };
}

function mined(h: Harness, n: number): { hash: string; id: string } {
  const hash = txHash(n);
  h.table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: n })));
  return { hash, id: messageId(hyperlaneMessage({ nonce: n })) };
}

function track<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  const tracked = promise.finally(() => (done = true));
  return { promise: tracked, settled: () => done };
}

function assertUnavailable(res: RawResponse): void {
  assert.equal(res.status, 503, res.text);
  assert.equal(res.json().reason, 'store_unavailable');
  assert.equal(res.headers['retry-after'], '1');
}

const RECORDS = Array.from({ length: 500 }, (_, i) => ({
  chain: 1,
  insertion_block_number: 7,
  leaf_index: i,
  message_id: '0x' + (i + 1).toString(16).padStart(64, '0'),
}));

describe("a write waits for another connection's lock without stopping the server", () => {
  // Measured in BENCHMARKS.md#storage-off-the-event-loop-node-benchstorets-node-benchmerklets.
  test('while a relay waits for the lock, other requests answer; the relay is answered 200 once the lock is let go', async (t) => {
    // GET /relay, GET /ready, a read and a relay that writes nothing answer; the relay is stored.
    const h = await start(t);
    const { hash, id } = mined(h, 1);
    await h.store.merkle.insertMerkle(RECORDS.slice(0, 3));
    const lock = holdWriteLock(h.file);
    let waiting: ReturnType<typeof track<RawResponse>>;
    try {
      waiting = track(postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash }));
      // Answered while the write waits (each of these is checked to finish first).
      const live = await httpRequest(h.url, { path: '/relay' });
      assert.equal(live.text, 'up');
      const ready = await httpRequest(h.url, { path: '/ready' });
      assert.equal(ready.status, 200, 'the store answers reads: ready');
      const read = await httpRequest(h.url, {
        path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=9',
      });
      assert.equal(read.json().merkle_tree_insertions.length, 3, 'a read through the worker');
      const noMessages = txHash(2);
      h.table.set(noMessages, rpcReceipt(noMessages, []));
      const nothing = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: noMessages });
      assert.deepEqual(nothing.json(), { messages: [] }, 'a relay that writes nothing');
      assert.equal(waiting.settled(), false, 'all of that answered while the relay still waited for the lock');
      assert.equal(await h.store.outbox.get(id), undefined, 'not written while the lock is held');
    } finally {
      lock.release();
    }
    const res = await waiting.promise;
    assert.equal(res.status, 200, res.text);
    assert.equal((await h.store.outbox.get(id))?.status, 'queued');
  });

  test('a relay still waiting for the lock at the end of its wait is 503 store_unavailable: nothing stored, the key free', async (t) => {
    const h = await start(t, SHORT_WAIT_MS);
    const { hash, id } = mined(h, 4);
    const lock = holdWriteLock(h.file);
    try {
      assertUnavailable(await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash }));
    } finally {
      lock.release();
    }
    assert.equal(await h.store.outbox.get(id), undefined, 'nothing of the refused relay was written');
    assert.equal(await h.store.outbox.depth(), 0);
    const retry = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(retry.status, 200, `the retry is not duplicate_tx: ${retry.text}`);
    assert.ok(await h.store.outbox.get(id));
  });

  test('a write waiting for the lock is answered 200 once the other connection lets go; it was not written before', async (t) => {
    const h = await start(t);
    const { hash, id } = mined(h, 3);
    const lock = holdWriteLock(h.file);
    const waiting = track(postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash }));
    const merkle = track(postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: RECORDS }));
    // Both reached the worker and wait for the lock: a read issued after them answers first.
    await httpRequest(h.url, { path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0' });
    assert.equal(waiting.settled() || merkle.settled(), false);
    assert.equal(await h.store.merkleRowCount(), 0, 'not written while the lock is held');
    lock.release();
    const res = await waiting.promise;
    assert.equal(res.status, 200, res.text);
    assert.equal((await merkle.promise).json().count, RECORDS.length);
    assert.ok(await h.store.outbox.get(id));
    assert.equal(await h.store.merkleRowCount(), RECORDS.length);
  });

  test('a merkle request refused for the lock writes nothing (all or nothing), then succeeds', async (t) => {
    const h = await start(t, SHORT_WAIT_MS);
    const lock = holdWriteLock(h.file);
    try {
      assertUnavailable(await postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: RECORDS }));
    } finally {
      lock.release();
    }
    assert.equal(await h.store.merkleRowCount(), 0);
    assert.equal(
      (await postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: RECORDS })).json().count,
      RECORDS.length,
    );
  });

  test('group commit: concurrent relays and merkle requests share transactions, a failing one rolls back only itself', async (t) => {
    const h = await start(t);
    const relays = Array.from({ length: 30 }, (_, i) => mined(h, 100 + i));
    const lock = holdWriteLock(h.file);
    // Everything queues behind the lock, then commits in one group when it is released.
    const answers = relays.map(({ hash }) => postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash }));
    const good = postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: RECORDS.slice(0, 10) });
    // Valid for the API, refused by the table's CHECK: message_id of another length cannot pass
    // validation, so the store is called directly with a row only the table refuses.
    const bad = Promise.resolve(h.store.merkle.insertMerkle([RECORDS[20], { ...RECORDS[21], leaf_index: -1 }])).then(
      () => new Error('written'),
      (error: Error) => error,
    );
    await httpRequest(h.url, { path: '/relay' });
    lock.release();
    for (const res of await Promise.all(answers)) assert.equal(res.status, 200, res.text);
    assert.equal((await good).json().count, 10);
    assert.match((await bad).message, /CHECK constraint failed/);
    assert.equal(await h.store.outbox.depth(), relays.length);
    assert.equal(await h.store.merkleRowCount(), 10, 'the failing request left nothing, the others all committed');
  });
});

describe('no synchronous SQLite on the main thread (BENCHMARKS.md#storage-off-the-event-loop-node-benchstorets-node-benchmerklets)', () => {
  const PROBE = new URL('../helpers/harness/sqlite-probe.ts', import.meta.url).pathname;

  /** The modules the probe saw loaded on the main thread, from the line it printed at exit. */
  function probed(output: string): string[] {
    const line = output.split('\n').find((l) => l.startsWith('{"probe":"sqlite"'));
    assert.ok(line, output);
    return JSON.parse(line).loaded;
  }

  test('the probe sees node:sqlite when the main thread loads it (the check can fail)', async () => {
    const proc = spawnTracked(process.execPath, [
      '--import',
      PROBE,
      '--input-type=module',
      '-e',
      "import('node:sqlite')",
    ]);
    await once(proc.child, 'exit');
    const loaded = probed(proc.output());
    assert.ok(loaded.length > 0, "node:sqlite shows in the main thread's module list");
  });

  test('relayer-server serves every route without loading node:sqlite on its main thread', async (t) => {
    // Relays, merkle writes and reads, /ready and /metrics.
    const rpc = await startFakeRpcServer();
    t.after(() => rpc.close());
    const config = {
      chains: fileChains(rpc.url),
      db: join(dir, 'probe.db'),
    };
    const hash = txHash(0x77);
    rpc.table.set(hash, rpcReceipt(hash, transferLogs(2)));
    const server = await startRelayerServer(t, ['--log-level', 'warn'], { config, nodeArgs: ['--import', PROBE] });
    const { url } = server;
    assert.equal((await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash })).status, 200);
    assert.equal(
      (await postJson(url, '/merkle_tree_insertions', { merkle_tree_insertions: RECORDS.slice(0, 5) })).status,
      200,
    );
    const list = await httpRequest(url, {
      path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=9',
    });
    assert.equal(list.json().merkle_tree_insertions.length, 5);
    assert.equal((await httpRequest(url, { path: '/ready' })).text, 'ready');
    assert.match((await httpRequest(url, { path: '/metrics' })).text, /^hyperlane_relay_api_outbox_depth 2$/m);
    assert.equal(await server.stop(), 0, server.output());
    assert.deepEqual(probed(server.output()), [], 'node:sqlite was never loaded on the main thread');
  });

  test('lint: nothing the main thread loads from lib/ imports node:sqlite as a value; only the worker does', () => {
    const root = new URL('../../lib/', import.meta.url).pathname;
    const valueImports = (file: string): string[] =>
      [
        ...readFileSync(join(root, file), 'utf8').matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?from\s+'([^']+)'/gm),
      ].map((m) => m[1]);
    const resolveFrom = (file: string, spec: string) => join(dirname(file), spec);
    // Every module reachable by value imports from the entry points the server's main thread loads.
    const seen = new Set<string>();
    const queue = ['index.ts', 'http/index.ts', 'sqlite/index.ts'];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const spec of valueImports(file)) {
        assert.notEqual(spec, 'node:sqlite', `${file} imports node:sqlite on the main thread`);
        if (spec.startsWith('.')) queue.push(resolveFrom(file, spec));
      }
    }
    assert.ok(seen.has('sqlite/client.ts') && seen.size > 20, [...seen].join(' '));
    assert.ok(!seen.has('sqlite/worker.ts') && !seen.has('sqlite/database.ts'));
    // The check can fail: the worker's own graph does load node:sqlite.
    assert.ok(valueImports('sqlite/database.ts').includes('node:sqlite'));
  });
});
