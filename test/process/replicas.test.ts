/**
 * Several relayer-server replicas on one PostgreSQL database behave as one server
 * (docs/replicas.md#how-replicas-agree): real `bin/relayer-server.ts` child processes, a real PostgreSQL
 * server from npm, the receipts from a fake JSON-RPC server over loopback. The database URL
 * reaches the replicas through RELAYER_DB, as an operator keeps a password out of the process list.
 *
 * Short settings make the bounds observable: receiptTimeoutSeconds 2, so the reservation of a
 * replica killed mid-request frees after 2 + 5 s.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { EmbeddedPostgres } from '../../scripts/embedded-postgres.ts';
import { spawnTracked } from '../helpers/harness/processes.ts';
import { startFakeRpcServer, type FakeRpcServer } from '../helpers/fakes/rpc.ts';
import { rpcReceipt, transferLogs, txHash } from '../helpers/fixtures/builders.ts';
import { fileChains } from '../helpers/fixtures/config.ts';
import { httpRequest, postJson, type RawResponse } from '../helpers/harness/http.ts';
import { startTestPostgres } from '../helpers/harness/postgres.ts';
import {
  launchRelayerServer,
  relayerServerRefusal,
  SERVER_BIN,
  type RelayerProcess,
} from '../helpers/harness/server.ts';

const RECEIPT_TIMEOUT_S = 2;
/** docs/replicas.md#how-replicas-agree: a pending reservation of a replica that died expires after receiptTimeoutSeconds + 5 s. */
const PENDING_BOUND_MS = (RECEIPT_TIMEOUT_S + 5) * 1000;

let server: EmbeddedPostgres;
let rpc: FakeRpcServer;
let admin: pg.Pool;

type Replica = RelayerProcess;
/** Every replica started, for the clean-up and the password check. */
const replicas: Replica[] = [];

async function createDatabase(name: string): Promise<string> {
  await admin.query(`CREATE DATABASE ${name}`);
  return server.url(name);
}

function replicaConfig(relayApi: Record<string, unknown>): unknown {
  return {
    chains: fileChains(rpc.url),
    relayApi: { receiptTimeoutSeconds: RECEIPT_TIMEOUT_S, ...relayApi },
  };
}

async function startReplicas(n: number, relayApi: Record<string, unknown>, dbUrl: string): Promise<Replica[]> {
  const config = replicaConfig(relayApi);
  return Promise.all(
    Array.from({ length: n }, async () => {
      const replica = await launchRelayerServer([], {
        config,
        env: { ...process.env, RELAYER_DB: dbUrl, RELAYER_LOG_LEVEL: 'info' },
        graceMs: 5_000,
      });
      replicas.push(replica);
      return replica;
    }),
  );
}

let nextTx = 0x7000;
/** A mined transaction with `count` messages of nonces unique to it. */
function minedTx(count = 2): string {
  const hash = txHash(++nextTx);
  rpc.table.set(hash, rpcReceipt(hash, transferLogs(count, { nonce: nextTx * 16 })));
  return hash;
}

