/**
 * Requests per second over loopback, ours against a bare node:http server, with autocannon
 * (50 connections). Every server runs in its own child process (bench/server-child.ts) so the load
 * generator never shares an event loop with it; on a 2-core machine each side gets one core.
 * Rounds alternate between the contenders and the median round counts.
 * Run alone: node bench/http.ts
 */
import autocannon, { type Request } from 'autocannon';
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { formatOps, median, printTable } from './lib.ts';
import type { BenchRow } from './run.ts';
import type { RelayChildOptions } from './server-child.ts';

export interface ServerHandle {
  url: string;
  pid: number;
  /** The child's process.memoryUsage(), after a full GC when `gc` is true. */
  memory(gc?: boolean): Promise<NodeJS.MemoryUsage>;
  stop(): Promise<void>;
}

const CHILD = fileURLToPath(new URL('./server-child.ts', import.meta.url));

export async function startServer(kind: 'bare' | 'relay', options: RelayChildOptions = {}): Promise<ServerHandle> {
  const child = fork(CHILD, [kind, JSON.stringify(options)], {
    // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of every server child (node --cpu-prof).
    execArgv: ['--expose-gc', ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [])],
    // stdout (the request log) goes to /dev/null: the server still formats and writes every line.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server child (${kind}) exited with ${code}`)));
    child.once('message', (m: { type: string; port: number }) => resolve(m.port));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    memory(gc = false) {
      return new Promise((resolve) => {
        child.once('message', (m: NodeJS.MemoryUsage) => resolve(m));
        child.send({ type: 'memory', gc });
      });
    },
    async stop() {
      child.disconnect();
      await exited;
    },
  };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  statuses: Record<string, number>;
  /** Share of one core the server used, and the load generator (this process). */
  serverCpu: number;
  clientCpu: number;
}

export interface LoadSpec {
  requests: Request[];
}

/** One autocannon run of `seconds` against `server`. */
export async function load(server: ServerHandle, spec: LoadSpec, seconds: number): Promise<LoadResult> {
  const cpu0 = cpuSeconds(server.pid);
  const own0 = process.cpuUsage();
  const wall0 = performance.now();
  const result = await autocannon({ url: server.url, connections: 50, duration: seconds, requests: spec.requests });
  const wall = (performance.now() - wall0) / 1000;
  const own = process.cpuUsage(own0);
  const statuses: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = Number(count);
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    statuses,
    serverCpu: (cpuSeconds(server.pid) - cpu0) / wall,
    clientCpu: (own.user + own.system) / 1e6 / wall,
  };
}

export interface Contender {
  name: string;
  server: ServerHandle;
  spec: LoadSpec;
}

/**
 * Runs every contender once per round (the order rotates each round) after a short warm-up, and
 * returns the results of each by name.
 */
export async function rounds(contenders: readonly Contender[], count: number, seconds: number): Promise<Map<string, LoadResult[]>> {
  for (const c of contenders) await load(c.server, c.spec, 0.5);
  const results = new Map(contenders.map((c) => [c.name, [] as LoadResult[]]));
  for (let round = 0; round < count; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const c = contenders[(round + k) % contenders.length];
      results.get(c.name)!.push(await load(c.server, c.spec, seconds));
    }
  }
  return results;
}

export interface Summary {
  rps: number;
  /** Server CPU time per request, in microseconds. */
  cpuPerRequest: number;
  p50: number;
  p99: number;
  serverCpu: number;
  clientCpu: number;
  statuses: Record<string, number>;
  errors: number;
}

/** Medians over the rounds; status counts and errors are totals. */
export function summarize(results: readonly LoadResult[]): Summary {
  const statuses: Record<string, number> = {};
  for (const r of results) for (const [code, n] of Object.entries(r.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
  return {
    rps: median(results.map((r) => r.rps)),
    cpuPerRequest: median(results.map((r) => (r.serverCpu / r.rps) * 1e6)),
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    serverCpu: median(results.map((r) => r.serverCpu)),
    clientCpu: median(results.map((r) => r.clientCpu)),
    statuses,
    errors: results.reduce((sum, r) => sum + r.errors, 0),
  };
}

let txCounter = 0x5eed_0000;

/** A transaction hash never sent before in this run, so dedup never answers duplicate_tx. */
export function freshTxHash(): string {
  return '0x' + (txCounter++).toString(16).padStart(64, '0');
}

const GET_UP: LoadSpec = { requests: [{ method: 'GET', path: '/relay' }] };

/** A POST /relay with a transaction hash never sent before. */
export const POST_RELAY: LoadSpec = {
  requests: [
    {
      method: 'POST',
      path: '/relay',
      headers: { 'content-type': 'application/json' },
      setupRequest: (request) => ({ ...request, body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: freshTxHash() }) }),
    },
  ],
};

/** A load-test configuration: no rate limit, a 1 s dedup window so entries churn instead of piling up. */
const UNLIMITED = { rateLimit: { burst: 1e9, perMinute: 1e9 }, dedupWindowSeconds: 1, dedupCapacity: 1_000_000 };

