/**
 * `npm run bench`: every benchmark of BENCHMARKS.md in one run, each against its peer in the same
 * run (the machine is shared, so absolute figures drift and only ratios carry over). Prints each
 * bench's detail as it goes, then one table of ratios against the targets.
 */
import { spawnSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { printTable } from './lib.ts';

/** One row of the summary table. */
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
}

/**
 * bench/keccak.ts prints its own table and exports nothing, so it runs as a child and its rows are
 * read back from the table by column name.
 */
function keccakRows(): BenchRow[] {
  const script = fileURLToPath(new URL('./keccak.ts', import.meta.url));
  const child = spawnSync(process.execPath, [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  console.log('\n## keccak256, ops/s (bench/keccak.ts)');
  process.stdout.write(child.stdout);
  if (child.status !== 0) throw new Error(`bench/keccak.ts exited with ${child.status}`);
  const lines = child.stdout.split('\n').filter((line) => line.trim() !== '' && !/^[-\s]+$/.test(line));
  const headerAt = lines.findIndex((line) => /ours\/noble/.test(line));
  const header = lines[headerAt].trim().split(/\s{2,}/);
  const col = (name: RegExp) => header.findIndex((h) => name.test(h));
  const [size, ours, noble, ratio, native] = [/^size/, /^ours/, /^noble/, /ours\/noble/, /native/].map(col);
  return lines.slice(headerAt + 1).map((line) => {
    const cells = line.trim().split(/\s{2,}/);
    const r = Number.parseFloat(cells[ratio]);
    return {
      what: `keccak256 ${cells[size]}`,
      ours: `${cells[ours]} ops/s`,
      peer: `${cells[noble]} ops/s (noble; native ${cells[native]})`,
      ratio: r,
      target: '>= 1.0x',
      met: r >= 1,
    };
  });
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(`relayer-api benchmarks, ${new Date().toISOString()}`);
  console.log(`node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB`);
  const rows: BenchRow[] = [];
  rows.push(...keccakRows());
  rows.push(...(await (await import('./decode.ts')).run()));
  rows.push(...(await (await import('./http.ts')).run()));
  rows.push(...(await (await import('./merkle.ts')).run()));
  rows.push(...(await (await import('./memory.ts')).run()));

  console.log(`\n## summary (ratio = ours / peer, median of several runs; total ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  printTable(
    ['what', 'ours', 'peer', 'ratio', 'target', 'met'],
    rows.map((r) => [r.what, r.ours, r.peer, r.ratio === undefined ? '-' : `${r.ratio.toFixed(2)}x`, r.target, r.met === undefined ? '-' : r.met ? 'yes' : 'NO']),
  );
}

await main();
