/**
 * The delivery worker against senders who do not pay and recipients who cost (docs/hostile-recipients.md#hostile-recipients),
 * on anvil with Hyperlane's real Mailbox, InterchainGasPaymaster and StorageGasOracle: unpaid and
 * underpaid messages wait (nothing sent) and one topped up later is delivered, the top-up found with
 * eth_getLogs; a recipient whose handle burns gas above transactionGasLimit is never sent; a message
 * another relayer delivered while ours was in the pool ends delivered with their transaction, never
 * failed; a base fee above gasPriceCap makes a message wait (nothing signed) until it falls. The worker is lib/worker's createRelayerWorker from a config file, in this process; the
 * chain is the judge (Mailbox.delivered, the signer's nonce).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Address, Hash, Hex } from 'viem';
import { bytesToHex } from '../../lib/codec/hex.ts';
import type { Logger } from '../../lib/log.ts';
import { createMemoryOutbox, type OutboxRecord } from '../../lib/outbox/index.ts';
import { DEV_ACCOUNT, FIXED_GAS } from '../helpers/chain/clients.ts';
import { mailboxArtifact } from '../helpers/chain/hyperlane.ts';
import { deployGasPayment, type GasPaymentFixture } from '../helpers/chain/igp.ts';
import { compiledContract } from '../helpers/chain/solidity.ts';
import {
  DESTINATION,
  killWorkers,
  startInProcessWorker,
  startWorkerBench,
  until,
  type InProcessWorker,
  type WorkerBench,
} from '../helpers/chain/worker-chain.ts';

const TRANSACTION_GAS_LIMIT = 1_000_000n;
const GWEI = 1_000_000_000n;
/** The destination's gasPriceCap: far above anvil's base fee until a test raises it. */
const GAS_PRICE_CAP = 50n * GWEI;

let bench: WorkerBench;
let igp: GasPaymentFixture;
let burner: Address;
let minimum: bigint;
const outbox = createMemoryOutbox();
let worker: InProcessWorker;
/** The worker's `retry` lines (a counted, failed attempt), each as its fields' JSON. */
const retries: string[] = [];
const silent = () => {};
const logger: Logger = {
  debug: silent,
  info: silent,
  warn: (msg, fields) => {
    if (msg === 'retry') retries.push(JSON.stringify(fields));
  },
  error: silent,
};

const record = (id: string) => outbox.get(id) as OutboxRecord;

async function deliveredOnChain(id: string): Promise<boolean> {
  return (await bench.chain.publicClient.readContract({
    address: bench.destination.mailbox,
    abi: mailboxArtifact().abi,
    functionName: 'delivered',
    args: [id as Hex],
  })) as boolean;
}

async function nonceOf(address: Address, tag: 'latest' | 'pending'): Promise<number> {
  return Number(await bench.chain.rpc('eth_getTransactionCount', [address, tag]));
}

