/**
 * The outbox's change feed (lib/outbox/change-feed.ts, docs/outbox.md#change-feed) on every engine:
 * enqueues, claims and outcomes are told with their ids (and the transactions of new messages),
 * a lease renewal is not, and each visible change raises the message's version. Writes by another
 * connection reach the feed: on SQLite another store on the same file (what a relayer-worker
 * process is), seen through PRAGMA data_version; on PostgreSQL another pool (a replica or a
 * worker), heard through LISTEN/NOTIFY on the one listening connection, which comes back after
 * it is cut and then says `all`.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import { txKey, type ChangeFeed, type OutboxChange } from '../../../lib/outbox/change-feed.ts';
import { createMemoryOutbox, type Outbox, type OutboxMessage, type OutboxWatch } from '../../../lib/outbox/index.ts';
import { openPostgresStore } from '../../../lib/postgres/index.ts';
import { openSqliteStore } from '../../../lib/sqlite/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock, type FakeClock } from '../../helpers/fakes/clock.ts';
import { testSchema } from '../../helpers/harness/postgres.ts';
import { txHash } from '../../helpers/fixtures/builders.ts';
import { outboxMessage } from '../../../lib/testing/index.ts';
import { tempDir } from '../../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-change-feed-');

/** Collects what a feed publishes; `next(predicate)` resolves with the first change that matches (real time bound). */
function collect(feed: ChangeFeed) {
  const seen: OutboxChange[] = [];
  const waiters: { match: (c: OutboxChange) => boolean; resolve: (c: OutboxChange) => void }[] = [];
  const unsubscribe = feed.subscribe((change) => {
    seen.push(change);
    for (const w of [...waiters]) {
      if (w.match(change)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(change);
      }
    }
  });
  return {
    seen,
    unsubscribe,
    /** The first change (already seen or to come) matching, within 5 s of real time (a bound, never a sleep). */
    next(match: (c: OutboxChange) => boolean, what: string): Promise<OutboxChange> {
      const found = seen.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no change: ${what}`)), 5_000);
        waiters.push({
          match,
          resolve: (c) => {
            clearTimeout(timer);
            resolve(c);
          },
        });
      });
    },
  };
}

const has = (id: string) => (c: OutboxChange) => c.ids.includes(id);

type Engine = {
  name: string;
  /** The store under test, and `other`: a second handle writing the same data (another process or replica). */
  open(clock: FakeClock): Promise<{ outbox: Outbox & OutboxWatch; other: Outbox; close(): Promise<void> }>;
};

const engines: Engine[] = [
  {
    name: 'memory outbox',
    async open(clock) {
      const outbox = createMemoryOutbox({ clock });
      return { outbox, other: outbox, close: async () => {} };
    },
  },
  {
    name: 'SQLite store (file), the other writer on its own connection',
    async open(clock) {
      const file = join(dir, `feed-${Math.random().toString(16).slice(2)}.db`);
      const store = await openSqliteStore(file, { clock, changeCheckMs: 20 });
      const other = await openSqliteStore(file, { clock });
      return {
        outbox: store.outbox,
        other: other.outbox,
        async close() {
          await other.close();
          await store.close();
        },
      };
    },
  },
  {
    name: 'PostgreSQL store, the other writer on its own pool',
    async open(clock) {
      const t = await testSchema();
      const relayApi = testConfig().relayApi;
      const store = await openPostgresStore(t.pool, { relayApi, schema: t.schema, clock });
      const otherPool = new pg.Pool({ connectionString: t.pool.options.connectionString, max: 2 });
      const other = await openPostgresStore(otherPool, { relayApi, schema: t.schema, clock, migrate: false });
      return {
        outbox: store.outbox,
        other: other.outbox,
        async close() {
          await other.close();
          await otherPool.end();
          await store.close();
          await t.close();
        },
      };
    },
  },
];

/** The engine's store opened for test `t` (closed after it), with a collector following its feed, started. */
async function followed(t: { after(fn: () => unknown): void }, engine: Engine) {
  const clock = createFakeClock();
  const opened = await engine.open(clock);
  t.after(opened.close);
  const feed = collect(opened.outbox.changes);
  t.after(feed.unsubscribe);
  await opened.outbox.changes.ready();
  return { ...opened, clock, feed };
}

for (const engine of engines) {
  describe(`change feed: ${engine.name}`, () => {
    test('enqueue, claim and outcomes are told with their ids, new messages with their transaction; versions grow', async (t) => {
      // A lease renewal is not told.
      const { outbox, feed } = await followed(t, engine);

      const [a, b] = [outboxMessage(1), outboxMessage(2, undefined, { txHash: outboxMessage(1).txHash })];
      await outbox.enqueue([a, b]);
      const enqueued = await feed.next(has(a.id), 'enqueue');
      assert.deepEqual([...enqueued.ids].sort(), [a.id, b.id].sort());
      assert.deepEqual(enqueued.txs, [txKey('ethereum', a.txHash)]);
      const v0 = (await outbox.getVersioned(a.id))!.version;

      const [claimed] = await outbox.claim(1, 60_000);
      assert.equal(claimed.id, a.id);
      await feed.next((c) => c !== enqueued && has(a.id)(c), 'claim');
      const v1 = (await outbox.getVersioned(a.id))!.version;
      assert.ok(v1 > v0, `claim raised the version (${v0} -> ${v1})`);

      const before = feed.seen.length;
      assert.equal(await outbox.extend(a.id, claimed.lease, 60_000), true);
      assert.equal((await outbox.getVersioned(a.id))!.version, v1, 'a lease renewal is no visible change');

      assert.equal(
        await outbox.markDelivered(a.id, { lease: claimed.lease, destinationTxHash: '0x' + 'de'.repeat(32) }),
        true,
      );
      const delivered = await feed.next((c) => feed.seen.indexOf(c) >= before && has(a.id)(c), 'delivered');
      assert.deepEqual(delivered.txs, [], 'an outcome is no new message');
      assert.equal(
        feed.seen.slice(before).filter(has(a.id)).length,
        1,
        'the renewal published nothing; the delivery once',
      );
      const v2 = (await outbox.getVersioned(a.id))!.version;
      assert.ok(v2 > v1);
      const [ra, rb] = await outbox.byTxVersioned('ethereum', a.txHash);
      assert.deepEqual([ra.id, ra.version, ra.status, rb.id, rb.status], [a.id, v2, 'delivered', b.id, 'queued']);
    });

    test('gas_payment changes raise the version and are told; a payment for another destination, or the same twice, not', async (t) => {
      // docs/api.md#status-events: an event equals GET /relay/{id}, gas_payment included. The
      // visible ones: a payment for the message's destination, the required gas, a spend.
      const { outbox, feed } = await followed(t, engine);
      const paid = (m: OutboxMessage, tx: number, destination = m.destination) => ({
        messageId: m.id,
        destination,
        gasAmount: 100_000n,
        payment: 10n ** 15n,
        txHash: txHash(tx),
        logIndex: 0,
      });
      const m = outboxMessage(11);
      await outbox.enqueue([{ ...m, gasPayments: [paid(m, 900)] }]);
      await feed.next(has(m.id), 'enqueue');
      const version = async () => (await outbox.getVersioned(m.id))!.version;
      let seen = await version();
      const marker = async (from: number, what: string) => {
        // A later visible change of another message: everything before it has been told by then.
        await outbox.enqueue([outboxMessage(5000 + from)]);
        await feed.next((c) => feed.seen.indexOf(c) >= from && c.ids.length > 0 && !has(m.id)(c), `${what}: a marker`);
      };
      await marker(feed.seen.length, 'the enqueue');
      assert.equal(feed.seen.filter(has(m.id)).length, 1, 'POST /relay storing a payment with its message: told once');
      assert.equal(await version(), seen);
      /** `write`, then the message's version: raised and told (visible), or neither. */
      async function check(what: string, visible: boolean, write: () => unknown): Promise<void> {
        const from = feed.seen.length;
        await write();
        if (visible) {
          await feed.next((c) => feed.seen.indexOf(c) >= from && has(m.id)(c), what);
          const now = await version();
          assert.ok(now > seen, `${what}: the version grew (${seen} -> ${now})`);
          seen = now;
          return;
        }
        await marker(from, what);
        assert.equal(await version(), seen, `${what}: the version stays`);
        assert.ok(!feed.seen.slice(from).some(has(m.id)), `${what}: nothing told`);
      }
      assert.deepEqual(
        (await outbox.getVersioned(m.id))!.gasPayments?.map((p) => p.txHash),
        [txHash(900)],
        'the versioned read brings the payments',
      );
      await check('a top-up', true, () => outbox.addGasPayments([paid(m, 901)]));
      await check('the same top-up again', false, () => outbox.addGasPayments([paid(m, 901)]));
      await check('a payment for another destination', false, () => outbox.addGasPayments([paid(m, 902, 10)]));
      await check('the required gas', true, () => outbox.setRequiredGas(m.id, 50_000n));
      await check('the same required gas', false, () => outbox.setRequiredGas(m.id, 50_000n));
      const spend = { messageId: m.id, txHash: txHash(903), gasUsed: 30_000n, cost: 7n };
      await check('a spend', true, () => outbox.addGasSpent([spend]));
      await check('the same spend again', false, () => outbox.addGasSpent([spend]));
      const read = (await outbox.getVersioned(m.id))!;
      assert.deepEqual(
        [read.gasPayments?.map((p) => p.txHash).sort(), read.requiredGas, read.gasSpent],
        [[txHash(900), txHash(901), txHash(902)].sort(), 50_000n, 30_000n],
      );
      const [ofTx] = await outbox.byTxVersioned('ethereum', m.txHash);
      assert.deepEqual([ofTx.version, ofTx.gasPayments?.length], [seen, 3]);
    });

    test('a write by another connection reaches the feed', async (t) => {
      const { outbox, other, clock, feed } = await followed(t, engine);
      const m = outboxMessage(3);
      await other.enqueue([m]);
      const change = await feed.next(has(m.id), 'the other connection enqueue');
      assert.deepEqual(change.txs, [txKey('ethereum', m.txHash)]);
      const [claimed] = await other.claim(1, 60_000);
      await other.markFailed(m.id, { lease: claimed.lease, error: 'boom', retryAt: clock.now() + 1_000 });
      await feed.next((c) => c !== change && has(m.id)(c), "the other connection's outcome");
      assert.equal((await outbox.getVersioned(m.id))!.lastError, 'boom');
    });
  });
}

describe('change feed: PostgreSQL listening connection', () => {
  test('one listening connection whatever the number of followers; cut, it comes back and says `all`', async (t) => {
    // Later changes flow again after it comes back.
    const clock = createFakeClock();
    const ts = await testSchema();
    const store = await openPostgresStore(ts.pool, { relayApi: testConfig().relayApi, schema: ts.schema, clock });
    const feeds = Array.from({ length: 5 }, () => collect(store.outbox.changes));
    t.after(async () => {
      for (const f of feeds) f.unsubscribe();
      await store.close(); // gives the listening connection back, so the pool can end
      await ts.close();
    });
    await Promise.all(feeds.map(() => store.outbox.changes.ready()));
    const listeners = async () =>
      (
        await ts.pool.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE $1",
          [`%${ts.schema}%`],
        )
      ).rows;
    const [listener, ...more] = await listeners();
    assert.ok(listener, 'a connection LISTENs');
    assert.equal(more.length, 0, 'only one');

    await ts.pool.query('SELECT pg_terminate_backend($1)', [listener.pid]);
    // While nobody listens, a change is committed: its NOTIFY is lost.
    const m = outboxMessage(4);
    await store.outbox.enqueue([m]);
    // The termination reaches the client over its socket: wait for it (bounded, 5 s of real time).
    for (let i = 0; i < 500 && store.outbox.changes.listening(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(store.outbox.changes.listening(), false, 'the feed saw its connection go');
    await clock.advance(100); // the first reconnection attempt
    const all = await feeds[0].next((c) => c.all === true, 'all after reconnecting');
    assert.deepEqual([all.ids, all.txs], [[], []]);
    assert.ok(
      feeds.every((f) => f.seen.some((c) => c.all)),
      'every follower is told',
    );
    assert.equal((await listeners()).length, 1, 'one listening connection again');

    const n = outboxMessage(5);
    await store.outbox.enqueue([n]);
    await feeds[4].next(has(n.id), 'a change after reconnecting');
  });
});
