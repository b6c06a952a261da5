/**
 * docs/configuration.md#command-line: `--check-config` reads the config and the flags, prints what
 * would run and exits 0, or 2 with the error that says the fix; nothing is opened or started (the
 * database file stays absent). The worker's check says the signer key's form without repeating
 * it. A port in use names --port. Each example of examples/ passes both commands' check.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { listenFailure } from '../../bin/lib/advice.ts';
import { workerInProcess } from '../helpers/harness/worker-command.ts';
import { REPO_ROOT } from '../helpers/harness/processes.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-check-config-');

function run(command: 'relayer-server' | 'relayer-worker', args: string[], env: NodeJS.ProcessEnv = {}) {
  const clean: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const name of ['RELAYER_DB', 'RELAYER_SIGNER_KEY', 'RELAYER_ADMIN_TOKEN'])
    if (!(name in env)) delete clean[name];
  const result = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', `${command}.ts`), ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: clean,
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const examples = readdirSync(join(REPO_ROOT, 'examples')).filter((f) => f.endsWith('.json'));
const KEY = `0x${'7e'.repeat(32)}`;

test('docs/configuration.md#command-line: every example config passes both checks; nothing is opened', () => {
  assert.ok(examples.length >= 3, examples.join(', '));
  for (const file of examples) {
    const config = join(REPO_ROOT, 'examples', file);
    const db = join(dir, `${file}.db`);
    const server = run('relayer-server', ['--check-config', '--config', config, '--db', db]);
    assert.equal(server.code, 0, `${file}: ${server.stderr}`);
    assert.match(server.stdout, new RegExp(`^relayer-server: config ${config} is valid\\n`));
    assert.match(server.stdout, /\n {2}listen: \S+:\d+\n/);
    const worker = run('relayer-worker', ['--check-config', '--config', config, '--db', db], {
      RELAYER_SIGNER_KEY: KEY,
    });
    assert.equal(worker.code, 0, `${file}: ${worker.stderr}`);
    assert.match(worker.stdout, /\n {2}signer key: set\n/);
    assert.match(worker.stdout, /\n {2}fee ceilings \(transactionOverrides\.gasPriceCap, wei\): \S+ \d+/);
    assert.doesNotMatch(worker.stdout, /gas payment enforcement: not set/, `${file} states who pays for gas`);
    assert.ok(!existsSync(db), `${file}: the check opened no database`);
  }
});

test('docs/configuration.md#command-line: an invalid config exits 2 with the fix, and the database is not created', () => {
  const config = join(dir, 'typo.json');
  writeFileSync(config, JSON.stringify({ server: { admintoken: 'a-long-enough-admin-token' } }));
  const db = join(dir, 'typo.db');
  for (const command of ['relayer-server', 'relayer-worker'] as const) {
    const result = run(command, ['--check-config', '--config', config, '--db', db]);
    assert.equal(result.code, 2, result.stdout);
    assert.equal(
      result.stderr,
      `${command}: invalid config: server.admintoken: unknown key; did you mean "adminToken"?\n`,
    );
    assert.equal(result.stdout, '');
  }
  assert.ok(!existsSync(db));
});

test('docs/worker-configuration.md#relayer-worker: a signer key in the wrong form is told which form it has, never echoed', async () => {
  const cases: Array<[string, RegExp]> = [
    ['7e'.repeat(32), /it has the 64 digits without 0x; write 0x before them$/],
    ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8', /this looks like an address \(20 bytes\), not a key/],
    ['70997970C51812dc3A010C7d01b50e0d17dc79C8', /this looks like an address \(20 bytes\), not a key/],
    [`${KEY}\n`, /white space around it/],
    ['0x1234', /got 4 hex digits$/],
  ];
  // A config that states the gas policy, which a worker checks before the key.
  const config = join(REPO_ROOT, 'examples', 'devnet.json');
  // The first case of each mode through the process, the others in this process (workerInProcess: the
  // bin's own workerCommand; BENCHMARKS.md#test-suite).
  for (const [i, [key, message]] of cases.entries()) {
    for (const args of [['--check-config'], ['--db', join(dir, 'never.db')]]) {
      args.push('--config', config);
      const env = { RELAYER_SIGNER_KEY: key };
      const result = i === 0 ? run('relayer-worker', args, env) : await workerInProcess(args, env);
      assert.equal(result.code, 2, `${args[0]}: ${result.stderr}`);
      assert.match(result.stderr.trimEnd(), message);
      assert.match(result.stderr, /^relayer-worker: RELAYER_SIGNER_KEY must be 0x followed by 64 hex digits/);
      assert.ok(!result.stderr.includes(key.trim().replace(/^0x/, '')), 'the key is not repeated');
    }
  }
  const unset = run('relayer-worker', ['--check-config', '--config', config]);
  assert.equal(unset.code, 0, unset.stderr);
  assert.match(unset.stdout, /signer key: not set \(RELAYER_SIGNER_KEY is needed to run\)/);
});

test('docs/worker-configuration.md#stated-gas-policy: the worker check refuses what the worker refuses to start without', () => {
  const result = run('relayer-worker', ['--check-config', '--db', join(dir, 'never.db')]);
  assert.equal(result.code, 2, result.stdout);
  assert.match(result.stderr, /^relayer-worker: gasPaymentEnforcement is not set/);
  assert.match(result.stderr, /\nrelayer-worker: chains\.ethereum\.transactionOverrides\.gasPriceCap is not set/);
  assert.ok(!existsSync(join(dir, 'never.db')));
});

test('docs/configuration.md#command-line: a port in use exits 1 naming --port and the config key', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  try {
    const result = run('relayer-server', ['--port', String(port), '--db', ':memory:']);
    assert.equal(result.code, 1, result.stdout);
    assert.match(
      result.stderr,
      new RegExp(
        `^relayer-server: cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE: the port is taken .*; choose another with --port N or server\\.port\\n$`,
      ),
    );
  } finally {
    blocker.close();
  }
  // The worker's ops port says the same with its own key (it starts only with a node to deliver to).
  const busy = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
  assert.match(listenFailure('127.0.0.1', 9091, busy, 'worker'), /choose another with --port N or worker\.port$/);
});
