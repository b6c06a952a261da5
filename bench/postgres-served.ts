/**
 * What separates bench:pg's PostgreSQL figure from the one an operator gets (BENCHMARKS.md, "Several
 * replicas on PostgreSQL"): one variable at a time, side by side in one run, from the bench's
 * child server (instant in-process RPC, 1 s dedup window, no request log, 50 connections) to
 * relayer-server as `npm start` runs it (a config file; its pool, RPC transport and request log;
 * receipts from a JSON-RPC child over loopback HTTP, a new message per transaction; the default 300 s
 * dedup window; 40 connections), with SQLite beside it. Each PostgreSQL contender has a database of
 * its own. Given the path of another checkout of the repository (its `npm install` done), it adds
 * that tree's relayer-server on PostgreSQL as one more contender, to compare two commits.
 *
 * Run: node bench/postgres-served.ts [other-checkout]   (BENCH_ROUNDS, BENCH_SECONDS: default 3, 3)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { startEmbeddedPostgres } from '../scripts/embedded-postgres.ts';
import { fileChains } from '../test/helpers/fixtures/config.ts';
import { median, printTable, provenance } from './lib.ts';
import { cpuSeconds, POST_RELAY, startRelayerServer, startServer, statusText, UNLIMITED } from './load.ts';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const other = process.argv[2] === undefined ? undefined : resolve(process.argv[2]);

console.log(provenance(`node bench/postgres-served.ts${other ? ` ${other}` : ''}`));
const dir = mkdtempSync(join(tmpdir(), 'relayer-bench-served-'));
const db = await startEmbeddedPostgres({ password: 'bench' });
const { default: pg } = await import('pg');
const admin = new pg.Client({ connectionString: db.url() });
await admin.connect();
let databases = 0;
/** A database of its own for each contender: their dedup rows and buckets never meet. */
async function database(): Promise<string> {
  const name = `served_${databases++}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(db.url());
  url.pathname = `/${name}`;
  return url.href;
}
const rpc = await startServer('rpc', { distinctMessages: true });
const config = join(dir, 'config.json');
const served = { rateLimit: { burst: 1e9, perMinute: 1e9 }, dedupCapacity: 10_000_000 };
writeFileSync(config, JSON.stringify({ chains: fileChains(rpc.url), relayApi: served }));
const npmStart = async (db: string, checkout?: string) =>
  startRelayerServer(['--config', config, '--port', '0', '--db', db], checkout);

type Server = { url: string; pid: number; stop(): Promise<void> };
const contenders: [string, Server, number][] = [
  [
    'bench child: instant RPC, 1 s window, no log (bench:pg)',
    await startServer('relay', { relayApi: UNLIMITED, postgres: await database(), distinctMessages: true, log: false }),
    50,
  ],
  [
    '+ receipts over loopback HTTP',
    await startServer('relay', {
      relayApi: UNLIMITED,
      postgres: await database(),
      rpc: rpc.url,
      distinctMessages: true,
      log: false,
    }),
    50,
  ],
  [
    '+ 300 s dedup window',
    await startServer('relay', {
      relayApi: served,
      postgres: await database(),
      rpc: rpc.url,
      distinctMessages: true,
      log: false,
    }),
    50,
  ],
  [
    '+ request log',
    await startServer('relay', { relayApi: served, postgres: await database(), rpc: rpc.url, distinctMessages: true }),
    50,
  ],
  ['npm start on PostgreSQL, 50 connections', await npmStart(await database()), 50],
  ['npm start on PostgreSQL, 40 connections', await npmStart(await database()), 40],
  ['npm start on PostgreSQL, pool_size=20, 40 connections', await npmStart(`${await database()}?pool_size=20`), 40],
  ...(other === undefined
    ? []
    : [
        [`npm start on PostgreSQL in ${other}, 40 connections`, await npmStart(await database(), other), 40] as [
          string,
          Server,
          number,
        ],
      ]),
  ['npm start on SQLite, 40 connections', await npmStart(join(dir, 'a.db')), 40],
  ['npm start on SQLite, 50 connections', await npmStart(join(dir, 'b.db')), 50],
];

interface Round {
  rps: number;
  p50: number;
  p99: number;
  cpu: number;
  statuses: Record<string, number>;
}
async function once(server: Server, connections: number, duration: number): Promise<Round> {
  const cpu0 = cpuSeconds(server.pid);
  const r = await autocannon({ url: server.url, connections, duration, requests: POST_RELAY.requests });
  const statuses: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(r.statusCodeStats ?? {})) statuses[code] = Number(count);
  if (r.errors + r.timeouts > 0) statuses.errors = r.errors + r.timeouts;
  return {
    rps: r.requests.total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpu: ((cpuSeconds(server.pid) - cpu0) / r.requests.total) * 1e6,
    statuses,
  };
}

try {
  const load0 = loadavg()[0];
  for (const [, server, connections] of contenders) await once(server, connections, 0.5);
  const results = new Map(contenders.map(([name]) => [name, [] as Round[]]));
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const [name, server, connections] = contenders[(round + k) % contenders.length];
      results.get(name)?.push(await once(server, connections, seconds));
    }
  }
  console.log(
    `\n## POST /relay, one variable at a time: ${rounds} rounds of ${seconds} s, medians (load average ${load0.toFixed(1)} -> ${loadavg()[0].toFixed(1)})`,
  );
  const sqlite = median(results.get('npm start on SQLite, 40 connections')?.map((r) => r.rps) ?? []);
  printTable(
    ['server', 'req/s', 'vs npm start on SQLite, 40 connections', 'p50 ms', 'p99 ms', 'server CPU us/req', 'statuses'],
    [...results].map(([name, runs]) => {
      const statuses: Record<string, number> = {};
      for (const r of runs)
        for (const [code, n] of Object.entries(r.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
      const rps = median(runs.map((r) => r.rps));
      return [
        name,
        Math.round(rps).toLocaleString('en-US'),
        `${(rps / sqlite).toFixed(2)}x`,
        median(runs.map((r) => r.p50)),
        median(runs.map((r) => r.p99)),
        median(runs.map((r) => r.cpu)).toFixed(0),
        statusText(statuses),
      ];
    }),
  );
} finally {
  await Promise.all([...contenders.map(([, server]) => server.stop()), rpc.stop()]);
  await admin.end();
  await db.remove();
  rmSync(dir, { recursive: true, force: true });
}
