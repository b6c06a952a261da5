/**
 * POST /relay's hot path on PostgreSQL (docs/design.md, Storage; lib/postgres/relay.ts): two
 * round trips per accepted relay (the token with the reservation, not durable; the rows with the
 * commit, durable), one per refusal, and the same answers and stored rows as the four-statement
 * path of the separate stores. On the real PostgreSQL of the test helpers, through the HTTP API.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PgPool } from '../../../lib/postgres/pool.ts';
import { openPostgresStore, type PostgresStore } from '../../../lib/postgres/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { fakeRpcFetch } from '../../helpers/fakes/rpc.ts';
import { MAILBOX, rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import pg from 'pg';
import { openRelayerStore } from '../../../bin/lib/store.ts';
import { silentLogger } from '../../../lib/log.ts';
import { sharedPostgresUrl, testSchema, uniqueSchemaName } from '../../helpers/harness/postgres.ts';
import { startApi, type Cleanup } from '../../helpers/harness/server.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import type { RelayError } from '../../../lib/errors/classes.ts';
import { DEFAULT_QUEUE_TIMEOUT_MS } from '../../../lib/postgres/coalesce.ts';
import type { AdmittedRelay } from '../../../lib/store/bundle.ts';
import { outboxMessage, T0 } from '../../../lib/testing/index.ts';

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
    test(`docs/replicas.md#capacity-on-postgresql (${way}): a row count kept by every write says when the table is full`, async (t) => {
      // No reservation counts the live rows; the row count kept by every insert and delete says when the table
      // is full, at once across replicas.
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
      const reserve = (store: PostgresStore, n: number): Promise<{ release(): Promise<void> }> =>
        way === 'admission' ? store.admission.admit(key(n)) : store.dedup.reserve(key(n));
      const cacheFull = (error: unknown) => (error as RelayError).code === 'cache_full';
      /** The kept count against an exact count of the table. */
      const rowCount = async () => {
        const { rows } = await db.pool.query(
          `SELECT (SELECT n FROM "${db.schema}".dedup_rows)::integer AS kept, (SELECT count(*) FROM "${db.schema}".dedup)::integer AS counted`,
        );
        return rows[0] as { kept: number; counted: number };
      };

      const held = [];
      for (let n = 0; n < 5; n++) held.push(await reserve(a, n));
      for (let n = 5; n < 10; n++) held.push(await reserve(b, n));
      // A sees B's five rows at once: no estimate a second old.
      await assert.rejects(reserve(a, 10), cacheFull);
      await assert.rejects(reserve(b, 10), cacheFull);
      assert.deepEqual(await rowCount(), { kept: 10, counted: 10 });

      // A release gives its room back at once, to either replica.
      await held[7].release();
      assert.deepEqual(await rowCount(), { kept: 9, counted: 9 });
      await reserve(a, 10);
      await assert.rejects(reserve(b, 11), cacheFull);

      // Expired rows stay counted until a sweep deletes them: the refused reservation sweeps
      // and is admitted.
      await clock.advance(60_000 + 5_000); // every pending reservation expired
      assert.deepEqual(await rowCount(), { kept: 10, counted: 10 });
      await reserve(a, 12);
      assert.deepEqual(await rowCount(), { kept: 1, counted: 1 });
      assert.equal(await a.dedup.size(), 1);

      // An operator empties the table by hand: TRUNCATE fires no delete trigger, but its own.
      await reserve(b, 13);
      await db.pool.query(`TRUNCATE "${db.schema}".dedup`);
      assert.deepEqual(await rowCount(), { kept: 0, counted: 0 });
      await reserve(a, 14);

      const reservations = recorded.texts.filter((text) => /INSERT INTO "[^"]+"\.dedup AS d/.test(text));
      assert.ok(reservations.length >= 8);
      for (const text of reservations) assert.doesNotMatch(text, /count\(/, 'no reservation counts the rows');
    });
  }

  test("relayer-server's store for a postgres:// URL takes the same two statements per accepted relay", async (t) => {
    // A database of its own: relayer-server migrates and uses the schema "relayer".
    const url = new URL(await sharedPostgresUrl());
    const admin = new pg.Pool({ connectionString: url.href, max: 1 });
    const name = `relay_${uniqueSchemaName()}`;
    await admin.query(`CREATE DATABASE ${name}`);
    t.after(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    });
    url.pathname = `/${name}`;
    const relayApi = { ...testConfig().relayApi, rateLimit: { burst: 100, perMinute: 1 } };
    const config = testConfig({ relayApi, db: url.href });
    const store = await openRelayerStore(config, silentLogger);
    t.after(() => store.close());
    const table = new Map<string, Record<string, unknown> | null>();
    const api = await startApi(t, { config, store, fetch: fakeRpcFetch(table).fetch });
    const relay = async () => {
      const hash = txHash(nextTx++);
      table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: nextTx * 16 })));
      const res = await api.relay({ origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(res.status, 200, res.text);
    };
    await relay(); // creates the bucket row and runs the sweep of expired dedup rows
    // Every statement its pool sends, from this process: the pool is relayer-server's own.
    const texts: string[] = [];
    type Query = (this: unknown, query: string | { text: string }, ...rest: unknown[]) => unknown;
    const proto = pg.Pool.prototype as unknown as { query: Query };
    const query = proto.query;
    proto.query = function (q, ...rest) {
      texts.push(typeof q === 'string' ? q : q.text);
      return query.call(this, q, ...rest);
    };
    try {
      await relay();
    } finally {
      proto.query = query;
    }
    assert.equal(texts.length, 2, texts.join('\n---\n'));
    assert.match(texts[0], /token_buckets[\s\S]*INSERT INTO "relayer"\.dedup/);
    assert.match(texts[1], /INSERT INTO "relayer"\.outbox[\s\S]*UPDATE "relayer"\.dedup SET committed = true/);
  });
});

