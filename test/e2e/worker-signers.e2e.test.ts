/**
 * One worker per key (docs/transactions.md#one-worker-per-key) with real relayer-worker processes on
 * anvil and the real Mailbox: two, then three processes with one signing key on one SQLite file.
 * Each process reaches the node through a proxy of its own that lists every JSON-RPC method it
 * forwards, so the node side says who broadcast what; the chain says what was delivered, once.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { privateKeyToAccount, privateKeyToAddress } from 'viem/accounts';
import { keccak256, type Hex } from 'viem';
import type { OutboxMessage } from '../../lib/outbox/index.ts';
import { openSqliteStore, type SqliteStore } from '../../lib/sqlite/index.ts';
import { MAILBOX_ABI } from '../../lib/worker/ism/metadata.ts';
import type { SignerView } from '../../lib/worker/ops/signers-view.ts';
import { startRpcProxy, type RpcProxy } from '../helpers/chain/rpc-proxy.ts';
import {
  DESTINATION,
  devKey,
  killWorkers,
  startWorker,
  startWorkerBench,
  until,
  WORKER_BIN,
  type WorkerBench,
  type WorkerProcess,
} from '../helpers/chain/worker-chain.ts';
import { REPO_ROOT, spawnTracked, waitForLine } from '../helpers/harness/processes.ts';
import { workerInProcess } from '../helpers/harness/worker-command.ts';

const KEY_INDEX = 8;
const SIGNER = privateKeyToAddress(devKey(KEY_INDEX)).toLowerCase();
/** Short, so the SIGKILLed holder's lease lapses within the test; renewed every third of it. */
const LEASE_SECONDS = 5;

let bench: WorkerBench;
let store: SqliteStore;
let db: string;
const proxies: RpcProxy[] = [];

before(async () => {
  bench = await startWorkerBench();
  db = join(bench.dir, 'signers.db');
  store = await openSqliteStore(db);
});
after(async () => {
  await killWorkers();
  await store?.close();
  await Promise.all(proxies.map((p) => p.close()));
  await bench?.stop();
});

/** A config whose chains are reached through a proxy of their own; the fee policy stated, as a worker needs. */
async function proxiedConfig(): Promise<{ config: string; proxy: RpcProxy }> {
  const proxy = await startRpcProxy(bench.anvil.rpcUrl);
  proxies.push(proxy);
  // The worker's own poll (1 s, not the helper's 50 ms): new messages wake it through the outbox's
  // change feed (docs/delivery.md#the-delivery-loop), and three idle processes polling 20 times a
  // second spent CPU the rest of the run needs.
  const path = bench.writeConfig(db, { leaseSeconds: LEASE_SECONDS, pollMs: 1_000 });
  const config = JSON.parse(readFileSync(path, 'utf8'));
  for (const chain of Object.values(config.chains) as Record<string, unknown>[]) {
    chain.rpcUrls = [{ http: proxy.url }];
    chain.transactionOverrides = { gasPriceCap: '1000000000000' };
  }
  config.gasPaymentEnforcement = [{ type: 'none' }];
  writeFileSync(path, JSON.stringify(config));
  return { config: path, proxy };
}

const broadcasts = (proxy: RpcProxy) => proxy.methods().filter((m) => m === 'eth_sendRawTransaction').length;

async function deliverAll(messages: readonly OutboxMessage[], what: string): Promise<void> {
  await store.outbox.enqueue(messages);
  await until(
    async () => {
      for (const m of messages) if ((await store.outbox.get(m.id))?.status !== 'delivered') return false;
      return true;
    },
    what,
    60_000,
  );
}

/** The holder id a worker logged when it took the lease. */
async function holderOf(worker: WorkerProcess, message: 'signer lease taken' | 'signer lease taken over') {
  const [line] = await waitForLine(worker, new RegExp(`\\{[^\\n]*"msg":"${message}"[^\\n]*\\}`), 30_000);
  const parsed = JSON.parse(line) as { holder: string; signer: string; chain_id: number };
  assert.equal(parsed.signer, SIGNER);
  return parsed;
}

/** Waits for `worker` to say that `holder` holds the key, and returns what it said. */
async function waitsFor(
  worker: WorkerProcess,
  holder: string,
  signer = SIGNER,
): Promise<{ holder: string; expires_at: string }> {
  const [line] = await waitForLine(worker, /\{[^\n]*"msg":"signer held by another worker; waiting"[^\n]*\}/, 30_000);
  const said = JSON.parse(line) as { holder: string; expires_at: string; signer: string };
  assert.equal(said.holder, holder, 'it names the holder');
  assert.equal(said.signer, signer);
  assert.ok(Date.parse(said.expires_at) > Date.now() - 60_000, `an expiry: ${said.expires_at}`);
  return said;
}

