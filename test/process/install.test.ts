/**
 * docs/deploy.md#the-package: the production path, as a user takes it. `npm pack` (its `prepack`
 * builds dist/) makes the tarball; `npm install --omit=dev` puts it in an empty directory, without
 * a dev tool, without the network; the installed `relayer-server` serves /ready on its SQLite file
 * and stops on SIGTERM, the installed `relayer-worker` checks its config, says what is missing
 * without viem, and with viem beside it refuses a destination whose node does not answer.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { INSTALL_FLAGS, packedTarball } from '../helpers/harness/packed.ts';
import { onExitCleanup, REPO_ROOT, spawnTracked, stopProcess, waitForStart } from '../helpers/harness/processes.ts';
import { refusedPort } from '../helpers/fakes/refused-port.ts';

const dir = mkdtempSync(join(tmpdir(), 'relayer-install-'));
const forget = onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
after(forget);

/** Node 24's directory first, as a host's PATH would have it: the bins' `#!/usr/bin/env node` finds it. */
function path(): string {
  return `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;
}

const prefix = join(dir, 'app');
let tarball: string;
let installOutput: string;
before(async () => {
  // The run's one tarball (test/helpers/harness/packed.ts), shared with test/process/package-types.test.ts.
  tarball = await packedTarball();
  mkdirSync(prefix);
  // --offline: the package has no dependency to fetch (viem and pg are optional peers).
  const result = spawnSync(
    process.env.npm_execpath ? process.execPath : 'npm',
    [
      ...(process.env.npm_execpath ? [process.env.npm_execpath] : []),
      'install',
      // The flags of docs/deploy.md and the Dockerfile; the peers are linked below (no network here).
      ...INSTALL_FLAGS,
      '--offline',
      tarball,
    ],
    { cwd: prefix, encoding: 'utf8', env: { ...process.env, PATH: path() } },
  );
  installOutput = `${result.stdout}${result.stderr}`;
  assert.equal(result.status, 0, installOutput);
});
after(() => rmSync(dir, { recursive: true, force: true }));

const bin = (name: string) => join(prefix, 'node_modules', '.bin', name);
const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => {
  const clean: NodeJS.ProcessEnv = { ...process.env, PATH: path(), ...extra };
  for (const name of ['RELAYER_DB', 'RELAYER_SIGNER_KEY', 'RELAYER_ADMIN_TOKEN', 'NODE_OPTIONS', 'npm_execpath'])
    if (!(name in extra)) delete clean[name];
  return clean;
};

test('docs/deploy.md#the-package: the tarball carries dist/ and no install-time script, so it installs without a warning', () => {
  const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
  for (const file of [
    'package/dist/bin/relayer-server.js',
    'package/dist/bin/relayer-worker.js',
    'package/dist/lib/index.js',
  ])
    assert.ok(listing.includes(file), `${file} is in the tarball (prepack built it)`);
  const manifest = JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }));
  // A `prepare` that runs tsc fails an --omit=dev install of a clone (tsc: not found), and npm
  // warns about it on every install of the tarball.
  for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
    assert.equal(manifest.scripts[script], undefined, `no ${script} script`);
  assert.ok(/\bbuild\b/.test(manifest.scripts.prepack ?? ''), 'npm pack builds dist/ first (prepack)');
  assert.doesNotMatch(installOutput, /install-scripts|npm warn|npm error/i);
  const installed = realpathSync(join(prefix, 'node_modules', 'relayer-api'));
  assert.deepEqual(
    readFileSync(join(installed, 'package.json'), 'utf8'),
    execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
  );
});

test('docs/deploy.md#the-package: the installed relayer-server answers /ready on its SQLite file and stops on SIGTERM', async () => {
  const server = spawnTracked(bin('relayer-server'), ['--port', '0', '--db', join(dir, 'relayer.db')], {
    cwd: prefix,
    env: env(),
  });
  const [, url] = await waitForStart(server, /relayer-server listening on (http:\/\/\S+)/);
  const ready = await fetch(`${url}/ready`);
  assert.equal(ready.status, 200, await ready.text());
  assert.equal(await stopProcess(server.child, 15_000), 0, server.output());
});

test('docs/deploy.md#the-package: the installed relayer-worker names viem when it is missing, then refuses a silent node', async () => {
  const rpc = await refusedPort();
  const config = join(dir, 'relayer.json');
  writeFileSync(
    config,
    JSON.stringify({
      chains: {
        local: {
          domainId: 31337,
          chainId: 31337,
          mailbox: '0x00000000000000000000000000000000000000a1',
          rpcUrls: [{ http: `http://127.0.0.1:${rpc}/` }],
          transactionOverrides: { gasPriceCap: '100000000000' },
        },
      },
      gasPaymentEnforcement: [{ type: 'none' }],
      db: join(dir, 'relayer.db'),
    }),
  );
  const key = { RELAYER_SIGNER_KEY: `0x${'7e'.repeat(32)}` };
  const run = (extra: NodeJS.ProcessEnv) =>
    spawnSync(bin('relayer-worker'), ['--config', config, '--port', '0'], {
      cwd: prefix,
      encoding: 'utf8',
      env: env(extra),
    });
  // Without viem (an optional peer): exit 1 and what to install.
  const bare = run(key);
  assert.equal(bare.status, 1, bare.stderr);
  assert.match(bare.stderr, /needs the viem package.*npm install viem/);
  // viem beside the package, as `npm install --omit=dev relayer-api.tgz viem` puts it.
  symlinkSync(join(REPO_ROOT, 'node_modules', 'viem'), join(prefix, 'node_modules', 'viem'));
  const refused = run(key);
  assert.equal(refused.status, 2, `${refused.stdout}${refused.stderr}`);
  assert.match(refused.stderr, /local/, 'the destination whose node does not answer is named');
});
