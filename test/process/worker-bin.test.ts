/**
 * bin/relayer-worker.ts's command line, without a chain (test/e2e/worker*.e2e.test.ts run it
 * delivering on anvil): --help, refusals (exit 2) that never echo the key, viem missing (exit 1
 * with what to install), RELAYER_DB, and `requeue` on a real SQLite file.
 *
 * Each kind of ending goes through a real process at least once (`run`: a refusal printed and its
 * exit code, a command's exit code, a start, a signal, a dead store); the other cases of a kind run
 * the same code in this process (`inProcess`: test/helpers/harness/worker-command.ts),
 * which saves a process start and the loading of lib/ each (BENCHMARKS.md#test-suite).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { noGasGate } from '../helpers/fixtures/config.ts';
import { startFakeRpcServer, type FakeRpcServer } from '../helpers/fakes/rpc.ts';
import { sharedPostgresUrl } from '../helpers/harness/postgres.ts';
import { spawnTracked, stopProcess, waitForLine, waitForStart } from '../helpers/harness/processes.ts';
import { REPO_ROOT } from '../helpers/harness/server.ts';
import { workerInProcess as inProcess } from '../helpers/harness/worker-command.ts';

const BIN = join(REPO_ROOT, 'bin', 'relayer-worker.ts');
const dir = mkdtempSync(join(tmpdir(), 'relayer-worker-bin-'));
const KEY = `0x${'7e'.repeat(32)}`;
/** A node of chain 31337 whose signer holds 0.005 ether (below the default floor of 0.01). */
let rpc: FakeRpcServer;
before(async () => {
  rpc = await startFakeRpcServer(new Map(), { chainId: 31337, balanceWei: 5_000_000_000_000_000n });
});
after(async () => {
  await rpc.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A config with one destination, `local` (chain id 31337), over `rpcUrls`. */
function localConfig(name: string, rpcUrls: string[], chainId = 31337): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify(
      noGasGate({
        chains: {
          local: {
            domainId: 31337,
            chainId,
            mailbox: `0x${'00'.repeat(19)}01`,
            rpcUrls: rpcUrls.map((http) => ({ http })),
          },
        },
        worker: { port: 0 },
      }),
    ),
  );
  return path;
}

async function run(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  nodeArgs: string[] = [],
): Promise<{ code: number | null; output: string }> {
  const clean = { ...process.env };
  delete clean.RELAYER_SIGNER_KEY;
  delete clean.RELAYER_DB;
  const child = spawnTracked(process.execPath, [...nodeArgs, BIN, ...args], {
    cwd: REPO_ROOT,
    env: { ...clean, ...env },
  });
  const [code] = (await once(child.child, 'exit')) as [number | null];
  return { code, output: child.output() };
}

test('--help prints the usage (commands, RELAYER_SIGNER_KEY, RELAYER_DB) and exits 0', async () => {
  const { code, output } = await run(['--help']);
  assert.equal(code, 0);
  assert.match(output, /^Usage: relayer-worker/);
  assert.match(output, /requeue <message_id>/);
  assert.match(output, /RELAYER_SIGNER_KEY/);
  assert.match(output, /RELAYER_DB/);
});

test('without RELAYER_SIGNER_KEY, or with one that is not 0x + 64 hex, it refuses to start (exit 2) and never echoes the key', async () => {
  const db = join(dir, 'none.db');
  const config = localConfig('key.json', [rpc.url]);
  const missing = await run(['--config', config, '--db', db, '--port', '0']);
  assert.equal(missing.code, 2);
  assert.match(missing.output, /RELAYER_SIGNER_KEY is not set/);
  const bad = `${KEY}ff`;
  const wrong = await inProcess(['--config', config, '--db', db, '--port', '0'], { RELAYER_SIGNER_KEY: bad });
  assert.equal(wrong.code, 2);
  assert.match(wrong.output, /RELAYER_SIGNER_KEY must be 0x followed by 64 hex digits/);
  assert.ok(!wrong.output.includes(bad.slice(2, 20)), 'the key is not echoed');
});

