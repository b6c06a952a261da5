/**
 * The node:sqlite store (docs/design.md#sqlite) on real files in a temp directory: durability,
 * schema versions, the worker's lifecycle. The tables are covered by the contract suites
 * (test/process/outbox.test.ts, test/unit/store/contracts.test.ts); the lease rules of two stores sharing one file
 * (two processes) are checked here.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, test } from 'node:test';
import { openSqliteStore, SCHEMA_VERSION, SchemaVersionError, type SqliteStore } from '../../lib/sqlite/index.ts';
import { MIGRATIONS } from '../../lib/sqlite/schema.ts';
import { id, record } from '../helpers/contracts/merkle.ts';
import { outboxMessage, queuedRecord } from '../../lib/testing/index.ts';
import { createFakeClock } from '../helpers/fakes/clock.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-store-');
let files = 0;
const freshFile = () => join(dir, `store-${++files}.db`);

/** Reads a pragma through a second, independent connection. */
function pragma(file: string, name: string): unknown {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return Object.values(db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown>)[0];
  } finally {
    db.close();
  }
}

async function withStore<T>(file: string, use: (store: SqliteStore) => Promise<T>): Promise<T> {
  const store = await openSqliteStore(file);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

describe('durability and schema', () => {
  test('docs/design.md#sqlite: data survives close and reopen', async () => {
    const file = freshFile();
    await withStore(file, async (store) => store.merkle.insertMerkle([record(1, 0), record(1, 1)]));
    await withStore(file, async (store) => {
      assert.equal(await store.merkleRowCount(), 2);
      assert.deepEqual(await store.merkle.listMerkle(1, 0, 1), [record(1, 0), record(1, 1)]);
    });
  });

  test('docs/design.md#sqlite: a file database runs in WAL mode with the current schema version', async () => {
    const file = freshFile();
    await withStore(file, async () => {
      assert.equal(pragma(file, 'journal_mode'), 'wal');
      assert.equal(pragma(file, 'user_version'), SCHEMA_VERSION);
    });
    assert.ok(SCHEMA_VERSION >= 2);
  });

  test('docs/design.md#sqlite: :memory: opens without WAL and works', async () => {
    await withStore(':memory:', async (store) => {
      assert.equal(await store.merkle.insertMerkle([record(1, 0)]), 1);
      assert.equal(await store.merkleRowCount(), 1);
    });
  });

  test('docs/design.md#sqlite: acknowledged writes survive SIGKILL of the process', async () => {
    const file = freshFile();
    const storeUrl = new URL('../../lib/sqlite/index.ts', import.meta.url).href;
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { openSqliteStore } from ${JSON.stringify(storeUrl)};
         const store = await openSqliteStore(${JSON.stringify(file)});
         await store.merkle.insertMerkle([{ chain: 1, insertion_block_number: 5, leaf_index: 0, message_id: '0x' + '11'.repeat(32) }]);
         await store.outbox.enqueue(${JSON.stringify([outboxMessage(1)], (_k, v) => (v instanceof Uint8Array ? [...v] : v))}
           .map((m) => ({ ...m, raw: Uint8Array.from(m.raw) })));
         process.stdout.write('acknowledged\\n');
         setInterval(() => {}, 1000); // never closes the store`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('acknowledged')) resolve();
      });
      child.on('exit', (code) => reject(new Error(`child exited early with ${code}`)));
    });
    const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');

    await withStore(file, async (store) => {
      assert.deepEqual(await store.merkle.listMerkle(1, 0, 0), [record(1, 0, 5, '0x' + '11'.repeat(32))]);
      assert.deepEqual(await store.outbox.get(outboxMessage(1).id), queuedRecord(outboxMessage(1)));
    });
  });

  test('docs/design.md#sqlite: an older schema is migrated forward and keeps its rows', async () => {
    const file = freshFile();
    // A database as the first schema version left it: merkle table only.
    const old = new DatabaseSync(file);
    old.exec(MIGRATIONS[0]);
    old.exec('PRAGMA user_version = 1');
    old.prepare('INSERT INTO merkle_insertions VALUES (1, 4, 40, ?)').run(id(4));
    old.close();

    await withStore(file, async (store) => {
      assert.deepEqual(await store.merkle.listMerkle(1, 0, 10), [record(1, 4, 40, id(4))]);
      assert.equal(await store.outbox.enqueue([outboxMessage(1)]), 1);
    });
    assert.equal(pragma(file, 'user_version'), SCHEMA_VERSION);
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: migration 6 moves the attempt state into its columns', async () => {
    // It reads the attempt state of existing rows out of their last_error.
    const file = freshFile();
    const old = new DatabaseSync(file);
    for (const migration of MIGRATIONS.slice(0, 5)) old.exec(migration);
    old.exec('PRAGMA user_version = 5');
    const errors = [
      'pending: gateway 1 of 1 answered HTTP 404 (failures 1/5; pending since 2026-11-25T12:00:00.250Z, poll 3)',
      'revert: ISM: bad signature (failures 4/5)',
      'gateway: malformed: x (failures 5/5, final)',
      'released: a worker stopped before delivering it',
    ];
    const insert = old.prepare(
      'INSERT INTO outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    for (const [i, error] of errors.entries()) {
      const m = outboxMessage(i + 1);
      insert.run(m.id, m.originChain, m.txHash, m.origin, m.destination, m.nonce, m.raw, m.enqueuedAt, error);
    }
    old.close();
    const states = await withStore(file, async (store) => {
      const out = [];
      for (let i = 1; i <= errors.length; i++) {
        const r = await store.outbox.get(outboxMessage(i).id);
        out.push([r?.failures, r?.pendingSince, r?.polls, r?.lastError]);
      }
      return out;
    });
    assert.deepEqual(states, [
      [1, Date.UTC(2026, 10, 25, 12, 0, 0, 250), 3, errors[0]],
      [4, null, 0, errors[1]],
      [5, null, 0, errors[2]],
      [0, null, 0, errors[3]],
    ]);
  });

  test('docs/design.md#sqlite: migration 4 turns stored message ids into 32-byte BLOBs, upper-case hex included', async () => {
    const file = freshFile();
    const old = new DatabaseSync(file);
    for (const migration of MIGRATIONS.slice(0, 3)) old.exec(migration);
    old.exec('PRAGMA user_version = 3');
    // Version 3 stored the text form; its CHECK admitted only lower case, as the store wrote it.
    old
      .prepare('INSERT INTO merkle_insertions VALUES (1, 0, 10, ?), (1, 1, 11, ?)')
      .run(id(0xabcdef), '0x' + 'ff'.repeat(32));
    old.close();
    await withStore(file, async (store) => {
      assert.deepEqual(await store.merkle.listMerkle(1, 0, 1), [
        record(1, 0, 10, id(0xabcdef)),
        record(1, 1, 11, '0x' + 'ff'.repeat(32)),
      ]);
    });
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const rows = db
        .prepare('SELECT typeof(message_id) AS type, hex(message_id) AS hex FROM merkle_insertions ORDER BY leaf_index')
        .all();
      assert.deepEqual(
        rows.map((r) => ({ ...r })),
        [
          { type: 'blob', hex: id(0xabcdef).slice(2).toUpperCase() },
          { type: 'blob', hex: 'FF'.repeat(32) },
        ],
      );
    } finally {
      db.close();
    }
  });

  test('docs/design.md#merkle-tree-insertions: the merkle table itself refuses an id that is not 32 bytes, from any writer', async () => {
    const file = freshFile();
    await withStore(file, async (store) => assert.equal(await store.merkle.insertMerkle([record(1, 0)]), 1));
    const db = new DatabaseSync(file);
    try {
      const insert = db.prepare('INSERT INTO merkle_insertions VALUES (1, 5, 5, ?)');
      assert.throws(() => insert.run(id(5)), /cannot store TEXT value in BLOB column/, 'the text form');
      assert.throws(() => insert.run(new Uint8Array(31)), /CHECK constraint failed/, '31 bytes');
      assert.throws(() => insert.run(new Uint8Array(33)), /CHECK constraint failed/, '33 bytes');
      assert.throws(() => insert.run(null), /NOT NULL constraint failed/);
      insert.run(new Uint8Array(32).fill(7));
    } finally {
      db.close();
    }
    await withStore(file, async (store) =>
      assert.deepEqual(await store.merkle.listMerkle(1, 5, 5), [record(1, 5, 5, '0x' + '07'.repeat(32))]),
    );
  });

  test('docs/design.md#sqlite: a newer schema is refused with a clear error and the file is left alone', async () => {
    const file = freshFile();
    const newer = new DatabaseSync(file);
    newer.exec('CREATE TABLE future (x INTEGER) STRICT');
    newer.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    newer.close();

    await assert.rejects(
      openSqliteStore(file),
      (err: unknown) =>
        err instanceof SchemaVersionError &&
        err.found === SCHEMA_VERSION + 1 &&
        err.supported === SCHEMA_VERSION &&
        /newer/.test(err.message),
    );
    assert.equal(pragma(file, 'user_version'), SCHEMA_VERSION + 1);
    assert.equal(pragma(file, 'journal_mode'), 'delete', 'journal mode untouched');
  });

  test('docs/design.md#sqlite: a foreign database with a table named like ours is refused, not adopted', async () => {
    const file = freshFile();
    const foreign = new DatabaseSync(file);
    foreign.exec('CREATE TABLE merkle_insertions (anything)');
    foreign.close();
    await assert.rejects(openSqliteStore(file), /already exists/);
    assert.equal(pragma(file, 'user_version'), 0, 'the failed migration was rolled back');
  });

  test('docs/design.md#sqlite: close() is idempotent and the store is unusable afterwards', async () => {
    const store = await openSqliteStore(freshFile());
    await store.close();
    await store.close();
    await assert.rejects(store.merkleRowCount());
    await assert.rejects(store.outbox.depth());
    await assert.rejects(store.ping());
  });

  test('docs/design.md#sqlite: writes queued before close() are answered and committed; the worker ends', async () => {
    const file = freshFile();
    const store = await openSqliteStore(file);
    const writes = Array.from({ length: 20 }, (_, i) => store.merkle.insertMerkle([record(1, i)]));
    const closed = store.close();
    assert.deepEqual(await Promise.all(writes), Array(20).fill(1));
    await closed;
    await withStore(file, async (again) => assert.equal(await again.merkleRowCount(), 20));
  });
});

