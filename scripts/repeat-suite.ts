#!/usr/bin/env node
/**
 * npm run repeat (CONTRIBUTING.md#finding-a-flaky-test): the flake hunt. Clones this checkout's
 * HEAD (committed files only) into a temporary directory, installs once, then N times returns the
 * clone to a fresh clone's state (`git clean -fdx`, node_modules kept: no dist/, no .cache/, so no
 * .cache/test-durations.json and the fresh clone's scheduling runs), builds dist/ and runs the
 * node:test part of npm test (`node scripts/test.ts`; biome and the typecheck do not flake). Each
 * run's log is kept; its failed tests (file:line, title, error) are read from the spec reporter's
 * `failing tests:` list. After every run it prints that run (pass or fail, wall time, load average
 * at its start and end and the highest seen) and rewrites summary.txt: the runs, then each failed
 * test with the runs it failed in.
 *
 *   node scripts/repeat-suite.ts [N] [--link-modules] [--out DIR]
 *
 * N: runs (20). --link-modules: symlink this checkout's node_modules into the clone instead of
 * `npm ci` (a shared machine, no network). --out: where logs and the summary go (a new folder in
 * the temporary directory). Run it at `nice -n 19` on a shared machine.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

const root = join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
};
const option = (name: string) => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  if (value === undefined) throw new Error(`${name} needs a value`);
  args.splice(i, 2);
  return value;
};
const linkModules = flag('--link-modules');
const out = option('--out') ?? mkdtempSync(join(tmpdir(), 'relayer-repeat-'));
const runs = Number(args[0] ?? 20);
if (!Number.isInteger(runs) || runs < 1 || args.length > 1) {
  console.error('usage: node scripts/repeat-suite.ts [N] [--link-modules] [--out DIR]');
  process.exit(2);
}

/** One failed test as the spec reporter lists it under `failing tests:`. */
export interface Failure {
  at: string;
  title: string;
  error: string;
}

/**
 * The failed tests of a spec log: after `✖ failing tests:`, each is `test at FILE:LINE:COL`, then
 * `✖ TITLE (N ms)`, then its error. A suite or a parent test that failed only because a subtest
 * did (`N subtests failed`) is left out: its subtest is listed.
 */
export function failuresOf(log: string): Failure[] {
  const lines = log.split('\n');
  const start = lines.findIndex((l) => /^✖ failing tests:/.test(l));
  if (start < 0) return [];
  const failures: Failure[] = [];
  for (let i = start + 1; i < lines.length; i++) {
    const at = /^test at (\S+)$/.exec(lines[i] ?? '');
    if (!at?.[1]) continue;
    const title = (lines[i + 1] ?? '').replace(/^✖ /, '').replace(/ \([\d.]+ms\)$/, '');
    const body: string[] = [];
    for (let j = i + 2; j < lines.length && !/^test at /.test(lines[j] ?? ''); j++) {
      const line = (lines[j] ?? '').trim();
      if (line !== '' && !line.startsWith('at ')) body.push(line);
      if (body.length === 3) break;
    }
    const error = body.join(' | ');
    if (/^\d+ subtests? failed$/.test(body[0] ?? '')) continue;
    failures.push({ at: at[1].replace(/:\d+$/, ''), title, error });
  }
  return failures;
}

interface Run {
  run: number;
  ok: boolean;
  exit: number | null;
  seconds: number;
  buildSeconds: number;
  load: { start: number; end: number; peak: number };
  failures: Failure[];
  log: string;
}

const load1 = () => Math.round((loadavg()[0] ?? 0) * 10) / 10;
const git = (cwd: string, ...a: string[]) => execFileSync('git', a, { cwd, encoding: 'utf8' }).trim();

async function exitOf(child: ChildProcess): Promise<number | null> {
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  return signal === null ? code : 128;
}

/** Runs `command` in the clone with its output appended to `log`; its exit status. */
async function inClone(clone: string, log: string, command: string, ...a: string[]): Promise<number | null> {
  const fd = openSync(log, 'a');
  try {
    const env = { ...process.env, PATH: `${join(clone, 'node_modules', '.bin')}${delimiter}${process.env.PATH}` };
    return await exitOf(spawn(command, a, { cwd: clone, env, stdio: ['ignore', fd, fd] }));
  } finally {
    closeSync(fd);
  }
}

