/**
 * Status events and per-client limits on the real stores (docs/api.md#status-events,
 * #per-client-limits). SQLite: a stream follows changes written by another connection to the file,
 * as a relayer-worker process writes them, each as its own event. PostgreSQL, two replicas on one
 * database: a transaction stream opened on one replica sees the relay accepted by the other and
 * every outcome a worker records on its own pool; and a client's relay bucket is one for both
 * replicas. How soon a change arrives is the feed's check interval (SQLite, 100 ms) or the commit's
 * notification (PostgreSQL) (docs/outbox.md#change-feed); the tests do not time it with the wall
 * clock: a 1 s bound, measured in the shared test process on a loaded machine, failed at load 20.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import type { GasPayment } from '../../../lib/gas/payment.ts';
import type { Outbox, OutboxMessage } from '../../../lib/outbox/index.ts';
import { openPostgresStore } from '../../../lib/postgres/index.ts';
import { openSqliteStore } from '../../../lib/sqlite/index.ts';
import { hyperlaneMessage, messageId, rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import type { RelayerConfig } from '../../../lib/types.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { outboxMessage } from '../../../lib/testing/index.ts';
import { testSchema } from '../../helpers/harness/postgres.ts';
import { startApi } from '../../helpers/harness/server.ts';
import { openEvents, type SseEvent, type SseStream } from '../../helpers/harness/sse.ts';
import { tempDir } from '../../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-events-engines-');
const DEST_TX = '0x' + 'de'.repeat(32);

/**
 * Runs `write`, then the stream's next event, which must come from it: none arrived before the
 * write, and one arrives after it (sse.ts's 5 s bound is the hang guard).
 */
async function afterWrite(stream: SseStream, what: string, write: () => Promise<unknown>) {
  const before = stream.events.length;
  await write();
  const event = await stream.next(what);
  assert.equal(stream.events.indexOf(event), before, `${what}: the first event after the write`);
  return event;
}

/** Two stores on one SQLite file (closed after test `t`): the server's, and a relayer-worker's connection. */
async function sqlitePair(t: { after(fn: () => unknown): void }, name: string) {
  const clock = createFakeClock();
  const file = join(dir, name);
  const store = await openSqliteStore(file, { clock });
  const worker = await openSqliteStore(file, { clock });
  t.after(async () => {
    await worker.close();
    await store.close();
  });
  return { clock, store, worker };
}

describe('status events on SQLite', () => {
  test("a stream follows another connection's writes to the file (a relayer-worker process), one event each", async (t) => {
    const { clock, store, worker } = await sqlitePair(t, 'events.db');
    const api = await startApi(t, { store, clock });
    const m = outboxMessage(1);
    await worker.outbox.enqueue([m]);
    const stream = await openEvents(api.url, `/relay/${m.id}/events`);
    t.after(() => stream.close());
    assert.equal((await stream.next('the current status')).json().status, 'queued');
    let lease = '';
    const claimed = await afterWrite(stream, 'claimed', async () => {
      [{ lease }] = await worker.outbox.claim(1, 60_000);
    });
    assert.equal(claimed.json().status, 'delivering');
    const delivered = await afterWrite(stream, 'delivered', () =>
      worker.outbox.markDelivered(m.id, { lease, destinationTxHash: DEST_TX }),
    );
    assert.equal(delivered.json().destination_tx_hash, DEST_TX);
    await stream.ended;
  });
});

/** The test config under onChainFeeQuoting (1/2 of the estimate), with a paymaster on ethereum. */
function quotingConfig(): RelayerConfig {
  const base = testConfig();
  return {
    ...base,
    chains: { ...base.chains, ethereum: { ...base.chains.ethereum, interchainGasPaymaster: '0x' + '1b'.repeat(20) } },
    gasPaymentEnforcement: [
      { type: 'onChainFeeQuoting', gasFraction: { numerator: 1n, denominator: 2n }, matchingList: [] },
    ],
  };
}

const topUp = (m: OutboxMessage, n: number): GasPayment => ({
  messageId: m.id,
  destination: m.destination,
  gasAmount: 150_000n,
  payment: 10n ** 15n,
  txHash: txHash(n),
  logIndex: 3,
});

