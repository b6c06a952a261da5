/**
 * bin/relayer-server as an operator runs it (docs/design.md#the-server-binary): flags, exit
 * codes, the readiness line, a real SQLite file that survives a restart, and a graceful shutdown
 * that finishes requests in flight. Receipts come from a JSON-RPC fake on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { REQUIRED_NODE } from '../../bin/lib/node-version.ts';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { spawnTracked } from '../helpers/harness/processes.ts';
import { startFakeRpcServer, type FakeRpcServer } from '../helpers/fakes/rpc.ts';
import { rpcReceipt, transferLogs, txHash } from '../helpers/fixtures/builders.ts';
import { fileChains } from '../helpers/fixtures/config.ts';
import { httpRequest, postJson } from '../helpers/harness/http.ts';
import { relayerServerRefusal, runRelayerServer, startRelayerServer } from '../helpers/harness/server.ts';

const dir = mkdtempSync(join(tmpdir(), 'relayer-bin-'));
let rpc: FakeRpcServer;

before(async () => {
  rpc = await startFakeRpcServer();
});
after(async () => {
  await rpc.close();
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

/** `relayer-server --help`, run once for the two tests that read it (a read-only result). */
let helpRun: Promise<{ code: number | null; output: string }> | undefined;
const runHelp = () => (helpRun ??= runRelayerServer(['--help']));

function goodConfig(db: string): unknown {
  return {
    chains: fileChains(rpc.url),
    db,
  };
}

describe('bin/relayer-server flags and exit codes (docs/design.md#the-server-binary)', () => {
  test('--help prints usage and exits 0', async () => {
    const { code, output } = await runHelp();
    assert.equal(code, 0);
    assert.match(output, /Usage: relayer-server/);
    assert.match(output, /--config FILE/);
  });

  test('docs/design.md#configuration: an invalid config exits 2 before listening and names the key', async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['unknown top-level key', { chains: {}, bogus: 1 }, /bogus/],
      ['bad mailbox', { chains: { eth: { domainId: 1, mailbox: '0x12', rpcUrls: [] } } }, /chains\.eth\.mailbox/],
      ['wrong type', { relayApi: { dedupCapacity: 'many' } }, /relayApi\.dedupCapacity/],
      ['not JSON', '{"chains":', /not valid JSON/],
    ];
    // The first through the process (exit code and stderr); the others through the checks its start
    // runs first, in this process (relayerServerRefusal): one path prints and exits for all of them.
    for (const [i, [name, config, pattern]] of cases.entries()) {
      const args = ['--config', writeConfig(`bad-${i}.json`, config)];
      const { code, output } = i === 0 ? await runRelayerServer(args) : await relayerServerRefusal(args);
      assert.equal(code, 2, name);
      assert.match(output ?? '', pattern, name);
      assert.doesNotMatch(output ?? '', /listening on/, name);
    }
    const missing = await relayerServerRefusal(['--config', join(dir, 'does-not-exist.json')]);
    assert.equal(missing.code, 2);
  });

  test('bad flags exit 2', async () => {
    // An unknown flag through the process, the rest in this process (relayerServerRefusal).
    const flags = [['--nope'], ['--port', 'x'], ['--port', '70000'], ['--log-level', 'loud'], ['positional']];
    for (const [i, args] of flags.entries()) {
      const run = i === 0 ? await runRelayerServer(args) : await relayerServerRefusal(args);
      assert.equal(run.code, 2, args.join(' '));
    }
  });

  test('a port already in use exits 1 with a clear message', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { code, output } = await runRelayerServer(['--port', String(port), '--db', ':memory:']);
      assert.equal(code, 1);
      assert.match(output, /EADDRINUSE/);
    } finally {
      blocker.close();
    }
  });
});

