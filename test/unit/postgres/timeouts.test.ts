/**
 * PostgreSQL limits enforced by the server (docs/operations.md, "Several replicas on PostgreSQL"):
 * every connection of relayer-server's pool carries `statement_timeout` and `lock_timeout`, so a
 * request that answered 503 leaves no statement running that could still commit; migrations run
 * without them. Also the dedup reservation's commit, which must stay releasable when it fails.
 *
 * On the real PostgreSQL of the test run, with the pool configuration relayer-server builds
 * (bin/lib/postgres.ts postgresPoolConfigs) and limits of a few hundred milliseconds given in the URL,
 * as an operator would: the server's timers are real time, so the waits here are that short.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openPostgresFromUrl, postgresPoolConfigs } from '../../../bin/lib/postgres.ts';
import { silentLogger } from '../../../lib/log.ts';
import type { RelayError } from '../../../lib/errors/classes.ts';
import { openPostgresStore, type PostgresStore } from '../../../lib/postgres/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { outboxMessage } from '../../../lib/testing/index.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { httpRequest, postJson } from '../../helpers/harness/http.ts';
import { sharedPostgresUrl, uniqueSchemaName } from '../../helpers/harness/postgres.ts';
import { launchRelayerServer } from '../../helpers/harness/server.ts';

let baseUrl: string;
let admin: pg.Pool;
const cleanups: Array<() => Promise<unknown>> = [];

before(async () => {
  baseUrl = await sharedPostgresUrl();
  admin = new pg.Pool({ connectionString: baseUrl, max: 4 });
  admin.on('error', () => {});
});

after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  await admin.end();
});

/** `url` with its query parameters set (and its database replaced, if given). */
function withParams(url: string, params: Record<string, string>, database?: string): string {
  const u = new URL(url);
  for (const [name, value] of Object.entries(params)) u.searchParams.set(name, value);
  if (database !== undefined) u.pathname = `/${database}`;
  return u.href;
}

interface Opened {
  store: PostgresStore;
  pool: pg.Pool;
  schema: string;
}

/** relayer-server's request pool for `params` (the URL's limits), a store on it in a fresh schema. */
async function openSqliteStore(params: Record<string, string>): Promise<Opened> {
  const configs = postgresPoolConfigs(withParams(baseUrl, params));
  const pool = new pg.Pool(configs.pool as pg.PoolConfig);
  pool.on('error', () => {});
  const schema = uniqueSchemaName();
  cleanups.push(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });
  const store = await openPostgresStore(pool, { relayApi: testConfig().relayApi, schema, clock: createFakeClock() });
  return { store, pool, schema };
}

/** Statements of other sessions that mention `schema` and are still running or waiting. */
async function running(schema: string): Promise<Array<{ query: string; wait_event_type: string | null }>> {
  const { rows } = await admin.query(
    `SELECT query, wait_event_type FROM pg_stat_activity
     WHERE state = 'active' AND pid <> pg_backend_pid() AND position($1 in query) > 0`,
    [`"${schema}".`],
  );
  return rows;
}

