#!/usr/bin/env node
/**
 * npm run mutate (CONTRIBUTING.md#mutation-testing): StrykerJS on one module at a time, each run
 * with only the unit files that test that module, so a run's dry run and its mutants cost that
 * module's tests and nothing else. stryker.config.json holds the settings every run shares; this
 * file holds which test files go with which module.
 *
 *   node scripts/mutate.ts MODULE...        # e.g. lib/worker/tx/nonces.ts, or a group: lib/worker/tx/
 *   node scripts/mutate.ts --list           # the modules and their test files
 *   node scripts/mutate.ts MODULE -- --concurrency 2   # after --: passed to `stryker run`
 *
 * A MODULE may carry a line range as Stryker takes it (lib/net/ip-address.ts:1-162). Without a
 * MODULE it runs the modules changed since the merge base with main (committed or not), or
 * lists them when none changed. Each run writes .cache/stryker/<module>.json and prints its
 * score, its duration and the load average at its start and end.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

const LOOP = [
  'test/unit/worker/loop/worker.test.ts',
  'test/unit/worker/loop/worker-alone.test.ts',
  'test/unit/worker/gas/gate.test.ts',
];

/** Each module with the unit files that test it (a file the module's mutants never reach costs only its dry run). */
export const MODULES: Record<string, string[]> = {
  'lib/gas/fee-ceiling.ts': ['test/unit/gas/fee-ceiling.test.ts'],
  'lib/gas/policy.ts': ['test/unit/gas/policy.test.ts'],
  'lib/gas/payment.ts': ['test/unit/gas/payment.test.ts'],
  'lib/net/ip-address.ts': ['test/unit/net/ip-address.test.ts'],
  // hostile.test.ts holds the port rule's and this host's own addresses' tests (through the lookup).
  'lib/worker/ccip/target.ts': ['test/unit/worker/ccip/target.test.ts', 'test/unit/worker/ccip/hostile.test.ts'],
  'lib/worker/tx/nonces.ts': ['test/unit/worker/tx/nonces.test.ts', 'test/unit/worker/tx/gaps.test.ts'],
  'lib/worker/tx/gaps.ts': ['test/unit/worker/tx/gaps.test.ts'],
  'lib/worker/tx/fees.ts': ['test/unit/worker/tx/fees.test.ts'],
  'lib/worker/tx/heads.ts': ['test/unit/worker/tx/heads.test.ts', 'test/unit/worker/tx/fees.test.ts'],
  'lib/worker/tx/slots.ts': ['test/unit/worker/tx/slots.test.ts'],
  'lib/worker/tx/node-errors.ts': ['test/unit/worker/errors.test.ts', 'test/unit/worker/tx/node-errors.test.ts'],
  'lib/worker/tx/broadcast.ts': ['test/unit/worker/tx/node-errors.test.ts', 'test/unit/worker/tx/receipts.test.ts'],
  'lib/worker/tx/receipts.ts': ['test/unit/worker/tx/receipts.test.ts'],
  'lib/worker/tx/journal.ts': ['test/unit/worker/tx/journal.test.ts', 'test/unit/worker/tx/receipts.test.ts'],
  'lib/worker/tx/follow.ts': ['test/unit/worker/tx/follow.test.ts', 'test/unit/worker/tx/receipts.test.ts'],
  // The unit files that reach sender.ts (the folder's other unit files never call it: their dry run was spent for nothing).
  'lib/worker/tx/sender.ts': [
    'test/unit/worker/tx/sender.test.ts',
    'test/unit/worker/tx/follow.test.ts',
    'test/unit/worker/tx/receipts.test.ts',
    'test/unit/worker/tx/fees.test.ts',
  ],
  'lib/worker/tx/signer.ts': ['test/unit/worker/tx/signer.test.ts'],
  'lib/worker/tx/settle.ts': ['test/unit/worker/tx/settle.test.ts', 'test/unit/worker/tx/inspect.test.ts'],
  'lib/worker/tx/inspect.ts': ['test/unit/worker/tx/inspect.test.ts'],
  'lib/worker/tx/per-client.ts': ['test/unit/worker/tx/per-client.test.ts', 'test/unit/worker/tx/heads.test.ts'],
  'lib/worker/loop/attempt.ts': ['test/unit/worker/loop/attempt.test.ts', 'test/unit/worker/loop/worker.test.ts'],
  'lib/worker/loop/lease.ts': ['test/unit/worker/loop/lease.test.ts', ...LOOP],
  'lib/worker/loop/record.ts': ['test/unit/worker/loop/record.test.ts', ...LOOP],
  'lib/worker/loop/worker.ts': LOOP,
  'lib/outbox/checks.ts': ['test/unit/outbox/checks.test.ts'],
};

