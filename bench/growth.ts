/**
 * How each path grows with the outbox (BENCHMARKS.md#growth-node-benchgrowthts): the outbox
 * filled to 10^4, 10^5 and 10^6 messages (SQLite and PostgreSQL), then at each size POST /relay,
 * GET /relay/{id} and GET /relay?origin_chain&tx_hash over HTTP (a relay server child on the
 * filled store, receipts answered in process, one request at a time), and in process on the store
 * itself claim (one message, released again), list by status (failed, and every one not
 * delivered, 100 rows) and the change feed (an enqueue until the feed tells its id). Each size has
 * a store of its own, filled before any measurement; then one sample of every path at each size
 * in turn, so a slow moment of the shared machine hits every size alike. Median and p99 of every sample, and the
 * ratio of the largest size to the smallest (goal: within 1.5x).
 *
 * A fill is bulk SQL in one transaction (the triggers that tell the change feed off for it):
 * 98 % delivered with a closed journal row each, 1 % failed, 1 % queued, one message per
 * transaction, ids spread like keccak ids.
 *
 *   node bench/growth.ts                       SQLite 10^4..10^6, PostgreSQL 10^4 and 10^5
 *   node bench/growth.ts --million             PostgreSQL 10^6 too (its fill takes minutes)
 *   node bench/growth.ts --engines sqlite --sizes 10000,100000 --samples 100
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DatabaseSync } from 'node:sqlite';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../scripts/embedded-postgres.ts';
import { openSqliteStore } from '../lib/sqlite/index.ts';
import { PRUNE_BATCH } from '../lib/outbox/retention.ts';
import { openPostgresStore } from '../lib/postgres/index.ts';
import { median, provenance } from './lib.ts';
import { freshTxHash, startServer, UNLIMITED, type ServerHandle } from './load.ts';

const { values: args } = parseArgs({
  options: {
    engines: { type: 'string', default: 'sqlite,postgres' },
    sizes: { type: 'string' },
    million: { type: 'boolean', default: false },
    samples: { type: 'string', default: '200' },
  },
});
const SAMPLES = Number(args.samples);
/** Batches of retention per size (each deletes PRUNE_BATCH of the 98 % delivered: 10^4 holds 49). */
const PRUNE_SAMPLES = 20;
const engines = args.engines!.split(',') as ('sqlite' | 'postgres')[];
const sizesOf = (engine: string): number[] =>
  args.sizes !== undefined
    ? args.sizes.split(',').map(Number)
    : engine === 'postgres' && !args.million
      ? [1e4, 1e5]
      : [1e4, 1e5, 1e6];

const relayApi = { ...UNLIMITED, receiptTimeoutSeconds: 10 };
const hash = (prefix: string, i: number) => `0x${createHash('sha256').update(`${prefix}${i}`).digest('hex')}`;
const signer = `0x${'ab'.repeat(20)}`;
/** A message's bytes (version 3, nonce, origin 1, sender, destination 8453, recipient, a body). */
function raw(nonce: number): Uint8Array {
  const bytes = new Uint8Array(77 + 64);
  bytes[0] = 3;
  new DataView(bytes.buffer).setUint32(1, nonce);
  new DataView(bytes.buffer).setUint32(5, 1);
  new DataView(bytes.buffer).setUint32(41, 8453);
  bytes.fill(7, 77);
  return bytes;
}
type Kind = 'delivered' | 'failed' | 'queued';
const kindOf = (i: number): Kind => (i % 100 === 0 ? 'queued' : i % 100 === 1 ? 'failed' : 'delivered');
const T0 = Date.now() - 86_400_000;

