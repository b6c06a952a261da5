/**
 * Delivery end to end (issue 15.3, DESIGN.md §11): a transfer through Hyperlane's real
 * TokenBridgeCctpV2 on one anvil node, POST /relay to the real bin/relayer-server.ts, and the
 * example delivery worker (scripts/delivery-worker.ts) claiming it from the server's SQLite file
 * and calling Mailbox.process on a second anvil node through the bridge's CCTP ISM.
 *
 * A worker killed mid-delivery is a real child process killed with SIGKILL while its process()
 * transaction waits in the destination node's pool (mining held). The second worker runs in the
 * test process on the same file with a fake clock past the first lease (no real waiting).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { Address, Hash, Hex } from 'viem';
import { openStore } from '../../lib/sqlite/index.ts';
import { MAILBOX_ABI, type Destination } from '../../scripts/delivery/destination.ts';
import { createDeliveryWorker, type DeliveryResult } from '../../scripts/delivery/worker.ts';
import { createFakeClock, type FakeClock } from '../helpers/fake-clock.ts';
import { sharedPostgresUrl } from '../helpers/postgres.ts';
import { sendBridgeTransfer } from './cctp-bridge.ts';
import { connectChain } from './chain.ts';
import {
  deliveryDestination,
  DESTINATION_DOMAIN,
  ORIGIN_CHAIN_NAME,
  startTwoChains,
  twoChainRelayerConfig,
  type TwoChains,
} from './fixture.ts';
import { mailboxLogs } from './hyperlane.ts';
import { onExitCleanup, spawnTracked, stopProcess, waitForLine, type Tracked } from './processes.ts';
import { launchRelayerServer, REPO_ROOT, type RelayerProcess } from '../helpers/server.ts';

const WORKER = join(REPO_ROOT, 'scripts', 'delivery-worker.ts');
const RECIPIENT: Address = '0x00000000000000000000000000000000000000b0';
/** The child workers' lease; the in-process worker's fake clock starts past it. */
const LEASE_MS = 60_000;
const RETRY_DELAY_MS = 5_000;

let two: TwoChains;
let server: RelayerProcess;
let dir: string;
let removeDir: () => void;
let configFile: string;
let dbFile: string;
let amount = 1_000_000n;

