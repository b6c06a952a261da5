/**
 * A bounded mixed-load driver for relayer-server, shared by test/process/load.test.ts (a few seconds in
 * npm test) and scripts/soak.ts (60 s, figures in RELIABILITY.md).
 *
 * The server runs as its own process (bin/relayer-server.ts, SQLite file), receipts come from a
 * JSON-RPC fake in this process, and N workers each keep one keep-alive connection busy with a
 * seeded mix of requests. Every answer is checked against the outcomes its kind may have; the
 * only 429s allowed are the documented ones (rate_limited, duplicate_tx).
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { startFaultyRpcServer, type FaultyRpcServer } from '../fakes/faulty-rpc.ts';
import { MAILBOX, rpcReceipt, transferLogs } from '../fixtures/builders.ts';
import { fileChains } from '../fixtures/config.ts';
import { launchRelayerServer, type RelayerProcess } from './server.ts';

/** Limits for the load runs: high enough that the whole pipeline runs at speed, and
 * dedupCapacity >= burst + perMinute x window/60, so the rate limit keeps cache_full unreachable. */
export const LOAD_RELAY_API = {
  rateLimit: { burst: 500, perMinute: 30_000 },
  dedupWindowSeconds: 300,
  dedupCapacity: 200_000,
  receiptTimeoutSeconds: 1,
  maxMessagesPerTx: 10,
};

// Transaction hashes carry their own fate, so the fake RPC needs no table: the first byte says
// what the receipt is, the last four bytes are the nonce of its one transfer.
const MINED = 'aa';
const EMPTY = 'bb';
const UNMINED = 'cc';

function hashOf(kind: string, n: number): string {
  return '0x' + kind + '0'.repeat(54) + n.toString(16).padStart(8, '0');
}

function receiptFor(hash: string): Record<string, unknown> | null {
  const kind = hash.slice(2, 4);
  const n = parseInt(hash.slice(-8), 16);
  if (kind === MINED) return rpcReceipt(hash, transferLogs(1, { nonce: n }));
  if (kind === EMPTY) return rpcReceipt(hash, []);
  return null;
}

export interface MemoryProbe {
  /** Milliseconds since the server started. */
  t: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  rss: number;
  /** Longest event-loop stall since the previous probe. */
  loopDelayMaxMs: number;
}

export interface LoadTarget {
  url: string;
  pid: number;
  server: RelayerProcess;
  rpc: FaultyRpcServer;
  /** Heap left after forced full collections, when started with `probeMemory` (test/helpers/harness/memory-probe.ts). */
  probes: MemoryProbe[];
  /** Resident set size of the server process in bytes (Linux /proc), or undefined elsewhere. */
  rss(): number | undefined;
  metrics(): Promise<string>;
  stop(): Promise<number | null>;
}

export async function startLoadTarget(
  dir: string,
  options: { probeMemory?: boolean; relayApi?: Partial<typeof LOAD_RELAY_API> } = {},
): Promise<LoadTarget> {
  const rpc = await startFaultyRpcServer(new Map(), { mailbox: MAILBOX, receiptFor });
  const config = {
    chains: fileChains(rpc.endpoint('ok')),
    relayApi: { ...LOAD_RELAY_API, ...options.relayApi },
    db: join(dir, 'load.db'),
  };
  const probe = ['--expose-gc', '--import', new URL('./memory-probe.ts', import.meta.url).pathname];
  const started = performance.now();
  const probes: MemoryProbe[] = [];
  // A server that does not start leaves no fake RPC listening: it would keep the test process alive.
  const server = await launchRelayerServer(['--log-level', 'warn'], {
    config,
    nodeArgs: options.probeMemory ? probe : [],
    graceMs: 15_000,
    onLine(line, stream) {
      if (stream !== 'stderr' || !line.startsWith('{"probe":"memory"')) return;
      const m = JSON.parse(line) as MemoryProbe;
      probes.push({
        t: performance.now() - started,
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        rss: m.rss,
        loopDelayMaxMs: m.loopDelayMaxMs,
      });
    },
  }).catch(async (error: unknown) => {
    await rpc.close();
    throw error;
  });
  const { url } = server;
  const pid = server.child.pid!;
  return {
    url,
    pid,
    server,
    rpc,
    probes,
    rss: () => readRss(pid),
    metrics: async () => (await send(new Agent(), url, 'GET', '/metrics')).text,
    async stop() {
      const code = await server.stop();
      await rpc.close();
      return code;
    },
  };
}