function relay(replica: Replica, hash: string): Promise<RawResponse> {
  return postJson(replica.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
}

async function outboxIdsOf(db: pg.Pool, hash: string): Promise<string[]> {
  const { rows } = await db.query('SELECT id FROM relayer.outbox WHERE tx_hash = $1 ORDER BY seq', [hash]);
  return rows.map((r: { id: string }) => r.id);
}

before(async () => {
  [server, rpc] = await Promise.all([startTestPostgres(), startFakeRpcServer()]);
  admin = new pg.Pool({ connectionString: server.url(), max: 1 });
  admin.on('error', () => {}); // the outage test stops the server under it
});

after(async () => {
  await admin?.end();
  await Promise.all(replicas.map((r) => r.stop()));
  await rpc?.close();
  await server?.remove();
});

describe('three replicas on one PostgreSQL database (docs/replicas.md#how-replicas-agree)', () => {
  let three: Replica[];
  let db: pg.Pool;

  before(async () => {
    const url = await createDatabase('replicas');
    three = await startReplicas(3, { rateLimit: { burst: 1000, perMinute: 1000 } }, url);
    db = new pg.Pool({ connectionString: url, max: 2 });
    db.on('error', () => {});
  });
  after(async () => {
    await db?.end();
  });

  test('the same transaction sent to all three at once: exactly one 200, the others 429 duplicate_tx, its messages stored once', async () => {
    for (let round = 0; round < 4; round++) {
      const hash = minedTx(2);
      const answers = await Promise.all(three.map((r) => relay(r, hash)));
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [200, 429, 429], `round ${round}: ${answers.map((a) => a.text).join(' | ')}`);
      const ok = answers.find((a) => a.status === 200)!;
      for (const refused of answers.filter((a) => a.status === 429)) {
        assert.equal(refused.json().reason, 'duplicate_tx');
        assert.ok(Number(refused.headers['retry-after']) >= 1);
      }
      const accepted = (ok.json().messages as { message_id: string }[]).map((m) => m.message_id);
      assert.equal(accepted.length, 2);
      assert.deepEqual(await outboxIdsOf(db, hash), accepted);
      // Any replica reads the same outbox.
      const listed = await httpRequest(three[(round + 1) % 3].url, {
        path: `/relay?origin_chain=ethereum&tx_hash=${hash}`,
      });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(
        listed.json().messages.map((m: { message_id: string }) => m.message_id),
        accepted,
      );
    }
  });

  test('merkle insertions written through one replica are listed through another', async () => {
    const records = [0, 1, 2].map((leaf) => ({
      chain: 1,
      insertion_block_number: 500 + leaf,
      leaf_index: leaf,
      message_id: '0x' + (leaf + 1).toString(16).padStart(64, '0'),
    }));
    const written = await postJson(three[0].url, '/merkle_tree_insertions', { merkle_tree_insertions: records });
    assert.equal(written.status, 200, written.text);
    assert.equal(written.json().count, 3);
    const listed = await httpRequest(three[2].url, {
      path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=10',
    });
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.json().merkle_tree_insertions,
      records.map((r) => ({
        chain: r.chain,
        insertion_block_number: r.insertion_block_number,
        leaf_index: r.leaf_index,
        message_id: r.message_id,
      })),
    );
  });

  test('a replica SIGKILLed while relaying: every 200 it gave is in the outbox, its pending reservation frees', async () => {
    // The reservation frees within receiptTimeoutSeconds + 5 s.
    const [victim, survivor] = three;
    // Relays the victim answers, then a transaction whose receipt never comes while it runs.
    const given = new Map<string, string[]>();
    for (let i = 0; i < 3; i++) {
      const hash = minedTx(1);
      const answer = await relay(victim, hash);
      assert.equal(answer.status, 200, answer.text);
      given.set(
        hash,
        answer.json().messages.map((m: { message_id: string }) => m.message_id),
      );
    }
    const held = txHash(++nextTx); // unknown to the RPC: "not mined yet", polled until the timeout
    const traffic = Array.from({ length: 12 }, () => minedTx(1));
    const inFlight = [
      relay(victim, held).catch(() => {}),
      ...traffic.map((hash) =>
        relay(victim, hash).then(
          (answer) => {
            if (answer.status === 200)
              given.set(
                hash,
                answer.json().messages.map((m: { message_id: string }) => m.message_id),
              );
          },
          () => {}, // cut off by the kill
        ),
      ),
    ];
    // Kill it the moment its reservation of the held transaction is in the database.
    let reservedAt: number | undefined;
    const key = `ethereum\n${held}`;
    for (const started = Date.now(); Date.now() - started < RECEIPT_TIMEOUT_S * 1000; ) {
      const { rows } = await db.query('SELECT committed FROM relayer.dedup WHERE key = $1', [key]);
      if (rows.length > 0) {
        assert.equal(rows[0].committed, false);
        reservedAt = Date.now();
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(reservedAt !== undefined, 'the victim reserved the held transaction');
    victim.child.kill('SIGKILL');
    await victim.exited;
    await Promise.allSettled(inFlight);

    // Every 200 the victim gave is in the shared outbox.
    for (const [hash, ids] of given) assert.deepEqual(await outboxIdsOf(db, hash), ids, `tx ${hash}`);

    // Until the dead replica's reservation expires, the others refuse the transaction as a duplicate.
    const early = await relay(survivor, held);
    assert.equal(early.status, 429, early.text);
    assert.equal(early.json().reason, 'duplicate_tx');
    assert.ok(
      Number(early.headers['retry-after']) <= RECEIPT_TIMEOUT_S + 5,
      `Retry-After ${early.headers['retry-after']}`,
    );

    // The transaction gets mined; a retry goes through once the reservation has expired.
    rpc.table.set(held, rpcReceipt(held, transferLogs(1, { nonce: ++nextTx * 16 })));
    let acceptedAt: number | undefined;
    while (Date.now() - reservedAt! < PENDING_BOUND_MS + 5_000) {
      const answer = await relay(survivor, held);
      if (answer.status === 200) {
        acceptedAt = Date.now();
        break;
      }
      assert.equal(answer.json().reason, 'duplicate_tx', answer.text);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.ok(acceptedAt !== undefined, 'the held transaction was accepted after the reservation expired');
    // The reservation was made at or before reservedAt; it lasts receiptTimeoutSeconds + 5 s, and the
    // retry loop adds at most one round trip and one 250 ms pause.
    assert.ok(acceptedAt! - reservedAt! <= PENDING_BOUND_MS + 1_500, `freed after ${acceptedAt! - reservedAt!} ms`);
    assert.equal((await outboxIdsOf(db, held)).length, 1);
    three = three.slice(1);
  });

  test('the database stopped: 503 store_unavailable, liveness up; started again: 200 without restarting the replicas', async () => {
    // The 503 has Retry-After.
    const [a, b] = three;
    await server.stop();
    try {
      const hash = minedTx(1);
      const refused = await relay(a, hash);
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.json().reason, 'store_unavailable');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      const ready = await httpRequest(b.url, { path: '/ready' });
      assert.equal(ready.status, 503);
      assert.equal(ready.json().reason, 'store_unavailable');
      const live = await httpRequest(b.url, { path: '/relay' });
      assert.equal(live.status, 200);
      const merkle = await httpRequest(b.url, {
        path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=10',
      });
      assert.equal(merkle.status, 503);
    } finally {
      await server.start();
    }
    // Both replicas recover: the pool replaces the connections the shutdown killed.
    for (const replica of [a, b]) {
      const hash = minedTx(1);
      let answer = await relay(replica, hash);
      for (let i = 0; i < 20 && answer.status === 503; i++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        answer = await relay(replica, hash);
      }
      assert.equal(answer.status, 200, answer.text);
      assert.equal((await httpRequest(replica.url, { path: '/ready' })).status, 200);
      // The outage was logged and counted; the password is in neither place.
      const metrics = await httpRequest(replica.url, { path: '/metrics' });
      assert.ok(!metrics.text.includes(new URL(server.url()).password));
    }
  });
});

describe('the global rate limit across replicas (docs/replicas.md#how-replicas-agree)', () => {
  test('burst B configured: across three replicas at most B requests pass, the rest are rate_limited', async () => {
    const BURST = 8;
    const url = await createDatabase('burst');
    // perMinute 1: no token comes back during the test. The receipt timeout is not this test's
    // subject: with the file's 2 s, 24 relays at once on a busy machine had receipts answered 408.
    const burst = await startReplicas(3, { rateLimit: { burst: BURST, perMinute: 1 }, receiptTimeoutSeconds: 60 }, url);
    const hashes = Array.from({ length: 24 }, () => minedTx(1));
    const answers = await Promise.all(hashes.map((hash, i) => relay(burst[i % 3], hash)));
    const passed = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    assert.equal(passed.length, BURST, answers.map((a) => `${a.status} ${a.text}`).join('\n'));
    assert.equal(limited.length, hashes.length - BURST);
    for (const a of limited) {
      assert.equal(a.json().reason, 'rate_limited');
      assert.ok(Number(a.headers['retry-after']) >= 1);
    }
    // Each replica saw a third of the traffic: a per-process bucket would have let all 24 through.
    await Promise.all(burst.map((r) => r.stop()));
  });
});

describe('relayer-server without the optional pg package (docs/design.md#postgresql)', () => {
  test('a postgres:// URL says to install pg and exits 1; SQLite still works without it', async () => {
    const hide = new URL('../helpers/harness/hide-pg.ts', import.meta.url).pathname;
    const proc = spawnTracked(process.execPath, ['--import', hide, SERVER_BIN, '--port', '0', '--db', server.url()]);
    const [code] = await once(proc.child, 'exit');
    assert.equal(code, 1);
    assert.match(proc.output(), /the pg package is not installed: install pg \(npm install pg\)/);
    assert.ok(!proc.output().includes(new URL(server.url()).password));
    const sqlite = await launchRelayerServer(['--db', ':memory:'], {
      nodeArgs: ['--import', hide],
    });
    try {
      assert.equal((await httpRequest(sqlite.url, { path: '/relay' })).status, 200);
    } finally {
      await sqlite.stop();
    }
  });
});

describe('the database password stays secret (docs/design.md#the-server-binary, docs/replicas.md#how-replicas-agree)', () => {
  test('no replica printed it, and a start-up failure shows the URL redacted', async () => {
    const password = new URL(server.url()).password;
    assert.ok(password.length >= 8);
    // The two start-up failures in this process (relayerServerRefusal: what relayer-server prints
    // when openRelayerStore refuses; test/process/database-url-secrets.test.ts sees such a failure printed
    // by the process itself).
    // A server that is down: the failure names the database without the password.
    const down = server.url('nowhere').replace(/:\d+\//, ':1/');
    const failed = await relayerServerRefusal(['--port', '0', '--db', down], { openStore: true });
    assert.equal(failed.code, 1);
    assert.match(failed.output ?? '', /cannot open database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/nowhere/);
    // A wrong password: the error says authentication failed, without either password.
    const wrong = server.url().replace(password, 'not-the-password-42');
    const refused = await relayerServerRefusal(['--port', '0', '--db', wrong], { openStore: true });
    assert.equal(refused.code, 1);
    assert.match(refused.output ?? '', /password authentication failed/);
    for (const output of [...replicas.map((r) => r.output()), failed.output ?? '', refused.output ?? '']) {
      assert.ok(!output.includes(password), `the password appears in:\n${output}`);
      assert.ok(!output.includes('not-the-password-42'));
    }
    assert.ok(
      replicas.length >= 6 && replicas.every((r) => /"db":"postgres:\/\/postgres:\*\*\*@/.test(r.output())),
      'each replica logged the redacted URL',
    );
  });
});
