/**
 * Runs the Outbox contract (lib/testing/outbox-contract/, `relayer-api/testing`) against every store, plus what only a
 * persistent store promises: docs/design.md#storage, "restarting the server loses nothing that was
 * acknowledged".
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { after, describe, test } from 'node:test';
import type pg from 'pg';
import { openPostgresStore } from '../../lib/postgres/index.ts';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { MIGRATIONS } from '../../lib/sqlite/schema.ts';
import { outboxContract, outboxMessage, queuedRecord } from '../../lib/testing/index.ts';
import type { Outbox, OutboxMessage, VersionedReads } from '../../lib/outbox/index.ts';
import { createFakeClock } from '../helpers/fakes/clock.ts';
import { ENGINES, relayApiSettings } from '../helpers/harness/engines.ts';
import { testSchema } from '../helpers/harness/postgres.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const DEST_TX = '0x' + 'de'.repeat(32);
const POSTGRES_RELAY_API = relayApiSettings();

const dir = tempDir('relayer-outbox-');
let files = 0;
const freshFile = () => join(dir, `outbox-${++files}.db`);

for (const engine of ENGINES) {
  outboxContract(engine.name, async (clock) => {
    const opened = await engine.open(clock);
    return { outbox: opened.outbox, connect: opened.connect, close: () => opened.close() };
  });
}

describe('SQLite outbox persistence', () => {
  test('docs/design.md#sqlite: enqueued and delivered messages survive close and reopen', async () => {
    const file = freshFile();
    const clock = createFakeClock(1_700_000_009_000);
    const first = await openSqliteStore(file, { clock });
    const batch = [outboxMessage(1), outboxMessage(2), outboxMessage(3)];
    assert.equal(await first.outbox.enqueue(batch), 3);
    const [, second1] = await first.outbox.claim(2, 1_000);
    assert.equal(second1.id, batch[1].id);
    assert.equal(
      await first.outbox.markDelivered(batch[1].id, { destinationTxHash: DEST_TX, lease: second1.lease }),
      true,
    );
    await clock.advance(1_000); // message 1's lease runs out before the restart
    await first.close();

    const second = await openSqliteStore(file, { clock });
    try {
      assert.equal(await second.outbox.depth(), 2);
      assert.deepEqual(
        (await second.outbox.claim(10, 1_000)).map((m) => m.id),
        [batch[0].id, batch[2].id],
      );
      assert.deepEqual(await second.outbox.get(batch[0].id), {
        ...queuedRecord(batch[0]),
        status: 'delivering',
        attempts: 2,
        leaseExpiries: 1,
        claimedUntil: clock.now() + 1_000,
      });
      assert.equal((await second.outbox.get(batch[1].id))?.deliveredAt, 1_700_000_009_000);
      assert.equal((await second.outbox.get(batch[1].id))?.destinationTxHash, DEST_TX);
      // Idempotence holds across restarts: the same messages are not stored twice.
      assert.equal(await second.outbox.enqueue(batch), 0);
    } finally {
      await second.close();
    }
  });

  test('docs/design.md#enqueue: a batch the table refuses midway (CHECK on origin chain length) stores nothing', async () => {
    const store = await openSqliteStore(freshFile());
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

  test('docs/design.md#storage: a batch refused before a restart left nothing behind after it', async () => {
    const file = freshFile();
    const first = await openSqliteStore(file);
    await assert.rejects(first.outbox.enqueue([outboxMessage(1), outboxMessage(2, 0, { nonce: -1 })]));
    await first.close();
    const second = await openSqliteStore(file);
    try {
      assert.equal(await second.outbox.depth(), 0);
    } finally {
      await second.close();
    }
  });
});

describe('SQLite outbox across processes (docs/outbox.md#message-lifecycle)', () => {
  const children = new Set<ChildProcess>();
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  test('four worker processes claiming from one file at the same moment: no message held twice, every message claimed once', async (t) => {
    const file = freshFile();
    const N = 400;
    const store = await openSqliteStore(file);
    await store.outbox.enqueue(Array.from({ length: N }, (_, i) => outboxMessage(i + 1)));
    const script = new URL('../helpers/harness/claim-child.ts', import.meta.url).pathname;
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
      const claimed = await Promise.all(
        workers.map(async (w) => JSON.parse(String((await w.lines.next()).value)) as string[]),
      );
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

describe('SQLite schema migration 3 (docs/outbox.md#message-lifecycle)', () => {
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
    for (const [m, deliveredAt] of [
      [a, null],
      [b, 1_700_000_000_500.25],
      [c, null],
    ] as const) {
      insert.run(m.id, m.originChain, m.txHash, m.origin, m.destination, m.nonce, m.raw, m.enqueuedAt, deliveredAt);
    }
    old.close();

    const clock = createFakeClock(1_700_000_001_000);
    const store = await openSqliteStore(file, { clock });
    try {
      assert.deepEqual(await store.outbox.get(a.id), queuedRecord(a));
      assert.deepEqual(await store.outbox.get(b.id), {
        ...queuedRecord(b),
        status: 'delivered',
        deliveredAt: 1_700_000_000_500.25,
      });
      assert.equal(await store.outbox.depth(), 2);
      assert.deepEqual(
        (await store.outbox.claim(10, 1_000)).map((m) => m.id),
        [a.id, c.id],
        'arrival order kept',
      );
      // The new table enforces the lifecycle: a delivered row without a delivery time is refused.
      const db = new DatabaseSync(file);
      try {
        assert.throws(
          () => db.prepare("UPDATE outbox SET status = 'delivered' WHERE id = ?").run(c.id),
          /CHECK constraint failed/,
        );
        assert.throws(
          () => db.prepare("UPDATE outbox SET status = 'sent' WHERE id = ?").run(c.id),
          /CHECK constraint failed/,
        );
      } finally {
        db.close();
      }
    } finally {
      await store.close();
    }
  });
});

/** A SQLite file at schema `version` holding message 1 (inserted with that version's columns). */
function sqliteFileAt(version: number): { file: string; m: OutboxMessage } {
  const file = freshFile();
  const old = new DatabaseSync(file);
  for (const migration of MIGRATIONS.slice(0, version)) old.exec(migration);
  old.exec(`PRAGMA user_version = ${version}`);
  const m = outboxMessage(1);
  old
    .prepare(
      'INSERT INTO outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    )
    .run(m.id, m.originChain, m.txHash, m.origin, m.destination, m.nonce, m.raw, m.enqueuedAt);
  old.close();
  return { file, m };
}

/** A PostgreSQL schema at `version` holding message 1, then migrated: `s` is its quoted name. */
async function postgresSchemaFrom(version: number) {
  const { MIGRATIONS: PG_MIGRATIONS, migrate } = await import('../../lib/postgres/schema.ts');
  const t = await testSchema();
  const s = `"${t.schema}"`;
  try {
    await t.pool.query(
      `CREATE SCHEMA ${s}; CREATE TABLE ${s}.schema_version (version integer NOT NULL); INSERT INTO ${s}.schema_version VALUES (${version})`,
    );
    for (const migration of PG_MIGRATIONS.slice(0, version)) await t.pool.query(migration(s));
    const m = outboxMessage(1);
    await t.pool.query(
      `INSERT INTO ${s}.outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [m.id, m.originChain, m.txHash, m.origin, m.destination, m.nonce, m.raw, m.enqueuedAt],
    );
    assert.equal(await migrate(t.pool, t.schema), version);
    const store = await openPostgresStore(t.pool, {
      relayApi: POSTGRES_RELAY_API,
      schema: t.schema,
      clock: createFakeClock(),
    });
    return { t, s, m, store };
  } catch (error) {
    await t.close();
    throw error;
  }
}

describe('outbox migrations for expired-lease counting (docs/outbox.md#leases)', () => {
  test('SQLite migration 5: rows of a version-4 file start with leaseExpiries 0; the table refuses a negative count', async () => {
    const { file, m } = sqliteFileAt(4);
    const store = await openSqliteStore(file, { clock: createFakeClock(1_700_000_001_000) });
    try {
      assert.deepEqual(await store.outbox.get(m.id), queuedRecord(m));
    } finally {
      await store.close();
    }
    const db = new DatabaseSync(file);
    try {
      assert.throws(
        () => db.prepare('UPDATE outbox SET lease_expiries = -1 WHERE id = ?').run(m.id),
        /CHECK constraint failed/,
      );
      assert.throws(
        () => db.prepare('UPDATE outbox SET lease_expiries = NULL WHERE id = ?').run(m.id),
        /NOT NULL constraint failed/,
      );
    } finally {
      db.close();
    }
  });

  test('PostgreSQL migration 3: rows of a version-2 schema start with leaseExpiries 0; the table refuses what SQLite refuses', async () => {
    const { t, s, m, store } = await postgresSchemaFrom(2);
    try {
      assert.deepEqual(await store.outbox.get(m.id), queuedRecord(m));
      const update = (set: string) => t.pool.query(`UPDATE ${s}.outbox SET ${set} WHERE id = $1`, [m.id]);
      await assert.rejects(update('lease_expiries = -1'), /violates check constraint "outbox_lease_expiries_count"/);
      await assert.rejects(update('lease_expiries = NULL'), /violates not-null constraint/);
    } finally {
      await t.close();
    }
  });
});

describe('outbox migrations of the gas book (docs/gas.md#gas-already-spent)', () => {
  test('SQLite migration 9: a version-8 row has nothing spent nor required; the columns refuse what is not a uint256', async () => {
    const { file, m } = sqliteFileAt(8);
    const store = await openSqliteStore(file, { clock: createFakeClock(1_700_000_001_000) });
    try {
      assert.deepEqual(await store.outbox.get(m.id), queuedRecord(m));
    } finally {
      await store.close();
    }
    const db = new DatabaseSync(file);
    try {
      const update = (set: string) => () => db.prepare(`UPDATE outbox SET ${set} WHERE id = ?`).run(m.id);
      for (const set of [
        "gas_spent = '-1'",
        "gas_spent_wei = '01'",
        "required_gas = '1e3'",
        `required_gas = '${'9'.repeat(79)}'`,
      ])
        assert.throws(update(set), /CHECK constraint failed/, set);
      assert.throws(update('gas_spent = NULL'), /NOT NULL constraint failed/);
      assert.throws(
        () => db.prepare("INSERT INTO gas_spent VALUES (?, ?, '1', 'x')").run(m.txHash, m.id),
        /CHECK constraint failed/,
      );
    } finally {
      db.close();
    }
  });

  test('PostgreSQL migration 10: a version-9 row has nothing spent nor required; the columns refuse what SQLite refuses', async () => {
    const { t, s, m, store } = await postgresSchemaFrom(9);
    try {
      assert.deepEqual(await store.outbox.get(m.id), queuedRecord(m));
      const update = (set: string) => t.pool.query(`UPDATE ${s}.outbox SET ${set} WHERE id = $1`, [m.id]);
      for (const set of ['gas_spent = -1', `required_gas = ${2n ** 256n}`])
        await assert.rejects(update(set), /violates check constraint/, set);
      await assert.rejects(update('gas_spent_wei = NULL'), /violates not-null constraint/);
      await assert.rejects(
        t.pool.query(`INSERT INTO ${s}.gas_spent VALUES ($1, $2, -1, 0)`, [m.txHash, m.id]),
        /violates check constraint/,
      );
    } finally {
      await t.close();
    }
  });
});

/** Writes of a migrated store that must each raise message `m`'s version (docs/api.md#status-events). */
async function versionRaises(outbox: Outbox & VersionedReads, m: OutboxMessage): Promise<void> {
  const version = async () => (await outbox.getVersioned(m.id))!.version;
  const writes: [string, () => unknown][] = [
    [
      'a top-up',
      () =>
        outbox.addGasPayments([
          { messageId: m.id, destination: m.destination, gasAmount: 1n, payment: 1n, txHash: m.txHash, logIndex: 0 },
        ]),
    ],
    ['the required gas', () => outbox.setRequiredGas(m.id, 5n)],
    ['a spend', () => outbox.addGasSpent([{ messageId: m.id, txHash: m.txHash, gasUsed: 2n, cost: 3n }])],
    ['a claim', () => outbox.claim(1, 60_000)],
  ];
  for (const [what, write] of writes) {
    const before = await version();
    await write();
    assert.ok((await version()) > before, `${what} raised the version`);
  }
}

describe('outbox migrations of status events with gas_payment (docs/api.md#status-events)', () => {
  test('SQLite migration 10: on a version-9 file a top-up, the required gas, a spend and a claim each raise the version', async () => {
    const { file, m } = sqliteFileAt(9);
    const store = await openSqliteStore(file, { clock: createFakeClock(1_700_000_001_000) });
    try {
      await versionRaises(store.outbox, m);
    } finally {
      await store.close();
    }
  });

  test('PostgreSQL migration 11: on a version-10 schema a top-up, the required gas, a spend and a claim each raise the version', async () => {
    const { t, m, store } = await postgresSchemaFrom(10);
    try {
      await versionRaises(store.outbox, m);
    } finally {
      await t.close();
    }
  });
});

describe('lease time is read where the lock is held, not when the call was sent (docs/outbox.md#leases)', () => {
  test('SQLite: a claim that waited for the write lock gets its whole lease from when it got the lock', async () => {
    // The claim waits 300 ms; so do extend and markDelivered.
    const file = freshFile();
    const T = 1_700_000_100_000;
    const clock = createFakeClock(T);
    const store = await openSqliteStore(file, { clock, busyTimeoutMs: 60_000 });
    try {
      const [one, two] = [outboxMessage(1), outboxMessage(2)];
      await store.outbox.enqueue([one, two, outboxMessage(3)]);
      const [held1, held2] = await store.outbox.claim(2, 1_000);
      // Another connection holds the write lock (an operator's sqlite3 shell, another process).
      const lock = new DatabaseSync(file);
      lock.exec('BEGIN IMMEDIATE');
      let claim: Promise<unknown[]>, extend: Promise<boolean>, deliver: Promise<boolean>;
      const settled: string[] = [];
      try {
        claim = store.outbox.claim(1, 1_000).finally(() => settled.push('claim'));
        extend = store.outbox.extend(one.id, held1.lease, 1_000).finally(() => settled.push('extend'));
        deliver = store.outbox
          .markDelivered(two.id, { destinationTxHash: DEST_TX, lease: held2.lease })
          .finally(() => settled.push('deliver'));
        // A read issued after them is answered while they wait: they reached the worker.
        assert.equal((await store.outbox.get(one.id))?.claimedUntil, T + 1_000);
        await clock.advance(300);
        assert.equal((await store.outbox.get(one.id))?.claimedUntil, T + 1_000);
        assert.deepEqual(settled, [], 'still waiting for the lock');
      } finally {
        lock.exec('ROLLBACK');
        lock.close();
      }
      const [claimed] = (await claim) as { id: string; claimedUntil: number }[];
      assert.equal(claimed.id, outboxMessage(3).id);
      assert.equal(claimed.claimedUntil, T + 300 + 1_000, 'the whole lease, not 300 ms short');
      assert.equal((await store.outbox.get(claimed.id))?.claimedUntil, T + 300 + 1_000);
      assert.equal(await extend, true);
      assert.equal((await store.outbox.get(one.id))?.claimedUntil, T + 300 + 1_000);
      assert.equal(await deliver, true);
      assert.equal((await store.outbox.get(two.id))?.deliveredAt, T + 300);
    } finally {
      await store.close();
    }
  });

  /** The database's clock in ms, read by `db`. */
  async function dbNow(db: pg.ClientBase | pg.Pool): Promise<number> {
    const { rows } = await db.query<{ now: number }>('SELECT extract(epoch from clock_timestamp()) * 1000 AS now');
    return Number(rows[0].now);
  }

  /** Waits (bounded) until a backend of this database waits for a row lock. */
  async function untilWaitingForLock(pool: pg.Pool): Promise<void> {
    for (let i = 0; i < 2_000; i++) {
      const { rows } = await pool.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
      );
      if (rows[0].n > 0) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.fail('no statement waited for the row lock');
  }

  test('PostgreSQL: extend and markDelivered that waited for a row lock read the database clock after the wait', async () => {
    const t = await testSchema({ max: 6 });
    try {
      const store = await openPostgresStore(t.pool, { relayApi: POSTGRES_RELAY_API, schema: t.schema });
      const [one, two] = [outboxMessage(1), outboxMessage(2)];
      await store.outbox.enqueue([one, two]);
      const [held1, held2] = await store.outbox.claim(2, 60_000);
      for (const [what, start, check] of [
        [
          'extend',
          () => store.outbox.extend(one.id, held1.lease, 60_000),
          async (released: number) => {
            const until = (await store.outbox.get(one.id))!.claimedUntil!;
            assert.ok(
              until >= released + 60_000,
              `claimedUntil ${until} < ${released} + 60000: the lease lost the wait`,
            );
          },
        ],
        [
          'markDelivered',
          () => store.outbox.markDelivered(two.id, { destinationTxHash: DEST_TX, lease: held2.lease }),
          async (released: number) => {
            const at = (await store.outbox.get(two.id))!.deliveredAt!;
            assert.ok(at >= released, `deliveredAt ${at} < ${released}`);
          },
        ],
      ] as const) {
        const id = what === 'extend' ? one.id : two.id;
        // Another transaction writes the row and keeps it locked.
        const other = await t.pool.connect();
        let call: Promise<boolean>;
        let released: number;
        try {
          await other.query('BEGIN');
          await other.query(`UPDATE "${t.schema}".outbox SET attempts = attempts WHERE id = $1`, [id]);
          call = start();
          await untilWaitingForLock(t.pool);
          released = await dbNow(other);
          await other.query('COMMIT');
        } finally {
          other.release();
        }
        assert.equal(await call, true, what);
        await check(released);
      }
    } finally {
      await t.close();
    }
  });

  test('PostgreSQL: a claim that waited for a pooled connection is leased from the database clock when it runs', async () => {
    const t = await testSchema({ max: 1 });
    try {
      const store = await openPostgresStore(t.pool, { relayApi: POSTGRES_RELAY_API, schema: t.schema });
      await store.outbox.enqueue([outboxMessage(1)]);
      const busy = await t.pool.connect(); // the only connection
      let claim: Promise<{ claimedUntil: number | null }[]>;
      let released: number;
      try {
        claim = store.outbox.claim(1, 60_000);
        released = await dbNow(busy);
      } finally {
        busy.release();
      }
      const [claimed] = await claim;
      assert.ok(
        claimed.claimedUntil! >= released + 60_000,
        `claimedUntil ${claimed.claimedUntil} < ${released} + 60000`,
      );
    } finally {
      await t.close();
    }
  });
});
