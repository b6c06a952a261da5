/**
 * A store failure is 503 `store_unavailable` only when the store cannot be used right now; a
 * permanent fault (a constraint the row violates, a bug) is 500 `internal_error`, which a client
 * does not retry (docs/api.md, "Errors"; lib/store/bundle.ts). Through HTTP on both engines, with the
 * faults made by the real database: a CHECK constraint added to the PostgreSQL table, a trigger
 * that refuses rows in the SQLite file. The 503 side on real databases: PostgreSQL's lock and
 * statement timeouts (test/unit/postgres/timeouts.test.ts), a database that is down
 * (test/process/postgres-store.test.ts, test/process/replicas.test.ts), SQLite's held write lock
 * (test/process/sqlite-worker.test.ts).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, test, type TestContext } from 'node:test';
import { openPostgresStore } from '../../../lib/postgres/index.ts';
import { openSqliteStore } from '../../../lib/sqlite/index.ts';
import {
  isStoreUnavailable,
  StoreUnavailableError,
  toStoreError,
  type RelayerStore,
} from '../../../lib/store/bundle.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { httpRequest, postJson, type RawResponse } from '../../helpers/harness/http.ts';
import { testSchema } from '../../helpers/harness/postgres.ts';
import { startApi } from '../../helpers/harness/server.ts';
import { tempDir } from '../../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-store-errors-');

interface Engine {
  name: string;
  /** A store, and SQL run on a second connection to its database (DDL the test adds and removes). */
  open(t: TestContext): Promise<{ store: RelayerStore; exec(sql: string): Promise<void> }>;
  /** DDL that makes the engine refuse merkle rows with leaf_index >= 1000 and outbox rows with nonce >= 1000. */
  refuse: string[];
  allow: string[];
  /** What the log's cause says about the refused row. */
  cause: RegExp;
}

const ENGINES: Engine[] = [
  {
    name: 'PostgreSQL',
    async open(t) {
      const s = await testSchema();
      t.after(() => s.close());
      const store = await openPostgresStore(s.pool, {
        relayApi: testConfig().relayApi,
        schema: s.schema,
        clock: createFakeClock(),
      });
      return { store, exec: async (sql) => void (await s.pool.query(sql.replaceAll('$S', `"${s.schema}"`))) };
    },
    refuse: [
      'ALTER TABLE $S.merkle_insertions ADD CONSTRAINT test_small_leaf CHECK (leaf_index < 1000)',
      'ALTER TABLE $S.outbox ADD CONSTRAINT test_small_nonce CHECK (nonce < 1000)',
    ],
    allow: [
      'ALTER TABLE $S.merkle_insertions DROP CONSTRAINT test_small_leaf',
      'ALTER TABLE $S.outbox DROP CONSTRAINT test_small_nonce',
    ],
    cause: /violates check constraint "test_small_(leaf|nonce)"/,
  },
  {
    name: 'SQLite',
    async open(t) {
      const file = join(dir, `errors-${Math.random().toString(16).slice(2)}.db`);
      const store = await openSqliteStore(file, { clock: createFakeClock() });
      t.after(() => store.close());
      return {
        store,
        async exec(sql) {
          const db = new DatabaseSync(file, { timeout: 5_000 });
          try {
            db.exec(sql);
          } finally {
            db.close();
          }
        },
      };
    },
    // RAISE(ABORT) fails the statement with SQLITE_CONSTRAINT (extended code SQLITE_CONSTRAINT_TRIGGER).
    refuse: [
      "CREATE TRIGGER test_small_leaf BEFORE INSERT ON merkle_insertions WHEN NEW.leaf_index >= 1000 BEGIN SELECT RAISE(ABORT, 'test_small_leaf'); END",
      "CREATE TRIGGER test_small_nonce BEFORE INSERT ON outbox WHEN NEW.nonce >= 1000 BEGIN SELECT RAISE(ABORT, 'test_small_nonce'); END",
    ],
    allow: ['DROP TRIGGER test_small_leaf', 'DROP TRIGGER test_small_nonce'],
    cause: /test_small_(leaf|nonce)/,
  },
];

const INTERNAL = { reason: 'internal_error', message: 'internal error' };

function assertInternal(res: RawResponse): void {
  assert.equal(res.status, 500, res.text);
  assert.deepEqual(res.json(), INTERNAL, 'no internals in the answer');
  assert.equal(res.headers['retry-after'], undefined, 'no Retry-After: retrying will not help');
}

