/**
 * Status events and per-client limits on the real stores (docs/api.md#status-events,
 * #per-client-limits). SQLite: a stream follows changes written by another connection to the file,
 * as a relayer-worker process writes them, each within 1 s. PostgreSQL, two replicas on one
 * database: a transaction stream opened on one replica sees the relay accepted by the other and
 * every outcome a worker records on its own pool, each within 1 s; and a client's relay bucket is
 * one for both replicas.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { openPostgresStore } from '../../lib/postgres/index.ts';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { hyperlaneMessage, messageId, rpcReceipt, transferLogs, txHash } from '../helpers/builders.ts';
import { testConfig } from '../helpers/config.ts';
import { createFakeClock } from '../helpers/fake-clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../helpers/fake-rpc.ts';
import { outboxMessage } from '../helpers/outbox-contract.ts';
import { testSchema } from '../helpers/postgres.ts';
import { startApi } from '../helpers/server.ts';
import { openEvents, type SseStream } from '../helpers/sse.ts';

const dir = mkdtempSync(join(tmpdir(), 'relayer-events-engines-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const DEST_TX = '0x' + 'de'.repeat(32);

/** Runs `write`, then waits for the stream's next event: it must come within 1 s of the write (real time). */
async function withinOneSecond(stream: SseStream, what: string, write: () => Promise<unknown>) {
  const started = performance.now();
  await write();
  const event = await stream.next(what);
  const ms = performance.now() - started;
  assert.ok(ms < 1_000, `${what}: ${Math.round(ms)} ms after the write`);
  return event;
}

describe('status events on SQLite', () => {
  test("a stream follows another connection's writes to the file (a relayer-worker process), each within 1 s", async (t) => {
    const clock = createFakeClock();
    const file = join(dir, 'events.db');
    const store = await openSqliteStore(file, { clock });
    const worker = await openSqliteStore(file, { clock });
    t.after(async () => {
      await worker.close();
      await store.close();
    });
    const api = await startApi(t, { store, clock });
    const m = outboxMessage(1);
    await worker.outbox.enqueue([m]);
    const stream = await openEvents(api.url, `/relay/${m.id}/events`);
    t.after(() => stream.close());
    assert.equal((await stream.next('the current status')).json().status, 'queued');
    let lease = '';
    const claimed = await withinOneSecond(stream, 'claimed', async () => {
      [{ lease }] = await worker.outbox.claim(1, 60_000);
    });
    assert.equal(claimed.json().status, 'delivering');
    const delivered = await withinOneSecond(stream, 'delivered', () =>
      worker.outbox.markDelivered(m.id, { lease, destinationTxHash: DEST_TX }),
    );
    assert.equal(delivered.json().destination_tx_hash, DEST_TX);
    await stream.ended;
  });
});

describe('status events and client buckets on PostgreSQL, two replicas', () => {
  test("a transaction stream on one replica sees the other's relay and every outcome a worker records", async (t) => {
    // Each within 1 s: the relay accepted by the other replica, then each outcome.
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
    const listed = await withinOneSecond(stream, 'the relay on the other replica', async () => {
      const relayed = await replicaB.relay({ origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(relayed.status, 200, relayed.text);
    });
    assert.deepEqual(
      listed.json().messages.map((m: { message_id: string }) => m.message_id),
      ids,
    );
    const claimed = await (async () => {
      let got: Awaited<ReturnType<typeof worker.outbox.claim>> = [];
      await withinOneSecond(stream, 'claimed by the worker', async () => {
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
      await withinOneSecond(stream, `${c.id} delivered`, () =>
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
