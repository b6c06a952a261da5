/**
 * Tests that a shared test process must refuse (test/process/shared-process.test.ts runs this file the way
 * scripts/test.ts runs the files it shares): each breaks one rule of scripts/test-shared.ts, and
 * the clean ones around them must still pass.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { register } from 'node:module';
import { after, mock, test } from 'node:test';

test('sets an environment variable', () => {
  process.env.RELAYER_SHARED_FIXTURE = '1';
});
test('leaves a process listener', () => {
  process.on('SIGUSR2', () => {});
});
test('replaces the global fetch', () => {
  globalThis.fetch = (async () => new Response('stand-in')) as typeof fetch;
});
test('mocks the timers and Math.random through its own context', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  t.mock.method(Math, 'random', () => 0.5);
});
test('uses fetch for the first time', async () => {
  await fetch('http://127.0.0.1:1/').catch(() => undefined);
});
test('enables the module-wide timer mock and leaves it on', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
});
test('runs after the module-wide timer mock', () => {});
let leftRunning: ChildProcess | undefined;
// Stopped at the end of the file, after the shared process's check has failed the next test.
after(() => leftRunning?.kill('SIGKILL'));
test('leaves a child process running', () => {
  leftRunning = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
});
test('runs after the child left running', () => {});
test('runs a child to its end, and stops one in its after hook', async (t) => {
  assert.equal(spawnSync(process.execPath, ['--version']).status, 0);
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  t.after(async () => {
    child.kill('SIGTERM');
    await once(child, 'exit');
  });
  assert.equal((await once(spawn(process.execPath, ['--version'], { stdio: 'ignore' }), 'exit'))[0], 0);
});
test('registers module hooks', () => {
  register('data:text/javascript,', import.meta.url);
});
test('changes nothing', () => {});