test('bad flags, an unknown command, an invalid config: exit 2 naming the problem', async () => {
  assert.equal((await run(['--bogus'])).code, 2);
  const unknown = await inProcess(['deliver']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.output, /unknown command "deliver"/);
  const config = join(dir, 'bad.json');
  writeFileSync(config, JSON.stringify({ worker: { maxAttempt: 3 } }));
  const invalid = await inProcess(['--config', config], { RELAYER_SIGNER_KEY: KEY });
  assert.equal(invalid.code, 2);
  assert.match(invalid.output, /invalid config: worker\.maxAttempt/);
  const requeue = await inProcess(['requeue', '0x1234']);
  assert.equal(requeue.code, 2);
  assert.match(requeue.output, /usage: relayer-worker requeue <message_id>/);
});

test('viem not installed: exit 1 saying to install it, no module-resolution trace', async () => {
  const hide = join(REPO_ROOT, 'test', 'helpers', 'harness', 'hide-viem.ts');
  const config = localConfig('viem.json', [rpc.url]);
  const { code, output } = await run(
    ['--config', config, '--db', join(dir, 'viem.db'), '--port', '0'],
    { RELAYER_SIGNER_KEY: KEY },
    ['--import', hide],
  );
  assert.equal(code, 1, output);
  assert.match(output, /needs the viem package, which is not installed: install viem \(npm install viem\)/);
  assert.doesNotMatch(output, /ERR_MODULE_NOT_FOUND|\n\s+at /);
  assert.ok(!output.includes(KEY.slice(2, 20)));
});

test('requeue on the database named by RELAYER_DB: a failed message back to queued (exit 0), anything else exit 1', async () => {
  const db = join(dir, 'requeue.db');
  const store = await openSqliteStore(db);
  const id = `0x${'11'.repeat(32)}`;
  const raw = new Uint8Array(81);
  raw[0] = 3;
  try {
    await store.outbox.enqueue([
      {
        id,
        originChain: 'ethereum',
        txHash: `0x${'22'.repeat(32)}`,
        origin: 1,
        destination: 8453,
        nonce: 0,
        raw,
        enqueuedAt: Date.now(),
      },
    ]);
    const [claimed] = await store.outbox.claim(1, 60_000);
    assert.ok(
      await store.outbox.markFailed(id, { lease: claimed.lease, error: 'unsupported ISM type 5', final: true }),
    );
  } finally {
    await store.close();
  }
  const done = await run(['requeue', id], { RELAYER_DB: db });
  assert.equal(done.code, 0, done.output);
  assert.match(done.output, new RegExp(`requeued ${id} \\(attempts so far 1\\)`));
  const again = await inProcess(['requeue', id], { RELAYER_DB: db });
  assert.equal(again.code, 1);
  assert.match(again.output, new RegExp(`not requeued: message ${id} is queued, not failed`));
  const unknown = await inProcess(['requeue', `0x${'33'.repeat(32)}`], { RELAYER_DB: db });
  assert.equal(unknown.code, 1);
  assert.match(unknown.output, /not requeued: no message 0x3333/);
  const check = await openSqliteStore(db);
  try {
    const record = await check.outbox.get(id);
    assert.equal(record?.status, 'queued');
    assert.equal(record?.lastError, 'unsupported ISM type 5', 'kept for the record');
  } finally {
    await check.close();
  }
});