/** One run: pass or fail, wall time, load average, then each failed test. */
function runLines(r: Run): string[] {
  const lines = [
    `run ${r.run}: ${r.ok ? 'pass' : `FAIL (exit ${r.exit})`}, ${r.seconds} s (+${r.buildSeconds} s build), load ${r.load.start} -> ${r.load.end}, peak ${r.load.peak}; ${r.log}`,
  ];
  for (const f of r.failures) lines.push(`  ${f.at} ${f.title}: ${f.error}`);
  if (!r.ok && r.failures.length === 0) lines.push('  no failed test named: read the log');
  return lines;
}

function summary(head: string, done: Run[]): string {
  const lines = [`${done.length} runs of ${head}, ${done.filter((r) => r.ok).length} passed`];
  for (const r of done) lines.push(...runLines(r));
  const byTest = new Map<string, { count: number; runs: number[]; error: string }>();
  for (const r of done) {
    for (const f of r.failures) {
      const key = `${f.at} ${f.title}`;
      const seen = byTest.get(key) ?? { count: 0, runs: [], error: f.error };
      seen.count++;
      seen.runs.push(r.run);
      byTest.set(key, seen);
    }
  }
  lines.push('', 'failures per test:');
  if (byTest.size === 0) lines.push('  none');
  for (const [key, s] of [...byTest].sort((a, b) => b[1].count - a[1].count)) {
    lines.push(`  ${s.count}/${done.length} ${key} (runs ${s.runs.join(', ')})`, `      ${s.error}`);
  }
  return `${lines.join('\n')}\n`;
}

const head = git(root, 'rev-parse', 'HEAD');
const short = head.slice(0, 7);
if (git(root, 'status', '--porcelain', '--untracked-files=no') !== '') {
  console.log(`note: uncommitted changes are not in the runs; they run HEAD ${short}`);
}
const clone = mkdtempSync(join(tmpdir(), 'relayer-repeat-clone-'));
mkdirSync(out, { recursive: true });
console.log(`${runs} runs of ${short} in ${clone}; logs and summary.txt in ${out}`);
git(tmpdir(), 'clone', '--quiet', '--no-checkout', root, clone);
git(clone, 'checkout', '--quiet', '--detach', head);
if (linkModules) {
  symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'));
} else {
  const status = await inClone(clone, join(out, 'install.log'), 'npm', 'ci', '--no-audit', '--no-fund');
  if (status !== 0) throw new Error(`npm ci failed (exit ${status}): ${join(out, 'install.log')}`);
}

const done: Run[] = [];
for (let run = 1; run <= runs; run++) {
  // A fresh clone's state: only the committed files, and the installed node_modules.
  git(clone, 'reset', '--quiet', '--hard', head);
  git(clone, 'clean', '-fdxq', '-e', '/node_modules');
  const log = join(out, `run-${run}.log`);
  const load = { start: load1(), end: 0, peak: load1() };
  const sampler = setInterval(() => {
    load.peak = Math.max(load.peak, load1());
  }, 5000);
  const buildStart = performance.now();
  const built = await inClone(clone, log, 'npm', 'run', '-s', 'build');
  const start = performance.now();
  const exit = built === 0 ? await inClone(clone, log, 'node', 'scripts/test.ts') : built;
  clearInterval(sampler);
  load.end = load1();
  load.peak = Math.max(load.peak, load.end);
  const text = readFileSync(log, 'utf8');
  const r: Run = {
    run,
    ok: exit === 0,
    exit,
    seconds: Math.round((performance.now() - start) / 1000),
    buildSeconds: Math.round((start - buildStart) / 1000),
    load,
    failures: failuresOf(text),
    log,
  };
  done.push(r);
  writeFileSync(join(out, 'summary.txt'), summary(short, done));
  writeFileSync(join(out, 'runs.json'), `${JSON.stringify(done, null, 2)}\n`);
  console.log(runLines(r).join('\n'));
}
console.log(`\n${summary(short, done)}`);
rmSync(clone, { recursive: true, force: true });
