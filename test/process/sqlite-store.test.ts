/**
 * The node:sqlite store (docs/design.md#sqlite) on real files in a temp directory: durability,
 * schema versions, the worker's lifecycle. The tables are covered by the contract suites
 * (test/process/outbox.test.ts, test/merkle.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, describe, test } from 'node:test';
import { openSqliteStore, SCHEMA_VERSION, SchemaVersionError, type SqliteStore } from '../../lib/sqlite/index.ts';
import { MIGRATIONS } from '../../lib/sqlite/schema.ts';
import { id, record } from '../helpers/merkle-contract.ts';
import { outboxMessage, queuedRecord } from '../../lib/testing/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'relayer-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
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
