/**
 * bin/relayer-server as an operator runs it (DESIGN.md §6): flags, exit codes, the readiness line,
 * a real SQLite file that survives a restart, and a graceful shutdown that finishes requests in
 * flight. Receipts come from a JSON-RPC fake on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openStore } from '../lib/sqlite/index.ts';
import { spawnTracked, stopProcess, waitForLine, type Tracked } from './e2e/processes.ts';
import { startFakeRpcServer, type FakeRpcServer } from './helpers/fake-rpc.ts';
import { CCTP_V2_TRANSMITTER, MAILBOX, rpcReceipt, transferLogs, txHash } from './helpers/fixtures.ts';
import { httpRequest, postJson } from './helpers/http.ts';

const BIN = new URL('../bin/relayer-server.ts', import.meta.url).pathname;
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

function goodConfig(db: string): unknown {
  return {
    chains: {
      ethereum: { domainId: 1, chainId: 1, mailbox: MAILBOX, cctpMessageTransmitter: CCTP_V2_TRANSMITTER, rpcUrls: [{ http: rpc.url }] },
      base: { domainId: 8453, chainId: 8453, mailbox: '0xeA87ae93Fa0019a82A727bfd3eBd1cFCa8f64f1D', rpcUrls: [{ http: rpc.url }] },
    },
    db,
  };
}

async function run(args: string[]): Promise<{ code: number | null; output: string }> {
  const proc = spawnTracked(process.execPath, [BIN, ...args]);
  const [code] = (await once(proc.child, 'exit')) as [number | null];
  return { code, output: proc.output() };
}

async function startServer(args: string[]): Promise<{ proc: Tracked; url: string }> {
  const proc = spawnTracked(process.execPath, [BIN, '--port', '0', ...args]);
  const match = await waitForLine(proc, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 15_000);
  return { proc, url: match[1] };
}

describe('bin/relayer-server flags and exit codes (DESIGN 6)', () => {
  test('--help prints usage and exits 0', async () => {
    const { code, output } = await run(['--help']);
    assert.equal(code, 0);
    assert.match(output, /Usage: relayer-server/);
    assert.match(output, /--config FILE/);
  });

  test('DESIGN 5: an invalid config exits 2 before listening and names the key', async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['unknown top-level key', { chains: {}, bogus: 1 }, /bogus/],
      ['bad mailbox', { chains: { eth: { domainId: 1, mailbox: '0x12', rpcUrls: [] } } }, /chains\.eth\.mailbox/],
      ['wrong type', { relayApi: { dedupCapacity: 'many' } }, /relayApi\.dedupCapacity/],
      ['not JSON', '{"chains":', /not valid JSON/],
    ];
    for (const [name, config, pattern] of cases) {
      const { code, output } = await run(['--config', writeConfig('bad.json', config)]);
      assert.equal(code, 2, name);
      assert.match(output, pattern, name);
      assert.doesNotMatch(output, /listening on/, name);
    }
    const missing = await run(['--config', join(dir, 'does-not-exist.json')]);
    assert.equal(missing.code, 2);
  });

  test('bad flags exit 2', async () => {
    for (const args of [['--port', 'x'], ['--port', '70000'], ['--nope'], ['--log-level', 'loud'], ['positional']]) {
      assert.equal((await run(args)).code, 2, args.join(' '));
    }
  });

  test('a port already in use exits 1 with a clear message', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { code, output } = await run(['--port', String(port), '--db', ':memory:']);
      assert.equal(code, 1);
      assert.match(output, /EADDRINUSE/);
    } finally {
      blocker.close();
    }
  });
});

describe('bin/relayer-server serving (DESIGN 6, 7)', () => {
  test('readiness line, liveness, relay and merkle writes survive a restart on the same database file', async () => {
    const db = join(dir, 'restart.db');
    const config = writeConfig('good.json', goodConfig(db));
    const hash = txHash(0xabc);
    rpc.table.set(hash, rpcReceipt(hash, transferLogs(2)));

    const first = await startServer(['--config', config]);
    let relayed: Array<{ message_id: string }>;
    try {
      assert.equal((await httpRequest(first.url, { path: '/relay' })).text, 'up');
      const res = await postJson(first.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(res.status, 200, res.text);
      relayed = res.json().messages;
      assert.equal(relayed.length, 2);
      const merkle = await postJson(first.url, '/merkle_tree_insertions', {
        merkle_tree_insertions: [{ chain: 1, insertion_block_number: 5, leaf_index: 0, message_id: relayed[0].message_id }],
      });
      assert.deepEqual(merkle.json(), { count: 1, skipped: [] });
    } finally {
      assert.equal(await stopProcess(first.proc.child), 0, first.proc.output());
    }

    const second = await startServer(['--config', config]);
    try {
      const list = await httpRequest(second.url, { path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0' });
      assert.deepEqual(list.json().merkle_tree_insertions, [{ chain: 1, insertion_block_number: 5, leaf_index: 0, message_id: relayed[0].message_id }]);
    } finally {
      assert.equal(await stopProcess(second.proc.child), 0);
    }
    const store = openStore(db);
    try {
      for (const m of relayed) assert.ok(await store.outbox.get(m.message_id), 'acknowledged message is in the outbox after restart');
    } finally {
      store.close();
    }
  });

  test('flags override the config file (--db, --host)', async () => {
    const fromConfig = join(dir, 'ignored.db');
    const config = writeConfig('override.json', goodConfig(fromConfig));
    const { proc, url } = await startServer(['--config', config, '--db', ':memory:', '--host', '127.0.0.1']);
    try {
      assert.equal((await httpRequest(url, { path: '/relay' })).status, 200);
      assert.match(proc.output(), /"db":":memory:"/);
    } finally {
      await stopProcess(proc.child);
    }
  });

  test('SIGTERM finishes a request in flight, refuses new connections, closes the database and exits 0', async () => {
    const db = join(dir, 'shutdown.db');
    const config = writeConfig('shutdown.json', goodConfig(db));
    const hash = txHash(0xdef);
    rpc.table.set(hash, null); // not mined yet: the server polls
    const { proc, url } = await startServer(['--config', config]);
    const before = rpc.requests();
    const inFlight = postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    while (rpc.requests() === before) await new Promise((r) => setTimeout(r, 20));
    const exited = once(proc.child, 'exit');
    proc.child.kill('SIGTERM');
    await waitForLine(proc, /shutting down/, 5_000);
    await assert.rejects(httpRequest(url, { path: '/relay' }), 'no new connections once shutting down');
    rpc.table.set(hash, rpcReceipt(hash, transferLogs(1)));
    const res = await inFlight;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json().messages.length, 1);
    const [code] = (await exited) as [number];
    assert.equal(code, 0);
    const store = openStore(db);
    try {
      assert.equal(await store.outbox.depth(), 1);
    } finally {
      store.close();
    }
  });
});
