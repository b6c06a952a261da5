/**
 * The CCTP V2 route end to end with the shipped worker (docs/design.md#delivery): a
 * transfer through Hyperlane's real TokenBridgeCctpV2 on one anvil node, POST /relay to the real
 * bin/relayer-server.ts, and bin/relayer-worker.ts on the server's SQLite file delivering it on a
 * second node through the bridge's CCIP-read ISM: the router's OffchainLookup names the local
 * EIP-3668 gateway (test/helpers/chain/ccip-gateway.ts), which stands in for Hyperlane's CCTP attestation
 * service. Not-ready answers are polled without counting as failures; a gateway that answers
 * garbage, then 500, then nothing uses up maxAttempts and the message is failed.
 *
 * The second scenario (retries and the dead letter) is about delivery, not about the process: it
 * runs the same lib/worker createRelayerWorker the bin runs, from the same config file, in this
 * process on the server's database (a spawned worker costs its own Node start and viem load);
 * `relayer-worker requeue` is still the shipped command.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Address, Hash, Hex } from 'viem';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { launchRelayerServer, REPO_ROOT, type RelayerProcess } from '../helpers/harness/server-process.ts';
import { sendBridgeTransfer, setCcipReadUrls } from '../helpers/chain/cctp-bridge.ts';
import {
  DESTINATION_DOMAIN,
  ORIGIN_CHAIN_NAME,
  startTwoChains,
  twoChainRelayerConfig,
  type TwoChains,
} from '../helpers/chain/local-chains.ts';
import { mailboxLogs, processTransactions } from '../helpers/chain/hyperlane.ts';
import { spawnTracked } from '../helpers/harness/processes.ts';
import {
  devKey,
  killWorkers,
  startInProcessWorker,
  startWorker,
  until,
  WORKER_BIN,
} from '../helpers/chain/worker-chain.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { onExitCleanup } from '../helpers/harness/processes.ts';

const RECIPIENT: Address = '0x00000000000000000000000000000000000000b0';

let two: TwoChains;
let server: RelayerProcess;
let dir: string;
let removeDir: () => void;
let db: string;
let amount = 1_000_000n;

function writeConfig(worker: Record<string, unknown>): string {
  const path = join(dir, `relayer-${Object.keys(worker).join('-') || 'default'}.json`);
  const base = twoChainRelayerConfig(two, db);
  writeFileSync(path, JSON.stringify({ ...base, worker: { ...base.worker, port: 0, pollMs: 50, ...worker } }));
  return path;
}

async function transferAndRelay(): Promise<Hex> {
  const hash = await sendBridgeTransfer(two.origin.chain, two.route, {
    destination: DESTINATION_DOMAIN,
    recipient: RECIPIENT,
    amount: amount++,
  });
  const { ids } = mailboxLogs(await two.origin.chain.receipt(hash), two.origin.hyperlane.mailbox);
  assert.equal(ids.length, 1);
  const res = await fetch(`${server.url}/relay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin_chain: ORIGIN_CHAIN_NAME, tx_hash: hash }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return ids[0].toLowerCase() as Hex;
}

async function status(
  id: string,
): Promise<{ status: string; attempts: number; last_error: string | null; destination_tx_hash: string | null }> {
  const res = await fetch(`${server.url}/relay/${id}`);
  assert.equal(res.status, 200);
  return (await res.json()) as never;
}

const deliveries = (id: Hex): Promise<Hash[]> =>
  processTransactions(two.destination.chain, two.destination.hyperlane.mailbox, id);

async function requeueCli(config: string, id: string): Promise<{ code: number | null; output: string }> {
  const child = spawnTracked(process.execPath, [WORKER_BIN, 'requeue', id, '--config', config], { cwd: REPO_ROOT });
  const [code] = (await once(child.child, 'exit')) as [number | null];
  return { code, output: child.output() };
}

describe('e2e: relayer-worker on the CCTP V2 route, through CCIP-read', { timeout: 300_000 }, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'relayer-worker-cctp-'));
    removeDir = onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    db = join(dir, 'relayer.db');
    two = await startTwoChains();
    writeFileSync(join(dir, 'server.json'), JSON.stringify(twoChainRelayerConfig(two, db)));
    server = await launchRelayerServer(['--config', join(dir, 'server.json'), '--db', db]);
  });
  after(async () => {
    await killWorkers();
    await server?.stop();
    await two?.stop();
    removeDir?.();
  });

  test("transferRemote → POST /relay → the worker follows the router's OffchainLookup, then process() delivers the tokens", async () => {
    // The gateway answers pending twice first, which is not counted as a failure.
    const id = await transferAndRelay();
    assert.equal((await status(id)).status, 'queued');
    const asked = two.gateway.requests();
    two.gateway.respondInOrder([
      ['pending-500', 1],
      ['pending-404', 1],
    ]);
    const worker = await startWorker(
      writeConfig({ maxAttempts: 1, pendingRetrySeconds: 1, pendingRetryMaxSeconds: 1 }),
      { keyIndex: 1 },
    );
    try {
      await until(async () => (await status(id)).status === 'delivered', 'delivery', 60_000);
      const after = await status(id);
      assert.equal(after.attempts, 3, 'two pending polls and the delivery');
      assert.match(
        String(after.last_error),
        /^pending: .*\(failures 0\/1; pending since \S+, poll 2\)$/,
        'maxAttempts 1 was not used up by the pending polls',
      );
      assert.ok(!String(after.last_error).includes('127.0.0.1'), 'no gateway URL in last_error');
      assert.deepEqual(await deliveries(id), [after.destination_tx_hash]);
      assert.equal(two.gateway.requests() - asked, 3);
      const metrics = await (await fetch(`${worker.opsUrl}/metrics`)).text();
      assert.match(metrics, /^relayer_worker_retries_total\{destination="anvil2",kind="pending"\} 2$/m);
      assert.match(metrics, /^relayer_worker_delivered_total\{already="false",destination="anvil2"\} 1$/m);
      // The worker says which gateway it followed (the router's setUrls), without credentials or query.
      const followed = worker
        .output()
        .split('\n')
        .filter((l) => l.includes('"msg":"ccip-read"'))
        .map((l) => JSON.parse(l) as { url: string; outcome: string });
      assert.deepEqual(
        followed.map((f) => [f.url, f.outcome]),
        [
          [two.gateway.url, 'pending'],
          [two.gateway.url, 'pending'],
          [two.gateway.url, 'answer'],
        ],
      );
    } finally {
      assert.equal(await worker.stop(), 0, worker.output());
    }
    assert.ok(!worker.output().includes(devKey(1).slice(2)), 'the key is never printed');
  });

  test('a gateway that answers garbage, then 500, then nothing fails the message; requeued, it is delivered', async () => {
    // Each answer is a failure, retried with backoff, then the message is failed (maxAttempts 3);
    // relayer-worker requeue puts it back.
    const id = await transferAndRelay();
    two.gateway.respondInOrder([
      ['garbage', 1],
      ['error-500', 1],
      ['hang', 1],
    ]);
    const config = writeConfig({ maxAttempts: 3, retryBaseSeconds: 1, retryMaxSeconds: 1, ccipReadTimeoutSeconds: 1 });
    const store = await openSqliteStore(db);
    const worker = await startInProcessWorker(config, store.outbox, { keyIndex: 2 });
    try {
      await until(async () => (await status(id)).status === 'failed', 'the message failed', 60_000);
      const failed = await status(id);
      assert.equal(failed.attempts, 3);
      assert.match(String(failed.last_error), /^gateway: .*\(failures 3\/3, final\)$/);
      assert.ok(!String(failed.last_error).includes('127.0.0.1'), 'no gateway URL in last_error');
      assert.deepEqual(await deliveries(id), [], 'nothing sent');
      const metrics = worker.metrics();
      assert.match(metrics, /^relayer_worker_failed_total\{destination="anvil2",kind="gateway"\} 1$/m);
      assert.match(metrics, /^relayer_worker_retries_total\{destination="anvil2",kind="gateway"\} 2$/m);
      // The gateway answers again; an operator re-drives the dead letter and the running worker delivers it.
      const requeued = await requeueCli(config, id);
      assert.equal(requeued.code, 0, requeued.output);
      await until(async () => (await status(id)).status === 'delivered', 'the requeued message delivered', 60_000);
      const done = await status(id);
      assert.equal(done.attempts, 4);
      assert.deepEqual(await deliveries(id), [done.destination_tx_hash]);
    } finally {
      assert.equal(await worker.stop(), 0, 'nothing held after stop');
      await store.close();
    }
  });

  test('docs/hostile-recipients.md#ccip-read-to-public-addresses-only: CCIP-read URLs at a loopback address are refused unsent', async (t) => {
    // The router's URLs name a loopback canary, in every spelling: each is refused without a request
    // (forbidden, counted, final after maxAttempts) and the canary hears nothing; origins that are allowed
    // reach it.
    // The canary answers "not ready" to whatever reaches it, and counts.
    let heard = 0;
    const canary = createServer((_req, res) => {
      heard++;
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => canary.close(() => resolve())));
    const { port } = canary.address() as AddressInfo;
    const urls = ['127.0.0.1', '2130706433', '0x7f.1', '127.1', '[::ffff:127.0.0.1]', 'localhost'].map(
      (host) => `http://${host}:${port}/cctp/{sender}/{data}.json`,
    );
    const { chain } = two.destination;
    const router = two.route.destination.router;
    for (const url of urls) {
      await setCcipReadUrls(chain, router, [url]);
      const id = await transferAndRelay();
      const config = writeConfig({ maxAttempts: 2, retryBaseSeconds: 1, retryMaxSeconds: 1 });
      const store = await openSqliteStore(db);
      const worker = await startInProcessWorker(config, store.outbox, { keyIndex: 3 });
      try {
        await until(async () => (await status(id)).status === 'failed', `${url} refused`, 60_000);
        const failed = await status(id);
        assert.equal(
          failed.last_error,
          'forbidden: CCIP-read refused: the lookup names a gateway at a non-public address; no gateway was asked (failures 2/2, final)',
          url,
        );
        assert.doesNotMatch(String(failed.last_error), new RegExp(`${port}|127|localhost`));
        assert.deepEqual(await deliveries(id), [], 'nothing sent');
        assert.match(worker.metrics(), /^relayer_worker_failed_total\{destination="anvil2",kind="forbidden"\} 1$/m);
        assert.match(worker.metrics(), /^relayer_worker_retries_total\{destination="anvil2",kind="forbidden"\} 1$/m);
      } finally {
        assert.equal(await worker.stop(), 0);
        await store.close();
      }
    }
    assert.equal(heard, 0, 'no request reached the canary');

    // The same lookups from origins the operator allows do reach it: the refusal above was the guard.
    await setCcipReadUrls(chain, router, urls);
    try {
      const id = await transferAndRelay();
      const origins = ['http://127.0.0.1', 'http://[::ffff:127.0.0.1]', 'http://localhost'].map((o) => `${o}:${port}`);
      const store = await openSqliteStore(db);
      const worker = await startInProcessWorker(writeConfig({ ccipReadAllowOrigins: origins }), store.outbox, {
        keyIndex: 3,
      });
      try {
        await until(async () => heard >= urls.length, 'the allowed canary asked', 60_000);
        // Each URL answered "not ready": the attempt is recorded pending once the last was asked.
        await until(async () => /^pending: /.test(String((await status(id)).last_error)), 'recorded pending', 60_000);
      } finally {
        assert.equal(await worker.stop(), 0);
        await store.close();
      }
    } finally {
      await setCcipReadUrls(chain, router, [two.gateway.url]);
    }
  });
});
