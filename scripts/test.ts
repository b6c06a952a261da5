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
// globalSetupPath: run()'s --test-global-setup (Node 24), not yet in @types/node's RunOptions.
const options = {
  files: files.map((f) => join(root, f)),
  concurrency,
  globalSetupPath: join(root, 'test', 'helpers', 'global-setup.ts'),
  cwd: root,
};
const stream = run(options);
stream.on('test:summary', (event) => {
  // One per file (its whole run), then one for the run (no file).
  if (event.file !== undefined) durations.set(relative(root, event.file), Math.round(event.duration_ms));
  else if (!event.success) process.exitCode = 1;
});
stream.on('end', () => {
  mkdirSync(join(root, '.cache'), { recursive: true });
  writeFileSync(cacheFile, `${JSON.stringify(Object.fromEntries(durations), null, 2)}\n`);
});
stream.compose(spec).pipe(process.stdout);