test('docs/worker-configuration.md#stated-gas-policy: no stated gas policy or fee ceiling: exit 2, one line per missing key', async () => {
  // Before the database or a node is touched; each line names its key and gives a safe example.
  const config = (name: string, extra: Record<string, unknown>) => {
    const path = join(dir, name);
    const chain = (domainId: number) => ({ domainId, chainId: 31337, mailbox: `0x${'00'.repeat(19)}01` });
    const chains = {
      local: { ...chain(31337), rpcUrls: [{ http: rpc.url }] },
      capped: { ...chain(2), rpcUrls: [{ http: rpc.url }], transactionOverrides: { gasPriceCap: '50000000000' } },
      origin: { ...chain(3), rpcUrls: [{ http: rpc.url }] },
    };
    writeFileSync(path, JSON.stringify({ chains, relayChains: ['local', 'capped'], ...extra }));
    return path;
  };
  const missingDb = join(dir, 'not-there', 'x.db');
  const refusal = (output: string) => output.split('\n').filter((line) => line.startsWith('relayer-worker: '));
  const unstated = await inProcess(['--config', config('unstated.json', {}), '--db', missingDb], {
    RELAYER_SIGNER_KEY: KEY,
  });
  assert.equal(unstated.code, 2, unstated.output);
  assert.deepEqual(refusal(unstated.output), [
    'relayer-worker: gasPaymentEnforcement is not set: state who pays for delivery gas, e.g. "gasPaymentEnforcement": [{"type": "onChainFeeQuoting"}] (senders pay on the origin chain), or [{"type": "none"}] to deliver unpaid messages at your cost',
    'relayer-worker: chains.local.transactionOverrides.gasPriceCap is not set: state the most this worker pays per gas on local, e.g. "transactionOverrides": {"gasPriceCap": "100000000000"} (100 gwei), or "none" for no ceiling',
  ]);
  assert.equal(existsSync(join(dir, 'not-there')), false, 'refused before the database');
  // An empty list states nothing either; a policy and a cap on every relay chain start (the database is next).
  const empty = await inProcess(['--config', config('empty.json', { gasPaymentEnforcement: [] }), '--db', missingDb], {
    RELAYER_SIGNER_KEY: KEY,
  });
  assert.equal(empty.code, 2, empty.output);
  assert.match(refusal(empty.output)[0], /^relayer-worker: gasPaymentEnforcement is empty: state who pays/);
  const stated = config('stated.json', {
    gasPaymentEnforcement: [{ type: 'none' }],
    chains: JSON.parse(readFileSync(join(dir, 'unstated.json'), 'utf8')).chains,
  });
  const withCap = JSON.parse(readFileSync(stated, 'utf8'));
  withCap.chains.local.transactionOverrides = { gasPriceCap: 'none' };
  writeFileSync(stated, JSON.stringify(withCap));
  const next = await inProcess(['--config', stated, '--db', missingDb], { RELAYER_SIGNER_KEY: KEY });
  assert.equal(next.code, 2, next.output);
  assert.match(next.output, /database \S+not-there\/x\.db does not exist/, 'past the policy check');
});