export function readRss(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** The value of an unlabelled gauge in a Prometheus exposition. */
export function gauge(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line === undefined ? NaN : Number(line.slice(name.length + 1));
}

interface Reply {
  status: number;
  text: string;
}

const opened = new WeakSet<object>();
let connectionsOpened = 0;

function send(agent: Agent, url: string, method: string, path: string, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const target = new URL(path, url);
    const headers: Record<string, string | number> = {};
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = request({ host: target.hostname, port: target.port, path, method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.on('socket', (socket) => {
      if (opened.has(socket)) return;
      opened.add(socket);
      connectionsOpened++;
    });
    req.end(body);
  });
}

/** Request kinds, their share of the mix (out of 100) and the outcomes each may have. */
export const MIX = {
  liveness: { weight: 15, allowed: ['200'] },
  'relay-new': { weight: 30, allowed: ['200', '429 rate_limited'] },
  'relay-duplicate': { weight: 10, allowed: ['429 duplicate_tx', '429 rate_limited'] },
  'relay-invalid': { weight: 10, allowed: ['400 invalid_request', '429 rate_limited'] },
  'relay-no-messages': { weight: 5, allowed: ['200', '429 rate_limited'] },
  'relay-unmined': { weight: 2, allowed: ['408 timeout', '429 rate_limited'] },
  'merkle-write': { weight: 10, allowed: ['200'] },
  'merkle-read': { weight: 13, allowed: ['200'] },
  metrics: { weight: 5, allowed: ['200'] },
} as const;
export type Kind = keyof typeof MIX;
/** The kinds whose transaction is mined: their receipt exists, only a slow fetch makes them 408. */
const RECEIPT_KINDS: ReadonlySet<Kind> = new Set(['relay-new', 'relay-no-messages']);

export interface LoadOptions {
  url: string;
  durationMs: number;
  /**
   * Keep going past `durationMs` until this many requests were answered, but never past
   * `maxDurationMs`: on a busy machine a short run holds too few requests to say anything.
   */
  minRequests?: number;
  maxDurationMs?: number;
  connections: number;
  seed: number;
  /** Called about every `sampleEveryMs` while the load runs. */
  onSample?: (elapsedMs: number) => void;
  sampleEveryMs?: number;
  /**
   * Also accept `408 timeout` for requests whose receipt exists (`relay-new`, `relay-no-messages`)
   * when it is late for the machine's sake, given the server's receipt timeout: inside npm test the
   * fake JSON-RPC shares this process with the clients and the machine with the other test files,
   * and a receipt can come back after the server's deadline. A 408 is a documented answer for a
   * receipt not fetched in time (docs/api.md#errors), and it must lose nothing: the caller still
   * checks that no reservation is left. Such a 408 is accepted only when (1) the server says the
   * endpoint gave no answer in time (lib/rpc/receipt.ts: "not fetched", not "not found": the fake
   * always has these receipts), and (2) this client waited at least the receipt timeout for it (a
   * deadline cut short is the server's fault). Both hold at any load, where a share of late
   * receipts (one in ten) did not: one stall of the machine times out every relay in flight. The
   * soak keeps every such 408 unexpected.
   */
  slowReceiptsAllowed?: { receiptTimeoutMs: number };
}

export interface KindReport {
  count: number;
  outcomes: Record<string, number>;
  p50: number;
  p99: number;
  max: number;
}

export interface LoadReport {
  durationMs: number;
  requests: number;
  perSecond: number;
  kinds: Record<string, KindReport>;
  /** Answers outside their kind's allowed outcomes (status + reason + body head). */
  unexpected: string[];
  /** Transport errors (reset, refused, closed early). */
  errors: string[];
  /** Distinct (origin_chain, tx_hash) pairs answered 200: the dedup cache must hold exactly these. */
  committedPairs: number;
  /** Messages acknowledged by 200 relays. */
  messagesAcknowledged: number;
  /** Longest stall of this (load-generating) process's event loop: it inflates latencies too. */
  clientLoopDelayMaxMs: number;
  /** TCP connections the workers opened (= connections when keep-alive held throughout). */
  connectionsOpened: number;
}

/** The server's words for a receipt whose endpoint gave no answer before the deadline (lib/rpc/receipt.ts, diagnostics.ts). */
const NO_ANSWER_IN_TIME =
  /^transaction receipt not fetched within \d+ seconds: the RPC endpoints of chain \S+ failed \(last attempt: (no answer in time|timed out)\)$/;

/** Whether a 408 of a mined transaction was late for the machine's sake (LoadOptions.slowReceiptsAllowed). */
function lateReceipt(text: string, waitedMs: number, allowed: LoadOptions['slowReceiptsAllowed']): boolean {
  if (allowed === undefined) return false;
  let message: unknown;
  try {
    message = JSON.parse(text).message;
  } catch {
    return false;
  }
  // Timers fire to the millisecond: a few of slack, never a deadline visibly cut short.
  return typeof message === 'string' && NO_ANSWER_IN_TIME.test(message) && waitedMs >= allowed.receiptTimeoutMs - 5;
}

/** Park-Miller generator: the same mix on every run with the same seed. */
function seeded(seed: number): () => number {
  let state = seed % 0x7fffffff || 1;
  return () => {
    state = (state * 48_271) % 0x7fffffff;
    return state / 0x7fffffff;
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export async function runLoad(options: LoadOptions): Promise<LoadReport> {
  const random = seeded(options.seed);
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
  const kinds = Object.keys(MIX) as Kind[];
  const latencies = new Map<Kind, number[]>(kinds.map((k) => [k, []]));
  const outcomes = new Map<Kind, Record<string, number>>(kinds.map((k) => [k, {}]));
  const unexpected: string[] = [];
  const errors: string[] = [];
  const committed = new Set<string>();
  const duplicates: string[] = [];
  let messagesAcknowledged = 0;
  let nextTx = 1;
  let nextLeaf = 0;

  function pick(): Kind {
    let r = random() * 100;
    for (const k of kinds) {
      r -= MIX[k].weight;
      if (r < 0) return k;
    }
    return 'liveness';
  }

  function build(kind: Kind): { method: string; path: string; body?: string; hash?: string } {
    const relay = (hash: string) => ({
      method: 'POST',
      path: '/relay',
      body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: hash }),
      hash,
    });
    switch (kind) {
      case 'liveness':
        return { method: 'GET', path: '/relay' };
      case 'relay-new':
        return relay(hashOf(MINED, nextTx++));
      case 'relay-duplicate':
        return duplicates.length > 0
          ? relay(duplicates[Math.floor(random() * duplicates.length)])
          : relay(hashOf(MINED, nextTx++));
      case 'relay-invalid':
        return {
          method: 'POST',
          path: '/relay',
          body: random() < 0.5 ? '{"origin_chain":"nowhere","tx_hash":"0x00"}' : '{"origin_chain":',
        };
      case 'relay-no-messages':
        return relay(hashOf(EMPTY, nextTx++));
      case 'relay-unmined':
        return relay(hashOf(UNMINED, nextTx++));
      case 'merkle-write': {
        const records = Array.from({ length: 10 }, () => {
          const leaf = nextLeaf++;
          return {
            chain: 1,
            insertion_block_number: leaf,
            leaf_index: leaf,
            message_id: '0x' + leaf.toString(16).padStart(64, '0'),
          };
        });
        return {
          method: 'POST',
          path: '/merkle_tree_insertions',
          body: JSON.stringify({ merkle_tree_insertions: records }),
        };
      }
      case 'merkle-read': {
        const start = Math.floor(random() * Math.max(1, nextLeaf));
        return {
          method: 'GET',
          path: `/merkle_tree_insertions?domain_id=1&leaf_index_start=${start}&leaf_index_end=${start + 99}`,
        };
      }
      case 'metrics':
        return { method: 'GET', path: '/metrics' };
    }
  }

  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const openedBefore = connectionsOpened;
  const started = performance.now();
  const deadline = started + options.durationMs;
  const hardDeadline = started + Math.max(options.durationMs, options.maxDurationMs ?? 0);
  const minRequests = options.minRequests ?? 0;
  let requests = 0;
  const going = () => {
    const now = performance.now();
    return now < deadline || (requests < minRequests && now < hardDeadline);
  };

  async function worker(): Promise<void> {
    while (going()) {
      // duplicate_tx needs an earlier 200 for the same pair: fall back to a new one until then.
      let kind = pick();
      if (kind === 'relay-duplicate' && duplicates.length === 0) kind = 'relay-new';
      const req = build(kind);
      const t0 = performance.now();
      let reply: Reply;
      try {
        reply = await send(agent, options.url, req.method, req.path, req.body);
      } catch (error) {
        errors.push(`${kind}: ${(error as Error).message}`);
        continue;
      }
      requests++;
      const waitedMs = performance.now() - t0;
      latencies.get(kind)!.push(waitedMs);
      let reason = '';
      if (reply.status !== 200) {
        try {
          reason = String(JSON.parse(reply.text).reason);
        } catch {
          reason = '(no JSON reason)';
        }
      }
      const outcome = reason === '' ? String(reply.status) : `${reply.status} ${reason}`;
      const counts = outcomes.get(kind)!;
      counts[outcome] = (counts[outcome] ?? 0) + 1;
      const slow =
        outcome === '408 timeout' &&
        RECEIPT_KINDS.has(kind) &&
        lateReceipt(reply.text, waitedMs, options.slowReceiptsAllowed);
      if (!(MIX[kind].allowed as readonly string[]).includes(outcome) && !slow)
        unexpected.push(`${kind}: ${outcome} after ${Math.round(waitedMs)} ms ${reply.text.slice(0, 200)}`);
      if (reply.status === 200 && req.hash !== undefined) {
        committed.add(req.hash);
        if (kind !== 'relay-duplicate') duplicates.push(req.hash);
        messagesAcknowledged += JSON.parse(reply.text).messages.length;
      }
    }
  }

  let sampler: ReturnType<typeof setInterval> | undefined;
  if (options.onSample) {
    const onSample = options.onSample;
    sampler = setInterval(() => onSample(performance.now() - started), options.sampleEveryMs ?? 1_000);
  }
  try {
    await Promise.all(Array.from({ length: options.connections }, worker));
  } finally {
    if (sampler) clearInterval(sampler);
    agent.destroy();
    loop.disable();
  }
  const durationMs = performance.now() - started;
  const report: Record<string, KindReport> = {};
  for (const k of kinds) {
    const sorted = latencies.get(k)!.sort((a, b) => a - b);
    report[k] = {
      count: sorted.length,
      outcomes: outcomes.get(k)!,
      p50: Math.round(percentile(sorted, 50) * 10) / 10,
      p99: Math.round(percentile(sorted, 99) * 10) / 10,
      max: Math.round((sorted.at(-1) ?? 0) * 10) / 10,
    };
  }
  return {
    durationMs: Math.round(durationMs),
    requests,
    perSecond: Math.round(requests / (durationMs / 1000)),
    kinds: report,
    unexpected,
    errors,
    committedPairs: committed.size,
    messagesAcknowledged,
    clientLoopDelayMaxMs: Math.round(loop.max / 1e6),
    connectionsOpened: connectionsOpened - openedBefore,
  };
}