/**
 * A message's stream while another connection writes its gas book, as a delivery worker does: each
 * write an event, whose state is what GET answers then (`get`: the GET's JSON as the
 * event carries it).
 */
async function followGasBook(
  stream: SseStream,
  m: OutboxMessage,
  writer: Outbox,
  get: () => Promise<unknown>,
  shown: (event: SseEvent) => { gas_payment: Record<string, unknown> },
) {
  const first = await stream.next('the current state');
  assert.deepEqual(shown(first).gas_payment.payments, 0);
  assert.deepEqual(first.json(), await get(), 'the first event is what GET answers');
  const writes: [string, () => Promise<unknown>, Record<string, unknown>][] = [
    [
      'a top-up stored',
      () => Promise.resolve(writer.addGasPayments([topUp(m, 77)])),
      { payments: 1, gas_amount: '150000' },
    ],
    [
      'the required gas',
      () => Promise.resolve(writer.setRequiredGas(m.id, 160_000n)),
      { required_gas_amount: '160000' },
    ],
    [
      'a spend',
      () => Promise.resolve(writer.addGasSpent([{ messageId: m.id, txHash: txHash(78), gasUsed: 21_000n, cost: 9n }])),
      { gas_spent: '21000', gas_spent_wei: '9' },
    ],
  ];
  for (const [what, write, expected] of writes) {
    const event = await afterWrite(stream, what, write);
    const payment = shown(event).gas_payment;
    for (const [key, value] of Object.entries(expected)) assert.equal(payment[key], value, `${what}: ${key}`);
    assert.deepEqual(event.json(), await get(), `${what}: the event is what GET answers`);
  }
}

describe('status events carry gas_payment as GET /relay/{message_id} does (docs/api.md#status-events)', () => {
  test('SQLite: a top-up, the required gas and a spend written by another connection are each an event', async (t) => {
    const { clock, store, worker } = await sqlitePair(t, 'gas-events.db');
    const api = await startApi(t, { store, clock, config: quotingConfig() });
    const m = outboxMessage(2);
    await worker.outbox.enqueue([m]);
    const stream = await openEvents(api.url, `/relay/${m.id}/events`);
    t.after(() => stream.close());
    await followGasBook(
      stream,
      m,
      worker.outbox,
      async () => (await api.get(`/relay/${m.id}`)).json(),
      (event) => event.json(),
    );
  });

  test("PostgreSQL: a transaction stream on one replica sees a worker's gas-book writes, as GET /relay?… on the other", async (t) => {
    const clock = createFakeClock();
    const ts = await testSchema();
    const other = new pg.Pool({ connectionString: ts.pool.options.connectionString, max: 3 });
    const config = quotingConfig();
    const [a, worker] = await Promise.all(
      [other, ts.pool].map((pool, i) =>
        openPostgresStore(pool, { relayApi: config.relayApi, schema: ts.schema, clock, migrate: i === 0 }),
      ),
    );
    t.after(async () => {
      await a.close();
      await worker.close();
      await other.end();
      await ts.close();
    });
    const replicaA = await startApi(t, { config, store: a, clock });
    const replicaB = await startApi(t, { config, store: worker, clock });
    const m = outboxMessage(3);
    await worker.outbox.enqueue([m]);
    const query = `origin_chain=ethereum&tx_hash=${m.txHash}`;
    const stream = await openEvents(replicaA.url, `/relay/events?${query}`);
    t.after(() => stream.close());
    await followGasBook(
      stream,
      m,
      worker.outbox,
      async () => (await replicaB.get(`/relay?${query}`)).json(),
      (event) => event.json().messages[0],
    );
  });
});