test("docs/worker-configuration.md#stated-gas-policy: opt-outs warned at start; the started line has each destination's policy", async () => {
  const db = join(dir, 'stated.db');
  await (await openSqliteStore(db)).close();
  const start = async (name: string, extra: Record<string, unknown>, capOf: (chain: string) => unknown) => {
    const file = JSON.parse(readFileSync(localConfig(name, [rpc.url]), 'utf8'));
    file.chains.remote = { ...file.chains.local, domainId: 7 };
    for (const chain of ['local', 'remote']) file.chains[chain].transactionOverrides = { gasPriceCap: capOf(chain) };
    writeFileSync(join(dir, name), JSON.stringify({ ...file, ...extra }));
    const child = spawnTracked(process.execPath, [BIN, '--config', join(dir, name), '--db', db], {
      cwd: REPO_ROOT,
      env: { ...process.env, RELAYER_DB: '', RELAYER_SIGNER_KEY: KEY },
    });
    try {
      await waitForStart(child, /relayer-worker ops on /);
    } finally {
      await stopProcess(child.child);
    }
    const lines = child
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line));
    return {
      warned: lines.filter((l) => l.msg === 'unsafe choice stated').map((l) => [l.level, l.key, l.effect]),
      policy: lines.find((l) => l.msg === 'started')?.policy,
    };
  };
  const open = await start('opt-outs.json', { transactionGasLimit: 'none' }, (chain) =>
    chain === 'local' ? 'none' : 50_000_000_000,
  );
  assert.deepEqual(open.warned, [
    [
      'warn',
      'gasPaymentEnforcement[0]',
      '{"type": "none"}: messages it matches are delivered unpaid, at the signer\'s cost (every message it is reached for)',
    ],
    [
      'warn',
      'chains.local.transactionOverrides.gasPriceCap',
      '"none": transactions to local are signed at whatever fee its node asks',
    ],
    ['warn', 'transactionGasLimit', '"none": a recipient may make a delivery use any amount of gas'],
  ]);
  assert.deepEqual(open.policy, {
    local: { gasPayment: ['none'], gasPriceCap: 'none', transactionGasLimit: 'none' },
    remote: { gasPayment: ['none'], gasPriceCap: '50000000000 wei', transactionGasLimit: 'none' },
  });
  const paid = await start(
    'paid.json',
    {
      gasPaymentEnforcement: [
        { type: 'minimum', payment: '1000', matchingList: [{ destinationDomain: 7 }] },
        { type: 'onChainFeeQuoting', gasFraction: '3/4' },
      ],
    },
    () => '2000000000',
  );
  assert.deepEqual(paid.warned, [], 'nothing opted out, nothing warned');
  assert.deepEqual(paid.policy, {
    local: { gasPayment: ['onChainFeeQuoting 3/4'], gasPriceCap: '2000000000 wei', transactionGasLimit: '3000000' },
    remote: {
      gasPayment: ['minimum 1000 wei (matchingList)', 'onChainFeeQuoting 3/4'],
      gasPriceCap: '2000000000 wei',
      transactionGasLimit: '3000000',
    },
  });
});