describe('server-side limits on every request connection (docs/operations.md)', () => {
  const cases: Array<{ limit: string; params: Record<string, string>; cancelled: RegExp }> = [
    { limit: 'lock_timeout', params: { lock_timeout: '300' }, cancelled: /canceling statement due to lock timeout/ },
    {
      limit: 'statement_timeout',
      params: { lock_timeout: '0', statement_timeout: '300' },
      cancelled: /canceling statement due to statement timeout/,
    },
  ];
  for (const { limit, params, cancelled } of cases) {
    test(`${limit}: a reservation blocked on a row lock past the limit is cancelled by the server: 503`, async (t) => {
      // Nothing commits later, and the retry is not duplicate_tx.
      const { store, schema } = await openSqliteStore(params);
      const clock = createFakeClock();
      const table: ReceiptTable = new Map();
      const logs: string[] = [];
      const logger = {
        debug() {},
        info() {},
        warn() {},
        error: (msg: string, fields?: object) => void logs.push(JSON.stringify({ msg, ...fields })),
      };
      const { createRelayServer } = await import('../../../lib/http/server.ts');
      const server = createRelayServer({
        config: testConfig(),
        store,
        clock,
        fetch: fakeRpcFetch(table).fetch,
        logger,
      });
      const { url } = await server.listen(0, '127.0.0.1');
      t.after(() => server.close(100));
      const hash = txHash(0x5100 + cases.findIndex((c) => c.limit === limit));
      table.set(hash, rpcReceipt(hash, transferLogs(1)));

      // Another session is inserting the same key and has not committed: the reservation's
      // INSERT … ON CONFLICT must wait for it (a row lock held by someone else).
      const holder = await admin.connect();
      let held = true;
      t.after(async () => {
        if (held) await holder.query('ROLLBACK').catch(() => {});
        holder.release();
      });
      await holder.query('BEGIN');
      await holder.query(
        `INSERT INTO "${schema}".dedup (key, token, committed, expires_at) VALUES ($1, gen_random_uuid(), false, 0)`,
        [`ethereum\n${hash}`],
      );

      const refused = await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.json().reason, 'store_unavailable');
      assert.equal(refused.headers['retry-after'], '1');
      assert.equal(logs.length, 1);
      assert.match(logs[0], cancelled, 'the server cancelled it, not the client');
      // Nothing of that request is still running or waiting on the server. The driver may hand
      // over the error before the backend has read the Sync that ends the statement and marked
      // itself idle, so give it a moment; a statement still waiting on the lock would stay
      // active for as long as the other session holds it.
      let left = await running(schema);
      for (let i = 0; i < 50 && left.length > 0; i++) {
        await delay(20);
        left = await running(schema);
      }
      assert.deepEqual(left, []);

      // The other session goes away: a statement still waiting would now insert the reservation.
      await holder.query('ROLLBACK');
      held = false;
      const { rows } = await admin.query(`SELECT count(*)::integer AS n FROM "${schema}".dedup`);
      assert.equal(rows[0].n, 0, 'the cancelled reservation never committed');
      const retry = await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(retry.status, 200, `the retry is not duplicate_tx: ${retry.text}`);
    });
  }

  test('pool_size=1: the change feed listens on a connection of its own, and statements still run and are heard', async () => {
    // docs/outbox.md#change-feed: relayer-server and relayer-worker open the store this way.
    const database = `pool_one_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${database}`);
    cleanups.push(() => admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
    const url = withParams(baseUrl, { pool_size: '1', statement_timeout: '1000' }, database);
    assert.equal(postgresPoolConfigs(url).listen.max, 1);
    const opened = await openPostgresFromUrl(url, testConfig().relayApi, silentLogger);
    try {
      const feed = opened.store.outbox.changes;
      await feed.ready();
      assert.equal(feed.listening(), true);
      const heard = new Promise<string[]>((resolve) => {
        const stop = feed.subscribe((change) => {
          stop();
          resolve([...change.ids]);
        });
      });
      // Without a connection of its own the feed holds the pool's only one: the enqueue waits for
      // it until the 5 s connect timeout and fails.
      const m = outboxMessage(1);
      assert.equal(await opened.store.outbox.enqueue([m]), 1);
      assert.deepEqual(await heard, [m.id]);
      const [claimed] = await opened.store.outbox.claim(1, 60_000);
      assert.equal(claimed.id, m.id);
    } finally {
      await opened.close();
    }
  });

  test('the URL sets the limits; bad values are refused; defaults 5 s and 2 s, the client waiting 1 s longer than the server', () => {
    const defaults = postgresPoolConfigs('postgres://u:pw@127.0.0.1:5432/db?sslmode=disable');
    assert.equal(defaults.pool.statement_timeout, 5_000);
    assert.equal(defaults.pool.lock_timeout, 2_000);
    assert.equal(defaults.pool.query_timeout, 6_000);
    assert.equal(
      defaults.pool.connectionString,
      'postgres://u:pw@127.0.0.1:5432/db?sslmode=disable',
      'other parameters go to the driver as they are',
    );
    assert.equal(defaults.migration.statement_timeout, undefined, 'migrations run without limits');
    assert.equal(defaults.migration.query_timeout, undefined);
    const given = postgresPoolConfigs(
      'postgres://u:pw@127.0.0.1:5432/db?statement_timeout=30000&lock_timeout=0&pool_size=3',
    );
    assert.deepEqual(
      [given.pool.statement_timeout, given.pool.lock_timeout, given.pool.query_timeout, given.pool.max],
      [30_000, 0, 31_000, 3],
    );
    assert.equal(
      given.pool.connectionString,
      'postgres://u:pw@127.0.0.1:5432/db',
      'our own parameters are not sent to the server',
    );
    for (const bad of ['-1', '1.5', 'abc', '3600001', '']) {
      assert.throws(
        () => postgresPoolConfigs(`postgres://u:pw@h/db?statement_timeout=${bad}`),
        /statement_timeout in the database URL must be an integer from 0 to 3600000/,
      );
    }
  });
});

