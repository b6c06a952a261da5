/**
 * relayer-server on a PostgreSQL pool of one connection (`pool_size=1`): the change feed's LISTEN
 * has a connection of its own outside the pool (docs/outbox.md#change-feed), so a status stream
 * open does not leave requests waiting for the pool's only connection. The real bin on a database
 * of the suite's PostgreSQL server; the receipts from a fake JSON-RPC server over loopback; the
 * status changed by another connection, as a relayer-worker would.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { openPostgresStore, type PostgresStore } from '../../lib/postgres/index.ts';
import { rpcReceipt, transferLogs, txHash } from '../helpers/fixtures/builders.ts';
import { fileChains, testConfig } from '../helpers/fixtures/config.ts';
import { startFakeRpcServer, type FakeRpcServer } from '../helpers/fakes/rpc.ts';
import { httpRequest, postJson } from '../helpers/harness/http.ts';
import { sharedPostgresUrl } from '../helpers/harness/postgres.ts';
import { startRelayerServer } from '../helpers/harness/server.ts';
import { openEvents } from '../helpers/harness/sse.ts';

const name = `pool_one_${Date.now().toString(36)}_${process.pid}`;
let rpc: FakeRpcServer;
let admin: pg.Client;
let dbUrl: URL;
let worker: pg.Pool | undefined;

before(async () => {
  rpc = await startFakeRpcServer();
  const url = new URL(await sharedPostgresUrl());
  admin = new pg.Client({ connectionString: url.href });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  dbUrl = new URL(url.href);
  dbUrl.pathname = `/${name}`;
});
after(async () => {
  await worker?.end();
  await admin?.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  await admin?.end();
  await rpc?.close();
});

let nextTx = 0x5100;
/** A mined transaction with `count` messages of nonces unique to it. */
function minedTx(count = 1): string {
  const hash = txHash(++nextTx);
  rpc.table.set(hash, rpcReceipt(hash, transferLogs(count, { nonce: nextTx * 16 })));
  return hash;
}

/** The server's connections to the database, by what they are doing. */
async function connections(): Promise<string[]> {
  const { rows } = await admin.query<{ query: string }>(
    "SELECT query FROM pg_stat_activity WHERE datname = $1 AND application_name = 'relayer-server'",
    [name],
  );
  return rows.map((r) => r.query);
}

test('pool_size=1: POST /relay and status streams answer while a stream listens on its own connection', async (t) => {
  const pooled = new URL(dbUrl.href);
  pooled.searchParams.set('pool_size', '1');
  const server = await startRelayerServer(t, [], {
    config: { chains: fileChains(rpc.url) },
    env: { ...process.env, RELAYER_DB: pooled.href },
  });
  const first = await postJson(server.url, '/relay', { origin_chain: 'ethereum', tx_hash: minedTx() });
  assert.equal(first.status, 200, first.text);
  const [m] = first.json().messages as { message_id: string }[];

  // A stream opens the change feed: LISTEN from then on, on a connection that is not the pool's.
  const stream = await openEvents(server.url, `/relay/${m.message_id}/events`);
  t.after(() => stream.close());
  assert.equal(stream.status, 200);
  assert.equal((await stream.next('the current status')).json().status, 'queued');
  assert.ok(
    (await connections()).some((q) => /^LISTEN /.test(q)),
    `a connection listens: ${await connections()}`,
  );

  // With the stream open, requests are answered (one waiting for the pool's only connection
  // would fail after the 5 s connect timeout with 503 store_unavailable).
  const hash = minedTx(2);
  const second = await postJson(server.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
  assert.equal(second.status, 200, second.text);
  const [n] = second.json().messages as { message_id: string }[];
  const status = await httpRequest(server.url, { path: `/relay/${n.message_id}` });
  assert.equal(status.status, 200, status.text);
  const tx = await openEvents(server.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`);
  t.after(() => tx.close());
  assert.equal(tx.status, 200);
  assert.deepEqual(
    (await tx.next('the transaction stream')).json().messages.map((s: { status: string }) => s.status),
    ['queued', 'queued'],
  );
  const open = await connections();
  assert.ok(open.length <= 2, `the pool's one connection and the listener's: ${JSON.stringify(open)}`);

  // The stream hears a delivery recorded by another connection (a worker).
  worker = new pg.Pool({ connectionString: dbUrl.href, max: 1 });
  const store: PostgresStore = await openPostgresStore(worker, { relayApi: testConfig().relayApi, migrate: false });
  t.after(() => store.close());
  const [claimed] = await store.outbox.claim(1, 60_000);
  assert.equal(claimed.id, m.message_id);
  assert.equal((await stream.next('delivering')).json().status, 'delivering');
  assert.ok(await store.outbox.markDelivered(claimed.id, { lease: claimed.lease, destinationTxHash: txHash(0x51) }));
  assert.equal((await stream.next('delivered')).json().status, 'delivered');
  await stream.ended;
});
