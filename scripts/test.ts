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
 * RELAYER_TEST_CONCURRENCY overrides the 3 files at a time; file patterns as arguments replace
 * test/**\/*.test.ts (`node scripts/test.ts test/outbox.test.ts`). Exit status 1 when a test failed.
 */
import { globSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
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
 * Files run alone, after the others: test/load.test.ts measures what the server sustains (at least
 * 500 requests in its 5 s) and, beside two other files at load average 6, got only 361 through.
 */
const ALONE = ['test/load.test.ts'];

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
const saved = savedDurations();
const before = saved ?? new Map(KNOWN_LONG.map((file, i) => [file, KNOWN_LONG.length - i]));
files.sort((a, b) => (before.get(b) ?? 0) - (before.get(a) ?? 0));

const concurrency = Number(process.env.RELAYER_TEST_CONCURRENCY ?? 3);
/** The saved figures, updated with this run's (a run of a few files keeps the others'). */
const durations = new Map(saved);

// One global setup for both phases (the shared PostgreSQL server, the compile cache).
await globalSetup();
try {
  await runFiles(
    files.filter((f) => !ALONE.includes(f)),
    concurrency,
  );
  await runFiles(
    files.filter((f) => ALONE.includes(f)),
    1,
  );
} finally {
  await globalTeardown();
  mkdirSync(join(root, '.cache'), { recursive: true });
  writeFileSync(cacheFile, `${JSON.stringify(Object.fromEntries(durations), null, 2)}\n`);
}

/** Runs `list` through node:test, `concurrent` files at a time; spec output; exit status 1 on a failure. */
async function runFiles(list: string[], concurrent: number): Promise<void> {
  if (list.length === 0) return;
  const stream = run({ files: list.map((f) => join(root, f)), concurrency: concurrent, cwd: root });
  stream.on('test:summary', (event) => {
    // One per file (its whole run), then one for the run (no file).
    if (event.file !== undefined) durations.set(relative(root, event.file), Math.round(event.duration_ms));
    else if (!event.success) process.exitCode = 1;
  });
  await pipeline(stream.compose(spec), process.stdout, { end: false });
}