/**
 * A store on its own schema whose admission is driven directly (no HTTP), with a fake clock and
 * every statement recorded: completes called together, as concurrent requests would.
 */
async function coalescing(t: { after(fn: () => unknown): void }, burst = 1000) {
  const db = await testSchema({ max: 6 });
  t.after(() => db.close());
  const clock = createFakeClock();
  const recorded = counting(db.pool);
  const relayApi = {
    ...testConfig().relayApi,
    rateLimit: { burst, perMinute: 1 },
    dedupCapacity: 1000,
    receiptTimeoutSeconds: 60,
  };
  const store = await openPostgresStore(recorded.pool, { relayApi, schema: db.schema, clock });
  const key = (n: number) => `ethereum\n${txHash(0x7_0000 + n)}`;
  /** Relay n's two messages; relay 5's second has nonce 666 (the poisoned one where a test forbids it). */
  const messages = (n: number) => [
    outboxMessage(10 * n, T0, { txHash: txHash(0x7_0000 + n) }),
    outboxMessage(n === 5 ? 666 : 10 * n + 1, T0, { txHash: txHash(0x7_0000 + n) }),
  ];
  const admit = async (count: number) => {
    const admitted = [];
    for (let n = 1; n <= count; n++) admitted.push(await store.admission.admit(key(n)));
    return admitted;
  };
  /** Every relay's complete called at once; each settles for itself. */
  const completeAll = (admitted: AdmittedRelay[]) =>
    Promise.allSettled(admitted.map((a, i) => a.complete(messages(i + 1))));
  /** The completing statements sent since `from` (alone or together). */
  const completes = (from: number) =>
    recorded.texts.slice(from).filter((text) => /INSERT INTO "[^"]+"\.outbox/.test(text));
  const reservation = async (n: number) => {
    const { rows } = await db.pool.query(`SELECT committed FROM "${db.schema}".dedup WHERE key = $1`, [key(n)]);
    return (rows[0] as { committed: boolean } | undefined)?.committed;
  };
  const storedIds = async () => {
    const { rows } = await db.pool.query(`SELECT id FROM "${db.schema}".outbox ORDER BY seq`);
    return rows.map((row: { id: string }) => row.id);
  };
  /** The admitting statements sent since `from` (alone or together). */
  const admits = (from: number) => recorded.texts.slice(from).filter((text) => /INSERT INTO "[^"]+"\.dedup/.test(text));
  /** Admits of keys `ns` called at once: each one's reservation, or its error's reason. */
  const admitAll = async (ns: number[]) =>
    (await Promise.allSettled(ns.map((n) => store.admission.admit(key(n))))).map((r) =>
      r.status === 'fulfilled' ? r.value : (r.reason as RelayError),
    );
  /**
   * While another session holds what `lock` locks: starts `inFlight` (its statements wait in the
   * database), then `queued`, and steps the clock to the queue timeout, checking that `queued`
   * fails with store_unavailable then and not before. Returns inFlight's promise and the statements
   * sent meanwhile; the lock is let go before the harness's cleanup (which waits for every pooled
   * connection to come back).
   */
  const timeOutQueued = async <R>(
    lock: string,
    params: unknown[],
    inFlight: () => Promise<R>,
    queued: () => Promise<unknown>,
  ) => {
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(lock, params);
      const from = recorded.texts.length;
      const running = inFlight();
      let queuedError: RelayError | undefined;
      queued().catch((error: RelayError) => {
        queuedError = error;
      });
      const failed = () => queuedError;
      await clock.advance(DEFAULT_QUEUE_TIMEOUT_MS - 1);
      assert.equal(failed(), undefined, 'still waiting');
      await clock.advance(1);
      assert.equal(failed()?.code, 'store_unavailable');
      return { running, sent: recorded.texts.slice(from) };
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  };
  return {
    timeOutQueued,
    db,
    clock,
    recorded,
    store,
    key,
    messages,
    admit,
    completeAll,
    completes,
    reservation,
    storedIds,
    admits,
    admitAll,
  };
}

