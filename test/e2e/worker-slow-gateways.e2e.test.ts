/**
 * Slow gateways never hold the slots other messages need (docs/hostile-recipients.md#slow-gateways), on anvil
 * with the real Mailbox: a worker of one slot is given two messages whose CCIP-read ISM names a
 * loopback gateway that accepts and never answers, then three that need no gateway. Each hanging
 * lookup leaves the slot after worker.ccipReadHoldSeconds and goes on in the background; the three
 * are delivered long before the lookups' budget; the gateway is asked once per message; stopping the
 * worker ends the background requests. The worker is lib/worker's createRelayerWorker, in this
 * process; the chain is the judge (Mailbox.delivered).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Hex } from 'viem';
import { createMemoryOutbox, type OutboxRecord } from '../../lib/outbox/index.ts';
import { mailboxArtifact } from '../helpers/chain/hyperlane.ts';
import { deployTestRecipient } from '../helpers/chain/isms.ts';
import { compiledContract } from '../helpers/chain/solidity.ts';
import {
  killWorkers,
  startInProcessWorker,
  startWorkerBench,
  until,
  type WorkerBench,
} from '../helpers/chain/worker-chain.ts';

/** Far above the test's own bounds: a lookup (and its one URL) that kept its slot would keep it this long. */
const BUDGET_SECONDS = 120;

let bench: WorkerBench;
let gateway: Server;
let origin: string;
let requests = 0;
let closed = 0;

describe('e2e: slow CCIP-read gateways on anvil', { timeout: 90_000 }, () => {
  before(async () => {
    bench = await startWorkerBench();
    gateway = createServer((req) => {
      requests++;
      req.socket.on('close', () => closed++);
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  after(async () => {
    await killWorkers();
    gateway?.closeAllConnections();
    gateway?.close();
    await bench?.stop();
  });

  test('docs/hostile-recipients.md#slow-gateways: at concurrency 1 silent lookups leave the slot; the others are delivered', async () => {
    const ismC = compiledContract('HangingCcipReadIsm');
    const ism = await bench.chain.deploy(ismC.abi, ismC.bytecode, [[`${origin}/{sender}/{data}.json`]]);
    const hostile = await bench.dispatch(2, await deployTestRecipient(bench.chain, ism));
    const plain = await bench.dispatch(3);
    const outbox = createMemoryOutbox();
    const record = (id: string) => outbox.get(id) as OutboxRecord;
    const config = bench.writeConfig(':memory:', {
      concurrency: 1,
      ccipReadHoldSeconds: 1,
      ccipReadBudgetSeconds: BUDGET_SECONDS,
      ccipReadTimeoutSeconds: BUDGET_SECONDS,
      ccipReadAllowOrigins: [origin],
      pendingRetrySeconds: 1,
      pendingRetryMaxSeconds: 1,
    });
    outbox.enqueue(hostile);
    const worker = await startInProcessWorker(config, outbox);
    await until(() => requests === 1, 'the first hanging lookup asked');
    const start = Date.now();
    outbox.enqueue(plain);
    await until(() => plain.every((m) => record(m.id).status === 'delivered'), 'the others delivered', 40_000);
    const took = (Date.now() - start) / 1000;
    assert.ok(took < BUDGET_SECONDS / 3, `delivered in ${took} s, not after a lookup's ${BUDGET_SECONDS} s budget`);
    for (const m of plain) {
      const delivered = await bench.chain.publicClient.readContract({
        address: bench.destination.mailbox,
        abi: mailboxArtifact().abi,
        functionName: 'delivered',
        args: [m.id as Hex],
      });
      assert.equal(delivered, true, `${m.id} delivered on chain`);
    }
    await until(() => hostile.every((m) => /^busy: /.test(record(m.id).lastError ?? '')), 'both hostile given back');
    for (const m of hostile) {
      const r = record(m.id);
      assert.notEqual(r.status, 'delivered');
      assert.equal(r.failures, 0, 'a lookup in the background is not a failed attempt');
    }
    assert.equal(requests, 2, 'one request per hostile message: claimed again, it is not asked twice');
    assert.match(worker.metrics(), /^relayer_worker_retries_total\{destination="anvil2",kind="busy"\} [2-9]/m);
    assert.equal(closed, 0, 'the background requests are still open');
    assert.match(worker.metrics(), /^relayer_worker_ccip_background_lookups 2$/m);
    await worker.stop();
    await until(() => closed === 2, 'the background requests ended with the worker', 5_000);
    assert.match(worker.metrics(), /^relayer_worker_ccip_background_lookups 0$/m);
  });
});
