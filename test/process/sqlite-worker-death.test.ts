/**
 * The SQLite store's worker thread ending (docs/operations.md, "The SQLite store"): when the
 * thread dies on its own (a fatal error, out of memory; here Worker.terminate(), which ends it the
 * same way, mid-call) the store says so and never hangs: every call waiting and every later call
 * rejects at once with store_unavailable, `closed` rejects, HTTP answers 503 with Retry-After and
 * GET /ready is 503; relayer-server answers what is in flight and exits 1 for its supervisor to
 * restart it. And close() with a call still pending resolves: a script awaiting it ends normally.
 */
// First: every worker thread started from here on is kept, so the test can end it.
import { liveWorkers, terminateWorkers } from '../helpers/harness/worker-kill.ts';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { RelayError } from '../../lib/errors/classes.ts';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { spawnTracked } from '../helpers/harness/processes.ts';
import { testConfig } from '../helpers/fixtures/config.ts';
import { createFakeClock } from '../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../helpers/fakes/rpc.ts';
import { hyperlaneMessage, messageId, rpcReceipt, transferLogs, txHash } from '../helpers/fixtures/builders.ts';
import { httpRequest, postJson, type RawResponse } from '../helpers/harness/http.ts';
import { REPO_ROOT, startApi, startRelayerServer } from '../helpers/harness/server.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-worker-death-');
let files = 0;
const freshFile = () => join(dir, `store-${++files}.db`);

/** Long enough that no wait in these tests runs out: every write waiting is ended by the test. */
const LONG_WAIT_MS = 60_000;

const RECORDS = Array.from({ length: 50 }, (_, i) => ({
  chain: 1,
  insertion_block_number: 7,
  leaf_index: i,
  message_id: '0x' + (i + 1).toString(16).padStart(64, '0'),
}));

function assertUnavailable(res: RawResponse, what: string): void {
  assert.equal(res.status, 503, `${what}: ${res.text}`);
  assert.equal(res.json().reason, 'store_unavailable', what);
  assert.equal(res.headers['retry-after'], '1', what);
}

/** A second connection holding the write lock, as `sqlite3 relayer.db` + BEGIN IMMEDIATE does. */
function holdWriteLock(file: string): { release(): void } {
  const db = new DatabaseSync(file);
  db.exec('BEGIN IMMEDIATE');
  return {
    release() {
      if (!db.isOpen) return;
      db.exec('ROLLBACK');
      db.close();
    },
  };
}

function isStoreUnavailable(error: unknown): boolean {
  return (
    error instanceof RelayError &&
    error.code === 'store_unavailable' &&
    error.retryAfterSeconds === 1 &&
    /SQLite store stopped/.test(error.message)
  );
}