const ALONE = /UPDATE "[^"]+"\.dedup SET committed = true, expires_at = .* WHERE key = \$2 AND token = \$3/s;
const TOGETHER = /FROM unnest\(\$1::text\[\], \$2::uuid\[\], \$3::float8\[\]\)/;

describe('completes coalesced into shared statements (docs/replicas.md#coalesced-statements)', () => {
  test('twelve relays completing at once: two statements go out alone, the ten waiting share the third', async (t) => {
    // Alone again afterwards, the statement of today.
    const h = await coalescing(t);
    const admitted = await h.admit(12);
    const from = h.recorded.texts.length;
    const results = await h.completeAll(admitted);
    assert.deepEqual(
      results.map((r) => r.status),
      Array(12).fill('fulfilled'),
    );
    const sent = h.completes(from);
    assert.equal(sent.length, 3, 'fewer statements than relays');
    assert.match(sent[0], ALONE);
    assert.match(sent[1], ALONE);
    assert.match(sent[2], TOGETHER);
    for (let n = 1; n <= 12; n++) assert.equal(await h.reservation(n), true, `relay ${n} committed`);
    // Every row stored once; the shared statement keeps its relays' order (the outbox's seq).
    const ids = await h.storedIds();
    assert.equal(ids.length, 24);
    const expected = Array.from({ length: 10 }, (_, i) => h.messages(i + 3).map((m) => m.id)).flat();
    assert.deepEqual(
      ids.filter((id) => expected.includes(id)),
      expected,
    );

    // Nothing in flight: one relay alone sends the single statement at once.
    const last = await h.store.admission.admit(h.key(13));
    const before = h.recorded.texts.length;
    await last.complete(h.messages(13));
    const alone = h.recorded.texts.slice(before);
    assert.equal(alone.length, 1);
    assert.match(alone[0], ALONE);
    assert.equal(await h.reservation(13), true);
  });

  test('docs/gas.md#gas-payment-enforcement: the gas payments of the messages commit with them', async (t) => {
    // Alone and in a shared statement.
    const h = await coalescing(t);
    const admitted = await h.admit(4);
    const from = h.recorded.texts.length;
    const paid = (n: number) =>
      h.messages(n).map((m, i) => ({
        ...m,
        gasPayments: [
          {
            messageId: m.id,
            destination: m.destination,
            gasAmount: 2n ** 255n + BigInt(n),
            payment: BigInt(n * 1000 + i),
            txHash: m.txHash,
            logIndex: i,
          },
        ],
      }));
    const results = await Promise.allSettled(admitted.map((a, i) => a.complete(paid(i + 1))));
    assert.deepEqual(
      results.map((r) => r.status),
      Array(4).fill('fulfilled'),
    );
    const sent = h.completes(from);
    assert.ok(sent.some((text) => ALONE.test(text)) && sent.some((text) => TOGETHER.test(text)), sent.join('\n---\n'));
    for (let n = 1; n <= 4; n++) {
      const stored = await h.store.outbox.gasPayments(h.messages(n).map((m) => m.id));
      assert.deepEqual(
        stored.sort((a, b) => a.logIndex - b.logIndex),
        paid(n).flatMap((m) => m.gasPayments),
        `relay ${n}`,
      );
    }
  });

  test("a shared statement one member's rows make fail writes nothing; each member is sent again alone", async (t) => {
    // Each member then answers for itself.
    const h = await coalescing(t);
    // The database refuses relay 5's second row (a real constraint, checked by the server only).
    await h.db.pool.query(`ALTER TABLE "${h.db.schema}".outbox ADD CONSTRAINT poison CHECK (nonce <> 666)`);
    const admitted = await h.admit(10);
    const from = h.recorded.texts.length;
    const results = await h.completeAll(admitted);
    results.forEach((r, i) => {
      if (i === 4) {
        assert.equal(r.status, 'rejected');
        assert.equal(((r as PromiseRejectedResult).reason as RelayError).code, 'internal_error');
      } else assert.equal(r.status, 'fulfilled', `relay ${i + 1}`);
    });
    const sent = h.completes(from);
    assert.equal(sent.length, 2 + 1 + 8, 'two alone, the shared one (failed), its eight members again alone');
    assert.match(sent[2], TOGETHER);
    for (const s of sent.slice(3)) assert.match(s, ALONE);
    for (let n = 1; n <= 10; n++) assert.equal(await h.reservation(n), n !== 5, `relay ${n}`);
    const ids = await h.storedIds();
    assert.equal(ids.length, 18, "every row but relay 5's");
    for (const m of h.messages(5)) assert.ok(!ids.includes(m.id));
    // Relay 5 still holds its reservation, which the pipeline releases (as after any failure).
    await admitted[4].release();
    assert.equal(await h.reservation(5), undefined);
  });

  test('a shared statement that fails for unavailability: each member gets store_unavailable, nothing written', async (t) => {
    // As it would alone.
    const h = await coalescing(t);
    const admitted = await h.admit(6);
    h.recorded.failOnce.match = TOGETHER;
    const from = h.recorded.texts.length;
    const results = await h.completeAll(admitted);
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as RelayError).code)),
      ['ok', 'ok', 'store_unavailable', 'store_unavailable', 'store_unavailable', 'store_unavailable'],
    );
    assert.equal(h.completes(from).length, 3, 'not sent again: a lost connection is every member’s answer');
    assert.equal((await h.storedIds()).length, 4);
    for (let n = 3; n <= 6; n++) assert.equal(await h.reservation(n), false);
  });

  test('a complete that waits past the queue timeout fails with store_unavailable and is never written', async (t) => {
    // The statements in flight still commit theirs.
    const h = await coalescing(t);
    const admitted = await h.admit(3);
    // Another session locks the reservations of relays 1 and 2: their completes wait in the database.
    const { running, sent } = await h.timeOutQueued(
      `SELECT 1 FROM "${h.db.schema}".dedup WHERE key = ANY($1) FOR UPDATE`,
      [[h.key(1), h.key(2)]],
      () => Promise.all(admitted.slice(0, 2).map((a, i) => a.complete(h.messages(i + 1)))),
      () => admitted[2].complete(h.messages(3)),
    );
    assert.equal(
      sent.filter((text) => TOGETHER.test(text) || ALONE.test(text)).length,
      2,
      "relay 3's rows were never sent",
    );
    await running;
    assert.equal(h.clock.pending(), 0, 'no timer left behind');
    const ids = await h.storedIds();
    assert.equal(ids.length, 4);
    for (const m of h.messages(3)) assert.ok(!ids.includes(m.id));
    assert.deepEqual([await h.reservation(1), await h.reservation(2), await h.reservation(3)], [true, true, false]);
    await admitted[2].release();
    assert.equal(await h.reservation(3), undefined, 'released, as the pipeline does after the 503');
  });
});

