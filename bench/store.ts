/**
 * The SQLite store off the main thread
 * (BENCHMARKS.md#storage-off-the-event-loop-node-benchstorets-node-benchmerklets), two figures
 * from one run (the third, merkle, is bench/merkle.ts, with the forms a merkle body can take to
 * the worker):  1. durable POST /relay (one eligible message per transaction, SQLite
 * synchronous=FULL, group     commit in the store's worker) against the same server with the
 * in-memory outbox;  2. GET /relay p99 while another connection holds the database's write lock
 * for 3 s (writes     waiting meanwhile), against GET /relay p99 on the same server without the
 * lock. Run alone: node bench/store.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { formatOps, printTable, type BenchRow } from './lib.ts';
import {
  allOk,
  GET_UP,
  freshTxHash,
  load,
  POST_RELAY,
  rounds,
  startServer,
  statusText,
  summarize,
  UNLIMITED,
} from './load.ts';

const LOCK_SECONDS = 3;

async function durable(count: number, seconds: number) {
  const memory = await startServer('relay', { relayApi: UNLIMITED, distinctMessages: true });
  const sqlite = await startServer('relay', { relayApi: UNLIMITED, outbox: 'sqlite', distinctMessages: true });
  try {
    const results = await rounds(
      [
        { name: 'memory outbox', server: memory, spec: POST_RELAY },
        { name: 'SQLite outbox (FULL, group commit)', server: sqlite, spec: POST_RELAY },
      ],
      count,
      seconds,
    );
    return new Map([...results].map(([name, r]) => [name, summarize(r)]));
  } finally {
    await Promise.all([memory.stop(), sqlite.stop()]);
  }
}

async function underLock() {
  const dir = mkdtempSync(join(tmpdir(), 'relayer-bench-lock-'));
  const file = join(dir, 'relayer.db');
  const server = await startServer('relay', {
    relayApi: UNLIMITED,
    outbox: 'sqlite',
    distinctMessages: true,
    dbFile: file,
  });
  try {
    await load(server, GET_UP, 0.5); // warm-up
    const free = await load(server, GET_UP, LOCK_SECONDS);
    // An operator's `sqlite3 relayer.db` + BEGIN IMMEDIATE: this process holds the write lock.
    const other = new DatabaseSync(file);
    other.exec('BEGIN IMMEDIATE');
    const writes = Array.from({ length: 20 }, () =>
      fetch(`${server.url}/relay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: freshTxHash() }),
      }).then((res) => res.status),
    );
    const locked = await load(server, GET_UP, LOCK_SECONDS);
    other.exec('ROLLBACK');
    other.close();
    const statuses: Record<string, number> = {};
    for (const status of await Promise.all(writes)) statuses[status] = (statuses[status] ?? 0) + 1;
    return { free, locked, writes: statuses };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(options: { rounds?: number; seconds?: number } = {}): Promise<BenchRow[]> {
  const count = options.rounds ?? 5;
  const seconds = options.seconds ?? 2;

  const posts = await durable(count, seconds);
  const mem = posts.get('memory outbox')!;
  const sql = posts.get('SQLite outbox (FULL, group commit)')!;
  console.log(`\n## durable POST /relay: autocannon, 50 connections, ${count} rounds of ${seconds} s, medians`);
  printTable(
    ['outbox', 'req/s', 'vs memory', 'p50 ms', 'p99 ms', 'server CPU', 'statuses', 'errors'],
    [...posts].map(([name, s]) => [
      name,
      formatOps(s.rps),
      `${(s.rps / mem.rps).toFixed(2)}x`,
      s.p50,
      s.p99,
      `${Math.round(s.serverCpu * 100)}%`,
      statusText(s.statuses),
      s.errors,
    ]),
  );

  const lock = await underLock();
  console.log(
    `\n## GET /relay while another connection holds the write lock for ${LOCK_SECONDS} s (SQLite outbox, 50 connections)`,
  );
  printTable(
    ['', 'req/s', 'p50 ms', 'p99 ms', 'errors'],
    [
      ['no lock', formatOps(lock.free.rps), lock.free.p50, lock.free.p99, lock.free.errors],
      [
        'write lock held, 20 relays waiting',
        formatOps(lock.locked.rps),
        lock.locked.p50,
        lock.locked.p99,
        lock.locked.errors,
      ],
    ],
  );
  console.log(
    `the 20 waiting relays answered: ${JSON.stringify(lock.writes)} (503 store_unavailable after the 2 s lock wait)`,
  );

  const ok = allOk(sql);
  return [
    {
      what: 'durable POST /relay req/s (SQLite FULL)',
      ours: `${formatOps(sql.rps)} req/s, p99 ${sql.p99} ms`,
      peer: `${formatOps(mem.rps)} req/s, p99 ${mem.p99} ms (memory outbox)`,
      ratio: sql.rps / mem.rps,
      target: '>= 0.8x',
      met: ok && sql.rps / mem.rps >= 0.8,
    },
    {
      what: `GET /relay p99 under a ${LOCK_SECONDS} s write lock`,
      ours: `p99 ${lock.locked.p99} ms`,
      peer: `p99 ${lock.free.p99} ms (no lock)`,
      target: '< 20 ms',
      met: lock.locked.errors === 0 && lock.locked.p99 < 20,
    },
  ];
}

if (import.meta.main) await run();
