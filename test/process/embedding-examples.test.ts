/**
 * docs/embedding.md#test-tooling: the examples marked `<!-- example: name -->` run as written. Each
 * block is saved as a .ts file in a temporary project whose node_modules/relayer-api is this
 * package (dist/, built by `npm test` before this runs) and run with `node --test` on the Node
 * that runs the tests; every test in it must pass.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const root = new URL('../..', import.meta.url).pathname;
const page = readFileSync(join(root, 'docs', 'embedding.md'), 'utf8');
const examples = [...page.matchAll(/<!-- example: ([a-z-]+) -->\n```ts\n([\s\S]*?)```/g)].map((m) => ({
  name: m[1],
  code: m[2],
}));

const dir = tempDir('relayer-examples-');
mkdirSync(join(dir, 'node_modules'));
symlinkSync(root, join(dir, 'node_modules', 'relayer-api'));
writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'embedder', type: 'module', private: true }));

test('docs/embedding.md#test-tooling: the page has its runnable examples', () => {
  assert.deepEqual(
    examples.map((e) => e.name),
    ['relay-from-fake-node', 'outbox-contract'],
  );
});

for (const { name, code } of examples) {
  test(`docs/embedding.md#test-tooling: the example ${name} runs as written and its tests pass`, () => {
    const file = join(dir, `${name}.ts`);
    writeFileSync(file, code);
    // A plain `node --test` as the reader runs it, not a child of this run's test runner.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const run = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], {
      cwd: dir,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const passed = Number(/^# pass (\d+)$/m.exec(run.stdout)?.[1]);
    assert.ok(passed >= 1, run.stdout);
    assert.match(run.stdout, /^# fail 0$/m);
  });
}
