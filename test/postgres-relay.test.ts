/**
 * POST /relay's hot path on PostgreSQL (docs/design.md, Storage; lib/postgres/relay.ts): two
 * round trips per accepted relay (the token with the reservation, not durable; the rows with the
 * commit, durable), one per refusal, and the same answers and stored rows as the four-statement
 * path of the separate stores. On the real PostgreSQL of the test helpers, through the HTTP API.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PgPool } from '../lib/postgres/pool.ts';
import { openPostgresStore, type PostgresStore } from '../lib/postgres/index.ts';
import { testConfig } from './helpers/config.ts';
import { fakeRpcFetch } from './helpers/fake-rpc.ts';
import { MAILBOX, rpcReceipt, transferLogs, txHash } from './helpers/fixtures.ts';
import { testSchema } from './helpers/postgres.ts';
import { startApi, type Cleanup } from './helpers/server.ts';
import { createFakeClock } from './helpers/fake-clock.ts';
import type { RelayError } from '../lib/errors.ts';

/** A pool that records the text of every query sent through it (pooled clients included). */
function counting(pool: PgPool): {
  pool: PgPool;
  texts: string[];
  names: (string | undefined)[];
  failOnce: { match?: RegExp };
} {
  const texts: string[] = [];
  /** The statement name of each query (a prepared statement), in the order of texts. */
  const names: (string | undefined)[] = [];
  const failOnce: { match?: RegExp } = {};
  const wrapped: PgPool = {
    query(query, values) {
      const text = typeof query === 'string' ? query : query.text;
      texts.push(text);
      names.push(typeof query === 'string' ? undefined : query.name);
      if (failOnce.match?.test(text)) {
        failOnce.match = undefined;
        // What pg gives for a connection lost mid-statement (the statement did not commit).
        return Promise.reject(Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' }));
      }
      return pool.query(query, values);
    },
    async connect() {
      const client = await pool.connect();
      return {
        query(query, values) {
          texts.push(typeof query === 'string' ? query : query.text);
          names.push(typeof query === 'string' ? undefined : query.name);
          return client.query(query, values);
        },
        release: (error) => client.release(error),
      };
    },
    on: (event, listener) => pool.on?.(event, listener),
  };
  return { pool: wrapped, texts, names, failOnce };
}

let nextTx = 0x9_1000;

async function harness(t: Cleanup & { after(fn: () => unknown): void }, burst: number, twoStep: boolean) {
  const db = await testSchema();
  t.after(() => db.close());
  const { pool, texts, names, failOnce } = counting(db.pool);
  const relayApi = {
    ...testConfig().relayApi,
    rateLimit: { burst, perMinute: 1 },
    dedupWindowSeconds: 300,
    receiptTimeoutSeconds: 2,
  };
  const opened = await openPostgresStore(pool, { relayApi, schema: db.schema });
  // The same store without its admission: the pipeline falls back to the four separate calls.
  const store: PostgresStore = twoStep ? opened : { ...opened, admission: undefined as never };
  const table = new Map<string, Record<string, unknown> | null>();
  const rpc = fakeRpcFetch(table);
  const api = await startApi(t, { config: testConfig({ relayApi }), store, fetch: rpc.fetch });
  const mined = () => {
    const hash = txHash(nextTx++);
    table.set(hash, rpcReceipt(hash, transferLogs(2, { nonce: nextTx * 16 })));
    return hash;
  };
  /** A mined transaction whose Mailbox log is not valid ABI: 500 after the reservation was taken. */
  const broken = () => {
    const hash = txHash(nextTx++);
    const logs = transferLogs(1, { nonce: nextTx * 16 }).map((log) => ({ ...log }));
    const dispatch = logs.find((log) => String(log.address).toLowerCase() === MAILBOX)!;
    dispatch.data = '0x' + '00'.repeat(31) + '40' + '00'.repeat(32);
    table.set(hash, rpcReceipt(hash, logs));
    return hash;
  };
  /** A mined transaction with no message. */
  const empty = () => {
    const hash = txHash(nextTx++);
    table.set(hash, rpcReceipt(hash, []));
    return hash;
  };
  /** The statements one request sent. */
  const measure = async (body: unknown) => {
    const before = texts.length;
    const res = await api.relay(body);
    return { res, statements: texts.slice(before), names: names.slice(before) };
  };
  // A first request creates the bucket row and runs the minute's sweep of expired dedup rows.
  const warm = await api.relay({ origin_chain: 'ethereum', tx_hash: mined() });
  assert.equal(warm.status, 200, warm.text);
  return { db, store: opened, api, mined, broken, empty, measure, failOnce };
}

/** The dedup row of a transaction: committed or not, and whether it is still live. */
async function dedupRow(h: Awaited<ReturnType<typeof harness>>, hash: string) {
  const { rows } = await h.db.pool.query(`SELECT committed FROM "${h.db.schema}".dedup WHERE key = $1`, [
    `ethereum\n${hash}`,
  ]);
  return rows[0] as { committed: boolean } | undefined;
}

describe('PostgreSQL hot path of POST /relay (docs/design.md, Storage)', () => {
  test('an accepted relay is two statements: token + reservation (synchronous_commit off), then rows + commit (durable)', async (t) => {
    const h = await harness(t, 100, true);
    const hash = h.mined();
    const { res, statements, names } = await h.measure({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json().messages.length, 2);
    assert.equal(statements.length, 2, statements.join('\n---\n'));
    // Named statements: each connection parses and plans them once (lib/postgres/pool.ts, prepared).
    for (const name of names) assert.match(String(name), /^relayer_api_\d+$/);
    assert.match(statements[0], /^\s*WITH async AS \(SELECT set_config\('synchronous_commit', 'off', true\)\)/);
    assert.match(statements[0], /token_buckets/);
    assert.match(statements[0], /INSERT INTO "[^"]+"\.dedup/);
    assert.doesNotMatch(statements[1], /synchronous_commit/);
    assert.match(statements[1], /INSERT INTO "[^"]+"\.outbox/);
    assert.match(statements[1], /UPDATE "[^"]+"\.dedup SET committed = true/);
    assert.equal((await h.store.outbox.byTx('ethereum', hash)).length, 2);
    assert.deepEqual(await dedupRow(h, hash), { committed: true });
  });

  test('the asynchronous commit ends with the admit: the same connection commits the next statement durably', async (t) => {
    const db = await testSchema({ max: 1 });
    t.after(() => db.close());
    const relayApi = { ...testConfig().relayApi, rateLimit: { burst: 10, perMinute: 1 } };
    const store = await openPostgresStore(db.pool, { relayApi, schema: db.schema });
    await db.pool.query('SET synchronous_commit = on'); // the test server's default is off (no fsync)
    const admitted = await store.admission.admit(`ethereum\n${txHash(1)}`);
    const { rows } = await db.pool.query('SHOW synchronous_commit');
    assert.equal(rows[0].synchronous_commit, 'on');
    await admitted.release();
  });

  test('refusals are one statement each: duplicate_tx, rate_limited, invalid_request', async (t) => {
    const h = await harness(t, 4, true);
    const hash = h.mined();
    assert.equal((await h.measure({ origin_chain: 'ethereum', tx_hash: hash })).res.status, 200);

    const duplicate = await h.measure({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(duplicate.res.status, 429);
    assert.equal(duplicate.res.json().reason, 'duplicate_tx');
    assert.match(String(duplicate.res.headers['retry-after']), /^[1-9][0-9]*$/);
    assert.equal(duplicate.statements.length, 1);

    const invalid = await h.measure({ origin_chain: 'ethereum', tx_hash: '0x12' });
    assert.equal(invalid.res.status, 400);
    assert.equal(invalid.statements.length, 1, 'the token is still taken');

    // burst 4: the warm-up and the three above took them all.
    const limited = await h.measure({ origin_chain: 'ethereum', tx_hash: h.mined() });
    assert.equal(limited.res.status, 429);
    assert.equal(limited.res.json().reason, 'rate_limited');
    assert.match(String(limited.res.headers['retry-after']), /^[1-9][0-9]*$/);
    assert.equal(limited.statements.length, 1);
    const invalidLimited = await h.measure({ origin_chain: 'nowhere', tx_hash: '0x12' });
    assert.equal(invalidLimited.res.json().reason, 'rate_limited', 'over the limit, 429 before 400 as on every path');
  });

  test('a request that fails after its reservation releases it: an immediate retry is not duplicate_tx', async (t) => {
    const h = await harness(t, 100, true);
    const hash = h.broken();
    const first = await h.measure({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(first.res.status, 500, first.res.text);
    assert.equal(first.statements.length, 2, 'admit + release');
    assert.match(first.statements.at(-1)!, /DELETE FROM "[^"]+"\.dedup/);
    assert.equal(await dedupRow(h, hash), undefined, 'released');
    const second = await h.measure({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(second.res.status, 500);
    assert.equal(second.statements.length, 2, 'admit + release');
  });

  test('a failed rows + commit statement answers 503 and still frees the key: the retry is accepted', async (t) => {
    const h = await harness(t, 100, true);
    const hash = h.mined();
    h.failOnce.match = /INSERT INTO "[^"]+"\.outbox/;
    const first = await h.measure({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(first.res.status, 503, first.res.text);
    assert.equal(first.res.json().reason, 'store_unavailable');
    assert.match(first.statements.at(-1)!, /DELETE FROM "[^"]+"\.dedup/, 'released');
    assert.equal(await dedupRow(h, hash), undefined);
    const retry = await h.measure({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(retry.res.status, 200, retry.res.text);
    assert.equal((await h.store.outbox.byTx('ethereum', hash)).length, 2);
  });

  test('the same answers and rows as the four-statement path, request for request', async (t) => {
    const runs = [];
    for (const twoStep of [true, false]) {
      const h = await harness(t, 6, twoStep);
      const hash = h.mined();
      const answers: string[] = [];
      for (const body of [
        { origin_chain: 'ethereum', tx_hash: hash },
        { origin_chain: 'ethereum', tx_hash: hash },
        { origin_chain: 'ethereum', tx_hash: 'nope' },
        { origin_chain: 'ethereum', tx_hash: h.empty() },
        { origin_chain: 'ethereum', tx_hash: h.broken() },
        { origin_chain: 'ethereum', tx_hash: h.mined() },
      ]) {
        const { res } = await h.measure(body);
        answers.push(`${res.status} ${res.json().reason ?? res.json().messages.length}`);
      }
      runs.push({
        answers,
        outboxRows: (await h.store.outbox.byTx('ethereum', hash)).length,
        dedup: await dedupRow(h, hash),
        depth: await h.store.outbox.depth(),
      });
    }
    assert.deepEqual(runs[0].answers, [
      '200 2',
      '429 duplicate_tx',
      '400 invalid_request',
      '200 0',
      '500 internal_error',
      '429 rate_limited',
    ]);
    assert.deepEqual(runs[0], runs[1]);
  });

  for (const way of ['admission', 'dedup store'] as const) {
    test(`docs/design.md#capacity-on-postgresql (${way}): far from the capacity a reservation does not count the live rows; near it, or a second after the last count, it counts exactly`, async (t) => {
      const db = await testSchema();
      t.after(() => db.close());
      const clock = createFakeClock();
      const relayApi = {
        ...testConfig().relayApi,
        rateLimit: { burst: 1000, perMinute: 1 },
        dedupCapacity: 10,
        receiptTimeoutSeconds: 60,
      };
      // Two replicas on one database; the first one's statements are recorded.
      const recorded = counting(db.pool);
      const a = await openPostgresStore(recorded.pool, { relayApi, schema: db.schema, clock });
      const b = await openPostgresStore(db.pool, { relayApi, schema: db.schema, clock, migrate: false });
      const key = (n: number) => `ethereum\n0x${n.toString(16).padStart(64, '0')}`;
      const reserve = (store: PostgresStore, n: number) =>
        way === 'admission' ? store.admission.admit(key(n)) : store.dedup.reserve(key(n));
      /** Whether each reservation A made since `from` counted the live rows. */
      const counted = (from: number) =>
        recorded.texts
          .slice(from)
          .filter((text) => /INSERT INTO "[^"]+"\.dedup/.test(text))
          .map((text) => /count\(\*\)/.test(text));
      const cacheFull = (error: unknown) => (error as RelayError).reason === 'cache_full';

      await reserve(a, 0); // A's first reservation counts: it has no estimate yet
      const from = recorded.texts.length;
      for (let n = 1; n <= 4; n++) await reserve(a, n);
      assert.deepEqual(counted(from), [false, false, false, false], 'A knows of 1 to 4 rows, under half of 10');

      // B fills the table; near the capacity every reservation counts, so cache_full is exact.
      for (let n = 5; n < 10; n++) await reserve(b, n);
      await assert.rejects(reserve(b, 10), cacheFull);
      await assert.rejects(reserve(a, 10), cacheFull);
      assert.equal(counted(from).at(-1), true, 'A knows of 5 rows, half the capacity: it counted');
      assert.equal(await a.dedup.size(), 10);

      // Room again: A's last count said full, so it keeps counting and sees the room at once.
      await clock.advance(60_000 + 5_000); // every pending reservation expired
      const after = recorded.texts.length;
      await reserve(a, 11);
      assert.deepEqual(counted(after), [true]);
      for (let n = 12; n <= 14; n++) await reserve(a, n);
      assert.deepEqual(counted(after), [true, false, false, false], 'A knows of 4 live rows again');

      // What A does not know: B's reservations since A's last count. Within the second A lets
      // the table pass the capacity by that many; a second later it counts and refuses.
      for (let n = 15; n < 21; n++) await reserve(b, n);
      assert.equal(await a.dedup.size(), 10);
      await reserve(a, 21);
      assert.equal(await a.dedup.size(), 11, 'over the capacity by what B reserved since A counted');
      await clock.advance(1_000);
      await assert.rejects(reserve(a, 22), cacheFull);
      assert.equal(counted(after).at(-1), true);
    });
  }
});
