/**
 * Crash safety (docs/design.md#merkle-tree-insertions, #sqlite): relayer-server is killed with
 * SIGKILL, over and over, while large merkle insertions and relays are in flight. After every
 * kill the database must open, every merkle request must be all-or-nothing (each request owns a
 * leaf range and a block-number marker, so a partial write shows), every relay answered 200 must
 * have all its messages in the outbox, and no relay may be half-enqueued. The server is then
 * restarted on the same file.
 *
 * Kill times come from a fixed-seed generator spread over the life of the requests (upload,
 * parse, SQLite transaction, answer), so some kills land inside the transactions. The window is
 * at least three times what the round's first merkle request took (on a loaded machine the burst
 * takes longer, and kills at fixed times all landed before the first write), and it is cut in one
 * slice per round: each round kills at a random point of its own slice, so the eight kills cover
 * the whole window by construction (twelve uniform draws over a fixed window only probably did).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { startFaultyRpcServer, type FaultyRpcServer } from '../helpers/fakes/faulty-rpc.ts';
import {
  MAILBOX,
  hyperlaneMessage,
  messageId,
  rpcReceipt,
  transferLogs,
  txHash,
} from '../helpers/fixtures/builders.ts';
import { fileChains } from '../helpers/fixtures/config.ts';
import { startRelayerServer } from '../helpers/harness/server.ts';

const KILLS = 8;
/** Kills land 20 ms to 20 ms + the window after the burst starts; the window is at least this. */
const KILL_WINDOW_MS = 240;
const MERKLE_REQUESTS = 4;
const RECORDS_PER_REQUEST = 20_000;
const RELAYS = 20;
const TRANSFERS_PER_RELAY = 2;

const dir = mkdtempSync(join(tmpdir(), 'relayer-crash-'));
const db = join(dir, 'relayer.db');
let rpc: FaultyRpcServer;
let configPath: string;

before(async () => {
  rpc = await startFaultyRpcServer(new Map(), { mailbox: MAILBOX });
  configPath = join(dir, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      chains: fileChains(rpc.endpoint('slow'), rpc.endpoint('ok')),
      relayApi: { rateLimit: { burst: 1_000_000, perMinute: 1_000_000 } },
      db,
    }),
  );
});
after(async () => {
  await rpc.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Park-Miller: a fixed sequence of kill delays, the same on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 48_271) % 0x7fffffff;
    return state / 0x7fffffff;
  };
}

interface Reply {
  status: number;
  text: string;
}

/** POSTs JSON; resolves with the answer, or undefined when the connection died first. */
function post(url: string, path: string, body: string | Buffer): Promise<Reply | undefined> {
  return new Promise((resolve) => {
    const target = new URL(path, url);
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', () => resolve(undefined));
        res.on('aborted', () => resolve(undefined));
      },
    );
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}

interface MerkleRequest {
  start: number;
  marker: number;
  reply?: Reply;
}

interface RelayRequest {
  ids: string[];
  reply?: Reply;
}

const HEX_DIGITS = Buffer.from('0123456789abcdef');

/**
 * The JSON.stringify of the records, written as bytes: record i is
 * `{"chain":1,"insertion_block_number":MARKER,"leaf_index":START+i,"message_id":"0x…"}` with the id
 * `MARKER * 10^6 + i` in 64 hex digits. The 32 bodies of a run (1.3 MB each) took about 0.9 s of
 * CPU as strings joined (then encoded again to be sent), 0.3 s like this.
 */
