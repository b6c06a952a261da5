/**
 * Runs the Outbox contract (test/outbox-contract.ts) against every store, plus what only a
 * persistent store promises: DESIGN.md §7, "restarting the server loses nothing that was
 * acknowledged".
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { createMemoryOutbox } from '../lib/outbox.ts';
import { openPostgresStore } from '../lib/postgres/index.ts';
import { openStore } from '../lib/sqlite/index.ts';
import { MIGRATIONS } from '../lib/sqlite/schema.ts';
import { outboxContract, outboxMessage, queuedRecord } from './outbox-contract.ts';
import { createFakeClock } from './helpers/fake-clock.ts';
import { testSchema } from './helpers/postgres.ts';

const DEST_TX = '0x' + 'de'.repeat(32);
const POSTGRES_RELAY_API = { rateLimit: { burst: 100, perMinute: 100 }, dedupWindowSeconds: 300, dedupCapacity: 10_000, receiptTimeoutSeconds: 10 };

const dir = mkdtempSync(join(tmpdir(), 'relayer-outbox-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(dir, `outbox-${++files}.db`);

outboxContract('memory (lib/outbox.ts)', async (clock) => ({ outbox: createMemoryOutbox(clock), close() {} }));

outboxContract('SQLite :memory:', async (clock) => {
  const store = await openStore(':memory:', { clock });
  return { outbox: store.outbox, close: () => store.close() };
});

outboxContract('SQLite file (WAL), several connections', async (clock) => {
  const file = freshFile();
  const store = await openStore(file, { clock });
  return {
    outbox: store.outbox,
    async connect() {
      const other = await openStore(file, { clock });
      return { outbox: other.outbox, close: () => other.close() };
    },
    close: () => store.close(),
  };
});

outboxContract('PostgreSQL, several pools', async (clock) => {
  const t = await testSchema();
  const store = await openPostgresStore(t.pool, { relayApi: POSTGRES_RELAY_API, schema: t.schema, clock });
  return {
    outbox: store.outbox,
    async connect() {
      // Another replica: its own pool on the same schema.
      const pool = new pg.Pool({ connectionString: t.pool.options.connectionString, max: 2 });
      const other = await openPostgresStore(pool, { relayApi: POSTGRES_RELAY_API, schema: t.schema, clock });
      return { outbox: other.outbox, close: () => pool.end() };
    },
    close: () => t.close(),
  };
});

describe('SQLite outbox persistence', () => {
  test('DESIGN 7: enqueued and delivered messages survive close and reopen', async () => {
    const file = freshFile();
    const clock = createFakeClock(1_700_000_009_000);
    const first = await openStore(file, { clock });
    const batch = [outboxMessage(1), outboxMessage(2), outboxMessage(3)];
    assert.equal(await first.outbox.enqueue(batch), 3);
    assert.equal(await first.outbox.markDelivered(batch[1].id, { destinationTxHash: DEST_TX }), true);
    await first.close();

    const second = await openStore(file, { clock });
    try {
      assert.equal(await second.outbox.depth(), 2);
      assert.deepEqual(
        (await second.outbox.claim(10, 1_000)).map((m) => m.id),
        [batch[0].id, batch[2].id],
      );
      assert.deepEqual(await second.outbox.get(batch[0].id), { ...queuedRecord(batch[0]), status: 'delivering', attempts: 1, claimedUntil: clock.now() + 1_000 });
      assert.equal((await second.outbox.get(batch[1].id))?.deliveredAt, 1_700_000_009_000);
      assert.equal((await second.outbox.get(batch[1].id))?.destinationTxHash, DEST_TX);
      // Idempotence holds across restarts: the same messages are not stored twice.
      assert.equal(await second.outbox.enqueue(batch), 0);
    } finally {
      await second.close();
    }
  });

  test('DESIGN 3: a batch the table refuses midway (CHECK on origin chain length) stores nothing', async () => {
    const store = await openStore(freshFile());
    try {
      await store.outbox.enqueue([outboxMessage(9)]);
      // validateOutboxBatch lets a 129-byte chain name through; the table's CHECK does not, so
      // the failure happens inside the transaction, after message 1 was inserted.
      const batch = [outboxMessage(1), outboxMessage(2, 0, { originChain: 'x'.repeat(129) }), outboxMessage(3)];
      await assert.rejects(store.outbox.enqueue(batch), /CHECK constraint failed/);
      assert.equal(await store.outbox.depth(), 1);
      assert.equal(await store.outbox.get(batch[0].id), undefined);
      assert.equal(await store.outbox.enqueue([batch[0], batch[2]]), 2);
    } finally {
      await store.close();
    }
  });

  test('DESIGN 7: a batch refused before a restart left nothing behind after it', async () => {
    const file = freshFile();
    const first = await openStore(file);
    await assert.rejects(first.outbox.enqueue([outboxMessage(1), outboxMessage(2, 0, { nonce: -1 })]));
    await first.close();
    const second = await openStore(file);
    try {
      assert.equal(await second.outbox.depth(), 0);
    } finally {
      await second.close();
    }
  });
});

describe('SQLite outbox across processes (DESIGN 11)', () => {
  const children = new Set<ChildProcess>();
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  test('four worker processes claiming from one file at the same moment: no message held twice, every message claimed once', async (t) => {
    const file = freshFile();
    const N = 400;
    const store = await openStore(file);
    await store.outbox.enqueue(Array.from({ length: N }, (_, i) => outboxMessage(i + 1)));
    const script = new URL('./helpers/claim-child.ts', import.meta.url).pathname;
    const workers = [1, 2, 3, 2].map((limit) => {
      const child = spawn(process.execPath, [script, file, String(limit)], { stdio: ['pipe', 'pipe', 'inherit'] });
      children.add(child);
      child.once('exit', () => children.delete(child));
      const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
      return { child, lines };
    });
    try {
      for (const w of workers) assert.equal((await w.lines.next()).value, 'ready');
      for (const w of workers) w.child.stdin!.end('go\n');
      const claimed = await Promise.all(workers.map(async (w) => JSON.parse(String((await w.lines.next()).value)) as string[]));
      for (const w of workers) if (w.child.exitCode === null) await once(w.child, 'exit');
      const all = claimed.flat();
      assert.equal(new Set(all).size, all.length, 'no message was claimed by two workers');
      assert.equal(all.length, N, 'every message was claimed');
      for (let i = 1; i <= N; i++) {
        const record = await store.outbox.get(outboxMessage(i).id);
        assert.equal(record?.status, 'delivering');
        assert.equal(record?.attempts, 1, 'claimed exactly once');
      }
      assert.deepEqual(await store.outbox.claim(10, 1_000), []);
      t.diagnostic(`claims per worker: ${claimed.map((c) => c.length).join(', ')}`);
    } finally {
      await store.close();
    }
  });
});

describe('SQLite schema migration 3 (DESIGN 11 lifecycle)', () => {
  test('a version-2 database keeps its rows, arrival order and delivery times; they become queued or delivered', async () => {
    const file = freshFile();
    const old = new DatabaseSync(file);
    old.exec(MIGRATIONS[0]);
    old.exec(MIGRATIONS[1]);
    old.exec('PRAGMA user_version = 2');
    const insert = old.prepare(
      'INSERT INTO outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, delivered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    // Same enqueue time: only the rowid tells their order.
    const [a, b, c] = [3, 1, 2].map((n) => outboxMessage(n, 1_700_000_000_000));
    for (const [m, deliveredAt] of [[a, null], [b, 1_700_000_000_500.25], [c, null]] as const) {
      insert.run(m.id, m.originChain, m.txHash, m.origin, m.destination, m.nonce, m.raw, m.enqueuedAt, deliveredAt);
    }
    old.close();

    const clock = createFakeClock(1_700_000_001_000);
    const store = await openStore(file, { clock });
    try {
      assert.deepEqual(await store.outbox.get(a.id), queuedRecord(a));
      assert.deepEqual(await store.outbox.get(b.id), { ...queuedRecord(b), status: 'delivered', deliveredAt: 1_700_000_000_500.25 });
      assert.equal(await store.outbox.depth(), 2);
      assert.deepEqual((await store.outbox.claim(10, 1_000)).map((m) => m.id), [a.id, c.id], 'arrival order kept');
      // The new table enforces the lifecycle: a delivered row without a delivery time is refused.
      const db = new DatabaseSync(file);
      try {
        assert.throws(() => db.prepare("UPDATE outbox SET status = 'delivered' WHERE id = ?").run(c.id), /CHECK constraint failed/);
        assert.throws(() => db.prepare("UPDATE outbox SET status = 'sent' WHERE id = ?").run(c.id), /CHECK constraint failed/);
      } finally {
        db.close();
      }
    } finally {
      await store.close();
    }
  });
});