describe("the store's worker thread dies", () => {
  test('in-flight and later requests answer 503 store_unavailable, GET /ready 503; store calls reject at once', async (t) => {
    // The 503 has Retry-After; `closed` rejects and every later store call rejects at once.
    const file = freshFile();
    const clock = createFakeClock();
    const store = await openSqliteStore(file, { busyTimeoutMs: LONG_WAIT_MS, callTimeoutMs: LONG_WAIT_MS, clock });
    t.after(() => store.close());
    const [worker] = liveWorkers();
    assert.ok(worker, 'the store started a worker thread');
    const closed: { with?: unknown } = {};
    store.closed.then(
      () => (closed.with = 'resolved'),
      (error: unknown) => (closed.with = error),
    );
    const table: ReceiptTable = new Map();
    const { url } = await startApi(t, {
      config: testConfig({ relayApi: { rateLimit: { burst: 1000, perMinute: 1000 } } }),
      store,
      clock,
      fetch: fakeRpcFetch(table).fetch,
    });
    const hash = txHash(1);
    table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: 1 })));
    const id = messageId(hyperlaneMessage({ nonce: 1 }));
    assert.equal((await httpRequest(url, { path: '/ready' })).status, 200);

    // Two writes wait in the worker for the lock; a read sent after them answering first shows
    // they reached it.
    const lock = holdWriteLock(file);
    t.after(() => lock.release());
    const relay = postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    const merkle = postJson(url, '/merkle_tree_insertions', { merkle_tree_insertions: RECORDS });
    await httpRequest(url, { path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0' });
    assert.equal(closed.with === undefined, true, 'closed has not settled yet');

    assert.deepEqual(await terminateWorkers(), [1]);
    // Nothing here waits for a timeout: the deadlines are a minute away.
    assertUnavailable(await relay, 'the relay waiting in the worker');
    assertUnavailable(await merkle, 'the merkle write waiting in the worker');
    assert.ok(isStoreUnavailable(closed.with), `closed rejects with store_unavailable: ${String(closed.with)}`);
    assert.match(String((closed.with as Error).cause), /exited with code 1/);

    const later = txHash(2);
    table.set(later, rpcReceipt(later, transferLogs(1, { nonce: 2 })));
    assertUnavailable(await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: later }), 'a new relay');
    assertUnavailable(await httpRequest(url, { path: `/relay/${id}` }), 'a status lookup');
    assertUnavailable(await httpRequest(url, { path: '/ready' }), 'GET /ready');
    for (const call of [
      store.outbox.depth(),
      store.merkleRowCount(),
      store.ping(),
      Promise.resolve(store.merkle.insertMerkle(RECORDS.slice(0, 1))),
    ]) {
      await assert.rejects(
        call,
        (error: unknown) => error === closed.with,
        'every later call rejects with the same error',
      );
    }
    await store.close();

    // Nothing of the writes cut off was committed, and the file opens again.
    lock.release();
    const again = await openSqliteStore(file);
    t.after(() => again.close());
    assert.equal(await again.outbox.get(id), undefined);
    assert.equal(await again.merkleRowCount(), 0);
  });

  test('relayer-server answers the write in flight 503, logs one JSON error line and exits 1 for its supervisor to restart it', async (t) => {
    const file = freshFile();
    const server = await startRelayerServer(t, ['--db', file, '--log-level', 'warn'], {
      nodeArgs: ['--import', new URL('../helpers/harness/worker-kill.ts', import.meta.url).pathname],
    });
    const { url } = server;
    assert.equal(
      (await postJson(url, '/merkle_tree_insertions', { merkle_tree_insertions: RECORDS.slice(0, 1) })).status,
      200,
    );
    const lock = holdWriteLock(file);
    t.after(() => lock.release());
    const merkle = postJson(url, '/merkle_tree_insertions', { merkle_tree_insertions: RECORDS.slice(1) });
    // A read answered while the write waits for the lock: the write is in the worker.
    await httpRequest(url, { path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0' });
    server.child.kill('SIGUSR2');
    assertUnavailable(await merkle, 'the write in flight');
    // Bounded so that a server that never exits fails the test instead of hanging it.
    const ended = await Promise.race([server.exited, delay(20_000, undefined, { ref: false })]);
    assert.equal(ended?.code, 1, `exits 1 (not still running): ${server.output()}`);
    const errors = server.stdout
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .filter((line) => line.level === 'error');
    // One line says why the process ends; the request cut off has its own, like any 503.
    const stopped = errors.filter((line) => line.msg === 'the store stopped; exiting');
    assert.equal(stopped.length, 1, server.output());
    assert.match(stopped[0].error, /SQLite worker thread exited with code 1/);
    assert.deepEqual(
      errors.filter((line) => line !== stopped[0]).map((line) => [line.msg, line.route]),
      [['store unavailable', '/merkle_tree_insertions']],
    );
    assert.doesNotMatch(server.output(), /\n\s+at /, 'no stack trace');
    lock.release();
    const again = await openSqliteStore(file);
    t.after(() => again.close());
    assert.equal(await again.merkleRowCount(), 1, 'the file opens; the write cut off left nothing');
  });
});

describe('close() with a call pending', () => {
  for (const [what, call] of [
    ['a read', 'store.merkleRowCount()'],
    ['a write', `store.merkle.insertMerkle(${JSON.stringify(RECORDS.slice(0, 2))})`],
  ]) {
    test(`a script that awaits close() while ${what} is pending ends with code 0 after close resolves`, async () => {
      const script = [
        `import { openSqliteStore } from ${JSON.stringify(join(REPO_ROOT, 'lib', 'sqlite', 'index.ts'))};`,
        `const store = await openSqliteStore(${JSON.stringify(freshFile())});`,
        `const pending = ${call};`,
        'await store.close();',
        "console.log('stopped', await pending);",
      ].join('\n');
      const proc = spawnTracked(process.execPath, ['--input-type=module', '-e', script]);
      const [code] = await once(proc.child, 'exit');
      assert.equal(code, 0, proc.output());
      assert.match(proc.output(), /^stopped \d+$/m);
    });
  }
});