describe('status events and client buckets on PostgreSQL, two replicas', () => {
  test("a transaction stream on one replica sees the other's relay and every outcome a worker records", async (t) => {
    // One event each: the relay accepted by the other replica, then each outcome.
    const clock = createFakeClock();
    const ts = await testSchema();
    const url = ts.pool.options.connectionString;
    const pools = [new pg.Pool({ connectionString: url, max: 3 }), new pg.Pool({ connectionString: url, max: 3 })];
    const config = testConfig();
    const [a, b, worker] = await Promise.all(
      [...pools, ts.pool].map((pool, i) =>
        openPostgresStore(pool, { relayApi: config.relayApi, schema: ts.schema, clock, migrate: i === 0 }),
      ),
    );
    t.after(async () => {
      for (const s of [a, b, worker]) await s.close();
      for (const p of pools) await p.end();
      await ts.close();
    });
    const table: ReceiptTable = new Map();
    const hash = txHash(5);
    table.set(hash, rpcReceipt(hash, transferLogs(2, { nonce: 70 })));
    const ids = [70, 71].map((nonce) => messageId(hyperlaneMessage({ nonce, origin: 1, destination: 8453 })));
    const replicaA = await startApi(t, { config, store: a, clock });
    const replicaB = await startApi(t, { config, store: b, clock, fetch: fakeRpcFetch(table).fetch });

    const stream = await openEvents(replicaA.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`);
    t.after(() => stream.close());
    assert.deepEqual((await stream.next('the empty list')).json(), { messages: [] });
    const listed = await afterWrite(stream, 'the relay on the other replica', async () => {
      const relayed = await replicaB.relay({ origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(relayed.status, 200, relayed.text);
    });
    assert.deepEqual(
      listed.json().messages.map((m: { message_id: string }) => m.message_id),
      ids,
    );
    const claimed = await (async () => {
      let got: Awaited<ReturnType<typeof worker.outbox.claim>> = [];
      await afterWrite(stream, 'claimed by the worker', async () => {
        got = await worker.outbox.claim(2, 60_000);
      });
      return got;
    })();
    assert.ok(
      stream.events
        .at(-1)!
        .json()
        .messages.every((m: { status: string }) => m.status === 'delivering'),
    );
    for (const c of claimed) {
      await afterWrite(stream, `${c.id} delivered`, () =>
        worker.outbox.markDelivered(c.id, { lease: c.lease, destinationTxHash: DEST_TX }),
      );
    }
    await stream.ended;
    const last = stream.events.at(-1)!;
    assert.match(last.id!, /^\d+\.\d+$/);
    const resumed = await openEvents(replicaB.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`, {
      headers: { 'last-event-id': last.id! },
    });
    assert.equal(resumed.status, 204, 'the other replica agrees the client has seen everything');
  });

  test("relayApi.clientRateLimit: one client's bucket is shared by both replicas", async (t) => {
    const clock = createFakeClock();
    const ts = await testSchema();
    const other = new pg.Pool({ connectionString: ts.pool.options.connectionString, max: 2 });
    const config = testConfig({ relayApi: { clientRateLimit: { burst: 2, perMinute: 1 } } });
    const [a, b] = await Promise.all(
      [ts.pool, other].map((pool, i) =>
        openPostgresStore(pool, { relayApi: config.relayApi, schema: ts.schema, clock, migrate: i === 0 }),
      ),
    );
    t.after(async () => {
      await a.close();
      await b.close();
      await other.end();
      await ts.close();
    });
    const table: ReceiptTable = new Map();
    const fetch = fakeRpcFetch(table).fetch;
    const replicas = [
      await startApi(t, { config, store: a, clock, fetch }),
      await startApi(t, { config, store: b, clock, fetch }),
    ];
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const hash = txHash(100 + i);
      table.set(hash, rpcReceipt(hash, []));
      const answer = await replicas[i % 2].relay({ origin_chain: 'ethereum', tx_hash: hash });
      statuses.push(answer.status);
      if (answer.status === 429) {
        assert.equal(answer.json().reason, 'rate_limited');
        assert.match(answer.json().message, /this client/);
        assert.ok(Number(answer.headers['retry-after']) >= 1);
      }
    }
    assert.deepEqual(statuses, [200, 200, 429], 'two tokens for the client, whichever replica');
    const { rows } = await ts.pool.query(`SELECT client FROM "${ts.schema}".client_buckets`);
    assert.deepEqual(rows, [{ client: '127.0.0.1' }], 'one row for the client, in the database');
  });
});