/** A module, a module with a line range, or a folder naming every module in it. */
function expand(name: string): string[] {
  const [file] = name.split(':');
  if (MODULES[file]) return [name];
  const prefix = name.endsWith('/') ? name : `${name}/`;
  const inside = Object.keys(MODULES).filter((m) => m.startsWith(prefix));
  if (inside.length === 0) throw new Error(`not a module of scripts/mutate.ts: ${name} (--list shows them)`);
  return inside;
}

function changedModules(): string[] {
  const git = (...args: string[]) => spawnSync('git', args, { encoding: 'utf8' }).stdout.trim();
  const base = git('merge-base', 'HEAD', 'main');
  const changed = new Set(git('diff', '--name-only', base || 'HEAD').split('\n'));
  return Object.entries(MODULES)
    .filter(([module, tests]) => changed.has(module) || tests.some((t) => changed.has(t)))
    .map(([module]) => module);
}

function score(report: string): string {
  const { files } = JSON.parse(readFileSync(report, 'utf8')) as {
    files: Record<string, { mutants: Array<{ status: string }> }>;
  };
  const count: Record<string, number> = {};
  for (const f of Object.values(files)) for (const m of f.mutants) count[m.status] = (count[m.status] ?? 0) + 1;
  const all = Object.values(count).reduce((a, b) => a + b, 0);
  const detected = (count.Killed ?? 0) + (count.Timeout ?? 0);
  const pct = all === 0 ? 'n/a' : `${((100 * detected) / all).toFixed(1)} %`;
  return `${pct} (${detected}/${all}; ${JSON.stringify(count)})`;
}

const argv = process.argv.slice(2);
const dashes = argv.indexOf('--');
const names = dashes === -1 ? argv : argv.slice(0, dashes);
const passed = dashes === -1 ? [] : argv.slice(dashes + 1);

if (names.includes('--list')) {
  for (const [module, tests] of Object.entries(MODULES)) console.log(`${module}\n  ${tests.join('\n  ')}`);
  process.exit(0);
}
const modules = names.length > 0 ? names.flatMap(expand) : changedModules();
if (modules.length === 0) {
  console.log('No module of scripts/mutate.ts changed since main; name one (--list shows them):');
  console.log('  npm run mutate -- lib/worker/tx/nonces.ts');
  process.exit(0);
}

const base = JSON.parse(readFileSync('stryker.config.json', 'utf8'));
mkdirSync('.cache/stryker', { recursive: true });
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
let failed = false;
for (const module of modules) {
  const slug = module.replace(/[/:.]+/g, '-');
  const report = join('.cache/stryker', `${slug}.json`);
  const config = join('.cache/stryker', `${slug}.config.json`);
  const tests = MODULES[module.split(':')[0]];
  const missing = tests.filter((t) => !existsSync(t));
  if (missing.length > 0)
    throw new Error(`${module}: test files not found (moved? update scripts/mutate.ts): ${missing.join(', ')}`);
  writeFileSync(
    config,
    JSON.stringify({
      ...base,
      $schema: undefined,
      mutate: [module],
      tap: { ...base.tap, testFiles: tests },
      tempDirName: `.cache/stryker-tmp-${slug}`,
      jsonReporter: { fileName: report },
    }),
  );
  const started = Date.now();
  const loadBefore = load();
  console.log(`mutate: ${module} with ${tests.length} test file(s), load average ${loadBefore}`);
  const run = spawnSync(join('node_modules', '.bin', 'stryker'), ['run', config, ...passed], { stdio: 'inherit' });
  const seconds = Math.round((Date.now() - started) / 1000);
  const duration = `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  if (run.status !== 0) {
    failed = true;
    console.log(`mutate: ${module}: stryker exited ${run.status ?? run.signal} after ${duration}`);
    continue;
  }
  console.log(`mutate: ${module}: ${score(report)} in ${duration}; load average ${loadBefore} -> ${load()}`);
}
process.exit(failed ? 1 : 0);
