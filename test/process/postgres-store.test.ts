/**
 * The PostgreSQL store (relayer-api/postgres, docs/design.md#postgresql, docs/replicas.md#how-replicas-agree) beyond the
 * engine contracts (test/unit/store/contracts.test.ts): migrations under the advisory lock, restarts,
 * a database that goes away and comes back, and what its errors reveal. On a real server from npm.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { InvalidArgumentError, RelayError, SchemaVersionError } from '../../lib/errors/classes.ts';
import { migrate, openPostgresStore, SCHEMA_VERSION, type PostgresStoreOptions } from '../../lib/postgres/index.ts';
import { MIGRATIONS } from '../../lib/postgres/schema.ts';
import { MAX_DESTINATION_TX_HASH_LENGTH, MAX_ERROR_LENGTH } from '../../lib/outbox/index.ts';
import { outboxMessage } from '../../lib/testing/index.ts';
import type { EmbeddedPostgres } from '../../scripts/embedded-postgres.ts';
import { createFakeClock } from '../helpers/fakes/clock.ts';
import { startTestPostgres, testSchema } from '../helpers/harness/postgres.ts';

const relayApi: PostgresStoreOptions['relayApi'] = {
  rateLimit: { burst: 100, perMinute: 100 },
  dedupWindowSeconds: 300,
  dedupCapacity: 10_000,
  receiptTimeoutSeconds: 10,
};

const ID = '0x' + '11'.repeat(32);
const record = (leaf: number) => ({ chain: 1, insertion_block_number: 10 + leaf, leaf_index: leaf, message_id: ID });

describe('PostgreSQL schema and migrations', () => {
  test('docs/design.md#postgresql: replicas starting together migrate once: 6 pools open one fresh schema at the same time', async () => {
    const t = await testSchema();
    const pools = Array.from(
      { length: 6 },
      () => new pg.Pool({ connectionString: t.pool.options.connectionString, max: 2 }),
    );
    try {
      const found = await Promise.all(pools.map((pool) => migrate(pool, t.schema)));
      // Exactly one found the schema empty; the others waited on the lock and found it done.
      assert.deepEqual(found.sort(), [0, ...Array(5).fill(SCHEMA_VERSION)]);
      const { rows } = await t.pool.query(`SELECT version FROM "${t.schema}".schema_version`);
      assert.deepEqual(rows, [{ version: SCHEMA_VERSION }]);
      const stores = await Promise.all(pools.map((pool) => openPostgresStore(pool, { relayApi, schema: t.schema })));
      await stores[0].merkle.insertMerkle([record(1)]);
      assert.deepEqual(await stores[5].merkle.listMerkle(1, 0, 10), [record(1)]);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
      await t.close();
    }
  });

  test('docs/design.md#postgresql: reopening keeps what was stored and runs no migration again', async () => {
    const t = await testSchema();
    try {
      const first = await openPostgresStore(t.pool, { relayApi, schema: t.schema });
      await first.merkle.insertMerkle([record(3)]);
      await first.close();
      assert.equal(await migrate(t.pool, t.schema), SCHEMA_VERSION);
      const second = await openPostgresStore(t.pool, { relayApi, schema: t.schema });
      assert.deepEqual(await second.merkle.listMerkle(1, 3, 3), [record(3)]);
    } finally {
      await t.close();
    }
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: migration 4 moves the attempt state into its columns', async () => {
    // It reads the attempt state of existing rows out of their last_error.
    const t = await testSchema();
    const s = `"${t.schema}"`;
    try {
      await t.pool.query(
        `CREATE SCHEMA ${s}; CREATE TABLE ${s}.schema_version (version integer NOT NULL); INSERT INTO ${s}.schema_version VALUES (3)`,
      );
      for (const migration of MIGRATIONS.slice(0, 3)) await t.pool.query(migration(s));
      const errors = [
        'pending: gateway 1 of 1 answered HTTP 404 (failures 1/5; pending since 2026-11-25T12:00:00.250Z, poll 3)',
        'revert: ISM: bad signature (failures 4/5)',
        'gateway: malformed: x (failures 5/5, final)',
        'released: a worker stopped before delivering it',
      ];
      for (const [i, error] of errors.entries()) {
        const m = outboxMessage(i + 1);
        await t.pool.query(
          `INSERT INTO ${s}.outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, last_error) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [m.id, m.originChain, m.txHash, m.origin, m.destination, m.nonce, m.raw, m.enqueuedAt, error],
        );
      }
      assert.equal(await migrate(t.pool, t.schema), 3);
      const store = await openPostgresStore(t.pool, { relayApi, schema: t.schema });
      const states = [];
      for (let i = 1; i <= errors.length; i++) {
        const r = await store.outbox.get(outboxMessage(i).id);
        states.push([r?.failures, r?.pendingSince, r?.polls, r?.lastError]);
      }
      await store.close();
      assert.deepEqual(states, [
        [1, Date.UTC(2026, 10, 25, 12, 0, 0, 250), 3, errors[0]],
        [4, null, 0, errors[1]],
        [5, null, 0, errors[2]],
        [0, null, 0, errors[3]],
      ]);
    } finally {
      await t.close();
    }
  });

  test('docs/design.md#postgresql: migration 2 adds the outbox length limits to a version-1 schema, keeping its rows', async () => {
    const t = await testSchema();
    const s = `"${t.schema}"`;
    try {
      await t.pool.query(
        `CREATE SCHEMA ${s}; CREATE TABLE ${s}.schema_version (version integer NOT NULL); INSERT INTO ${s}.schema_version VALUES (1)`,
      );
      await t.pool.query(MIGRATIONS[0](s));
      const message = outboxMessage(1);
      await t.pool.query(
        `INSERT INTO ${s}.outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, last_error) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          message.id,
          message.originChain,
          message.txHash,
          message.origin,
          message.destination,
          message.nonce,
          message.raw,
          message.enqueuedAt,
          'x'.repeat(MAX_ERROR_LENGTH),
        ],
      );
      assert.equal(await migrate(t.pool, t.schema), 1);
      const store = await openPostgresStore(t.pool, { relayApi, schema: t.schema });
      assert.equal((await store.outbox.get(message.id))?.lastError, 'x'.repeat(MAX_ERROR_LENGTH));
      await store.close();
      const update = (set: string) => t.pool.query(`UPDATE ${s}.outbox SET ${set} WHERE id = $1`, [message.id]);
      await assert.rejects(
        update(`last_error = repeat('x', ${MAX_ERROR_LENGTH + 1})`),
        /violates check constraint "outbox_last_error_length"/,
      );
      const delivered = `status = 'delivered', delivered_at = 1`;
      await assert.rejects(
        update(`${delivered}, destination_tx_hash = ''`),
        /violates check constraint "outbox_destination_tx_hash_length"/,
      );
      await assert.rejects(
        update(`${delivered}, destination_tx_hash = repeat('a', ${MAX_DESTINATION_TX_HASH_LENGTH + 1})`),
        /violates check constraint "outbox_destination_tx_hash_length"/,
      );
      await update(`${delivered}, destination_tx_hash = repeat('a', ${MAX_DESTINATION_TX_HASH_LENGTH})`);
    } finally {
      await t.close();
    }
  });

  test('a schema written by a newer release is refused with SchemaVersionError, untouched', async () => {
    const t = await testSchema();
    try {
      await migrate(t.pool, t.schema);
      await t.pool.query(`UPDATE "${t.schema}".schema_version SET version = $1`, [SCHEMA_VERSION + 1]);
      await assert.rejects(
        openPostgresStore(t.pool, { relayApi, schema: t.schema }),
        (e) => e instanceof SchemaVersionError && e.found === SCHEMA_VERSION + 1 && e.supported === SCHEMA_VERSION,
      );
      const { rows } = await t.pool.query(`SELECT version FROM "${t.schema}".schema_version`);
      assert.deepEqual(rows, [{ version: SCHEMA_VERSION + 1 }]);
    } finally {
      await t.close();
    }
  });

  test('the schema name must be a plain lower-case identifier (it is spliced into SQL)', async () => {
    const t = await testSchema();
    try {
      for (const schema of ['Relayer', 'a-b', 'x"; DROP TABLE y; --', '', '1abc']) {
        await assert.rejects(openPostgresStore(t.pool, { relayApi, schema }), InvalidArgumentError, schema);
      }
    } finally {
      await t.close();
    }
  });

  test('stores in different schemas of one database do not see each other', async () => {
    const a = await testSchema();
    const b = await testSchema();
    try {
      const clock = createFakeClock();
      const sa = await openPostgresStore(a.pool, { relayApi, schema: a.schema, clock });
      const sb = await openPostgresStore(b.pool, { relayApi, schema: b.schema, clock });
      await (await sa.dedup.reserve('k')).commit();
      await sb.dedup.reserve('k');
      await sa.merkle.insertMerkle([record(1)]);
      assert.deepEqual(await sb.merkle.listMerkle(1, 0, 10), []);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('docs/replicas.md#how-replicas-agree: without an injected clock the database clock dates reservations (replicas agree)', async () => {
    const t = await testSchema();
    try {
      const store = await openPostgresStore(t.pool, { relayApi, schema: t.schema });
      await (await store.dedup.reserve('k')).commit();
      const err = await store.dedup.reserve('k').then(
        () => assert.fail('accepted'),
        (e: unknown) => e as RelayError,
      );
      assert.equal(err.code, 'duplicate_tx');
      assert.ok(err.retryAfterSeconds! >= 299 && err.retryAfterSeconds! <= 300, String(err.retryAfterSeconds));
      const { rows } = await t.pool.query(
        `SELECT expires_at - extract(epoch from now()) * 1000 AS left FROM "${t.schema}".dedup`,
      );
      assert.ok(Math.abs(rows[0].left - 300_000) < 5_000, String(rows[0].left));
      assert.deepEqual(await store.rateLimiter.take(), { ok: true });
    } finally {
      await t.close();
    }
  });
});

describe('PostgreSQL outage (docs/design.md#errors, #postgresql: 503 store_unavailable, recovery without restart)', () => {
  let server: EmbeddedPostgres;
  let pool: pg.Pool;
  before(async () => {
    server = await startTestPostgres();
    pool = new pg.Pool({ connectionString: server.url(), max: 3, connectionTimeoutMillis: 2_000 });
  });
  after(async () => {
    await pool.end();
    await server.remove();
  });

  test('every store call fails with store_unavailable while the database is down and works again once it is back', async () => {
    const poolErrors: Error[] = [];
    const store = await openPostgresStore(pool, { relayApi, onPoolError: (e) => poolErrors.push(e) });
    await store.merkle.insertMerkle([record(1)]);
    await store.ping();

    await server.stop();
    const password = new URL(server.url()).password;
    const calls: [string, () => Promise<unknown>][] = [
      ['ping', () => store.ping()],
      ['reserve', () => store.dedup.reserve('k')],
      ['size', () => store.dedup.size()],
      ['take', () => store.rateLimiter.take()],
      ['insertMerkle', () => store.merkle.insertMerkle([record(2)])],
      ['listMerkle', () => store.merkle.listMerkle(1, 0, 10)],
    ];
    for (const [name, call] of calls) {
      await assert.rejects(call(), (e: unknown) => {
        assert.ok(e instanceof RelayError, `${name}: ${e}`);
        assert.equal(e.code, 'store_unavailable', name);
        assert.equal(e.status, 503);
        assert.ok(e.retryAfterSeconds! >= 1, name);
        // Neither the error nor its cause carries the password.
        const text = `${e.message} ${String(e.cause)} ${JSON.stringify(e)} ${(e.cause as Error)?.stack}`;
        assert.ok(!text.includes(password), `${name} leaks the password: ${text}`);
        return true;
      });
    }
    // The idle connections the shutdown killed were reported, not thrown at the process.
    assert.ok(poolErrors.length > 0);

    await server.start();
    await store.ping();
    assert.deepEqual(await store.merkle.listMerkle(1, 0, 10), [record(1)], 'nothing stored before the outage was lost');
    await store.merkle.insertMerkle([record(2)]);
    const r = await store.dedup.reserve('k');
    await r.commit();
    assert.equal((await store.rateLimiter.take()).ok, true);
  });
});
