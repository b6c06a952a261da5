/**
 * bin/relayer-worker.ts on a real anvil node with the real Hyperlane Mailbox (docs/operations.md,
 * Delivery worker): messages dispatched with Mailbox.dispatch on domain 1, enqueued into the
 * relayer's SQLite outbox, delivered by the worker with Mailbox.process on domain 2.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Hash, Hex } from 'viem';
import { openStore, type SqliteStore } from '../../lib/sqlite/index.ts';
import { MAILBOX_ABI } from '../../lib/worker/metadata.ts';
import { devKey, startWorker, startWorkerBench, until, type WorkerBench } from './worker-fixture.ts';

let bench: WorkerBench;

before(async () => {
  bench = await startWorkerBench();
});
after(async () => {
  await bench?.stop();
});

async function deliveries(id: string): Promise<Hash[]> {
  const logs = await bench.chain.publicClient.getContractEvents({ address: bench.destination.mailbox, abi: MAILBOX_ABI, eventName: 'ProcessId', args: { messageId: id as Hex }, fromBlock: 0n });
  return logs.map((l) => l.transactionHash);
}

describe('e2e: relayer-worker', { timeout: 120_000 }, () => {
  test('a NULL-ISM recipient: queued → delivered on chain, recorded with the ProcessId transaction; /metrics, /ready; SIGTERM exits 0; the key is never printed', async () => {
    const db = join(bench.dir, 'null-ism.db');
    const store: SqliteStore = await openStore(db);
    try {
      const messages = await bench.dispatch(3);
      assert.equal(await store.outbox.enqueue(messages), 3);
      const worker = await startWorker(bench.writeConfig(db), { args: ['--log-level', 'debug'] });
      await until(async () => {
        for (const m of messages) if ((await store.outbox.get(m.id))?.status !== 'delivered') return false;
        return true;
      }, 'three deliveries');
      for (const m of messages) {
        const record = await store.outbox.get(m.id);
        assert.equal(record?.status, 'delivered');
        assert.equal(record?.attempts, 1);
        const onChain = await deliveries(m.id);
        assert.deepEqual(onChain, [record?.destinationTxHash], 'exactly one delivery, the recorded transaction');
        assert.equal(await bench.chain.publicClient.readContract({ address: bench.destination.mailbox, abi: MAILBOX_ABI, functionName: 'delivered', args: [m.id as Hex] }), true);
      }
      const ready = await fetch(`${worker.opsUrl}/ready`);
      assert.equal(ready.status, 200);
      assert.equal(await ready.text(), 'ready\n');
      const metrics = await (await fetch(`${worker.opsUrl}/metrics`)).text();
      assert.match(metrics, /^relayer_worker_delivered_total\{already="false",destination="anvil2"\} 3$/m);
      assert.match(metrics, /^relayer_worker_enqueue_to_delivered_seconds_count\{destination="anvil2"\} 3$/m);
      assert.match(metrics, /^relayer_worker_in_flight 0$/m);
      assert.match(metrics, /^relayer_worker_outbox_depth 0$/m);
      const code = await worker.stop();
      assert.equal(code, 0, worker.output());
      const output = worker.output();
      assert.ok(!output.includes(devKey(1).slice(2)), 'the signer key is never printed');
      for (const line of output.trim().split('\n').filter((l) => l.startsWith('{'))) JSON.parse(line);
      assert.match(output, /"msg":"delivered"/);
    } finally {
      await store.close();
    }
  });
});
