/**
 * Every fast-check property is bounded (CONTRIBUTING.md#adding-a-check): each `fc.assert` call in
 * test/ passes the parameters of test/helpers/fixtures/properties.ts (`RUNS`, or `{ ...BOUNDED, … }`), which
 * carry the plugin that ends shrinking after SHRINK_MS. Without it a failing property may shrink
 * for many minutes, and a CI run hangs instead of naming the failure.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, normalize, relative } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { shrinkTimeLimit } from '../helpers/fixtures/properties.ts';

const root = normalize(join(import.meta.dirname, '..', '..'));

function tsFiles(dir = join(root, 'test')): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'vectors') out.push(...tsFiles(full));
    } else if (entry.name.endsWith('.ts')) out.push(full);
  }
  return out.sort();
}

/** The line of each `fc.assert(…)` call in `source` whose arguments name neither RUNS nor BOUNDED. */
export function unboundedAsserts(source: string): number[] {
  const lines: number[] = [];
  const call = /\bfc\.assert\(/g;
  for (let m = call.exec(source); m !== null; m = call.exec(source)) {
    let depth = 1;
    let i = m.index + m[0].length;
    for (; i < source.length && depth > 0; i++) {
      if (source[i] === '(') depth++;
      else if (source[i] === ')') depth--;
    }
    const args = source.slice(m.index + m[0].length, i - 1);
    if (!/\b(?:RUNS|BOUNDED)\b/.test(args)) lines.push(source.slice(0, m.index).split('\n').length);
  }
  return lines;
}

test('unboundedAsserts finds an fc.assert without the bounded parameters, and passes those with them', () => {
  const source = [
    'fc.assert(fc.property(fc.nat(), (n) => n >= 0), RUNS);',
    'fc.assert(',
    '  fc.property(fc.nat(), (n) => f(n)),',
    '  { ...BOUNDED, numRuns: 20 },',
    ');',
    'fc.assert(fc.property(fc.nat(), (n) => g(n)), { numRuns: 20 });',
    'await fc.assert(fc.asyncProperty(fc.nat(), async (n) => h(n)));',
  ].join('\n');
  assert.deepEqual(unboundedAsserts(source), [6, 7]);
});

test('shrinkTimeLimit ends shrinking once its time has passed since the first failure, keeping the counterexample', () => {
  // Each run takes a second of a fake clock; the property fails for any array summing above 1000,
  // so the counterexample shrinks for many runs when nothing bounds it.
  let t = 0;
  const property = fc.property(fc.array(fc.nat()), (xs) => {
    t += 1_000;
    return xs.reduce((a, b) => a + b, 0) <= 1_000;
  });
  const params = { seed: 42, numRuns: 1_000 };
  const free = fc.check(property, params);
  const bounded = fc.check(property, { ...params, plugins: [shrinkTimeLimit(5_000, () => t)] });
  assert.equal(free.failed, true);
  assert.equal(bounded.failed, true, 'an interrupted shrink still fails the property');
  assert.ok(free.numShrinks > 20, `unbounded: ${free.numShrinks} shrinks`);
  assert.ok(bounded.numShrinks <= 6, `bounded: ${bounded.numShrinks} shrinks in 5 s of one-second runs`);
  assert.ok(bounded.counterexample && bounded.counterexample[0].reduce((a, b) => a + b, 0) > 1_000);
  // A property that passes runs all its runs, however long they take.
  const passing = fc.check(
    fc.property(fc.nat(), () => {
      t += 1_000;
      return true;
    }),
    { ...params, numRuns: 50, plugins: [shrinkTimeLimit(5_000, () => t)] },
  );
  assert.deepEqual([passing.failed, passing.numRuns], [false, 50]);
});

test('every fast-check property in test/ is bounded: RUNS or { ...BOUNDED } from test/helpers/fixtures/properties.ts', () => {
  const found: string[] = [];
  for (const file of tsFiles()) {
    if (file.endsWith('properties-bounded.test.ts')) continue;
    for (const line of unboundedAsserts(readFileSync(file, 'utf8'))) found.push(`${relative(root, file)}:${line}`);
  }
  assert.deepEqual(
    found,
    [],
    `fc.assert without RUNS or BOUNDED (a failing property would shrink unbounded):\n${found.join('\n')}`,
  );
});