test('docs/outbox.md#listing-and-bulk-requeue: list shows what is stuck; requeue --status failed puts it back', async () => {
  // list filters, one line a message; requeue --status failed puts back every failed message of a destination.
  const db = join(dir, 'list.db');
  const config = join(dir, 'list.json');
  writeFileSync(
    config,
    JSON.stringify({
      chains: {
        ethereum: {
          domainId: 1,
          chainId: 1,
          mailbox: `0x${'00'.repeat(19)}01`,
          rpcUrls: [{ http: 'http://127.0.0.1:1' }],
        },
        base: {
          domainId: 8453,
          chainId: 8453,
          mailbox: `0x${'00'.repeat(19)}02`,
          rpcUrls: [{ http: 'http://127.0.0.1:1' }],
        },
      },
    }),
  );
  const store = await openSqliteStore(db);
  const message = (n: number, destination: number) => {
    const raw = new Uint8Array(81);
    raw[0] = 3;
    return {
      id: `0x${n.toString(16).padStart(2, '0').repeat(32)}`,
      originChain: 'ethereum',
      txHash: `0x${'22'.repeat(31)}${n.toString(16).padStart(2, '0')}`,
      origin: 1,
      destination,
      nonce: n,
      raw,
      // 1 is the oldest: an hour and a bit.
      enqueuedAt: Date.now() - 3_900_000 + n * 1000,
    };
  };
  const [one, two, three, four] = [message(1, 8453), message(2, 1), message(3, 8453), message(4, 8453)];
  try {
    await store.outbox.enqueue([one, two, three, four]);
    for (const m of [one, two, three]) {
      const [claimed] = await store.outbox.claim(1, 60_000);
      assert.equal(claimed.id, m.id);
      await store.outbox.markFailed(m.id, {
        lease: claimed.lease,
        error: `gas: estimate failed at https://rpc.example/v2/SECRET for ${m.nonce}`,
        final: true,
      });
    }
  } finally {
    await store.close();
  }
  const listed = await inProcess(['list', '--config', config, '--db', db]);
  assert.equal(listed.code, 0, listed.output);
  const lines = listed.output.split('\n').filter((line) => line.startsWith('0x'));
  assert.deepEqual(
    lines.map((line) => line.split('  ').slice(0, 3)),
    [
      [one.id, 'failed', 'attempts=1'],
      [two.id, 'failed', 'attempts=1'],
      [three.id, 'failed', 'attempts=1'],
      [four.id, 'queued', 'attempts=0'],
    ],
  );
  assert.match(
    lines[0],
    / {2}age=1h\d+m {2}to=base {2}last_error="gas: estimate failed at https:\/\/rpc\.example for 1"$/,
  );
  assert.ok(!listed.output.includes('SECRET'), 'URLs cut to their origin');
  assert.match(listed.output, /^4 messages$/m);
  const filtered = await inProcess([
    'list',
    '--status',
    'failed',
    '--destination',
    'base',
    '--limit',
    '1',
    '--config',
    config,
    '--db',
    db,
  ]);
  assert.equal(filtered.code, 0, filtered.output);
  assert.deepEqual(
    filtered.output
      .split('\n')
      .filter((line) => line.startsWith('0x'))
      .map((line) => line.split('  ')[0]),
    [one.id],
  );
  assert.match(filtered.output, /1 message \(the first 1: --limit for more\)/);
  for (const [args, problem] of [
    [['list', '--status', 'stuck'], /--status must be one of queued, delivering, delivered, failed/],
    [['list', '--destination', 'etherium'], /--destination "etherium" is not a configured chain \(ethereum, base\)/],
    [['list', '--limit', '0'], /--limit must be an integer from 1 to 1000/],
    [['requeue', '--status', 'queued'], /only failed messages are requeued/],
    [['--status', 'failed'], /--status is a flag of list and requeue/],
  ] as const) {
    const refused = await inProcess([...args, '--config', config, '--db', db], { RELAYER_SIGNER_KEY: KEY });
    assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.output}`);
    assert.match(refused.output, problem);
  }

  const requeued = await inProcess([
    'requeue',
    '--status',
    'failed',
    '--destination',
    'base',
    '--config',
    config,
    '--db',
    db,
  ]);
  assert.equal(requeued.code, 0, requeued.output);
  assert.match(requeued.output, new RegExp(`requeued ${one.id}\nrequeued ${three.id}\n`));
  assert.match(requeued.output, /requeued 2 failed messages/);
  const after = await inProcess(['list', '--status', 'failed', '--config', config, '--db', db]);
  assert.deepEqual(
    after.output
      .split('\n')
      .filter((line) => line.startsWith('0x'))
      .map((line) => line.split('  ')[0]),
    [two.id],
    'the failed message to ethereum stays',
  );
});

test("docs/delivery.md#start-up-checks-and-heartbeat: a database that does not exist, or is not the server's, is refused", async () => {
  // Exit 2, the path named, nothing created.
  const config = localConfig('exists.json', [rpc.url]);
  const missing = join(dir, 'nope', 'x.db');
  const typo = await inProcess(['--config', config, '--db', missing], { RELAYER_SIGNER_KEY: KEY });
  assert.equal(typo.code, 2, typo.output);
  assert.match(typo.output, /database \S+nope\/x\.db does not exist: .*give relayer-server's database/);
  assert.equal(existsSync(join(dir, 'nope')), false, 'no directory created');
  for (const command of [['list'], ['requeue', '--status', 'failed']]) {
    const refused = await inProcess([...command, '--config', config, '--db', missing]);
    assert.equal(refused.code, 2, `${command[0]}: ${refused.output}`);
    assert.equal(existsSync(join(dir, 'nope')), false);
  }
  const memory = await inProcess(['--config', config, '--db', ':memory:'], { RELAYER_SIGNER_KEY: KEY });
  assert.equal(memory.code, 2);
  assert.match(memory.output, /:memory: is an empty database/);
  const other = join(dir, 'other.db');
  const db = new DatabaseSync(other);
  db.exec('CREATE TABLE notes (text TEXT)');
  db.close();
  const foreign = await inProcess(['--config', config, '--db', other], { RELAYER_SIGNER_KEY: KEY });
  assert.equal(foreign.code, 2, foreign.output);
  assert.match(foreign.output, /other\.db \(\/\S+\) has no relayer schema: not relayer-server's database/);
});

test('docs/delivery.md#start-up-checks-and-heartbeat: a PostgreSQL database without the relayer schema is refused', async () => {
  // Exit 2, the URL named without its password, and no schema is created.
  const url = new URL(await sharedPostgresUrl());
  const name = `fresh_${Date.now().toString(36)}_${process.pid}`;
  const admin = new pg.Client({ connectionString: url.href });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const fresh = new URL(url.href);
    fresh.pathname = `/${name}`;
    for (const command of [['list'], []]) {
      const refused = await inProcess([...command, '--config', localConfig('pg.json', [rpc.url]), '--db', fresh.href], {
        RELAYER_SIGNER_KEY: KEY,
      });
      assert.equal(refused.code, 2, refused.output);
      assert.match(
        refused.output,
        new RegExp(`database postgres://[^:]+:\\*\\*\\*@\\S+/${name} has no relayer schema`),
      );
      if (url.password) assert.ok(!refused.output.includes(url.password), 'no password');
    }
    const probe = new pg.Client({ connectionString: fresh.href });
    await probe.connect();
    try {
      const { rows } = await probe.query("SELECT to_regnamespace('relayer') IS NULL AS none");
      assert.equal(rows[0].none, true, 'no schema was created');
    } finally {
      await probe.end();
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => {});
    await admin.end();
  }
});

