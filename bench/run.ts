/**
 * `npm run bench`: every benchmark of BENCHMARKS.md in one run, each against its peer in the same
 * run (the machine is shared, so absolute figures drift and only ratios carry over). Prints each
 * bench's detail as it goes, then one table of ratios against the targets.
 */
import { cpus, loadavg, totalmem } from 'node:os';
import { printTable, provenance, type BenchRow } from './lib.ts';

async function main(): Promise<void> {
  const started = performance.now();
  console.log(`relayer-api benchmarks: ${provenance('npm run bench')}, ${Math.round(totalmem() / 2 ** 30)} GiB`);
  const rows: BenchRow[] = [];
  // One bench at a time, each imported only when its turn comes, so none warms up another's code.
  const benches = [
    () => import('./keccak.ts'),
    () => import('./decode.ts'),
    () => import('./http.ts'),
    () => import('./transport.ts'),
    () => import('./store.ts'),
    () => import('./merkle.ts'),
    () => import('./memory.ts'),
  ];
  for (const bench of benches) rows.push(...(await (await bench()).run()));

  console.log(
    `\n## summary (ratio = ours / peer, median of several runs; total ${((performance.now() - started) / 1000).toFixed(0)} s)`,
  );
  printTable(
    ['what', 'ours', 'peer', 'ratio', 'target', 'met'],
    rows.map((r) => [
      r.what,
      r.ours,
      r.peer,
      r.ratio === undefined ? '-' : `${r.ratio.toFixed(2)}x`,
      r.target,
      r.met === undefined ? '-' : r.met ? 'yes' : 'NO',
    ]),
  );
  console.log(`load average at the end: ${loadavg()[0].toFixed(1)}`);
  const regressions = rows.filter((r) => r.guard && !r.met);
  if (regressions.length > 0) {
    console.error(`\n${'!'.repeat(72)}`);
    for (const r of regressions) {
      console.error(
        `REGRESSION: ${r.what}: ${r.ratio?.toFixed(2)}x, target ${r.target} (ours ${r.ours}; peer ${r.peer})`,
      );
    }
    console.error(
      `${'!'.repeat(72)}\nnpm run bench fails: a guarded ratio is below its target (BENCHMARKS.md, "Regression guards"), ` +
        `load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores.`,
    );
    process.exitCode = 1;
  }
}

await main();
