/**
 * The test run of `npm test`: node:test on test/**\/*.test.ts with the global setup of
 * test/helpers/harness/global-setup.ts (one PostgreSQL server, Node's compile cache), three files at a
 * time, the longest first (by the previous run's durations in .cache/test-durations.json; a fresh
 * clone starts with the few files known to be long). Three, not one per core: the e2e and process
 * files wait on real timers and child processes much of the time, and a third file fills the gaps.
 *
 * How a file runs is decided by its folder (CONTRIBUTING.md, Tests):
 * - test/unit/: tests inside the test process. They share SHARDS node processes
 *   (scripts/test-shared.ts checks that each test leaves the process as it found it), which saves
 *   each file its own process start, lib/ import and JIT warm-up.
 * - test/process/: tests whose subject is a process (they start relayer-server, relayer-worker,
 *   PostgreSQL or other children, kill them, or own process-level state): one process each.
 * - test/e2e/: tests on anvil with the real contracts: one process each.
 * RELAYER_TEST_SHARDS=0 runs the unit files in processes of their own too (=2: in two processes,
 * balanced by duration); RELAYER_TEST_CONCURRENCY overrides the 3 files at a time; file patterns as arguments replace test/**\/*.test.ts
 * (`node scripts/test.ts test/unit/outbox*.test.ts`). Exit status 1 when a test failed.
 */
import { globSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { pipeline } from 'node:stream/promises';
import { globalSetup, globalTeardown } from '../test/helpers/harness/global-setup.ts';

const root = join(import.meta.dirname, '..');
const cacheFile = join(root, '.cache', 'test-durations.json');
/**
 * What a run without the cache (a fresh clone) schedules by: the seconds the long files took in a
 * quiet fresh-clone run (BENCHMARKS.md#test-suite), and DEFAULT_MS for every other file. Every
 * file needs an estimate: the shards are balanced by them, and with none the unit files without
 * a figure all went to one shard (one process ran 86 of the 87 unit files, one after the other).
 */
const KNOWN_LONG: Record<string, number> = {
  'test/process/worker-bin.test.ts': 43,
  'test/e2e/worker-gaps.e2e.test.ts': 40,
  'test/e2e/worker-faults.e2e.test.ts': 32,
  'test/process/outbox.test.ts': 30,
  'test/e2e/worker-cctp.e2e.test.ts': 24,
  'test/e2e/worker.e2e.test.ts': 24,
  'test/e2e/worker-signers.e2e.test.ts': 22,
  'test/process/crash.test.ts': 22,
  'test/process/replicas.test.ts': 22,
  'test/e2e/devnet.e2e.test.ts': 17,
  'test/process/install.test.ts': 14,
  'test/process/package-types.test.ts': 14,
  'test/process/readme.test.ts': 12,
  'test/unit/postgres/relay.test.ts': 10,
  'test/process/npm-signals.test.ts': 10,
  'test/unit/rpc/faults.test.ts': 8,
  'test/e2e/worker-hostile.e2e.test.ts': 8,
  'test/e2e/demo.e2e.test.ts': 8,
  'test/process/load.test.ts': 8,
  'test/process/bin.test.ts': 8,
  'test/unit/client/client.test.ts': 6,
};
/** The estimate of a file without a figure: about the mean of a unit file in a quiet run. */
const DEFAULT_MS = 1000;

/**
 * One process for the unit files: a second one loads lib/ and its dependencies and warms the JIT
 * again, about 8 s of CPU, and a run bound by CPU (BENCHMARKS.md#test-suite) pays for it. More
 * shards pay only once the run is shorter than the unit files' one process (about 100 s quiet).
 */
const SHARDS = Number(process.env.RELAYER_TEST_SHARDS ?? 1);

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
/** The files of test/unit/: they share SHARDS processes. */
const isShared = (file: string) => SHARDS > 0 && file.startsWith('test/unit/');
const saved = savedDurations();
const before = saved ?? new Map(Object.entries(KNOWN_LONG).map(([file, s]) => [file, s * 1000]));
const estimate = (file: string) => before.get(file) ?? DEFAULT_MS;

/** The shared files in SHARDS entry files, balanced by duration (the longest into the shortest shard). */
const shardDir = join(root, '.cache', 'test-shards');
rmSync(shardDir, { recursive: true, force: true });
const shards = Array.from({ length: SHARDS }, (_, i) => ({
  entry: join(shardDir, `shared-${i + 1}.mjs`),
  files: [] as string[],
  ms: 0,
}));
for (const file of files.filter(isShared).sort((a, b) => estimate(b) - estimate(a))) {
  const shard = shards.reduce((a, b) => (b.ms < a.ms ? b : a));
  shard.files.push(file);
  shard.ms += estimate(file);
}
const sharded = new Set(shards.flatMap((s) => s.files));
const entries = new Map<string, number>(); // run() file -> estimated ms
for (const file of files.filter((f) => !isShared(f))) entries.set(join(root, file), estimate(file));
mkdirSync(shardDir, { recursive: true });
for (const shard of shards.filter((s) => s.files.length > 0)) {
  const runner = pathToFileURL(join(root, 'scripts', 'test-shared.ts')).href;
  const list = shard.files.map((f) => join(root, f));
  writeFileSync(
    shard.entry,
    `import { runShared } from ${JSON.stringify(runner)};\nawait runShared(${JSON.stringify(list)}, ${JSON.stringify(root)});\n`,
  );
  entries.set(shard.entry, shard.ms);
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
