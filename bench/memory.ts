/**
 * Memory: (1) the heap held by 10 000 live dedup entries, as POST /relay leaves them (measured in a
 * child process run with --expose-gc, heap after a full GC before and after); (2) the server's RSS
 * sampled every second over 30 s of POST /relay load, wired as relayer-server wires it (SQLite
 * outbox, request log), with a 5 s dedup window so entries keep expiring and being replaced.
 * Run alone: node bench/memory.ts
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRelayPipeline } from '../lib/relay/pipeline.ts';
import { createMemoryOutbox } from '../lib/outbox/index.ts';
import { testConfig } from '../test/helpers/fixtures/config.ts';
import { freshTxHash, load, POST_RELAY, startServer, type ServerHandle } from './load.ts';
import { median, printTable, type BenchRow } from './lib.ts';

const ENTRIES = 10_000;
const MiB = 1024 * 1024;

interface HeapResult {
  bytes: number;
  entries: number;
}

/** Runs in the --expose-gc child: fills a pipeline's dedup cache through relayText and weighs it. */
async function weighDedupEntries(): Promise<HeapResult> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const make = () =>
    createRelayPipeline({
      config: testConfig({ relayApi: { rateLimit: { burst: 1e9, perMinute: 1e9 } } }),
      queue: createMemoryOutbox(),
      // A mined transaction without messages: 200 {"messages":[]}, and the reservation is committed.
      fetchReceipt: async () => ({ success: true, logs: [] }),
    });
  const fill = async (pipeline: ReturnType<typeof make>, count: number) => {
    for (let i = 0; i < count; i++)
      await pipeline.relayText(JSON.stringify({ origin_chain: 'ethereum', tx_hash: freshTxHash() }));
  };
  await fill(make(), ENTRIES); // warm-up: compiled code and lazily built internals are not the entries' cost
  const pipeline = make();
  const settle = () => {
    for (let i = 0; i < 4; i++) gc();
    return process.memoryUsage().heapUsed;
  };
  const before = settle();
  await fill(pipeline, ENTRIES);
  const after = settle();
  return { bytes: after - before, entries: await pipeline.dedup.size() };
}

function weighInChild(): HeapResult {
  const script = fileURLToPath(import.meta.url);
  const child = spawnSync(process.execPath, ['--expose-gc', script, '--weigh-dedup'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.status !== 0) throw new Error(`dedup weighing child exited with ${child.status}`);
  return JSON.parse(child.stdout) as HeapResult;
}

function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

interface RssResult {
  /** RSS every second. */
  samples: number[];
  /** Live heap (heapUsed after a full GC) at the end of every 5 s of load. */
  liveHeap: number[];
  rps: number;
  statuses: Record<string, number>;
}

const CHUNK_SECONDS = 5;
const WARMUP_SECONDS = 10;

/**
 * Load in 5 s chunks; after each the server is asked for its heap after a full GC (the live
 * heap: what a leak would grow), while RSS is sampled every second throughout.
 */
async function rssUnderLoad(seconds: number): Promise<RssResult> {
  const server: ServerHandle = await startServer('relay', {
    outbox: 'sqlite',
    distinctMessages: true,
    relayApi: { rateLimit: { burst: 1e9, perMinute: 1e9 }, dedupWindowSeconds: 5, dedupCapacity: 100_000 },
  });
  try {
    // Warm-up, not measured: V8 sizes its heap to the allocation rate and SQLite fills its page
    // cache during the first seconds of load, so RSS climbs before it levels off.
    const warmup = await load(server, POST_RELAY, WARMUP_SECONDS);
    if (warmup.errors > 0) throw new Error('memory: the warm-up load had errors');
    const samples: number[] = [];
    const timer = setInterval(() => samples.push(rssOf(server.pid)), 1000);
    const liveHeap: number[] = [];
    const rates: number[] = [];
    const statuses: Record<string, number> = {};
    for (let t = 0; t < seconds; t += CHUNK_SECONDS) {
      const result = await load(server, POST_RELAY, CHUNK_SECONDS);
      rates.push(result.rps);
      for (const [code, n] of Object.entries(result.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
      liveHeap.push((await server.memory(true)).heapUsed);
    }
    clearInterval(timer);
    return { samples, liveHeap, rps: median(rates), statuses };
  } finally {
    await server.stop();
  }
}

const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

export async function run(options: { seconds?: number } = {}): Promise<BenchRow[]> {
  const seconds = options.seconds ?? 30;
  const heap = weighInChild();
  const rss = await rssUnderLoad(seconds);
  const s = rss.samples;
  const at = (second: number) => s[Math.min(s.length, second) - 1];
  // Measured after the warm-up: flat means the last 10 s add nothing and the live heap does not grow.
  const rssGrowth = (at(seconds) - at(seconds - 10)) / at(seconds - 10);
  const live = rss.liveHeap;
  const liveGrowth = live[live.length - 1] - live[0];

  console.log(`\n## memory`);
  printTable(
    ['measure', 'value'],
    [
      [
        `heap held by ${heap.entries} live dedup entries (after full GC)`,
        `${mib(heap.bytes)} (${Math.round(heap.bytes / heap.entries)} B/entry)`,
      ],
      [
        `POST /relay load, ${seconds} s after ${WARMUP_SECONDS} s of warm-up (SQLite outbox, request log, 5 s dedup window)`,
        `${Math.round(rss.rps)} req/s, ${Object.entries(rss.statuses)
          .map(([c, n]) => `${c}:${n}`)
          .join(' ')}`,
      ],
      [
        'RSS at 5, 10, 15 ... s (MiB)',
        s
          .filter((_, i) => i % 5 === 4)
          .map((b) => (b / MiB).toFixed(0))
          .join(' '),
      ],
      ['live heap after full GC at 5, 10, 15 ... s (MiB)', live.map((b) => (b / MiB).toFixed(1)).join(' ')],
      [`RSS over the last 10 s`, `${mib(at(seconds - 10))} -> ${mib(at(seconds))} (${(rssGrowth * 100).toFixed(1)}%)`],
      ['RSS min / max', `${mib(Math.min(...s))} / ${mib(Math.max(...s))}`],
    ],
  );
  return [
    {
      what: `memory: ${ENTRIES} live dedup entries`,
      ours: `${mib(heap.bytes)} heap (${Math.round(heap.bytes / heap.entries)} B/entry)`,
      peer: '-',
      target: '<= 5 MiB',
      met: heap.entries === ENTRIES && heap.bytes <= 5 * MiB,
    },
    {
      what: `memory: RSS under ${seconds} s of POST /relay`,
      ours: `RSS ${mib(at(seconds))}, last 10 s ${rssGrowth >= 0 ? '+' : ''}${(rssGrowth * 100).toFixed(1)}%; live heap ${mib(live[0])} -> ${mib(live[live.length - 1])}`,
      peer: '-',
      target: 'flat: last 10 s <= +5%, live heap +<= 2 MiB',
      // Every answer must be a 200: a load that is refused proves nothing about memory.
      met: rssGrowth <= 0.05 && liveGrowth <= 2 * MiB && Object.keys(rss.statuses).every((code) => code === '200'),
    },
  ];
}

if (process.argv.includes('--weigh-dedup')) {
  process.stdout.write(JSON.stringify(await weighDedupEntries()));
} else if (import.meta.main) {
  await run();
}