/** The store under test at one size, as the bench drives it. */
interface Sized {
  size: number;
  server: ServerHandle;
  outbox: {
    claim(limit: number, leaseMs: number): Promise<readonly { id: string; lease: string }[]>;
    markFailed(id: string, opts: { lease: string; error: string; retryAt: number }): Promise<boolean>;
    list(opts: { status?: 'failed'; limit: number }): Promise<readonly unknown[]>;
    prune(opts: { before: number; limit: number }): Promise<{ messages: number; journal: number }>;
    enqueue(batch: readonly unknown[]): Promise<number>;
    changes: { ready(): Promise<void>; subscribe(listener: (c: { ids: readonly string[] }) => void): () => void };
  };
  close(): Promise<void>;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

async function ok(res: Response): Promise<void> {
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
}

let fresh = 0;
function newMessage() {
  fresh++;
  const nonce = 0x7000_0000 + fresh;
  return {
    id: hash('fresh', fresh + Math.random()),
    originChain: 'ethereum',
    txHash: freshTxHash(),
    origin: 1,
    destination: 8453,
    nonce,
    raw: raw(nonce),
    enqueuedAt: Date.now(),
  };
}

type Samples = Map<string, number[]>;

/** One sample of each path at one size (list and the feed every 4th), appended to `into`. */
async function sample(s: Sized, into: Samples, i: number): Promise<void> {
  const add = (path: string, ms: number) => {
    const list = into.get(path) ?? [];
    list.push(ms);
    into.set(path, list);
  };
  const pick = () => 2 + 100 * Math.floor(Math.random() * (s.size / 100 - 1)); // a delivered message
  const url = s.server.url;
  {
    add(
      'POST /relay',
      await timed(async () =>
        ok(
          await fetch(`${url}/relay`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: freshTxHash() }),
          }),
        ),
      ),
    );
    const n = pick();
    add('GET /relay/{id}', await timed(async () => ok(await fetch(`${url}/relay/${hash('id', n)}`))));
    add(
      'GET /relay?origin_chain&tx_hash',
      await timed(async () => ok(await fetch(`${url}/relay?origin_chain=ethereum&tx_hash=${hash('tx', n)}`))),
    );
    let claimed: readonly { id: string; lease: string }[] = [];
    add('claim', await timed(async () => (claimed = await s.outbox.claim(1, 60_000))));
    if (claimed.length !== 1) throw new Error('claim found no message');
    // Released for at once: the outbox keeps its share of queued messages.
    await s.outbox.markFailed(claimed[0].id, { lease: claimed[0].lease, error: 'bench', retryAt: 0 });
  }
  if (i % 4 === 0) {
    add('list failed', await timed(() => s.outbox.list({ status: 'failed', limit: 100 })));
    add('list not delivered', await timed(() => s.outbox.list({ limit: 100 })));
    const message = newMessage();
    add(
      'change feed',
      await timed(async () => {
        let stop = () => {};
        const told = new Promise<void>((resolve) => {
          stop = s.outbox.changes.subscribe((c) => {
            if (c.ids.includes(message.id)) resolve();
          });
        });
        await s.outbox.enqueue([message]);
        await told;
        stop();
      }),
    );
  }
}

/** The fill's rows, in batches of `batch`. */
function* rows(size: number, batch: number) {
  for (let from = 1; from <= size; from += batch) {
    const out = [];
    for (let i = from; i < Math.min(from + batch, size + 1); i++) {
      const kind = kindOf(i);
      out.push({ i, kind, id: hash('id', i), tx: hash('tx', i), at: T0 + i, raw: raw(i) });
    }
    yield out;
  }
}

async function openSqlite(dir: string, size: number): Promise<{ sized: Sized; fillMs: number }> {
  const file = join(dir, `growth-${size}.db`);
  await (await openSqliteStore(file)).close();
  const start = performance.now();
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA cache_size = -262144'); // 256 MiB for the fill's random keys
  // The change version set by the fill itself (one number per row, as the trigger would give), the
  // insert trigger off meanwhile (it halves the fill's time), then back as the migration wrote it.
  const trigger = db
    .prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'outbox_inserted'")
    .get() as {
    sql: string;
  };
  db.exec('DROP TRIGGER outbox_inserted');
  const insert = db.prepare(
    'INSERT INTO outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, status, attempts, ' +
      'last_error, delivered_at, destination_tx_hash, version) VALUES (?, ?, ?, 1, 8453, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const journal = db.prepare(
    "INSERT INTO outbox_journal (hash, message_id, chain_id, signer, nonce, raw, sent_at, outcome, closed_at) VALUES (?, ?, 8453, ?, ?, '0x02', ?, 'mined', ?)",
  );
  db.exec('BEGIN');
  for (const batch of rows(size, 10_000))
    for (const r of batch) {
      const delivered = r.kind === 'delivered';
      insert.run(
        r.id,
        'ethereum',
        r.tx,
        r.i,
        r.raw,
        r.at,
        r.kind,
        r.kind === 'queued' ? 0 : 1,
        r.kind === 'failed' ? 'bench: reverted' : null,
        delivered ? r.at + 5_000 : null,
        delivered ? hash('dtx', r.i) : null,
        r.i,
      );
      if (delivered) journal.run(hash('dtx', r.i), r.id, signer, r.i, r.at + 1_000, r.at + 5_000);
    }
  db.exec(trigger.sql);
  db.exec('COMMIT');
  db.exec('ANALYZE');
  db.close();
  const fillMs = performance.now() - start;
  const store = await openSqliteStore(file);
  const server = await startServer('relay', { relayApi, outbox: 'sqlite', dbFile: file, distinctMessages: true });
  const outbox = store.outbox as unknown as Sized['outbox'];
  await outbox.changes.ready();
  const keep = outbox.changes.subscribe(() => {}); // the watcher runs from the first follower on
  return {
    fillMs,
    sized: {
      size,
      server,
      outbox,
      async close() {
        keep();
        await server.stop();
        await store.close();
      },
    },
  };
}