/** A fresh transfer (a new amount each time), relayed to `via`; returns its message id and tx hash. */
async function transferAndRelay(via: RelayerProcess = server): Promise<{ id: Hex; txHash: Hash }> {
  const hash = await sendBridgeTransfer(two.origin.chain, two.route, { destination: DESTINATION_DOMAIN, recipient: RECIPIENT, amount: amount++ });
  const receipt = await two.origin.chain.receipt(hash);
  const { ids } = mailboxLogs(receipt, two.origin.hyperlane.mailbox);
  assert.equal(ids.length, 1);
  const res = await fetch(`${via.url}/relay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin_chain: ORIGIN_CHAIN_NAME, tx_hash: hash }),
  });
  const body = (await res.json()) as { messages: { message_id: string }[] };
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.deepEqual(body.messages.map((m) => m.message_id), [ids[0].toLowerCase()]);
  return { id: ids[0].toLowerCase() as Hex, txHash: hash };
}

/** The message as a bridge UI sees it: GET /relay/{id} on the server. */
async function status(id: string, via: RelayerProcess = server): Promise<Record<string, unknown>> {
  const res = await fetch(`${via.url}/relay/${id}`);
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.equal(body.message_id, id);
  return body;
}

/** The outbox row itself (fields the HTTP view does not show: retryAt). */
async function record(id: string) {
  const store = await openStore(dbFile);
  try {
    const r = await store.outbox.get(id);
    assert.ok(r, `no outbox row for ${id}`);
    return r;
  } finally {
    await store.close();
  }
}

async function delivered(id: Hex): Promise<boolean> {
  const { chain, hyperlane } = two.destination;
  return chain.publicClient.readContract({ address: hyperlane.mailbox, abi: MAILBOX_ABI, functionName: 'delivered', args: [id] });
}

/** Every ProcessId the destination Mailbox logged for `id`: one per delivery. */
async function deliveries(id: Hex): Promise<Hash[]> {
  const { chain, hyperlane } = two.destination;
  const logs = await chain.publicClient.getContractEvents({ address: hyperlane.mailbox, abi: MAILBOX_ABI, eventName: 'ProcessId', args: { messageId: id }, fromBlock: 0n });
  return logs.map((l) => l.transactionHash);
}

function startWorker(...args: string[]): Tracked {
  return spawnTracked(process.execPath, [WORKER, '--config', configFile, '--db', dbFile, '--lease-ms', String(LEASE_MS), ...args], { cwd: REPO_ROOT });
}

/** Runs a child worker with `--once` to its end; resolves with its exit code. */
async function runWorkerOnce(db: string): Promise<{ code: number | null; output: string }> {
  const child = spawnTracked(process.execPath, [WORKER, '--config', configFile, '--db', db, '--once'], { cwd: REPO_ROOT });
  const [code] = (await once(child.child, 'exit')) as [number | null];
  return { code, output: child.output() };
}

/**
 * A worker in this process on the same file. Its fake clock starts past every lease a child took;
 * `destination` replaces the real destination node (e.g. with one that does not answer).
 */
async function inProcessWorker(options: { log?: (line: string) => void; destination?: Destination; clock?: FakeClock } = {}) {
  const clock = options.clock ?? createFakeClock(Date.now() + LEASE_MS + 1_000);
  const store = await openStore(dbFile, { clock });
  const worker = createDeliveryWorker({
    outbox: store.outbox,
    destinations: new Map([[DESTINATION_DOMAIN, options.destination ?? deliveryDestination(two.destination)]]),
    origins: new Map([[ORIGIN_CHAIN_NAME, { publicClient: two.origin.chain.publicClient, transmitters: [two.route.origin.transmitter] }]]),
    clock,
    leaseMs: LEASE_MS,
    retryDelayMs: RETRY_DELAY_MS,
    log: options.log,
  });
  return { worker, clock, close: async () => store.close() };
}

/** Starts a child worker and SIGKILLs it once its process() transaction is in the pool (mining held). */
async function killWorkerMidDelivery(id: string): Promise<Hash> {
  await two.destination.chain.setAutomine(false);
  const child = startWorker('--once');
  const [, sent] = await waitForLine(child, new RegExp(`sent ${id} process (0x[0-9a-f]{64})`), 20_000);
  await stopProcess(child.child, 0, 'SIGKILL');
  assert.equal(child.child.signalCode, 'SIGKILL');
  return sent as Hash;
}

describe('e2e: delivery worker from the relayer outbox to a second chain', { timeout: 120_000 }, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'relayer-delivery-'));
    removeDir = onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    dbFile = join(dir, 'relayer.db');
    two = await startTwoChains();
    const config = twoChainRelayerConfig(two, dbFile);
    configFile = join(dir, 'relayer.json');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(configFile, JSON.stringify(config));
    server = await launchRelayerServer(['--config', configFile, '--host', '127.0.0.1', '--db', dbFile]);
  });
  after(async () => {
    await server?.stop();
    await two?.stop();
    removeDir?.();
  });

  test('queued → delivered: the worker (a child process on the server\'s SQLite file) calls Mailbox.process through the CCTP ISM', async () => {
    const { id } = await transferAndRelay();
    const before = await status(id);
    assert.equal(before.status, 'queued');
    assert.equal(before.destination_tx_hash, null);
    assert.equal(await delivered(id), false);

    const worker = await runWorkerOnce(dbFile);
    assert.equal(worker.code, 0, worker.output);

    const after = await status(id);
    assert.equal(after.status, 'delivered', worker.output);
    assert.equal(after.attempts, 1);
    assert.equal(await delivered(id), true);
    assert.deepEqual(await deliveries(id), [after.destination_tx_hash]);
    const receipt = await two.destination.chain.receipt(after.destination_tx_hash as Hash);
    assert.equal(receipt.status, 'success');
  });

  test('killed after claiming, before its transaction reached the chain: the lease expires and another worker delivers it once', async () => {
    const { id } = await transferAndRelay();
    const sent = await killWorkerMidDelivery(id);
    // As if the worker died before its transaction left: the node never mines it.
    await two.destination.chain.rpc('anvil_dropTransaction', [sent]);
    await two.destination.chain.setAutomine(true);
    const held = await status(id);
    assert.equal(held.status, 'delivering');
    assert.equal(held.attempts, 1);

    const second = await inProcessWorker();
    try {
      const results = await second.worker.runOnce();
      assert.equal(results.length, 1);
      const [r] = results as Extract<DeliveryResult, { txHash: Hash }>[];
      assert.equal(r.outcome, 'delivered');
      assert.equal(r.recorded, true);
      const after = await status(id);
      assert.equal(after.status, 'delivered');
      assert.equal(after.attempts, 2);
      assert.equal(after.destination_tx_hash, r.txHash);
      assert.deepEqual(await deliveries(id), [r.txHash], 'exactly one delivery on chain');
      assert.deepEqual(await second.worker.runOnce(), [], 'nothing left to claim');
    } finally {
      await second.close();
    }
  });

  test('killed after sending process(): the second delivery reverts "already delivered", is confirmed with delivered(id) and recorded with the first transaction', async () => {
    const { id } = await transferAndRelay();
    const first = await killWorkerMidDelivery(id);
    const lines: string[] = [];
    const second = await inProcessWorker({ log: (line) => lines.push(line) });
    try {
      // The second worker runs while the first transaction still waits in the pool (the node
      // estimates on the mined state, so its process() is sent too); mine once it is sent, so
      // both land in one block, the killed worker's first.
      const running = second.worker.runOnce();
      const sentLine = new RegExp(`^sent ${id} process (0x[0-9a-f]{64})$`);
      await waitFor(() => lines.some((l) => sentLine.test(l)));
      await two.destination.chain.mineBlock();
      await two.destination.chain.setAutomine(true);
      const results = await running;
      const secondTx = lines.map((l) => l.match(sentLine)?.[1]).find(Boolean) as Hash;
      const reverted = await two.destination.chain.receipt(secondTx);
      assert.equal(reverted.status, 'reverted', 'the second process() reverted on chain: already delivered');
      assert.equal(results.length, 1);
      const [r] = results as Extract<DeliveryResult, { txHash: Hash }>[];
      assert.equal(r.outcome, 'already-delivered', lines.join('\n'));
      assert.equal(r.txHash, first, 'the transaction that delivered it is the killed worker\'s');
      assert.equal(await delivered(id as Hex), true);
      assert.deepEqual(await deliveries(id as Hex), [first], 'exactly one delivery on chain');
      const after = await status(id);
      assert.equal(after.status, 'delivered');
      assert.equal(after.destination_tx_hash, first);
    } finally {
      await two.destination.chain.setAutomine(true);
      await second.close();
    }
  });
  test('a destination node that does not answer: markFailed with last_error and retryAt; not claimable before it; the retry delivers', async () => {
    const { id } = await transferAndRelay();
    const clock = createFakeClock(Date.now() + 1_000);
    // Nothing listens on port 1 of the loopback: every call to this "node" fails.
    const dead = connectChain('http://127.0.0.1:1', two.destination.anvil.chainId);
    const down = await inProcessWorker({
      clock,
      destination: { ...deliveryDestination(two.destination), publicClient: dead.publicClient, wallet: dead.wallet },
    });
    try {
      const [r] = await down.worker.runOnce();
      assert.equal(r.outcome, 'retry');
      const failed = await record(id);
      assert.equal(failed.status, 'queued');
      assert.equal(failed.attempts, 1);
      assert.match(String(failed.lastError), /fetch failed|HTTP request failed/i);
      assert.equal(failed.retryAt, clock.now() + RETRY_DELAY_MS);
      const view = await status(id);
      assert.equal(view.status, 'queued');
      assert.ok(typeof view.last_error === 'string' && view.last_error.length > 0, 'GET /relay/{id} shows the error');
      assert.equal(await delivered(id), false);
      assert.deepEqual(await down.worker.runOnce(), [], 'not claimable before retryAt');
    } finally {
      await down.close();
    }
    await clock.advance(RETRY_DELAY_MS);
    const up = await inProcessWorker({ clock });
    try {
      const [r] = await up.worker.runOnce();
      assert.equal(r.outcome, 'delivered');
      const done = await status(id);
      assert.equal(done.status, 'delivered');
      assert.equal(done.attempts, 2);
      assert.equal(await delivered(id), true);
    } finally {
      await up.close();
    }
  });
  test('the same through PostgreSQL: the server and the worker on one postgres:// database', async () => {
    // A database of its own on the run's PostgreSQL server: the relayer's tables and nobody else's.
    const shared = await sharedPostgresUrl();
    const admin = new pg.Pool({ connectionString: shared, max: 1 });
    const name = `delivery_${randomBytes(6).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(shared);
    url.pathname = `/${name}`;
    let pgServer: RelayerProcess | undefined;
    try {
      pgServer = await launchRelayerServer(['--config', configFile, '--host', '127.0.0.1', '--db', url.href], { startTimeoutMs: 30_000 });
      const { id } = await transferAndRelay(pgServer);
      assert.equal((await status(id, pgServer)).status, 'queued');
      assert.equal(await delivered(id), false);

      const worker = await runWorkerOnce(url.href);
      assert.equal(worker.code, 0, worker.output);
      if (url.password) assert.ok(!worker.output.includes(url.password), 'the database password is never printed');

      const after = await status(id, pgServer);
      assert.equal(after.status, 'delivered', worker.output);
      assert.equal(after.attempts, 1);
      assert.equal(await delivered(id), true);
      assert.deepEqual(await deliveries(id), [after.destination_tx_hash]);
    } finally {
      await pgServer?.stop();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});

/** Polls a condition the test cannot await directly (another component's log line). */
async function waitFor(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