/**
 * The lease rules (docs/outbox.md#leases) on one SQLite file shared by two stores, as two
 * processes (a relayer-server and a worker, or two workers) share it: each store has its own
 * worker thread and connection, so what one claims the other sees only through the file.
 */
describe('leases on one SQLite file, two stores (docs/outbox.md#leases)', () => {
  const DEST_TX = `0x${'de'.repeat(32)}`;

  test('a live lease is exclusive across stores; once expired the other takes it over and the old lease is void', async () => {
    const file = freshFile();
    const clock = createFakeClock(1_700_000_100_000);
    const a = await openSqliteStore(file, { clock });
    const b = await openSqliteStore(file, { clock });
    try {
      const m = outboxMessage(1);
      assert.equal(await a.outbox.enqueue([m]), 1);
      const [held] = await a.outbox.claim(10, 5_000);
      assert.equal(held.id, m.id);
      assert.deepEqual(await b.outbox.claim(10, 5_000), [], 'a live lease is not claimable from the other store');
      await clock.advance(4_999);
      assert.equal(await a.outbox.extend(m.id, held.lease, 5_000), true, 'its holder renews it');
      await clock.advance(4_999);
      assert.deepEqual(await b.outbox.claim(10, 5_000), [], 'renewed: still not claimable');
      await clock.advance(2);
      const [taken] = await b.outbox.claim(10, 5_000);
      assert.equal(taken.id, m.id, 'expired: the other store takes it over');
      assert.notEqual(taken.lease, held.lease);
      assert.equal(taken.leaseExpiries, 1, 'counted as an expired lease');
      assert.equal((await a.outbox.get(m.id))?.leaseExpiries, 1, 'and so stored, for the next claim of any store');
      assert.equal(await a.outbox.extend(m.id, held.lease, 5_000), false, 'the old lease cannot be renewed');
      assert.equal(await a.outbox.markDelivered(m.id, { destinationTxHash: DEST_TX, lease: held.lease }), false);
      assert.equal(
        await a.outbox.markFailed(m.id, { error: 'late', retryAt: clock.now(), lease: held.lease }),
        false,
        'nor used to record a failure',
      );
      assert.equal(await b.outbox.markDelivered(m.id, { destinationTxHash: DEST_TX, lease: taken.lease }), true);
      assert.equal((await a.outbox.get(m.id))?.status, 'delivered', 'the first store reads the outcome from the file');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a lease outlives a restart of its store: not claimable until it expires, then claimable once', async () => {
    const file = freshFile();
    const clock = createFakeClock(1_700_000_200_000);
    const first = await openSqliteStore(file, { clock });
    const m = outboxMessage(2);
    await first.outbox.enqueue([m]);
    const [held] = await first.outbox.claim(10, 10_000);
    await first.close();
    const again = await openSqliteStore(file, { clock });
    try {
      assert.deepEqual(await again.outbox.claim(10, 10_000), [], 'the lease is in the file, not in the process');
      assert.equal(await again.outbox.extend(m.id, held.lease, 10_000), true, 'its token still renews it');
      await clock.advance(10_001);
      const claims = await Promise.all([again.outbox.claim(10, 10_000), again.outbox.claim(10, 10_000)]);
      assert.deepEqual(
        claims.map((c) => c.length).sort(),
        [0, 1],
        'two claims at once: the expired lease goes to one of them',
      );
    } finally {
      await again.close();
    }
  });
});
