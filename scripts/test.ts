/**
 * The test run of `npm test`: node:test on test/**\/*.test.ts with the global setup of
 * test/helpers/global-setup.ts (one PostgreSQL server, Node's compile cache), three files at a
 * time, the longest first. `node --test` starts files in the order of their names, so a long file
 * whose name sorts late (test/replicas, test/rpc-faults) started when most others were done and the
 * run waited for it alone; started first, the short files fill the other slots meanwhile.
 *
 * The durations come from the previous run on this checkout (.cache/test-durations.json, written
 * at the end of each run, only the figures: a stale or missing file changes the order, never what
 * runs). A fresh clone starts with the few files known to be long, then by name.
 * Three, not one per core: the e2e files, the replicas and the README run wait on real timers and
 * child processes much of the time, and a third file fills those gaps (on the 2-core machine at
 * load average 5-7: 151 s against 180 s with two, 125 s against 173 s in another pair).
 * The many small unit files (SHARED below) run in SHARDS shared processes instead of one each; a
 * shard counts as one file of the three. RELAYER_TEST_SHARDS=0 runs every file in its own process.
 * test/load.test.ts runs beside the others like any file: it goes on until it has its 1 000 requests
 * (3 s at least, 10 s at most), so sharing the cores makes it longer, not flaky. Run alone after the
 * others, as it was, it kept one of the two cores idle for its 6-7 s (its receipts that never come
 * are waited for) and took a core's worth of CPU just to go faster: 76-78 s against 69-70 s.
 * RELAYER_TEST_CONCURRENCY overrides the 3 files at a time; file patterns as arguments replace
 * test/**\/*.test.ts (`node scripts/test.ts test/outbox.test.ts`). Exit status 1 when a test failed.
 */