describe('e2e: hostile input to the delivery worker on anvil', { timeout: 120_000 }, () => {
  before(async () => {
    bench = await startWorkerBench();
    igp = await deployGasPayment(bench.chain, bench.origin.mailbox, [DESTINATION.domain]);
    minimum = await igp.quote(DESTINATION.domain, 100_000n);
    const burnerC = compiledContract('GasBurner');
    // About 20 000 × 100 gas: well above the limit.
    burner = await bench.chain.deploy(burnerC.abi, burnerC.bytecode, [20_000n]);
    const path = bench.writeConfig(
      ':memory:',
      { pendingRetrySeconds: 1, pendingRetryMaxSeconds: 1, retryBaseSeconds: 1, retryMaxSeconds: 1, maxAttempts: 100 },
      {
        gasPaymentEnforcement: [{ type: 'minimum', payment: String(minimum) }],
        transactionGasLimit: String(TRANSACTION_GAS_LIMIT),
      },
    );
    const config = JSON.parse(readFileSync(path, 'utf8'));
    config.chains.anvil1.interchainGasPaymaster = igp.igp;
    config.chains.anvil2.transactionOverrides = { gasPriceCap: String(GAS_PRICE_CAP) };
    writeFileSync(path, JSON.stringify(config));
    worker = await startInProcessWorker(path, outbox, { logger });
  });
  after(async () => {
    await killWorkers();
    await bench?.stop();
  });

  test('unpaid and underpaid wait, nothing sent; a top-up found with eth_getLogs gets it delivered', async () => {
    const [unpaid, underpaid, paid] = await bench.dispatch(3);
    await igp.topUp(underpaid.id as Hex, DESTINATION.domain, 1_000n);
    await igp.topUp(paid.id as Hex, DESTINATION.domain, 200_000n);
    const sentBefore = await nonceOf(worker.address, 'latest');
    outbox.enqueue([unpaid, underpaid, paid]);
    await until(() => record(paid.id).status === 'delivered', 'the paid message delivered');
    await until(
      () =>
        /^gas_payment:/.test(record(unpaid.id).lastError ?? '') &&
        /^gas_payment:/.test(record(underpaid.id).lastError ?? ''),
      'both others held back',
    );
    assert.match(record(unpaid.id).lastError!, /^gas_payment: no payment for this message's destination/);
    assert.match(
      record(underpaid.id).lastError!,
      new RegExp(`^gas_payment: paid \\d+ wei, the minimum is ${minimum} wei`),
    );
    // A message waiting for its payment is claimed again every pendingRetrySeconds to look for a
    // top-up: it is 'delivering' while a look runs, so its waiting state is read between two looks.
    await until(
      () => [unpaid, underpaid].every((m) => record(m.id).status === 'queued'),
      'both queued between two looks',
    );
    for (const m of [unpaid, underpaid]) {
      assert.equal(record(m.id).failures, 0, 'waiting for a payment is not a failed attempt');
      assert.equal(await deliveredOnChain(m.id), false);
    }
    assert.equal(await nonceOf(worker.address, 'latest'), sentBefore + 1, 'one transaction: the paid message');
    assert.match(worker.metrics(), /relayer_worker_retries_total\{destination="anvil2",kind="gas_payment"\} [1-9]/);

    await igp.topUp(unpaid.id as Hex, DESTINATION.domain, 100_000n);
    await until(() => record(unpaid.id).status === 'delivered', 'the topped-up message delivered');
    assert.equal(await deliveredOnChain(unpaid.id), true);
    assert.equal((await outbox.gasPayments([unpaid.id])).length, 1, 'the top-up stored with the message');
    await until(() => record(underpaid.id).status === 'queued', 'the underpaid one still waiting, between two looks');
    assert.equal(await deliveredOnChain(underpaid.id), false);
  });

  test('a recipient whose handle burns gas above transactionGasLimit is never sent', async () => {
    const [m] = await bench.dispatch(1, burner);
    await igp.topUp(m.id as Hex, DESTINATION.domain, 5_000_000n);
    const sentBefore = await nonceOf(worker.address, 'pending');
    outbox.enqueue([m]);
    // Refused for its estimate on a counted attempt, at least the second: an earlier attempt may
    // have failed on a node that answered too late under load, which the worker counts too.
    const refused = /^gas: estimate (\d+) exceeds transactionGasLimit 1000000 \(failures (\d+)\/100\)$/;
    await until(
      () => Number(refused.exec(record(m.id).lastError ?? '')?.[2] ?? 0) >= 2,
      'refused for its estimate on a second counted attempt',
    );
    const estimate = BigInt(/estimate (\d+)/.exec(record(m.id).lastError!)![1]);
    assert.ok(estimate > TRANSACTION_GAS_LIMIT, `estimate ${estimate}`);
    assert.equal(await nonceOf(worker.address, 'pending'), sentBefore, 'nothing signed for it');
    assert.equal(await deliveredOnChain(m.id), false);
  });

  test('delivered by another relayer while ours was in the pool: delivered with their transaction, never failed', async () => {
    const [m] = await bench.dispatch(1);
    await igp.topUp(m.id as Hex, DESTINATION.domain, 200_000n);
    await bench.chain.setAutomine(false);
    let theirs: Hash;
    try {
      const before = await nonceOf(worker.address, 'pending');
      outbox.enqueue([m]);
      await until(async () => (await nonceOf(worker.address, 'pending')) > before, 'our process in the pool');
      // Another relayer (the dev account) delivers it with a higher tip: mined first in the block.
      theirs = await bench.chain.wallet.writeContract({
        address: bench.destination.mailbox,
        abi: mailboxArtifact().abi,
        functionName: 'process',
        args: ['0x', bytesToHex(m.raw) as Hex],
        gas: FIXED_GAS,
        maxFeePerGas: 200_000_000_000n,
        maxPriorityFeePerGas: 100_000_000_000n,
        chain: bench.chain.viemChain,
        account: DEV_ACCOUNT,
      });
      await bench.chain.mineBlock();
    } finally {
      await bench.chain.setAutomine(true);
    }
    await until(() => record(m.id).status !== 'delivering' && record(m.id).status !== 'queued', 'recorded');
    const r = record(m.id);
    assert.equal(r.status, 'delivered', `not ${r.status}: ${r.lastError}`);
    assert.equal(r.destinationTxHash, theirs.toLowerCase());
    assert.equal(r.failures, 0, `our mined revert was not counted as a failure (${r.lastError})`);
    assert.equal(r.attempts, 1, 'decided in the attempt whose transaction reverted');
    // Our transaction, mined after theirs in the same block, reverted: its gas is in the gas book
    // (docs/gas.md#gas-already-spent), as the chain's receipt says.
    const { blockNumber } = await bench.chain.publicClient.getTransactionReceipt({ hash: theirs });
    const block = await bench.chain.publicClient.getBlock({ blockNumber, includeTransactions: true });
    const ours = block.transactions.find((tx) => tx.from.toLowerCase() === worker.address.toLowerCase());
    assert.ok(ours, 'ours is in the same block');
    const spent = await bench.chain.publicClient.getTransactionReceipt({ hash: ours.hash });
    assert.equal(spent.status, 'reverted');
    assert.equal(r.gasSpent, spent.gasUsed);
    assert.equal(r.gasSpentWei, spent.gasUsed * spent.effectiveGasPrice);
  });

  test('a base fee above gasPriceCap: the message waits (fee), nothing signed; delivered once it falls', async () => {
    const [m] = await bench.dispatch(1);
    await igp.topUp(m.id as Hex, DESTINATION.domain, 200_000n);
    const setBaseFee = async (wei: bigint) => {
      await bench.chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${wei.toString(16)}`]);
      await bench.chain.mineBlock();
    };
    await setBaseFee(100n * GWEI);
    const before = await nonceOf(worker.address, 'pending');
    outbox.enqueue([m]);
    await until(() => /^fee: /.test(record(m.id).lastError ?? ''), 'waiting on the fee');
    assert.match(record(m.id).lastError!, /^fee: base fee 100000000000 wei is above gasPriceCap 50000000000 wei/);
    assert.equal(record(m.id).status, 'queued');
    // A wait, not a failure. On a loaded machine a node call may time out and that attempt is
    // counted (a retry for a node "unreachable or failing"); the fee itself, or a send the node
    // refused for its fees ("fees refused by the node as too low"), never is.
    const counted = retries.filter((line) => line.includes(m.id));
    assert.equal(record(m.id).failures, counted.length, 'each counted attempt has its retry line');
    for (const line of counted)
      assert.match(
        line,
        /"error":"rpc: [\w ]+: node unreachable or failing /,
        `only a failing node call is counted: ${line}`,
      );
    assert.equal(await nonceOf(worker.address, 'pending'), before, 'nothing signed above the cap');
    await setBaseFee(GWEI);
    await until(() => record(m.id).status === 'delivered', 'delivered once the base fee fell');
    const tx = await bench.chain.publicClient.getTransaction({ hash: record(m.id).destinationTxHash as Hash });
    assert.ok(tx.maxFeePerGas! <= GAS_PRICE_CAP, `maxFeePerGas ${tx.maxFeePerGas} within the cap`);
  });
});