describe('migrations run without the limits (docs/operations.md)', () => {
  test('a replica starting while another holds the migration lock longer than the statement timeout waits, then starts', async (t) => {
    const database = `m_${randomBytes(6).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${database}`);
    const dbUrl = withParams(baseUrl, {}, database);
    const holder = new pg.Client({ connectionString: dbUrl });
    await holder.connect();
    cleanups.push(async () => {
      await holder.end().catch(() => {});
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    });
    // The lock relayer-server's migrate() takes for the schema `relayer` (lib/postgres/schema.ts).
    await holder.query(`SELECT pg_advisory_lock(hashtextextended('relayer-api migrate relayer', 0))`);

    const starting = launchRelayerServer([], {
      env: {
        ...process.env,
        RELAYER_DB: withParams(dbUrl, { statement_timeout: '200', lock_timeout: '200' }),
        RELAYER_LOG_LEVEL: 'info',
      },
      graceMs: 5_000,
    });
    let exited = false;
    starting.catch(() => (exited = true));

    // Wait (bounded) until the replica's migration session waits on the advisory lock… (in this
    // test's database only: other files' replicas, starting at the same time on the shared server,
    // wait on their own migration locks)
    const waiting = async () => {
      const { rows } = await holder.query(
        `SELECT count(*)::integer AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'
           AND pid <> pg_backend_pid() AND datname = current_database()`,
      );
      return rows[0].n as number;
    };
    for (let i = 0; i < 300 && (await waiting()) === 0; i++) {
      assert.equal(exited, false, 'the replica gave up before it waited on the lock');
      await delay(100);
    }
    assert.equal(await waiting(), 1, 'the replica waits for the migration lock');
    // …then keep the lock past the 200 ms server limits and the client's 1 200 ms query_timeout.
    await delay(1_500);
    assert.equal(await waiting(), 1, 'still waiting after the statement and lock timeouts passed');
    assert.equal(exited, false);

    await holder.query(`SELECT pg_advisory_unlock(hashtextextended('relayer-api migrate relayer', 0))`);
    const replica = await starting;
    t.after(() => replica.stop());
    const ready = await httpRequest(replica.url, { path: '/ready' });
    assert.equal(ready.status, 200, ready.text);
    await replica.stop();
  });
});

describe('the dedup reservation (lib/postgres/dedup.ts)', () => {
  test('a commit whose UPDATE fails leaves the reservation releasable: release frees the pair', async () => {
    const { store, schema } = await openSqliteStore({ lock_timeout: '300' });
    const key = `ethereum\n${txHash(0x5200)}`;
    const reservation = await store.dedup.reserve(key);
    // Another session holds the reserved row: the commit's UPDATE waits past lock_timeout and fails.
    const holder = await admin.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT * FROM "${schema}".dedup WHERE key = $1 FOR UPDATE`, [key]);
      await assert.rejects(reservation.commit(), (e: RelayError) => e.code === 'store_unavailable');
      await holder.query('ROLLBACK');
    } finally {
      holder.release();
    }
    // The pipeline releases after a failed commit (lib/relay/pipeline.ts): the key must be free again.
    await reservation.release();
    const { rows } = await admin.query(`SELECT count(*)::integer AS n FROM "${schema}".dedup`);
    assert.equal(rows[0].n, 0, 'the release deleted the reservation');
    const again = await store.dedup.reserve(key);
    await again.commit();
    await assert.rejects(
      store.dedup.reserve(key),
      (e: RelayError) => e.code === 'duplicate_tx',
      'a committed pair still refuses',
    );
  });
});