async function checkAnswers(ours: ServerHandle, bare: ServerHandle): Promise<void> {
  for (const server of [ours, bare]) {
    const up = await fetch(`${server.url}/relay`);
    if (up.status !== 200 || (await up.text()) !== 'up') throw new Error('GET /relay did not answer up');
  }
  const res = await fetch(`${ours.url}/relay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: freshTxHash() }),
  });
  const body = (await res.json()) as { messages?: unknown[] };
  if (res.status !== 200 || body.messages?.length !== 1) throw new Error(`POST /relay answered ${res.status} ${JSON.stringify(body)}`);
}

function pct(share: number): string {
  return `${Math.round(share * 100)}%`;
}

function statusText(statuses: Record<string, number>): string {
  return Object.entries(statuses).map(([code, n]) => `${code}:${n}`).join(' ');
}

export async function run(options: { rounds?: number; seconds?: number } = {}): Promise<BenchRow[]> {
  const count = options.rounds ?? 5;
  const seconds = options.seconds ?? 2;
  const bare = await startServer('bare');
  const ours = await startServer('relay', { relayApi: UNLIMITED });
  const quiet = await startServer('relay', { relayApi: UNLIMITED, log: false });
  const durable = await startServer('relay', { relayApi: UNLIMITED, outbox: 'sqlite', distinctMessages: true });
  const limited = await startServer('relay', {});
  try {
    await checkAnswers(ours, bare);

    const get = await rounds(
      [
        { name: 'ours', server: ours, spec: GET_UP },
        { name: 'bare', server: bare, spec: GET_UP },
      ],
      count,
      seconds,
    );
    const post = await rounds(
      [
        { name: 'ours', server: ours, spec: POST_RELAY },
        { name: 'bare', server: bare, spec: POST_RELAY },
        { name: 'ours, no request log', server: quiet, spec: POST_RELAY },
        { name: 'ours, SQLite outbox', server: durable, spec: POST_RELAY },
        { name: 'ours, default rate limit', server: limited, spec: POST_RELAY },
      ],
      count,
      seconds,
    );

    const g = new Map([...get].map(([name, r]) => [name, summarize(r)]));
    const p = new Map([...post].map(([name, r]) => [name, summarize(r)]));
    const detail = (title: string, table: Map<string, Summary>, base: Summary) => {
      console.log(`\n## ${title}: autocannon, 50 connections, ${count} rounds of ${seconds} s, medians`);
      printTable(
        ['server', 'req/s', 'vs bare', 'CPU us/req', 'p50 ms', 'p99 ms', 'server CPU', 'client CPU', 'statuses', 'errors'],
        [...table].map(([name, s]) => [
          name,
          formatOps(s.rps),
          `${(s.rps / base.rps).toFixed(2)}x`,
          s.cpuPerRequest.toFixed(1),
          s.p50,
          s.p99,
          pct(s.serverCpu),
          pct(s.clientCpu),
          statusText(s.statuses),
          s.errors,
        ]),
      );
    };
    detail('GET /relay', g, g.get('bare')!);
    detail('POST /relay, instant in-process RPC, one message per tx', p, p.get('bare')!);

    const ok = (s: Summary) => s.errors === 0 && Object.keys(s.statuses).every((code) => code === '200');
    const gOurs = g.get('ours')!;
    const gBare = g.get('bare')!;
    const pOurs = p.get('ours')!;
    const pBare = p.get('bare')!;
    const durableS = p.get('ours, SQLite outbox')!;
    const limitedS = p.get('ours, default rate limit')!;
    return [
      {
        what: 'GET /relay req/s',
        ours: `${formatOps(gOurs.rps)} req/s`,
        peer: `${formatOps(gBare.rps)} req/s (bare node:http)`,
        ratio: gOurs.rps / gBare.rps,
        target: '>= 0.9x',
        met: ok(gOurs) && gOurs.rps / gBare.rps >= 0.9,
      },
      {
        what: 'POST /relay req/s (memory outbox)',
        ours: `${formatOps(pOurs.rps)} req/s, p99 ${pOurs.p99} ms`,
        peer: `${formatOps(pBare.rps)} req/s, p99 ${pBare.p99} ms (bare JSON)`,
        ratio: pOurs.rps / pBare.rps,
        target: '>= 0.5x',
        met: ok(pOurs) && pOurs.rps / pBare.rps >= 0.5,
      },
      {
        what: 'POST /relay req/s (SQLite outbox, fsync)',
        ours: `${formatOps(durableS.rps)} req/s, p99 ${durableS.p99} ms`,
        peer: `${formatOps(pBare.rps)} req/s (bare JSON)`,
        ratio: durableS.rps / pBare.rps,
        target: 'info',
      },
      {
        what: 'POST /relay req/s (default limit: 429s)',
        ours: `${formatOps(limitedS.rps)} req/s, p99 ${limitedS.p99} ms`,
        peer: `${formatOps(pBare.rps)} req/s (bare JSON)`,
        ratio: limitedS.rps / pBare.rps,
        target: 'info',
      },
    ];
  } finally {
    await Promise.all([bare, ours, quiet, durable, limited].map((s) => s.stop()));
  }
}

if (import.meta.main) await run();