describe('bin/relayer-server serving (docs/design.md#the-server-binary, #storage)', () => {
  test('readiness line, liveness, relay and merkle writes survive a restart on the same database file', async (t) => {
    const db = join(dir, 'restart.db');
    const config = writeConfig('good.json', goodConfig(db));
    const hash = txHash(0xabc);
    rpc.table.set(hash, rpcReceipt(hash, transferLogs(2)));

    const first = await startRelayerServer(t, ['--config', config]);
    assert.equal((await httpRequest(first.url, { path: '/relay' })).text, 'up');
    const res = await postJson(first.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(res.status, 200, res.text);
    const relayed: Array<{ message_id: string }> = res.json().messages;
    assert.equal(relayed.length, 2);
    const merkle = await postJson(first.url, '/merkle_tree_insertions', {
      merkle_tree_insertions: [
        { chain: 1, insertion_block_number: 5, leaf_index: 0, message_id: relayed[0].message_id },
      ],
    });
    assert.deepEqual(merkle.json(), { count: 1, skipped: [] });
    assert.equal(await first.stop(), 0, first.output());

    const second = await startRelayerServer(t, ['--config', config]);
    const list = await httpRequest(second.url, {
      path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0',
    });
    assert.deepEqual(list.json().merkle_tree_insertions, [
      { chain: 1, insertion_block_number: 5, leaf_index: 0, message_id: relayed[0].message_id },
    ]);
    assert.equal(await second.stop(), 0);
    const store = await openSqliteStore(db);
    try {
      for (const m of relayed)
        assert.ok(await store.outbox.get(m.message_id), 'acknowledged message is in the outbox after restart');
    } finally {
      await store.close();
    }
  });

  test('docs/api.md#get-messages: RELAYER_ADMIN_TOKEN turns GET /messages on, is never printed; a malformed one exits 2', async (t) => {
    // The variable wins over the config.
    const token = 'from-the-environment-0123456789';
    const server = await startRelayerServer(t, ['--db', ':memory:'], {
      env: { ...process.env, RELAYER_ADMIN_TOKEN: token },
    });
    assert.equal((await httpRequest(server.url, { path: '/messages' })).status, 401);
    const listed = await httpRequest(server.url, { path: '/messages', headers: { authorization: `Bearer ${token}` } });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.json(), { messages: [] });
    assert.ok(!server.output().includes(token), 'the token is not printed');
    const off = await startRelayerServer(t, ['--db', ':memory:']);
    assert.equal((await httpRequest(off.url, { path: '/messages' })).status, 404, 'never open without a token');
    const bad = await runRelayerServer(['--db', ':memory:', '--port', '0'], {
      env: { ...process.env, RELAYER_ADMIN_TOKEN: 'short' },
    });
    assert.equal(bad.code, 2);
    assert.match(bad.output, /RELAYER_ADMIN_TOKEN must be 16 to 1024 visible ASCII characters/);
    assert.ok(!bad.output.includes('short'));
  });

  test('flags override the config file (--db, --host)', async (t) => {
    const fromConfig = join(dir, 'ignored.db');
    const config = writeConfig('override.json', goodConfig(fromConfig));
    const server = await startRelayerServer(t, ['--config', config, '--db', ':memory:', '--host', '127.0.0.1']);
    assert.equal((await httpRequest(server.url, { path: '/relay' })).status, 200);
    assert.match(server.output(), /"db":":memory:"/);
  });

  test('SIGTERM finishes a request in flight, refuses new connections, closes the database and exits 0', async (t) => {
    const db = join(dir, 'shutdown.db');
    const config = writeConfig('shutdown.json', goodConfig(db));
    const hash = txHash(0xdef);
    rpc.table.set(hash, null); // not mined yet: the server polls
    const server = await startRelayerServer(t, ['--config', config]);
    const before = rpc.requests();
    const inFlight = postJson(server.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    while (rpc.requests() === before) await new Promise((r) => setTimeout(r, 20));
    server.child.kill('SIGTERM');
    await server.waitForLine(/shutting down/);
    await assert.rejects(httpRequest(server.url, { path: '/relay' }), 'no new connections once shutting down');
    rpc.table.set(hash, rpcReceipt(hash, transferLogs(1)));
    const res = await inFlight;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json().messages.length, 1);
    assert.equal((await server.exited).code, 0);
    const store = await openSqliteStore(db);
    try {
      assert.equal(await store.outbox.depth(), 1);
    } finally {
      await store.close();
    }
  });
});