describe('e2e: one worker per key', { timeout: 300_000 }, () => {
  test('docs/transactions.md#one-worker-per-key: a second process on the key sends nothing; takes over after SIGTERM and SIGKILL', async () => {
    const a = await proxiedConfig();
    const b = await proxiedConfig();
    const c = await proxiedConfig();
    const first = await startWorker(a.config, { keyIndex: KEY_INDEX });
    const { holder: firstHolder } = await holderOf(first, 'signer lease taken');
    const second = await startWorker(b.config, { keyIndex: KEY_INDEX });
    await waitsFor(second, firstHolder);

    // The holder delivers; the waiting process sends nothing, whatever it sees in the outbox.
    const batch1 = await bench.dispatch(6);
    await deliverAll(batch1, 'the first worker delivers the first batch');
    assert.equal(broadcasts(b.proxy), 0, 'the waiting process broadcast nothing');
    assert.ok(broadcasts(a.proxy) >= batch1.length, 'the holder broadcast them');
    assert.ok(!b.proxy.methods().includes('eth_estimateGas'), 'nor did it simulate: it claimed nothing');

    // A clean stop releases the lease: the second takes over at its next look.
    assert.equal(await first.stop('SIGTERM'), 0);
    const sentByFirst = broadcasts(a.proxy);
    const takeover = await holderOf(second, 'signer lease taken over');
    const third = await startWorker(c.config, { keyIndex: KEY_INDEX });
    await waitsFor(third, takeover.holder);
    const batch2 = await bench.dispatch(4);
    await deliverAll(batch2, 'the second worker delivers after the takeover');
    assert.ok(broadcasts(b.proxy) >= batch2.length);
    assert.equal(broadcasts(a.proxy), sentByFirst, 'the stopped one sent nothing more');
    assert.equal(broadcasts(c.proxy), 0, 'the third waits and sends nothing');

    // SIGKILL releases nothing: the third takes over once the lease lapses.
    await second.stop('SIGKILL');
    await holderOf(third, 'signer lease taken over');
    const batch3 = await bench.dispatch(4);
    await deliverAll(batch3, 'the third worker delivers after the lapse');
    assert.ok(broadcasts(c.proxy) >= batch3.length);
    assert.equal(await third.stop('SIGTERM'), 0);

    // The chain: every message delivered once, one nonce per message, nothing left in the pool.
    const logs = await bench.chain.publicClient.getContractEvents({
      address: bench.destination.mailbox,
      abi: MAILBOX_ABI,
      eventName: 'ProcessId',
      fromBlock: 0n,
    });
    const all = [...batch1, ...batch2, ...batch3];
    for (const m of all) {
      const found = logs.filter((l) => (l.args as { messageId: Hex }).messageId.toLowerCase() === m.id);
      assert.equal(found.length, 1, `${m.id} delivered once`);
    }
    const address = SIGNER as Hex;
    const [mined, pending] = await Promise.all([
      bench.chain.publicClient.getTransactionCount({ address, blockTag: 'latest' }),
      bench.chain.publicClient.getTransactionCount({ address, blockTag: 'pending' }),
    ]);
    assert.equal(mined, all.length, 'one nonce per message');
    assert.equal(pending, mined, 'the pool is empty');
  });
});

/**
 * Runs `relayer-worker signers` to its end in a process of its own. The test's other runs of the
 * command go through the same code in this process (`signersInProcess`): the view is the same, a
 * process start and the worker's imports (about 1.5 s of CPU each) are not.
 */
async function signersCli(
  config: string,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; output: string }> {
  const child = spawnTracked(process.execPath, [WORKER_BIN, 'signers', '--config', config, ...args], {
    cwd: REPO_ROOT,
  });
  let stdout = '';
  child.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const [code] = (await once(child.child, 'exit')) as [number | null];
  return { code, stdout, output: child.output() };
}

/** `relayer-worker signers` as the bin runs it, in this process (test/helpers/harness/worker-command.ts). */
async function signersInProcess(
  config: string,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; output: string }> {
  const { code, stdout, output } = await workerInProcess(['signers', '--config', config, ...args]);
  return { code, stdout, output };
}