test('docs/delivery.md#start-up-checks-and-heartbeat: a destination on another chain id, or with silent nodes, stops the start', async () => {
  // A destination whose node answers another chain id, or whose nodes all stay silent: exit 2 naming the chain.
  const db = join(dir, 'chains.db');
  await (await openSqliteStore(db)).close();
  const wrong = await inProcess(['--config', localConfig('wrong.json', [rpc.url], 8453), '--db', db], {
    RELAYER_SIGNER_KEY: KEY,
  });
  assert.equal(wrong.code, 2, wrong.output);
  assert.match(
    wrong.output,
    /chains\.local: the RPC node http:\/\/127\.0\.0\.1:\d+ answers chain id 31337, the config says 8453/,
  );
  const silent = await inProcess(
    ['--config', localConfig('silent.json', ['http://127.0.0.1:1/v2/SECRET']), '--db', db],
    {
      RELAYER_SIGNER_KEY: KEY,
    },
  );
  assert.equal(silent.code, 2, silent.output);
  assert.match(silent.output, /chains\.local: no RPC node answered eth_chainId \(http:\/\/127\.0\.0\.1:1: /);
  assert.doesNotMatch(silent.output, /SECRET/, 'URLs cut to their origin');
  // One node answering is enough; a silent second one is only a warning later.
  const started = spawnTracked(
    process.execPath,
    [BIN, '--config', localConfig('one.json', [rpc.url, 'http://127.0.0.1:1']), '--db', db],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, RELAYER_DB: '', RELAYER_SIGNER_KEY: KEY },
    },
  );
  // A start that fails its checks must not outlive the test (its process would keep this file's alive).
  try {
    const [, url] = await waitForStart(started, /relayer-worker ops on (http:\/\/\S+)/);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.match(metrics, /^relayer_worker_signer_balance_wei\{destination="local"\} 5000000000000000$/m);
    assert.equal((await fetch(`${url}/ready`)).status, 200);
    const warned = started
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .find((line) => line.msg === 'signer balance low');
    assert.deepEqual(
      {
        level: warned?.level,
        destination: warned?.destination,
        balance_wei: warned?.balance_wei,
        floor_wei: warned?.floor_wei,
      },
      { level: 'warn', destination: 'local', balance_wei: '5000000000000000', floor_wei: '10000000000000000' },
    );
    started.child.kill('SIGTERM');
    assert.deepEqual(await once(started.child, 'exit'), [0, null]);
  } finally {
    if (started.child.exitCode === null && started.child.signalCode === null) await stopProcess(started.child);
  }
});