async function openPostgres(pgServer: EmbeddedPostgres, size: number): Promise<{ sized: Sized; fillMs: number }> {
  const { default: pg } = await import('pg');
  const database = `growth_${size}`;
  const admin = new pg.Client({ connectionString: pgServer.url() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const pool = new pg.Pool({ connectionString: pgServer.url(database), max: 4 });
  const store = await openPostgresStore(pool, { relayApi });
  const start = performance.now();
  const client = await pool.connect();
  await client.query('BEGIN');
  // No trigger for the fill (they tell the change feed; no one listens yet).
  await client.query('SET LOCAL session_replication_role = replica');
  for (const batch of rows(size, 10_000)) {
    const col = <T>(f: (r: (typeof batch)[number]) => T) => batch.map(f);
    await client.query(
      `INSERT INTO relayer.outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, status, attempts,
         last_error, delivered_at, destination_tx_hash)
       SELECT id, 'ethereum', tx, 1, 8453, nonce, decode(raw, 'hex'), at, kind, attempts, err, dat, dtx
       FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::float8[], $6::text[], $7::int[], $8::text[], $9::float8[], $10::text[])
         AS b(id, tx, nonce, raw, at, kind, attempts, err, dat, dtx)`,
      [
        col((r) => r.id),
        col((r) => r.tx),
        col((r) => r.i),
        col((r) => Buffer.from(r.raw).toString('hex')),
        col((r) => r.at),
        col((r) => r.kind),
        col((r) => (r.kind === 'queued' ? 0 : 1)),
        col((r) => (r.kind === 'failed' ? 'bench: reverted' : null)),
        col((r) => (r.kind === 'delivered' ? r.at + 5_000 : null)),
        col((r) => (r.kind === 'delivered' ? hash('dtx', r.i) : null)),
      ],
    );
    const delivered = batch.filter((r) => r.kind === 'delivered');
    await client.query(
      `INSERT INTO relayer.outbox_journal (hash, message_id, chain_id, signer, nonce, raw, sent_at, outcome, closed_at)
       SELECT h, m, 8453, $3, n, '0x02', at, 'mined', at + 4000 FROM unnest($1::text[], $2::text[], $4::bigint[], $5::float8[]) AS b(h, m, n, at)`,
      [
        delivered.map((r) => hash('dtx', r.i)),
        delivered.map((r) => r.id),
        signer,
        delivered.map((r) => r.i),
        delivered.map((r) => r.at + 1_000),
      ],
    );
  }
  await client.query('COMMIT');
  await client.query('VACUUM ANALYZE relayer.outbox');
  await client.query('VACUUM ANALYZE relayer.outbox_journal');
  client.release();
  const fillMs = performance.now() - start;
  const server = await startServer('relay', {
    relayApi,
    postgres: pgServer.url(database),
    distinctMessages: true,
  });
  await store.outbox.changes.ready();
  return {
    fillMs,
    sized: {
      size,
      server,
      outbox: store.outbox as unknown as Sized['outbox'],
      async close() {
        await server.stop();
        await store.close();
        await pool.end();
      },
    },
  };
}

const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const ms = (v: number) => (v < 1 ? v.toFixed(3) : v < 10 ? v.toFixed(2) : v.toFixed(1));

async function measure(engine: 'sqlite' | 'postgres', pgServer: EmbeddedPostgres | undefined, dir: string) {
  const sizes = sizesOf(engine);
  const sized: Sized[] = [];
  try {
    for (const size of sizes) {
      const { sized: s, fillMs } =
        engine === 'sqlite' ? await openSqlite(dir, size) : await openPostgres(pgServer!, size);
      console.log(`${engine}: filled ${size.toLocaleString('en-US')} messages in ${(fillMs / 1000).toFixed(1)} s`);
      sized.push(s);
    }
    const samples = new Map(sized.map((s) => [s.size, new Map() as Samples]));
    for (const s of sized) for (let i = 0; i < 8; i++) await sample(s, new Map(), i); // warm-up, not counted
    // One sample of every size in turn, the order rotating: a slow moment of the shared machine
    // hits every size alike.
    for (let i = 0; i < SAMPLES; i++) {
      for (let k = 0; k < sized.length; k++) {
        const s = sized[(k + i) % sized.length];
        await sample(s, samples.get(s.size)!, i);
      }
    }
    // Retention's batch (docs/configuration.md#retention), last: it deletes. PRUNE_BATCH delivered
    // messages and as many closed journal rows a batch, the oldest, every size in turn; and
    // POST /relay while the batches run back to back (the write lock taken one batch at a time).
    for (let i = 0; i < PRUNE_SAMPLES; i++) {
      for (const s of sized) {
        const into = samples.get(s.size)!;
        let pruned = { messages: 0, journal: 0 };
        const ms = await timed(async () => (pruned = await s.outbox.prune({ before: Date.now(), limit: PRUNE_BATCH })));
        if (pruned.messages !== PRUNE_BATCH) throw new Error(`prune deleted ${pruned.messages} messages`);
        into.set('prune a batch', [...(into.get('prune a batch') ?? []), ms]);
      }
    }
    for (const s of sized) {
      const into = samples.get(s.size)!;
      let pruning = true;
      const background = (async () => {
        while (pruning) await s.outbox.prune({ before: Date.now(), limit: PRUNE_BATCH });
      })();
      for (let i = 0; i < PRUNE_SAMPLES * 4; i++) {
        const ms = await timed(async () =>
          ok(
            await fetch(`${s.server.url}/relay`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: freshTxHash() }),
            }),
          ),
        );
        into.set('POST /relay while pruning', [...(into.get('POST /relay while pruning') ?? []), ms]);
      }
      pruning = false;
      await background;
    }
    const paths = [...samples.get(sizes[0])!.keys()];
    const head = [
      'path',
      ...sizes.map((n) => `${n.toExponential(0).replace('e+', 'e')} median / p99 (ms)`),
      'ratio median',
      'ratio p99',
    ];
    const lines = [head];
    for (const path of paths) {
      const per = sizes.map((n) => samples.get(n)!.get(path)!);
      const med = per.map((v) => median(v));
      const p99 = per.map((v) => quantile(v, 0.99));
      lines.push([
        path,
        ...med.map((m, i) => `${ms(m)} / ${ms(p99[i])}`),
        `${(med.at(-1)! / med[0]).toFixed(2)}x`,
        `${(p99.at(-1)! / p99[0]).toFixed(2)}x`,
      ]);
    }
    console.log(`\n${engine} (${SAMPLES} samples a path, a quarter of that for list and feed, sizes interleaved)`);
    for (const line of lines) console.log(`| ${line.join(' | ')} |`);
  } finally {
    for (const s of sized) await s.close();
  }
}

console.log(provenance('node bench/growth.ts'));
const dir = mkdtempSync(join(tmpdir(), 'relayer-bench-growth-'));
let pgServer: EmbeddedPostgres | undefined;
try {
  for (const engine of engines) {
    if (engine === 'postgres') {
      pgServer = await startEmbeddedPostgres();
      await pgServer.start();
    }
    await measure(engine, pgServer, dir);
  }
  console.log(`\nend: ${provenance('node bench/growth.ts')}`);
} finally {
  await pgServer?.remove();
  rmSync(dir, { recursive: true, force: true });
}
