/**
 * Asynchronous stores (docs/design.md#storage, lib/store/bundle.ts): every store may answer with a
 * promise, and a store that fails makes the request 503 `store_unavailable` with Retry-After,
 * with nothing acknowledged and the dedup reservation released. GET /ready pings the store
 * bundle. The stores here are the in-memory engines behind promises, with failures switched on
 * per test.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { DedupStore, Reservation } from '../../../lib/relay/dedup.ts';
import { createMemoryDedupStore } from '../../../lib/relay/dedup.ts';
import { createMemoryOutbox, type Outbox, type RelayQueue } from '../../../lib/outbox/index.ts';
import { createRelayPipeline } from '../../../lib/relay/pipeline.ts';
import { createTokenBucket, type RateLimiter } from '../../../lib/relay/rate-limit.ts';
import { StoreUnavailableError, type RelayerStore } from '../../../lib/store/bundle.ts';
import type { MerkleInsertion, MerkleStore } from '../../../lib/types.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock, type FakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { messageId, hyperlaneMessage, rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { httpRequest, postJson, type RawResponse } from '../../helpers/harness/http.ts';
import { startApi } from '../../helpers/harness/server.ts';

/** Which store call fails next, and how. */
type Failure = 'throw' | 'reject' | undefined;

interface Faults {
  take?: Failure;
  reserve?: Failure;
  commit?: Failure;
  enqueue?: Failure;
  insertMerkle?: Failure;
  listMerkle?: Failure;
  ping?: Failure | 'hang';
}

/** Answers `value` after a macrotask, or fails as `failure` says: a store on another thread or host. */
function later<T>(failure: Failure, value: () => T | PromiseLike<T>): Promise<T> {
  // node:sqlite's shape of SQLITE_BUSY (errcode 5): the store cannot be used right now (503).
  const error = Object.assign(
    new Error('SQLITE_BUSY: database is locked\n    at step (/srv/relayer/lib/sqlite/worker.ts:1:1)'),
    { code: 'ERR_SQLITE_ERROR', errcode: 5 },
  );
  if (failure === 'throw') throw error;
  return new Promise<T>((resolve, reject) => {
    setImmediate(() => {
      if (failure === 'reject') reject(error);
      else {
        try {
          resolve(value());
        } catch (e) {
          reject(e);
        }
      }
    });
  });
}

function asyncStore(
  clock: FakeClock,
  faults: Faults,
  calls: string[],
): RelayerStore & { memory: Outbox; rows: MerkleInsertion[]; cache: DedupStore } {
  const memory = createMemoryOutbox({ clock });
  const cache = createMemoryDedupStore({ clock, windowMs: 300_000, capacity: 100 });
  const bucket = createTokenBucket({ clock, burst: 1000, perMinute: 1000 });
  const rows: MerkleInsertion[] = [];
  const outbox: Outbox = {
    enqueue: (batch) => later(faults.enqueue, () => (calls.push('enqueue'), memory.enqueue(batch))),
    get: (id) => later(undefined, () => memory.get(id)),
    byTx: (chain, hash) => later(undefined, () => memory.byTx(chain, hash)),
    depth: () => later(undefined, () => memory.depth()),
    claim: (limit, leaseMs, opts) => later(undefined, () => memory.claim(limit, leaseMs, opts)),
    extend: (id, lease, leaseMs) => later(undefined, () => memory.extend(id, lease, leaseMs)),
    markDelivered: (id, opts) => later(undefined, () => memory.markDelivered(id, opts)),
    markFailed: (id, opts) => later(undefined, () => memory.markFailed(id, opts)),
    requeue: (id) => later(undefined, () => memory.requeue(id)),
    recordBroadcast: (b, fence) => later(undefined, () => memory.recordBroadcast(b, fence)),
    forgetBroadcast: (hash) => later(undefined, () => memory.forgetBroadcast(hash)),
    closeNonceSlot: (slot, outcome) => later(undefined, () => memory.closeNonceSlot(slot, outcome)),
    openBroadcasts: (of) => later(undefined, () => memory.openBroadcasts(of)),
    acquireSignerLease: (key, holder, ms) => later(undefined, () => memory.acquireSignerLease(key, holder, ms)),
    renewSignerLease: (key, lease, ms) => later(undefined, () => memory.renewSignerLease(key, lease, ms)),
    releaseSignerLease: (key, lease) => later(undefined, () => memory.releaseSignerLease(key, lease)),
    signerLeases: () => later(undefined, () => memory.signerLeases()),
    list: (opts) => later(undefined, () => memory.list(opts)),
    requeueFailed: (opts) => later(undefined, () => memory.requeueFailed(opts)),
    prune: (opts) => later(undefined, () => memory.prune(opts)),
    addGasPayments: (payments) => later(undefined, () => memory.addGasPayments(payments)),
    gasPayments: (ids) => later(undefined, () => memory.gasPayments(ids)),
    addGasSpent: (spends) => later(undefined, () => memory.addGasSpent(spends)),
    setRequiredGas: (id, gas) => later(undefined, () => memory.setRequiredGas(id, gas)),
  };
  const merkle: MerkleStore = {
    insertMerkle: (records) => later(faults.insertMerkle, () => (rows.push(...records), records.length)),
    listMerkle: (domain, start, end) =>
      later(faults.listMerkle, () =>
        rows.filter((r) => r.chain === domain && r.leaf_index >= start && r.leaf_index <= end),
      ),
  };
  const dedup: DedupStore = {
    reserve: (key) =>
      later(faults.reserve, () => {
        const r = cache.reserve(key) as Reservation;
        return {
          commit: () => later(faults.commit, () => (calls.push('commit'), r.commit())),
          release: () => later(undefined, () => (calls.push('release'), r.release())),
        };
      }),
    size: () => later(undefined, () => cache.size()),
  };
  const rateLimiter: RateLimiter = { take: () => later(faults.take, () => bucket.take()) };
  return {
    outbox,
    merkle,
    dedup,
    rateLimiter,
    memory,
    rows,
    cache,
    ping: () =>
      faults.ping === 'hang' ? new Promise<void>(() => {}) : (later(faults.ping, () => undefined) as Promise<void>),
    close: async () => {},
  };
}