const ADMIT_ALONE = /^\s*WITH async AS \(SELECT set_config\('synchronous_commit', 'off', true\)\),\s*room AS/;
const ADMIT_TOGETHER = /FROM unnest\(\$2::text\[\]\) WITH ORDINALITY/;
const reasonOf = (r: AdmittedRelay | RelayError) => (r instanceof Error ? r.code : 'admitted');

describe('admits coalesced into shared statements (docs/replicas.md#coalesced-statements)', () => {
  test('twelve admits at once: two alone, ten in one statement, each with its own reservation', async (t) => {
    // Tokens are in arrival order within the statement.
    // burst 6: the first admit (it counts the live rows, alone) and five more get a token.
    const h = await coalescing(t, 6);
    await h.store.admission.admit(h.key(100));
    const from = h.recorded.texts.length;
    const results = await h.admitAll([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const sent = h.admits(from);
    assert.equal(sent.length, 3, 'fewer statements than admits');
    assert.match(sent[0], ADMIT_ALONE);
    assert.match(sent[1], ADMIT_ALONE);
    assert.match(sent[2], ADMIT_TOGETHER);
    // Five tokens for twelve, as one by one. Relays 1 and 2 race the shared statement for the
    // bucket row, as concurrent requests always did; inside it the tokens go in arrival order.
    const reasons = results.map(reasonOf);
    assert.equal(reasons.filter((r) => r === 'admitted').length, 5);
    const inShared = reasons.slice(2);
    const granted = inShared.filter((r) => r === 'admitted').length;
    assert.deepEqual(inShared, [...Array(granted).fill('admitted'), ...Array(10 - granted).fill('rate_limited')]);
    for (const r of results) if (r instanceof Error) assert.ok(r.retryAfterSeconds! >= 1);
    for (let n = 1; n <= 12; n++)
      assert.equal(await h.reservation(n), reasons[n - 1] === 'admitted' ? false : undefined, `relay ${n}`);
    // Each admitted relay completes its own reservation.
    await Promise.all(
      results.map((r, i) => (r instanceof Error ? undefined : (r as AdmittedRelay).complete(h.messages(i + 1)))),
    );
    for (let n = 1; n <= 12; n++) if (reasons[n - 1] === 'admitted') assert.equal(await h.reservation(n), true);
    // The bucket is empty, as after six admits one by one: the next is refused alone.
    assert.equal(reasonOf((await h.admitAll([13]))[0]), 'rate_limited');
  });

  test('the same key twice among waiting admits is never in one statement: one admitted, the other duplicate_tx', async (t) => {
    // A live key in a shared statement is refused alone.
    const h = await coalescing(t);
    await h.store.admission.admit(h.key(9)); // live: relay 9 is in flight
    const from = h.recorded.texts.length;
    const results = await h.admitAll([1, 2, 3, 3, 4, 9, 5]);
    const reasons = results.map(reasonOf);
    // The second 3 goes in the next statement, which may run beside the shared one: as for two
    // identical requests today, exactly one of them wins.
    assert.deepEqual(reasons.slice(2, 4).sort(), ['admitted', 'duplicate_tx']);
    assert.deepEqual(
      [...reasons.slice(0, 2), ...reasons.slice(4)],
      ['admitted', 'admitted', 'admitted', 'duplicate_tx', 'admitted'],
    );
    for (const r of results.filter((r) => r instanceof Error))
      assert.match(String(r.retryAfterSeconds), /^[1-9][0-9]*$/);
    const sent = h.admits(from);
    assert.deepEqual(
      sent.map((text) => (ADMIT_TOGETHER.test(text) ? 'together' : 'alone')),
      ['alone', 'alone', 'together', 'alone'],
      'relays 1 and 2 alone; 3, 4, 9 and 5 together; the second 3 in a statement of its own',
    );
    for (const n of [1, 2, 3, 4, 5]) assert.equal(await h.reservation(n), false);
  });

  test('an admit that waits past the queue timeout fails with store_unavailable and reserves nothing', async (t) => {
    const h = await coalescing(t);
    await h.store.admission.admit(h.key(100)); // the bucket row exists
    // Another session holds the bucket row: the two admits in flight wait in the database.
    const { running, sent } = await h.timeOutQueued(
      `SELECT 1 FROM "${h.db.schema}".token_buckets FOR UPDATE`,
      [],
      () => h.admitAll([1, 2]),
      () => h.store.admission.admit(h.key(3)),
    );
    assert.equal(sent.length, 2, 'relay 3 was never sent');
    assert.deepEqual((await running).map(reasonOf), ['admitted', 'admitted']);
    assert.equal(await h.reservation(3), undefined);
    assert.equal(h.clock.pending(), 0, 'no timer left behind');
    assert.equal(reasonOf((await h.admitAll([3]))[0]), 'admitted', 'the retry is not duplicate_tx');
  });
});