test('docs/delivery.md#start-up-checks-and-heartbeat: a node that turns to another chain makes /ready 503 wrong_chain', async () => {
  // It stays so until the node is back, while the worker runs; the heartbeat names the queue depth.
  const chain = { chainId: 31337 };
  const node = await startFakeRpcServer(new Map(), chain);
  const db = join(dir, 'turns.db');
  await (await openSqliteStore(db)).close();
  const config = join(dir, 'turns.json');
  writeFileSync(
    config,
    JSON.stringify(
      noGasGate({
        chains: {
          local: { domainId: 31337, chainId: 31337, mailbox: `0x${'00'.repeat(19)}01`, rpcUrls: [{ http: node.url }] },
        },
        // The one real timer here: a heartbeat a second, instead of a minute.
        worker: { port: 0, heartbeatSeconds: 1 },
      }),
    ),
  );
  const worker = spawnTracked(process.execPath, [BIN, '--config', config, '--db', db], {
    cwd: REPO_ROOT,
    env: { ...process.env, RELAYER_DB: '', RELAYER_SIGNER_KEY: KEY },
  });
  try {
    const [, url] = await waitForStart(worker, /relayer-worker ops on (http:\/\/\S+)/);
    const readyIs = async (status: number, body: string) => {
      for (let i = 0; i < 100; i++) {
        const res = await fetch(`${url}/ready`);
        if (res.status === status && (await res.text()) === body) return;
        await delay(100);
      }
      assert.fail(`/ready never answered ${status} ${body.trim()}: ${worker.output()}`);
    };
    await readyIs(200, 'ready\n');
    chain.chainId = 1;
    await readyIs(503, 'wrong_chain\n');
    await waitForLine(worker, /"msg":"rpc node of another chain: not ready until it is fixed"/, 5_000);
    chain.chainId = 31337;
    await readyIs(200, 'ready\n');
    const [heartbeat] = await waitForLine(worker, /"msg":"heartbeat".*/, 5_000);
    assert.match(heartbeat, /"queue_depth":0,"in_flight":0,"destinations":\["local"\]/);
  } finally {
    await stopProcess(worker.child);
    await node.close();
  }
});

test('docs/operations.md#the-sqlite-store-worker-thread-group-commit-locks: a dead SQLite thread makes the worker exit 1', async () => {
  // A worker whose SQLite thread dies logs one error line and exits 1 for its supervisor.
  const config = join(dir, 'dies.json');
  writeFileSync(
    config,
    JSON.stringify(
      noGasGate({
        chains: {
          local: {
            domainId: 31337,
            chainId: 31337,
            mailbox: `0x${'00'.repeat(19)}01`,
            // A node of the chain for the start-up check; the worker needs nothing else while the outbox is empty.
            rpcUrls: [{ http: rpc.url }],
          },
        },
        worker: { port: 0, pollMs: 50 },
      }),
    ),
  );
  await (await openSqliteStore(join(dir, 'dies.db'))).close();
  const clean = { ...process.env };
  delete clean.RELAYER_DB;
  const child = spawnTracked(
    process.execPath,
    [
      '--import',
      new URL('../helpers/harness/worker-kill.ts', import.meta.url).pathname,
      BIN,
      '--config',
      config,
      '--db',
      join(dir, 'dies.db'),
    ],
    { cwd: REPO_ROOT, env: { ...clean, RELAYER_SIGNER_KEY: KEY } },
  );
  const exited = once(child.child, 'exit') as Promise<[number | null]>;
  try {
    await waitForStart(child, /relayer-worker ops on /);
    child.child.kill('SIGUSR2');
    const ended = await Promise.race([exited, delay(20_000, undefined, { ref: false })]);
    assert.equal(ended?.[0], 1, `exits 1 (not still running): ${child.output()}`);
    const errors = child
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .filter((line) => line.level === 'error' && line.msg === 'the store stopped; exiting');
    assert.equal(errors.length, 1, child.output());
    assert.doesNotMatch(child.output(), new RegExp(KEY.slice(2)), 'the key is never printed');
  } finally {
    if (child.child.exitCode === null && child.child.signalCode === null) await stopProcess(child.child);
  }
});