interface Harness {
  url: string;
  clock: FakeClock;
  table: ReceiptTable;
  faults: Faults;
  calls: string[];
  store: ReturnType<typeof asyncStore>;
  logs: string[];
}

async function start(t: TestContext): Promise<Harness> {
  const clock = createFakeClock();
  const table: ReceiptTable = new Map();
  const faults: Faults = {};
  const calls: string[] = [];
  const logs: string[] = [];
  const store = asyncStore(clock, faults, calls);
  const logger = {
    debug() {},
    info() {},
    warn() {},
    error: (msg: string, fields?: object) => void logs.push(JSON.stringify({ msg, ...fields })),
  };
  const { url } = await startApi(t, { store, clock, fetch: fakeRpcFetch(table).fetch, logger });
  return { url, clock, table, faults, calls, store, logs };
}

function assertUnavailable(res: RawResponse): void {
  assert.equal(res.status, 503, res.text);
  assert.deepEqual(res.json(), {
    reason: 'store_unavailable',
    message: 'the store is unavailable; nothing was stored, retry shortly',
  });
  assert.equal(res.headers['retry-after'], '1');
  assert.doesNotMatch(res.text, /SQLITE|worker\.ts|at step/);
}

function minedTransfer(h: Harness, n: number): { hash: string; id: string } {
  const hash = txHash(n);
  h.table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: n })));
  return { hash, id: messageId(hyperlaneMessage({ nonce: n })) };
}

const RECORD = { chain: 1, insertion_block_number: 5, leaf_index: 3, message_id: `0x${'ab'.repeat(32)}` };

