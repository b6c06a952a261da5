/**
 * docs/operations.md#running-under-a-supervisor: a supervisor (Docker, systemd) that runs
 * `npm start` or `npm run worker` signals npm's pid, not the server's. SIGTERM or SIGINT to the
 * real npm process must stop the server or the worker cleanly: npm exits 0, the port is closed and
 * no process of the run is left. Before, npm forwarded the signal to the `sh -c` it started, the
 * shell died and the server kept listening under PID 1.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { noGasGate } from '../helpers/fixtures/config.ts';
import { startFakeRpcServer, type FakeRpcServer } from '../helpers/fakes/rpc.ts';
import { REPO_ROOT, spawnTracked, waitForLine } from '../helpers/harness/processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'relayer-npm-signals-'));
const KEY = `0x${'7e'.repeat(32)}`;
const CHAIN_ID = 31337;

/** The pids of the processes whose command line names `marker` (every process of one run does). */
function processesNaming(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

let rpc: FakeRpcServer;
let config: string;
let db: string;
before(async () => {
  rpc = await startFakeRpcServer(new Map(), { chainId: CHAIN_ID });
  db = join(dir, 'relayer.db');
  const store = await openSqliteStore(db);
  await store.close();
  config = join(dir, 'relayer.json');
  writeFileSync(
    config,
    JSON.stringify(
      noGasGate({
        chains: {
          local: {
            domainId: 1,
            chainId: CHAIN_ID,
            mailbox: '0x00000000000000000000000000000000000000a1',
            rpcUrls: [{ http: rpc.url }],
          },
        },
      }),
    ),
  );
});
after(async () => {
  await rpc.close();
  // A test that failed may have left the server behind npm: end it, then the directory.
  for (const pid of processesNaming(dir)) process.kill(pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const runs = [
  { script: 'start', ready: /listening on (http:\/\/\S+)/, env: {} },
  { script: 'worker', ready: /relayer-worker ops on (http:\/\/\S+)/, env: { RELAYER_SIGNER_KEY: KEY } },
] as const;

// The hang guard is per run: one npm start took 12 s on a loaded machine, and a 60 s bound on the
// four runs together timed out under load while each run was passing.
describe('docs/operations.md#running-under-a-supervisor: a signal to npm stops what it runs', () => {
  for (const { script, ready, env } of runs) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      test(`npm ${script === 'start' ? 'start' : 'run worker'}: ${signal} to npm's pid: exit 0, the port closed, no process left`, {
        timeout: 60_000,
      }, async () => {
        const clean = { ...process.env };
        delete clean.RELAYER_SIGNER_KEY;
        delete clean.RELAYER_DB;
        const npm = spawnTracked(
          'npm',
          ['run', '-s', script, '--', '--config', config, '--db', db, '--port', '0', '--log-level', 'warn'],
          { cwd: REPO_ROOT, env: { ...clean, ...env } },
        );
        const [, url] = await waitForLine(npm, ready, 30_000);
        const running = processesNaming(dir);
        assert.ok(running.length >= 1, 'the command runs');
        const exited = once(npm.child, 'exit') as Promise<[number | null, string | null]>;
        process.kill(npm.child.pid as number, signal);
        const [code, killedBy] = await exited;
        assert.equal(killedBy, null, npm.output());
        assert.equal(code, 0, npm.output());
        await assert.rejects(fetch(`${url}/ready`), 'nothing listens on the port any more');
        assert.deepEqual(processesNaming(dir), [], 'no process of the run is left');
      });
    }
  }
});