import { existsSync, globSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { pipeline } from 'node:stream/promises';
import { globalSetup, globalTeardown } from '../test/helpers/global-setup.ts';

const root = join(import.meta.dirname, '..');
const cacheFile = join(root, '.cache', 'test-durations.json');
/** The long files of a run without the cache, longest first (figures of a quiet 2-core run). */
const KNOWN_LONG = [
  'test/e2e/worker.e2e.test.ts',
  'test/crash.test.ts',
  'test/replicas.test.ts',
  'test/outbox.test.ts',
  'test/e2e/worker-cctp.e2e.test.ts',
  'test/rpc-faults.test.ts',
  'test/load.test.ts',
  'test/readme.test.ts',
];

/**
 * Files that share a node process, SHARDS processes in all (scripts/test-shared.ts): files whose
 * tests leave process.env, globalThis and the process's listeners as they found them, stop the
 * child processes they start and register no module hooks; the shared process checks all of that
 * and fails the test that did otherwise. Sharing saves each file its own process start, lib/ import
 * and JIT warm-up: the 34 files shared first took 46 s of CPU in processes of their own, 28 s in
 * two shared ones. Files that spawn relayer-server or relayer-worker fit as well (bin, worker-bin,
 * security…), and the short e2e files, each with its own anvil (the four here took 3.8-4.8 s of CPU in
 * one process, 8 s in four: viem and node:test load once). Left out: the long files (they keep the
 * run's parallelism, worker.e2e, worker-cctp and demo among them), and the few that install process listeners for the
 * life of a PostgreSQL server or a preloaded module (embedded-postgres, postgres-store,
 * sqlite-worker-death).
 */
const SHARED = [
  'test/abi.test.ts',
  'test/async-store.test.ts',
  'test/bin.test.ts',
  'test/ccip-read.test.ts',
  'test/cctp.test.ts',
  'test/chains.test.ts',
  'test/citations.test.ts',
  'test/client.test.ts',
  'test/config.test.ts',
  'test/cors.test.ts',
  'test/database-url-secrets.test.ts',
  'test/dedup.test.ts',
  'test/e2e/cctp-bridge.test.ts',
  'test/e2e/chain.test.ts',
  'test/e2e/relay.e2e.test.ts',
  'test/e2e/transactions.e2e.test.ts',
  'test/early-refusal.test.ts',
  'test/embedding.test.ts',
  'test/errors.test.ts',
  'test/hostile-http.test.ts',
  'test/http.test.ts',
  'test/keccak.test.ts',
  'test/log-sink.test.ts',
  'test/logging.test.ts',
  'test/memory-outbox.test.ts',
  'test/message-status.test.ts',
  'test/message.test.ts',
  'test/metrics.test.ts',
  'test/names.test.ts',
  'test/openapi.test.ts',
  'test/package.test.ts',
  'test/pipeline.test.ts',
  'test/policy.test.ts',
  'test/postgres-relay.test.ts',
  'test/postgres-timeouts.test.ts',
  'test/rate-limit.test.ts',
  'test/read-flood.test.ts',
  'test/readme.test.ts',
  'test/readme-browser.test.ts',
  'test/receipt.test.ts',
  'test/routes.test.ts',
  'test/rpc-diagnostics.test.ts',
  'test/rpc-faults.test.ts',
  'test/rpc-transport.test.ts',
  'test/security.test.ts',
  'test/shared-process.test.ts',
  'test/sqlite-protocol.test.ts',
  'test/sqlite-store.test.ts',
  'test/sqlite-worker.test.ts',
  'test/store-contracts.test.ts',
  'test/store-errors.test.ts',
  'test/validate.test.ts',
  'test/worker-bin.test.ts',
  'test/worker-loop.test.ts',
  'test/worker-ops.test.ts',
];
const SHARDS = Number(process.env.RELAYER_TEST_SHARDS ?? 2);

/**
 * Shared files that go into the same shard: they reuse an answer a process computes once
 * (test/helpers/packed.ts: `npm pack --dry-run`, about 1.2 s of CPU each time it runs).
 */
const TOGETHER = [['test/package.test.ts', 'test/readme.test.ts']];

function savedDurations(): Map<string, number> | undefined {
  try {
    const saved = JSON.parse(readFileSync(cacheFile, 'utf8')) as Record<string, unknown>;
    return new Map(Object.entries(saved).filter((e): e is [string, number] => typeof e[1] === 'number'));
  } catch {
    return undefined;
  }
}

const patterns = process.argv.length > 2 ? process.argv.slice(2) : ['test/**/*.test.ts'];
const files = globSync(patterns, { cwd: root }).sort();
for (const file of SHARED) {
  if (!existsSync(join(root, file))) throw new Error(`scripts/test.ts: ${file} in SHARED does not exist`);
}
const grouped = new Set(TOGETHER.flat());
for (const file of grouped) {
  if (!SHARED.includes(file)) throw new Error(`scripts/test.ts: ${file} in TOGETHER is not in SHARED`);
}
const saved = savedDurations();
const before = saved ?? new Map(KNOWN_LONG.map((file, i) => [file, KNOWN_LONG.length - i]));
const estimate = (file: string) => before.get(file) ?? 0;

/** The shared files in SHARDS entry files, balanced by duration (the longest into the shortest shard). */
const shardDir = join(root, '.cache', 'test-shards');
rmSync(shardDir, { recursive: true, force: true });
const shards = Array.from({ length: SHARDS }, (_, i) => ({
  entry: join(shardDir, `shared-${i + 1}.mjs`),
  files: [] as string[],
  ms: 0,
}));
const toShard = files.filter((f) => SHARDS > 0 && SHARED.includes(f));
const units = [
  ...TOGETHER.map((group) => group.filter((f) => toShard.includes(f))),
  ...toShard.filter((f) => !grouped.has(f)).map((f) => [f]),
].filter((unit) => unit.length > 0);
const unitMs = (unit: string[]) => unit.reduce((sum, f) => sum + estimate(f), 0);
for (const unit of units.sort((a, b) => unitMs(b) - unitMs(a))) {
  const shard = shards.reduce((a, b) => (b.ms < a.ms ? b : a));
  shard.files.push(...unit);
  shard.ms += unitMs(unit);
}
const sharded = new Set(shards.flatMap((s) => s.files));
const entries = new Map<string, number>(); // run() file -> estimated ms
for (const file of files.filter((f) => SHARDS === 0 || !SHARED.includes(f)))
  entries.set(join(root, file), estimate(file));
mkdirSync(shardDir, { recursive: true });
for (const shard of shards.filter((s) => s.files.length > 0)) {
  const runner = pathToFileURL(join(root, 'scripts', 'test-shared.ts')).href;
  const list = shard.files.map((f) => join(root, f));
  writeFileSync(
    shard.entry,
    `import { runShared } from ${JSON.stringify(runner)};\nawait runShared(${JSON.stringify(list)}, ${JSON.stringify(root)});\n`,
  );
  // Without saved figures the shards go first: together they hold half the run's tests.
  entries.set(shard.entry, saved ? shard.ms : Number.MAX_SAFE_INTEGER);
}
const ordered = [...entries.keys()].sort((a, b) => (entries.get(b) ?? 0) - (entries.get(a) ?? 0));

const concurrency = Number(process.env.RELAYER_TEST_CONCURRENCY ?? 3);
/** The saved figures, updated with this run's (a run of a few files keeps the others'). */
const durations = new Map(saved);
/** A shared file's duration: the sum of its top-level tests' (its process start is shared). */
const sharedMs = new Map<string, number>();

// One global setup for the run (the shared PostgreSQL server, the compile cache).
await globalSetup();
try {
  await runFiles(ordered, concurrency);
} finally {
  await globalTeardown();
  for (const [file, ms] of sharedMs) durations.set(file, Math.round(ms));
  mkdirSync(join(root, '.cache'), { recursive: true });
  writeFileSync(cacheFile, `${JSON.stringify(Object.fromEntries(durations), null, 2)}\n`);
}

/** Runs `list` (absolute paths) through node:test, `concurrent` files at a time; spec output; exit status 1 on a failure. */
async function runFiles(list: string[], concurrent: number): Promise<void> {
  if (list.length === 0) return;
  const stream = run({ files: list, concurrency: concurrent, cwd: root });
  stream.on('test:summary', (event) => {
    // One per file (its whole run), then one for the run (no file).
    if (event.file === undefined) {
      if (!event.success) process.exitCode = 1;
    } else if (!event.file.startsWith(shardDir)) {
      durations.set(relative(root, event.file), Math.round(event.duration_ms));
    }
  });
  const topLevel = (event: { file?: string; nesting: number; details: { duration_ms?: number } }) => {
    const file = event.file === undefined ? undefined : relative(root, event.file);
    if (event.nesting === 0 && file !== undefined && sharded.has(file)) {
      sharedMs.set(file, (sharedMs.get(file) ?? 0) + (event.details.duration_ms ?? 0));
    }
  };
  stream.on('test:pass', topLevel);
  stream.on('test:fail', topLevel);
  await pipeline(stream.compose(spec), process.stdout, { end: false });
}
