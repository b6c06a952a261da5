/**
 * A tiny benchmark helper: time several functions in interleaved rounds and report the median
 * operations per second of each, so that a slow phase of the machine (turbo, GC, cache pressure
 * from a neighbour) hits every contender alike instead of whichever happened to run then.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';

/** One row of the summary table of `npm run bench` (bench/run.ts). */
export interface BenchRow {
  what: string;
  ours: string;
  peer: string;
  /** ours / peer; undefined where there is no peer. */
  ratio?: number;
  /** The target, or 'info' for a row that only explains another. */
  target: string;
  /** Whether the target is met; absent for 'info' rows. */
  met?: boolean;
  /**
   * A regression guard: `npm run bench` ends with exit code 1, and says so, when this row's target
   * is not met (the bench re-measures before it reports a miss, see bench/merkle.ts).
   */
  guard?: boolean;
}

/** The commit the working tree is at (with `+changes` when it differs from it), for the figures' provenance. */
export function commitOfTree(): string {
  const git = (args: string[]) =>
    execFileSync('git', args, { cwd: new URL('..', import.meta.url), encoding: 'utf8' }).trim();
  try {
    const commit = git(['rev-parse', '--short', 'HEAD']);
    return git(['status', '--porcelain', '--untracked-files=no']) === '' ? commit : `${commit}+changes`;
  } catch {
    return 'unknown commit';
  }
}

/** One line saying what produced the figures below it: commit, date, machine, load. */
export function provenance(command: string): string {
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  return `${command} at ${commitOfTree()}, ${new Date().toISOString()}, node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown cpu'}, load average ${load}`;
}

export interface Contender {
  name: string;
  fn: () => unknown;
}

export interface CompareOptions {
  /** Timed rounds per contender; the median is reported. Default 7. */
  rounds?: number;
  /** Target duration of one round of one contender, in ms; sets the iteration count. Default 100. */
  roundMs?: number;
}

// Results are folded into this value so the engine cannot drop a call whose result is unused.
let sink = 0;

function consume(value: unknown): void {
  if (value instanceof Uint8Array) sink ^= value[0] ?? 0;
  else if (typeof value === 'number') sink ^= value;
  else if (value !== undefined) sink ^= 1;
}

/**
 * Milliseconds of CPU time used by this thread (user + system). The machines we bench on are shared,
 * so wall-clock time would also count the slices the scheduler gives to other processes; on an idle
 * machine the two agree. Falls back to wall-clock time where the runtime lacks threadCpuUsage.
 */
const now: () => number =
  typeof process.threadCpuUsage === 'function'
    ? () => {
        const { user, system } = process.threadCpuUsage();
        return (user + system) / 1000;
      }
    : () => performance.now();

/** Runs `fn` `iterations` times and returns the elapsed time in ms. */
function time(fn: () => unknown, iterations: number): number {
  const start = now();
  for (let i = 0; i < iterations; i++) consume(fn());
  return now() - start;
}

/** The number of iterations that takes about `ms` milliseconds (after warming the function up). */
function calibrate(fn: () => unknown, ms: number): number {
  let n = 1;
  for (;;) {
    const elapsed = time(fn, n);
    if (elapsed >= ms / 4) return Math.max(1, Math.round((n * ms) / elapsed));
    n *= 2;
  }
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Times every contender in the same rounds (the order rotates each round) and returns the median
 * ops/s of each, by name.
 */
export function compare(contenders: readonly Contender[], options: CompareOptions = {}): Map<string, number> {
  const rounds = options.rounds ?? 7;
  const roundMs = options.roundMs ?? 100;
  const iterations = contenders.map((c) => calibrate(c.fn, roundMs));
  const samples = contenders.map((): number[] => []);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (round + k) % contenders.length;
      const ms = time(contenders[i].fn, iterations[i]);
      samples[i].push((iterations[i] * 1000) / ms);
    }
  }
  return new Map(contenders.map((c, i) => [c.name, median(samples[i])]));
}

/** Runs one function on its own and returns its median ops/s. */
export function measure(fn: () => unknown, options: CompareOptions = {}): number {
  return compare([{ name: 'fn', fn }], options).get('fn') ?? 0;
}

/** Formats an ops/s figure with thousands separators and no decimals. */
export function formatOps(opsPerSecond: number): string {
  return Math.round(opsPerSecond).toLocaleString('en-US');
}

/** Prints rows under a header, each column padded to its widest cell (numbers right-aligned). */
export function printTable(header: readonly string[], rows: readonly (readonly (string | number)[])[]): void {
  const cells = [header.map(String), ...rows.map((row) => row.map(String))];
  const widths = header.map((_, col) => Math.max(...cells.map((row) => (row[col] ?? '').length)));
  const line = (row: readonly string[], align: (col: number) => boolean): string =>
    row.map((cell, col) => (align(col) ? cell.padStart(widths[col]) : cell.padEnd(widths[col]))).join('  ');
  console.log(line(cells[0], () => false));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells.slice(1)) console.log(line(row, (col) => col > 0));
}

/** Keeps the sink observable so no engine can prove the benchmarked results unused. */
export function sinkValue(): number {
  return sink;
}
