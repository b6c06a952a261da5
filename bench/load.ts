/**
 * Load helpers shared by the HTTP benches (http.ts, memory.ts, merkle.ts, postgres.ts, store.ts,
 * transport.ts, read-flood.ts): a server in its own child process (bench/server-child.ts),
 * autocannon runs against it with the CPU both sides used, rounds that alternate between
 * contenders, and their medians.
 */
import autocannon, { type Request, type Result } from 'autocannon';
import { fork, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { median } from './lib.ts';
import type { RelayChildOptions } from './server-child.ts';

export interface ServerHandle {
  url: string;
  pid: number;
  /** The child's process.memoryUsage(), after a full GC when `gc` is true. */
  memory(gc?: boolean): Promise<NodeJS.MemoryUsage>;
  stop(): Promise<void>;
}

/** A load-test relayApi: no rate limit, a 1 s dedup window so entries churn instead of piling up
 * (every POST does the full reserve → enqueue → commit). */
export const UNLIMITED = { rateLimit: { burst: 1e9, perMinute: 1e9 }, dedupWindowSeconds: 1, dedupCapacity: 1_000_000 };

const CHILD = fileURLToPath(new URL('./server-child.ts', import.meta.url));

export async function startServer(
  kind: 'bare' | 'relay' | 'merkle-peer' | 'rpc' | 'fetch-peer' | 'agent-peer' | 'pg-peer',
  options: RelayChildOptions = {},
): Promise<ServerHandle> {
  const child = fork(CHILD, [kind, JSON.stringify(options)], {
    // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of every server child (node --cpu-prof).
    execArgv: [
      '--expose-gc',
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    ],
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

const SERVER_BIN = fileURLToPath(new URL('../bin/relayer-server.ts', import.meta.url));

/**
 * bin/relayer-server.ts as `npm start -- <args>` runs it (its config file, its store, its RPC
 * transport, its request log at the default level: its stdout is read and dropped), ready once it
 * printed "listening on http://HOST:PORT"; `checkout`: another tree's bin/relayer-server.ts instead.
 * stop() sends SIGTERM and waits for the exit.
 */
export function startRelayerServer(args: readonly string[], checkout?: string): Promise<Omit<ServerHandle, 'memory'>> {
  // Another checkout's server (bench/postgres-served.ts compares two commits) runs from its own tree.
  const bin = checkout === undefined ? SERVER_BIN : `${checkout}/bin/relayer-server.ts`;
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let seen = '';
    let url: string | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      if (url !== undefined) return;
      seen += chunk.toString('utf8');
      url = /listening on (http:\/\/[^\s/]+)/.exec(seen)?.[1];
      if (url === undefined) return;
      resolve({
        url,
        pid: child.pid!,
        async stop() {
          child.kill('SIGTERM');
          await exited;
        },
      });
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`relayer-server ${args.join(' ')} exited with ${code}`)));
  });
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

/** The database server's processes: the postmaster (the parent of a backend) and its children. */
let postmaster = 0;
export async function findPostmaster(url: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
  postmaster = Number(readFileSync(`/proc/${rows[0].pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
  await client.end();
}

/** CPU seconds each of the database's processes has used so far, by pid, from /proc (Linux). */
export function databaseCpu(): Map<number, number> {
  const used = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(entry) === postmaster || Number(fields[1]) === postmaster)
        used.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // The process ended meanwhile.
    }
  }
  return used;
}

/** CPU seconds the database used since `before` (a process that ended meanwhile is not counted). */
export function databaseCpuSince(before: Map<number, number>): number {
  let sum = 0;
  for (const [pid, seconds] of databaseCpu()) sum += seconds - (before.get(pid) ?? 0);
  return sum;
}

/** What one autocannon run gave: req/s, latency (ms), answers by status code, failed requests. */
export interface Run {
  rps: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  errors: number;
}

export function runOf(result: Result): Run {
  const statuses: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = Number(count);
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    statuses,
    errors: result.errors + result.timeouts,
  };
}

/** Medians over the runs; status counts and errors are totals. */
export function medianRun(runs: readonly Run[]): Run {
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

/** Status counts as `200:1234 429:56`. */
export function statusText(statuses: Record<string, number>): string {
  return Object.entries(statuses)
    .map(([code, n]) => `${code}:${n}`)
    .join(' ');
}

/** No request failed and every answer was a 200. */
export function allOk(run: Pick<Run, 'errors' | 'statuses'>): boolean {
  return run.errors === 0 && Object.keys(run.statuses).every((code) => code === '200');
}

/** POSTs one relay of `hash` and checks it was accepted (200 with messages) before a bench counts it. */
export async function relayOnce(url: string, hash: string = freshTxHash()): Promise<{ message_id: string }[]> {
  const res = await fetch(`${url}/relay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: hash }),
  });
  const body = (await res.json()) as { messages?: { message_id: string }[] };
  if (res.status !== 200 || !body.messages?.length)
    throw new Error(`POST /relay answered ${res.status} ${JSON.stringify(body)}`);
  return body.messages;
}

export interface LoadResult extends Run {
  non2xx: number;
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
  return {
    ...runOf(result),
    non2xx: result.non2xx,
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
export async function rounds(
  contenders: readonly Contender[],
  count: number,
  seconds: number,
): Promise<Map<string, LoadResult[]>> {
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

export interface Summary extends Run {
  /** Server CPU time per request, in microseconds. */
  cpuPerRequest: number;
  serverCpu: number;
  clientCpu: number;
}

/** Medians over the rounds; status counts and errors are totals. */
export function summarize(results: readonly LoadResult[]): Summary {
  return {
    ...medianRun(results),
    cpuPerRequest: median(results.map((r) => (r.serverCpu / r.rps) * 1e6)),
    serverCpu: median(results.map((r) => r.serverCpu)),
    clientCpu: median(results.map((r) => r.clientCpu)),
  };
}

let txCounter = 0x5eed_0000;

/** A transaction hash never sent before in this run, so dedup never answers duplicate_tx. */
export function freshTxHash(): string {
  return '0x' + (txCounter++).toString(16).padStart(64, '0');
}

/** GET /relay, the liveness answer: the server's HTTP cost alone, no store. */
export const GET_UP: LoadSpec = { requests: [{ method: 'GET', path: '/relay' }] };

/** A POST /relay with a transaction hash never sent before. */
export const POST_RELAY: LoadSpec = {
  requests: [
    {
      method: 'POST',
      path: '/relay',
      headers: { 'content-type': 'application/json' },
      setupRequest: (request) => ({
        ...request,
        body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: freshTxHash() }),
      }),
    },
  ],
};