function merkleBody(m: MerkleRequest): Buffer {
  const head = Buffer.from(`{"chain":1,"insertion_block_number":${m.marker},"leaf_index":`);
  const middle = Buffer.from(',"message_id":"0x');
  const out = Buffer.allocUnsafe(64 + RECORDS_PER_REQUEST * (head.length + 16 + middle.length + 64 + 3));
  let at = out.write('{"merkle_tree_insertions":[', 0, 'latin1');
  for (let i = 0; i < RECORDS_PER_REQUEST; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    at += head.copy(out, at);
    at += out.write(String(m.start + i), at, 'latin1');
    at += middle.copy(out, at);
    let id = m.marker * 1e6 + i;
    for (let digit = at + 63; digit >= at; digit--) {
      out[digit] = HEX_DIGITS[id % 16];
      id = Math.floor(id / 16);
    }
    at += 64;
    out[at++] = 0x22; // "
    out[at++] = 0x7d; // }
  }
  at += out.write(']}', at, 'latin1');
  return out.subarray(0, at);
}

/**
 * The rows of one merkle request's leaf range, counted in the file itself: how many, and the
 * smallest and largest insertion block number (the request's marker when the write is whole).
 * Listing the 20 000 rows through the store, for each request of each round, cost more than the
 * rest of the check.
 */
function merkleRange(file: DatabaseSync, m: MerkleRequest): { n: number; lo: number | null; hi: number | null } {
  const row = file
    .prepare(
      'SELECT count(*) AS n, min(insertion_block_number) AS lo, max(insertion_block_number) AS hi FROM merkle_insertions WHERE chain = 1 AND leaf_index BETWEEN ? AND ?',
    )
    .get(m.start, m.start + RECORDS_PER_REQUEST - 1) as { n: number; lo: number | null; hi: number | null };
  return { n: row.n, lo: row.lo, hi: row.hi };
}