describe('docs/configuration.md#the-configuration-file: start-up errors that say what to do', () => {
  const DIST_BIN = new URL('../../dist/bin/relayer-server.js', import.meta.url).pathname;
  const withoutLogLevel = () => {
    const env = { ...process.env };
    delete env.RELAYER_LOG_LEVEL;
    return env;
  };

  test('an invalid RELAYER_LOG_LEVEL is reported as RELAYER_LOG_LEVEL, an invalid flag as --log-level', async () => {
    const fromEnv = await runRelayerServer(['--db', ':memory:'], {
      env: { ...withoutLogLevel(), RELAYER_LOG_LEVEL: 'loud' },
    });
    assert.equal(fromEnv.code, 2, fromEnv.output);
    assert.match(fromEnv.output, /RELAYER_LOG_LEVEL must be one of debug, info, warn, error, silent, got "loud"/);
    assert.doesNotMatch(fromEnv.output, /--log-level must/);
    // The environment needs the process; the flag is read by the same code, checked in this process.
    const fromFlag = await relayerServerRefusal(['--db', ':memory:', '--log-level', 'loud'], {
      env: withoutLogLevel(),
    });
    assert.equal(fromFlag.code, 2);
    assert.match(fromFlag.output ?? '', /--log-level must be one of/);
    assert.doesNotMatch(fromFlag.output ?? '', /RELAYER_LOG_LEVEL must/);
  });

  test('a config file that cannot be read: the path resolved, the OS error, and where npm ran the server', async () => {
    const missing = await runRelayerServer(['--config', 'no-such-relayer.json'], { cwd: dir });
    assert.equal(missing.code, 2);
    assert.match(
      missing.output,
      new RegExp(
        `ENOENT: no such file or directory \\(resolved to ${join(dir, 'no-such-relayer.json').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\)`,
      ),
    );
    assert.doesNotMatch(missing.output, /\n\s+at /, 'no stack trace');
    // The two below in this process (relayerServerRefusal), whose directory is not tmpdir() either.
    const viaNpm = await relayerServerRefusal(['--config', 'no-such-relayer.json'], {
      env: { ...process.env, INIT_CWD: tmpdir() },
    });
    assert.match(viaNpm.output ?? '', /npm runs the server in .*, not in .*: give an absolute path/);
    const isDirectory = await relayerServerRefusal(['--config', dir]);
    assert.equal(isDirectory.code, 2);
    assert.match(isDirectory.output ?? '', /EISDIR/);
  });

  test('--db in a directory that does not exist yet: the directory is created (README: --db ./data/relayer.db)', async (t) => {
    const fresh = join(dir, 'fresh-clone');
    mkdirSync(fresh, { recursive: true });
    const config = writeConfig('fresh.json', goodConfig(':memory:'));
    const server = await startRelayerServer(t, ['--config', config, '--db', './data/nested/relayer.db'], {
      cwd: fresh,
    });
    assert.equal((await httpRequest(server.url, { path: '/relay' })).status, 200);
    assert.ok(existsSync(join(fresh, 'data', 'nested', 'relayer.db')), 'database file created under the new directory');
    assert.equal(await server.stop(), 0);
    // A directory that cannot be made: exit 1 naming what is in the way.
    const blocker = writeConfig('a-file', 'not a directory');
    // (in this process: relayerServerRefusal opens the store as the bin does)
    const blocked = await relayerServerRefusal(['--config', config, '--db', join(blocker, 'relayer.db')], {
      openStore: true,
    });
    assert.equal(blocked.code, 1, blocked.output ?? 'opened');
    assert.match(
      blocked.output ?? '',
      /cannot create the directory of database .*a-file\/relayer\.db: (EEXIST|ENOTDIR)/,
    );
  });

  test('--help lists every route of docs/openapi.json and the routes of the README', async () => {
    const { code, output } = await runHelp();
    assert.equal(code, 0);
    const openapi = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));
    for (const [path, operations] of Object.entries(openapi.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(operations).filter((m) =>
        ['get', 'post', 'put', 'delete', 'patch'].includes(m),
      )) {
        assert.match(
          output,
          new RegExp(`${method.toUpperCase()}\\s+${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`),
          `${method} ${path}`,
        );
      }
    }
    for (const route of [
      'GET  /ready',
      'GET  /chains',
      'GET  /relay/{message_id}',
      'GET  /relay?origin_chain=&tx_hash=',
    ]) {
      assert.ok(output.includes(route), route);
    }
  });

  test('the built bins on a Node older than 22.13 print one line naming the command and the required version', async () => {
    // dist/bin/relayer-server.js and dist/bin/relayer-worker.js.
    assert.ok(existsSync(DIST_BIN), 'dist is built (npm test builds it before the tests)');
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    assert.equal(pkg.engines.node, `>=${REQUIRED_NODE}`, 'bin/lib/node-version.ts agrees with package.json engines');
    const check = (result: { code: number | null; output: string }, what: string, program = 'relayer-server') => {
      assert.equal(result.code, 1, `${what}: ${result.output}`);
      assert.equal(result.output.trim().split('\n').length, 1, `${what}: one line: ${result.output}`);
      assert.match(result.output, new RegExp(`^${program}: Node\\.js >= 22\\.13 is required .*this is v20\\.`), what);
      assert.match(result.output, program === 'relayer-worker' ? /`npm run worker`/ : /`npm start`/, what);
      assert.doesNotMatch(result.output, /\bat |ERR_|node:internal/, `${what}: no stack trace`);
    };
    // This Node pretending to be v20 (always possible), then a real old Node when the machine has one
    // (the system node of the development machine is v20).
    const pretend =
      'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.20.2"});Object.defineProperty(process,"version",{value:"v20.20.2"})';
    const proc = spawnTracked(process.execPath, ['--import', pretend, DIST_BIN, '--help']);
    const [code] = (await once(proc.child, 'exit')) as [number | null];
    check({ code, output: proc.output() }, 'simulated v20');
    const workerBin = new URL('../../dist/bin/relayer-worker.js', import.meta.url).pathname;
    const worker = spawnTracked(process.execPath, ['--import', pretend, workerBin, '--help']);
    const [workerCode] = (await once(worker.child, 'exit')) as [number | null];
    check({ code: workerCode, output: worker.output() }, 'relayer-worker, simulated v20', 'relayer-worker');
    const old = ['/usr/bin/node', '/usr/local/bin/node'].find((candidate) => {
      if (!existsSync(candidate)) return false;
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
      const [major, minor] = version.slice(1).split('.').map(Number);
      return major < 22 || (major === 22 && minor < 13);
    });
    if (old) {
      const real = spawnTracked(old, [DIST_BIN, '--help']);
      const [realCode] = (await once(real.child, 'exit')) as [number | null];
      check({ code: realCode, output: real.output() }, old);
    }
  });
});
