/**
 * The shared processes of `npm test` (scripts/test-shared.ts) fail a test that changes what the
 * files sharing the process share, leaves a child process running or registers module hooks, and
 * name what it changed; the tests that keep to the rules pass, including one that mocks the timers
 * through its own context (restored when it ends) and one that stops its child in its after hook.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const root = join(import.meta.dirname, '..', '..');

test('a shared process fails each test that breaks a rule, with what it broke, and passes the others', (t) => {
  const dir = tempDir('relayer-shared-', t);
  const entry = join(dir, 'shared.mjs');
  const runner = pathToFileURL(join(root, 'scripts', 'test-shared.ts')).href;
  const fixture = join(root, 'test', 'helpers', 'harness', 'shared-process-cases.ts');
  writeFileSync(
    entry,
    `import { runShared } from ${JSON.stringify(runner)};\nawait runShared([${JSON.stringify(fixture)}], ${JSON.stringify(root)});\n`,
  );
  const child = spawnSync(process.execPath, ['--test', '--test-reporter=tap', entry], {
    encoding: 'utf8',
    cwd: root,
    // Without the variable node:test sets in the processes it runs, which would make this run report to it.
    env: { ...process.env, NODE_TEST_CONTEXT: undefined },
  });
  const out = child.stdout;
  const outcome = (name: string) => new RegExp(`^(not ok|ok) \\d+ - ${name}$`, 'm').exec(out)?.[1];
  assert.equal(child.status, 1, out);
  for (const [name, message] of [
    ['sets an environment variable', 'changed process-global state in a shared process: process.env'],
    ['leaves a process listener', "changed process-global state in a shared process: process 'SIGUSR2' listeners"],
    ['replaces the global fetch', 'changed process-global state in a shared process: globalThis.fetch'],
    [
      'runs after the module-wide timer mock',
      "the test before ('enables the module-wide timer mock and leaves it on') left the timers",
    ],
    [
      'runs after the child left running',
      "the test before ('leaves a child process running') left a child process running: ",
    ],
    ['registers module hooks', 'module.register from a test file sharing a process'],
  ]) {
    assert.equal(outcome(name), 'not ok', name);
    assert.ok(out.includes(message), message);
  }
  for (const name of [
    'mocks the timers and Math.random through its own context',
    'uses fetch for the first time',
    'enables the module-wide timer mock and leaves it on',
    'changes nothing',
    'leaves a child process running',
    'runs a child to its end, and stops one in its after hook',
  ]) {
    assert.equal(outcome(name), 'ok', name);
  }
});