test('docs/design.md#sqlite: SIGKILL during large merkle writes and relays loses nothing acknowledged', async (t) => {
  // 8 kills spread over the life of the requests: the database opens, merkle requests are all-or-nothing, every
  // 200 relay is in the outbox.
  const random = seeded(0xc0ffee);
  const stats = {
    merkleAcked: 0,
    merkleCommittedUnacked: 0,
    merkleLost: 0,
    relaysAcked: 0,
    relaysCommittedUnacked: 0,
    relaysLost: 0,
  };
  let nextLeaf = 0;
  let nextTx = 0x100000;

  for (let round = 0; round < KILLS; round++) {
    const server = await startRelayerServer(t, ['--config', configPath, '--log-level', 'warn']);
    const { url } = server;
    const merkle: MerkleRequest[] = Array.from({ length: MERKLE_REQUESTS }, (_, k) => {
      const m = { start: nextLeaf, marker: round * 100 + k + 1 };
      nextLeaf += RECORDS_PER_REQUEST;
      return m;
    });
    const relays: RelayRequest[] = Array.from({ length: RELAYS }, () => {
      const hash = txHash(nextTx++);
      const nonce = nextTx * 16;
      rpc.table.set(hash, rpcReceipt(hash, transferLogs(TRANSFERS_PER_RELAY, { nonce })));
      const ids = Array.from({ length: TRANSFERS_PER_RELAY }, (_, i) =>
        messageId(hyperlaneMessage({ nonce: nonce + i })),
      );
      return { ids, hash } as RelayRequest & { hash: string };
    });
    const bodies = merkle.map(merkleBody);

    // The first relay and the first merkle request are answered before the burst, so every
    // round has acknowledged writes to find after the kill, however loaded the machine is.
    const [first, ...burstRelays] = relays;
    const [firstMerkle, ...burstMerkle] = merkle;
    first.reply = await post(
      url,
      '/relay',
      JSON.stringify({ origin_chain: 'ethereum', tx_hash: (first as RelayRequest & { hash: string }).hash }),
    );
    const firstStarted = performance.now();
    firstMerkle.reply = await post(url, '/merkle_tree_insertions', bodies[0]);
    const merkleMs = performance.now() - firstStarted;
    assert.equal(first.reply?.status, 200, first.reply?.text);
    assert.equal(firstMerkle.reply?.status, 200, firstMerkle.reply?.text);

    // The rest starts at once. On a quiet 2-core machine each merkle request keeps the server busy
    // for about 50 ms (upload, parse, validate, one SQLite transaction of 20 000 rows), so kills
    // 20-260 ms in land across all of those stages, and some relays are cut off mid-flight; the
    // window grows with the time the first request took, so it does the same on a loaded one.
    const inFlight = [
      ...burstMerkle.map((m, k) => post(url, '/merkle_tree_insertions', bodies[k + 1]).then((r) => (m.reply = r))),
      ...burstRelays.map((r) =>
        post(
          url,
          '/relay',
          JSON.stringify({ origin_chain: 'ethereum', tx_hash: (r as RelayRequest & { hash: string }).hash }),
        ).then((x) => (r.reply = x)),
      ),
    ];
    const windowMs = Math.max(KILL_WINDOW_MS, 3 * merkleMs);
    const killAt = 20 + Math.floor(((round + random()) * windowMs) / KILLS);
    await delay(killAt);
    server.child.kill('SIGKILL');
    const { signal } = await server.exited;
    assert.equal(signal, 'SIGKILL', `round ${round}: killed, not exited on its own\n${server.output()}`);
    await Promise.all(inFlight);

    const store = await openSqliteStore(db); // must open after every kill
    const file = new DatabaseSync(db, { readOnly: true });
    try {
      for (const m of merkle) {
        const rows = merkleRange(file, m);
        assert.ok(
          rows.n === 0 || rows.n === RECORDS_PER_REQUEST,
          `round ${round}: merkle request ${m.marker} is partial (${rows.n} rows)`,
        );
        assert.ok(rows.n === 0 || (rows.lo === m.marker && rows.hi === m.marker), JSON.stringify(rows));
        if (m.reply?.status === 200) {
          assert.equal(rows.n, RECORDS_PER_REQUEST, `round ${round}: an acknowledged merkle request is complete`);
          assert.deepEqual(JSON.parse(m.reply.text), { count: RECORDS_PER_REQUEST, skipped: [] });
          stats.merkleAcked++;
        } else {
          assert.equal(m.reply, undefined, `round ${round}: no other answer than 200 or none: ${m.reply?.text}`);
          if (rows.n > 0) stats.merkleCommittedUnacked++;
          else stats.merkleLost++;
        }
      }
      for (const r of relays) {
        let present = 0;
        for (const id of r.ids) if ((await store.outbox.get(id)) !== undefined) present++;
        assert.ok(present === 0 || present === r.ids.length, `round ${round}: a relay batch is half-enqueued`);
        if (r.reply?.status === 200) {
          assert.equal(present, r.ids.length, `round ${round}: an acknowledged relay is in the outbox`);
          assert.deepEqual(
            JSON.parse(r.reply.text).messages.map((m: { message_id: string }) => m.message_id),
            r.ids,
          );
          stats.relaysAcked++;
        } else {
          assert.equal(r.reply, undefined, `round ${round}: no other answer than 200 or none: ${r.reply?.text}`);
          if (present > 0) stats.relaysCommittedUnacked++;
          else stats.relaysLost++;
        }
      }
    } finally {
      file.close();
      await store.close();
    }
  }

  // The kills covered the whole range: some requests were acknowledged, some cut off.
  t.diagnostic(JSON.stringify(stats));
  assert.ok(stats.merkleAcked > 0 && stats.merkleLost + stats.merkleCommittedUnacked > 0, JSON.stringify(stats));
  assert.ok(stats.relaysAcked > 0 && stats.relaysLost + stats.relaysCommittedUnacked > 0, JSON.stringify(stats));

  // A last restart on the same file: it serves reads and writes, and shuts down cleanly.
  const server = await startRelayerServer(t, ['--config', configPath, '--log-level', 'warn']);
  const hash = txHash(nextTx++);
  rpc.table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: 7 })));
  assert.equal(
    (await post(server.url, '/relay', JSON.stringify({ origin_chain: 'ethereum', tx_hash: hash })))?.status,
    200,
  );
  assert.equal(await server.stop(), 0, server.output());
});
