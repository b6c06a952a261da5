/**
 * docs/devnet.md: `npm run devnet` and `npm run devnet:send`, the real commands through the real
 * npm, as a user runs them: the devnet starts (two anvil chains, the Mailbox and the CCTP V2 route,
 * the gateway, relayer-server, one relayer-worker) and prints what it is; one transfer is
 * delivered, one to the recipient that always reverts ends failed and shows in
 * `relayer-worker list` and `GET /messages`; a signal to npm's pid stops it all with exit 0 and
 * leaves no process.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { REPO_ROOT, spawnTracked, waitForLine, type Tracked } from '../helpers/harness/processes.ts';

const dir = mkdtempSync(join(tmpdir(), 'relayer-devnet-'));
const descendants = new Set<number>();
after(() => {
  // A failed test may leave the devnet's children behind npm: end them, then the directory.
  for (const pid of descendants) {
    try {
      // Only what is still ours (a pid is not reused by then, but be sure): anvil or the commands.
      if (/anvil|relayer|devnet/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Every process below `pid`, from /proc (parent ids). */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      found.push(c);
      walk(c);
    }
  };
  walk(pid);
  return found;
}

const alive = (pid: number) =>
  existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');

async function npm(args: string[]): Promise<{ code: number | null; output: string }> {
  const run: Tracked = spawnTracked('npm', ['run', '-s', ...args], { cwd: REPO_ROOT });
  const [code] = (await once(run.child, 'exit')) as [number | null];
  return { code, output: run.output() };
}

test('npm run devnet, devnet:send (delivered), devnet:send --revert (failed, listed), then SIGINT to npm: exit 0', {
  timeout: 240_000,
}, async () => {
  // SIGINT is Ctrl-C; npm exits 0 and nothing is left running.
  const devnet = spawnTracked('npm', ['run', 'devnet', '--', '--dir', dir], { cwd: REPO_ROOT });
  await waitForLine(devnet, /^relayer devnet ready$/, 120_000);
  const [, api] = await waitForLine(devnet, /^ {2}API {10}(http:\/\/\S+)/, 5_000);
  await waitForLine(devnet, /Ctrl-C stops everything\./, 5_000);
  const printed = devnet.output();
  assert.match(printed, new RegExp(`config {7}${join(dir, 'relayer.json')}`));
  assert.match(printed, /npm run devnet:send/);
  assert.match(printed, /npm run worker -- list --config /);
  for (const pid of processTree(devnet.child.pid!)) descendants.add(pid);
  assert.ok(
    descendants.size >= 5,
    `npm's children: the devnet, two anvil nodes, the server, the worker (${descendants.size})`,
  );
  assert.equal(await (await fetch(`${api}/relay`)).text(), 'up');

  const sent = await npm(['devnet:send', '--', '--dir', dir]);
  assert.equal(sent.code, 0, sent.output);
  const [, id] = sent.output.match(/relayed: message (0x[0-9a-f]{64})/) ?? [];
  assert.ok(id, sent.output);
  assert.match(sent.output, new RegExp(`message ${id}: delivered`));
  assert.equal((await (await fetch(`${api}/relay/${id}`)).json()).status, 'delivered');

  // docs/devnet.md#multisig: through the mainnet ISM shape with the devnet validators' signatures.
  const viaMultisig = await npm(['devnet:send', '--', '--multisig', '--dir', dir]);
  assert.equal(viaMultisig.code, 0, viaMultisig.output);
  const [, multisigId] = viaMultisig.output.match(/relayed: message (0x[0-9a-f]{64})/) ?? [];
  assert.match(viaMultisig.output, new RegExp(`message ${multisigId}: delivered`));

  const reverted = await npm(['devnet:send', '--', '--revert', '--dir', dir]);
  assert.equal(reverted.code, 0, reverted.output);
  const [, failedId] = reverted.output.match(/relayed: message (0x[0-9a-f]{64})/) ?? [];
  assert.match(reverted.output, new RegExp(`message ${failedId}: failed`));
  assert.match(reverted.output, /npm run worker -- requeue --status failed --config /);

  const listed = await npm(['worker', '--', 'list', '--status', 'failed', '--config', join(dir, 'relayer.json')]);
  assert.equal(listed.code, 0, listed.output);
  assert.match(listed.output, new RegExp(`^${failedId} {2}failed {2}attempts=3 `, 'm'));
  const state = JSON.parse(readFileSync(join(dir, 'devnet.json'), 'utf8'));
  const messages = await (
    await fetch(`${api}/messages?status=failed`, { headers: { authorization: `Bearer ${state.adminToken}` } })
  ).json();
  assert.deepEqual(
    messages.messages.map((m: { message_id: string }) => m.message_id),
    [failedId],
  );

  const exited = once(devnet.child, 'exit') as Promise<[number | null, string | null]>;
  process.kill(devnet.child.pid!, 'SIGINT');
  assert.deepEqual(await exited, [0, null], devnet.output());
  await assert.rejects(fetch(`${api}/relay`), 'the API port is closed');
  const left = [...descendants].filter(alive);
  assert.deepEqual(left, [], 'no process of the devnet is left');
  assert.ok(existsSync(join(dir, 'relayer.db')) && existsSync(join(dir, 'worker.log')), 'its state stays in --dir');
});