describe('asynchronous stores behind the pipeline and the handler (docs/design.md#storage)', () => {
  test('POST /relay and the merkle endpoints work when every store answers with a promise', async (t) => {
    const h = await start(t);
    const { hash, id } = minedTransfer(h, 1);
    const res = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json().messages[0].message_id, id);
    assert.deepEqual(h.calls, ['enqueue', 'commit'], 'enqueued, then the reservation committed before the 200');
    assert.equal((await h.store.memory.get(id))?.txHash, hash);
    const again = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(again.json().reason, 'duplicate_tx', 'the async dedup store kept the key');

    const posted = await postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: [RECORD] });
    assert.deepEqual(posted.json(), { count: 1, skipped: [] });
    const listed = await httpRequest(h.url, {
      path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=9',
    });
    assert.deepEqual(listed.json(), { merkle_tree_insertions: [RECORD] });

    const metrics = await httpRequest(h.url, { path: '/metrics' });
    assert.match(
      metrics.text,
      /^hyperlane_relay_api_outbox_depth 1$/m,
      'an asynchronous gauge is sampled before the render',
    );
    assert.match(metrics.text, /^hyperlane_relay_api_dedup_cache_size 1$/m);
  });

  for (const failure of ['throw', 'reject'] as const) {
    for (const step of ['take', 'reserve', 'enqueue', 'commit'] as const) {
      test(`POST /relay: a ${step} that fails (${failure}) is 503 store_unavailable, nothing acknowledged, the key free`, async (t) => {
        // The failure is a synchronous throw or a rejected promise.
        const h = await start(t);
        const { hash, id } = minedTransfer(h, 2);
        h.faults[step] = failure;
        assertUnavailable(await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash }));
        if (step === 'enqueue') assert.equal(await h.store.memory.get(id), undefined, 'nothing stored');
        if (step === 'enqueue' || step === 'commit')
          assert.equal(h.calls.at(-1), 'release', 'the reservation was released');
        assert.equal(await h.store.cache.size(), 0, 'no key left behind');
        assert.equal(h.logs.length, 1, 'one error line for the operator');
        assert.match(h.logs[0], /"msg":"store unavailable".*"cause":"Error: SQLITE_BUSY: database is locked"/);
        assert.doesNotMatch(h.logs[0], /worker\.ts/);
        h.faults[step] = undefined;
        const retry = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
        assert.equal(retry.status, 200, `the retry is not duplicate_tx: ${retry.text}`);
        assert.ok(await h.store.memory.get(id));
      });
    }
  }

  test("docs/design.md#storage: an embedder's queue throwing StoreUnavailableError is 503 store_unavailable, key released", async (t) => {
    // The queue is the outbox option; the answer has no internals, and the reservation is released.
    let fail = true;
    const memory = createMemoryOutbox();
    const flaky: RelayQueue = {
      enqueue(batch) {
        if (fail) throw new StoreUnavailableError('disk on fire at /secret/path');
        return memory.enqueue(batch);
      },
    };
    const table: ReceiptTable = new Map();
    const { relay } = await startApi(t, { outbox: flaky, fetch: fakeRpcFetch(table).fetch });
    const hash = txHash(1);
    table.set(hash, rpcReceipt(hash, transferLogs(1)));
    const res = await relay({ origin_chain: 'ethereum', tx_hash: hash });
    assertUnavailable(res);
    assert.equal(res.headers['retry-after'], '1');
    assert.doesNotMatch(res.text, /secret|disk|at \w+ \(/);
    fail = false;
    assert.equal((await relay({ origin_chain: 'ethereum', tx_hash: hash })).status, 200, 'retry is not duplicate_tx');
  });

  test('docs/api.md Errors: a queue that throws anything else is 500 internal_error, the reservation released', async (t) => {
    // Anything else: a bug, a refused row. No Retry-After, no internals, the error logged.
    const thrown: unknown[] = [
      new Error('disk on fire at /secret/path'),
      new TypeError("Cannot read properties of undefined (reading 'id')"),
      Object.assign(new Error('CHECK constraint failed: status IN (...)'), { code: 'ERR_SQLITE_ERROR', errcode: 275 }),
      Object.assign(new Error('new row violates check constraint "outbox_id_check"'), { code: '23514' }),
      'a string',
    ];
    for (const [i, value] of thrown.entries()) {
      let fail = true;
      const memory = createMemoryOutbox();
      const logs: string[] = [];
      const flaky: RelayQueue = {
        enqueue(batch) {
          if (fail) throw value;
          return memory.enqueue(batch);
        },
      };
      const table: ReceiptTable = new Map();
      const logger = {
        debug() {},
        info() {},
        warn() {},
        error: (msg: string, fields?: object) => void logs.push(JSON.stringify({ msg, ...fields })),
      };
      const { relay } = await startApi(t, { outbox: flaky, fetch: fakeRpcFetch(table).fetch, logger });
      const hash = txHash(100 + i);
      table.set(hash, rpcReceipt(hash, transferLogs(1)));
      const res = await relay({ origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(res.status, 500, res.text);
      assert.deepEqual(res.json(), { reason: 'internal_error', message: 'internal error' });
      assert.equal(res.headers['retry-after'], undefined, 'nothing to wait for: retrying will not help');
      assert.equal(logs.length, 1);
      assert.match(logs[0], /"msg":"internal error"/);
      fail = false;
      assert.equal(
        (await relay({ origin_chain: 'ethereum', tx_hash: hash })).status,
        200,
        'the reservation was released',
      );
    }
  });

  test('POST /relay: a RelayError thrown by a store (duplicate_tx from a shared dedup) keeps its own reason', async (t) => {
    const h = await start(t);
    const { hash } = minedTransfer(h, 3);
    h.store.cache.reserve(`ethereum\n${hash}`);
    const res = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(res.status, 429);
    assert.equal(res.json().reason, 'duplicate_tx');
  });

  for (const failure of ['throw', 'reject'] as const) {
    test(`merkle endpoints: a store that fails (${failure}) is 503 store_unavailable`, async (t) => {
      const h = await start(t);
      h.faults.insertMerkle = failure;
      h.faults.listMerkle = failure;
      assertUnavailable(await postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: [RECORD] }));
      assert.equal(h.store.rows.length, 0);
      assertUnavailable(
        await httpRequest(h.url, { path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=9' }),
      );
    });
  }

  test('pipeline: a failing asynchronous enqueue is store_unavailable, and the release is awaited before the error propagates', async () => {
    const clock = createFakeClock();
    const order: string[] = [];
    const cache = createMemoryDedupStore({ clock, windowMs: 1000, capacity: 10 });
    const table: ReceiptTable = new Map();
    const hash = txHash(10);
    table.set(hash, rpcReceipt(hash, transferLogs(1)));
    const pipeline = createRelayPipeline({
      config: testConfig(),
      clock,
      fetch: fakeRpcFetch(table).fetch,
      queue: { enqueue: () => Promise.reject(new StoreUnavailableError('disk gone')) },
      dedup: {
        reserve(key) {
          const r = cache.reserve(key);
          return {
            commit: () => r.commit(),
            release: () =>
              new Promise<void>((resolve) => setImmediate(() => (order.push('released'), r.release(), resolve()))),
          };
        },
        size: () => cache.size(),
      },
    });
    await assert.rejects(
      pipeline.relay({ origin_chain: 'ethereum', tx_hash: hash }).finally(() => order.push('rejected')),
      (e: { code?: string; status?: number }) => e.code === 'store_unavailable' && e.status === 503,
    );
    assert.deepEqual(order, ['released', 'rejected']);
    assert.equal(cache.size(), 0);
  });
});

describe('GET /ready (docs/design.md#http-surface)', () => {
  test('200 ready when the store answers its ping; 503 store_unavailable when it fails; GET /relay never pings', async (t) => {
    const h = await start(t);
    const ok = await httpRequest(h.url, { path: '/ready' });
    assert.equal(ok.status, 200);
    assert.equal(ok.text, 'ready');
    assert.match(String(ok.headers['content-type']), /^text\/plain/);
    const head = await httpRequest(h.url, { path: '/ready', method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    for (const failure of ['throw', 'reject'] as const) {
      h.faults.ping = failure;
      assertUnavailable(await httpRequest(h.url, { path: '/ready' }));
      const live = await httpRequest(h.url, { path: '/relay' });
      assert.equal(live.text, 'up', 'liveness does not depend on the store');
    }
  });

  test('a ping that does not answer within 1 s is 503 store_unavailable (fake clock)', async (t) => {
    const h = await start(t);
    h.faults.ping = 'hang';
    let settled = false;
    const pending = httpRequest(h.url, { path: '/ready' }).finally(() => (settled = true));
    await h.clock.advance(999);
    assert.equal(settled, false, 'still waiting at 999 ms');
    await h.clock.advance(1);
    assertUnavailable(await pending);
  });

  test('without a store bundle (in-memory outbox) the server is ready', async (t) => {
    const { url } = await startApi(t);
    const res = await httpRequest(url, { path: '/ready' });
    assert.equal(res.status, 200);
    assert.equal(res.text, 'ready');
    const allow = await httpRequest(url, { path: '/ready', method: 'POST' });
    assert.equal(allow.status, 405);
    assert.equal(allow.headers.allow, 'GET, HEAD, OPTIONS');
  });
});