for (const engine of ENGINES) {
  describe(`${engine.name}: a permanent store error is 500 internal_error, not 503 (docs/api.md, Errors)`, () => {
    test('a refused merkle row and a refused outbox row: 500, nothing stored, the reservation released', async (t) => {
      // 500 without Retry-After, the cause logged.
      const { store, exec } = await engine.open(t);
      const clock = createFakeClock();
      const table: ReceiptTable = new Map();
      const logs: Array<Record<string, unknown>> = [];
      const logger = {
        debug() {},
        info() {},
        warn() {},
        error: (msg: string, fields?: object) => void logs.push({ msg, ...fields }),
      };
      const { url, server } = await startApi(t, { store, clock, fetch: fakeRpcFetch(table).fetch, logger });
      for (const sql of engine.refuse) await exec(sql);

      const record = { chain: 1, insertion_block_number: 5, leaf_index: 5000, message_id: `0x${'ab'.repeat(32)}` };
      assertInternal(await postJson(url, '/merkle_tree_insertions', { merkle_tree_insertions: [record] }));
      const hash = txHash(0x6100);
      table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: 5000 })));
      assertInternal(await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash }));

      assert.deepEqual(
        logs.map((l) => l.msg),
        ['internal error', 'internal error'],
        'each logged once, as an internal error',
      );
      for (const line of logs) assert.match(String(line.cause), engine.cause);
      const listed = await httpRequest(url, {
        path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=9999',
      });
      assert.deepEqual(listed.json(), { merkle_tree_insertions: [] }, 'nothing stored');
      assert.equal(await server.api.pipeline.dedup.size(), 0, 'the reservation was released');

      // The operator fixes the cause: the same requests succeed, the relay is not duplicate_tx.
      for (const sql of engine.allow) await exec(sql);
      assert.equal((await postJson(url, '/merkle_tree_insertions', { merkle_tree_insertions: [record] })).status, 200);
      const retry = await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(retry.status, 200, retry.text);
    });
  });
}

describe('the classification (lib/store/bundle.ts isStoreUnavailable)', () => {
  // SQLSTATEs from the PostgreSQL manual's appendix "PostgreSQL Error Codes".
  const unavailable: Array<[string, object]> = [
    ['08006 connection_failure', { code: '08006' }],
    ['08001 sqlclient_unable_to_establish_sqlconnection', { code: '08001' }],
    ['57014 query_canceled (statement_timeout)', { code: '57014' }],
    ['55P03 lock_not_available (lock_timeout)', { code: '55P03' }],
    ['53300 too_many_connections', { code: '53300' }],
    ['53100 disk_full', { code: '53100' }],
    ['57P01 admin_shutdown', { code: '57P01' }],
    ['57P03 cannot_connect_now', { code: '57P03' }],
    ['40001 serialization_failure', { code: '40001' }],
    ['40P01 deadlock_detected', { code: '40P01' }],
    ['ECONNREFUSED', { code: 'ECONNREFUSED' }],
    ['ECONNRESET', { code: 'ECONNRESET' }],
    ['EPIPE (five capitals, not a SQLSTATE)', { code: 'EPIPE' }],
    ['SQLITE_BUSY', { code: 'ERR_SQLITE_ERROR', errcode: 5 }],
    ['SQLITE_BUSY_SNAPSHOT (extended)', { code: 'ERR_SQLITE_ERROR', errcode: 517 }],
    ['SQLITE_LOCKED', { code: 'ERR_SQLITE_ERROR', errcode: 6 }],
    ['StoreUnavailableError', new StoreUnavailableError('the SQLite worker did not answer within 7000 ms')],
  ];
  const permanent: Array<[string, unknown]> = [
    ['23514 check_violation', { code: '23514' }],
    ['23505 unique_violation', { code: '23505' }],
    ['42P01 undefined_table', { code: '42P01' }],
    ['22P02 invalid_text_representation', { code: '22P02' }],
    ['57P0 is a prefix, 57000 operator_intervention is not listed', { code: '57000' }],
    ['SQLITE_CONSTRAINT_CHECK', { code: 'ERR_SQLITE_ERROR', errcode: 275 }],
    ['SQLITE_CONSTRAINT_TRIGGER', { code: 'ERR_SQLITE_ERROR', errcode: 1811 }],
    ['SQLITE_ERROR', { code: 'ERR_SQLITE_ERROR', errcode: 1 }],
    ['TypeError', new TypeError('x is undefined')],
    ['a plain Error', new Error('boom')],
    ['a string', 'boom'],
    ['null', null],
  ];
  for (const [name, error] of unavailable) {
    test(`503: ${name}`, () => {
      assert.equal(isStoreUnavailable(error), true);
      const mapped = toStoreError(error);
      assert.deepEqual([mapped.code, mapped.status, mapped.retryAfterSeconds], ['store_unavailable', 503, 1]);
    });
  }
  for (const [name, error] of permanent) {
    test(`500: ${name}`, () => {
      assert.equal(isStoreUnavailable(error), false);
      const mapped = toStoreError(error);
      assert.deepEqual([mapped.code, mapped.status, mapped.retryAfterSeconds], ['internal_error', 500, undefined]);
      assert.equal(mapped.cause, error, 'the cause is kept for the log');
    });
  }
});
