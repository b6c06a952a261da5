/**
 * docs/replicas.md#running-several-replicas: `npm run pg` as a user runs it. It prints the
 * database URL and two replicas on ports that leave the worker's 9091 free (9090 and 9092), keeps
 * its data in RELAYER_PG_DATA, and SIGTERM to npm's pid stops PostgreSQL too: npm exits 0, the port
 * is closed, no postgres process of the run is left. Before, npm's `sh -c` took the signal and
 * PostgreSQL kept running.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { REPO_ROOT, spawnTracked, waitForLine } from '../helpers/harness/processes.ts';
import { refusedPort } from '../helpers/fakes/refused-port.ts';

// Directly under the temp dir: as root, PostgreSQL runs as another user, who must be able to enter it.
const dataDir = join(tmpdir(), `relayer-pg-script-test-${process.pid}`);
after(() => {
  for (const pid of processesNaming(dataDir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * The pids of the processes whose command line (postgres -D) or environment (npm, node
 * scripts/pg.ts: RELAYER_PG_DATA) names `marker`: every process of the run.
 */
function processesNaming(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    for (const file of ['cmdline', 'environ']) {
      try {
        if (readFileSync(`/proc/${entry}/${file}`, 'utf8').includes(marker)) {
          pids.push(Number(entry));
          break;
        }
      } catch {
        // gone meanwhile, or not ours to read
      }
    }
  }
  return pids;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

test('docs/replicas.md#running-several-replicas: npm run pg prints replicas on 9090 and 9092; SIGTERM to npm stops PostgreSQL', {
  timeout: 120_000,
}, async () => {
  const port = await refusedPort();
  const env = { ...process.env, PGPORT: String(port), RELAYER_PG_DATA: dataDir };
  const npm = spawnTracked('npm', ['run', '-s', 'pg'], { cwd: REPO_ROOT, env });
  await waitForLine(npm, /^Ctrl-C stops the database\.$/, 90_000);
  const printed = npm.output();
  assert.match(printed, new RegExp(`PostgreSQL ${port} on 127\\.0\\.0\\.1, data in ${dataDir} \\(RELAYER_PG_DATA\\)`));
  assert.match(printed, new RegExp(`database URL: postgres://relayer:relayer@127\\.0\\.0\\.1:${port}/postgres`));
  const replicas = [...printed.matchAll(/npm start -- --port (\d+)/g)].map((m) => m[1]);
  assert.deepEqual(replicas, ['9090', '9092'], "the replicas leave the worker's 9091 free");
  assert.ok(await accepts(port), 'PostgreSQL accepts connections');
  assert.ok(processesNaming(dataDir).length >= 1, 'postgres runs on the data directory');

  const exited = once(npm.child, 'exit') as Promise<[number | null, string | null]>;
  process.kill(npm.child.pid as number, 'SIGTERM');
  const [code, signal] = await exited;
  assert.equal(signal, null, npm.output());
  assert.equal(code, 0, npm.output());
  assert.equal(await accepts(port), false, 'nothing listens on the port any more');
  assert.deepEqual(processesNaming(dataDir), [], 'no postgres process of the run is left');
});