describe('e2e: the signers view', { timeout: 300_000 }, () => {
  test('docs/workers.md#signers: a journal slot the node no longer holds shows as STUCK, in the CLI and on the ops port', async () => {
    const key = devKey(9);
    const account = privateKeyToAccount(key);
    const signer = account.address.toLowerCase();
    const chainId = bench.anvil.chainId;
    const { config } = await proxiedConfig();
    // A message claimed by this test, which holds the signer's lease as a worker would.
    const [m] = await bench.dispatch(1);
    await store.outbox.enqueue([m]);
    const claimed = (await store.outbox.claim(10, 60_000)).find((c) => c.id === m.id);
    assert.ok(claimed);
    const lease = await store.outbox.acquireSignerLease({ chainId, signer }, 'test holder', 120_000);
    assert.ok(lease.acquired);
    const latest = await bench.chain.publicClient.getTransactionCount({ address: account.address });
    const signed = async (nonce: number) => {
      const raw = (
        await account.signTransaction({
          chainId,
          type: 'eip1559',
          to: account.address,
          value: 0n,
          gas: 21_000n,
          nonce,
          maxFeePerGas: 30_000_000_000n,
          maxPriorityFeePerGas: 2_000_000_000n,
        })
      ).toLowerCase() as Hex;
      return { raw, hash: keccak256(raw) };
    };
    const first = await signed(latest);
    const second = await signed(latest + 1);
    await bench.chain.setAutomine(false);
    try {
      for (const [t, nonce] of [
        [first, latest],
        [second, latest + 1],
      ] as const) {
        const recorded = await store.outbox.recordBroadcast(
          { messageId: m.id, chainId, signer, nonce, hash: t.hash, raw: t.raw, signerLease: lease.lease },
          { lease: claimed.lease, leaseMs: 60_000 },
        );
        assert.equal(recorded, true);
        await bench.chain.rpc('eth_sendRawTransaction', [t.raw]);
      }
      // The node loses the lowest one (a restart, another node behind a balancer): a gap. anvil
      // drops the one behind it with it (it depended on it).
      await bench.chain.rpc('anvil_dropTransaction', [first.hash]);

      const text = await signersCli(config);
      assert.equal(text.code, 0, text.output);
      const head = `${DESTINATION.name} (chain ${chainId}) signer ${signer}: latest nonce ${latest}, pending ${latest}, 2 open slots, lease held by "test holder" until `;
      assert.ok(text.stdout.includes(head), text.stdout);
      assert.match(text.stdout, new RegExp(`STUCK at nonce ${latest}: later transactions wait behind it`));
      assert.match(
        text.stdout,
        new RegExp(`nonce ${latest}  missing \\(STUCK\\): the node holds none of its transactions  message ${m.id}`),
      );
      assert.match(text.stdout, new RegExp(`${first.hash}  maxFee 30 gwei  tip 2 gwei  sent \\S+  node: not known`));
      assert.match(text.stdout, new RegExp(`nonce ${latest + 1}  missing: the node holds none of its transactions`));

      const json = await signersInProcess(config, ['--format', 'json']);
      assert.equal(json.code, 0, json.output);
      const views = JSON.parse(json.stdout) as SignerView[];
      const view = views.find((v) => v.signer === signer);
      assert.ok(view, json.stdout);
      assert.equal(view.stuckAt, latest);
      assert.deepEqual(
        view.slots.map((s) => [
          s.nonce,
          s.state,
          s.messageId,
          s.broadcasts.map((b) => [b.hash, b.known, b.maxFeePerGas, b.maxPriorityFeePerGas]),
        ]),
        [
          [latest, 'missing', m.id, [[first.hash, false, '30000000000', '2000000000']]],
          [latest + 1, 'missing', m.id, [[second.hash, false, '30000000000', '2000000000']]],
        ],
      );
      assert.deepEqual(view.lease && { holder: view.lease.holder, live: view.lease.live }, {
        holder: 'test holder',
        live: true,
      });

      // A worker with this key waits for the test's lease; its ops port shows the same stuck slot.
      const worker = await startWorker(config, { keyIndex: 9 });
      await waitsFor(worker, 'test holder', signer);
      const served = (await (await fetch(`${worker.opsUrl}/signers`)).json()) as SignerView[];
      const mine = served.find((v) => v.signer === signer);
      assert.equal(mine?.stuckAt, latest, JSON.stringify(served));
      assert.equal(mine?.slots[0].state, 'missing');
      assert.equal(await worker.stop('SIGTERM'), 0);

      // The same bytes again: the gap is filled, nothing is stuck.
      for (const t of [first, second]) await bench.chain.rpc('eth_sendRawTransaction', [t.raw]);
      const healed = JSON.parse((await signersInProcess(config, ['--format', 'json'])).stdout) as SignerView[];
      const after = healed.find((v) => v.signer === signer);
      assert.equal(after?.stuckAt, null);
      assert.deepEqual(
        after?.slots.map((s) => s.state),
        ['pending', 'pending'],
      );
      assert.equal(after?.pending, latest + 2);
    } finally {
      await bench.chain.mineBlock();
      await bench.chain.setAutomine(true);
    }
    // Mined: the slots show as used on chain until a worker settles them.
    const mined = JSON.parse((await signersInProcess(config, ['--format', 'json'])).stdout) as SignerView[];
    assert.deepEqual(
      mined.find((v) => v.signer === signer)?.slots.map((s) => s.state),
      ['mined', 'mined'],
    );
    await store.outbox.releaseSignerLease({ chainId, signer }, lease.lease);
  });
});
