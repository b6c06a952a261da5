/**
 * Gas payment enforcement and the gas limit in the delivery loop (lib/worker/gas/gate.ts with
 * lib/worker/loop/), on the in-memory outbox with a fake clock, against a scripted destination and
 * a scripted origin paymaster: an unpaid message waits before anything is spent on it, without
 * counting, is picked up once a top-up shows in eth_getLogs, and is failed at the deadline; the
 * gas limit signed follows the policy and transactionGasLimit. Hyperlane's real paymaster on anvil:
 * test/e2e/gas-payment.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { encodeAbiParameters, pad, toHex, type Hash } from 'viem';
import { GAS_PAYMENT_TOPIC } from '../../../../lib/codec/abi.ts';
import type { GasPaymentEnforcement } from '../../../../lib/gas/policy.ts';
import { createMemoryOutbox, type Outbox, type OutboxRecord } from '../../../../lib/outbox/index.ts';
import { createGasGate, type GasGateOptions, type OriginLog } from '../../../../lib/worker/gas/gate.ts';
import { createDeliveryWorker } from '../../../../lib/worker/loop/worker.ts';
import type { Processed } from '../../../../lib/worker/types.ts';
import { createFakeClock, T0 } from '../../../helpers/fakes/clock.ts';
import { scriptedDestination, TX } from '../../../helpers/fixtures/destination.ts';

const ID = `0x${'11'.repeat(32)}`;
const IGP = `0x${'19'.repeat(20)}`;
const HOUR = 3_600_000;

/** A version 3 Hyperlane message from domain 1 to domain 2. */
function raw(): Uint8Array {
  const bytes = new Uint8Array(81);
  bytes[0] = 3;
  new DataView(bytes.buffer).setUint32(5, 1);
  new DataView(bytes.buffer).setUint32(41, 2);
  return bytes;
}

/** A GasPayment log of the paymaster, as eth_getLogs gives it. */
function paymentLog(gasAmount: bigint, payment: bigint, tx: number, destination = 2): OriginLog {
  return {
    address: IGP,
    topics: [GAS_PAYMENT_TOPIC, ID, pad(toHex(destination))],
    data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [gasAmount, payment]),
    logIndex: 0,
    transactionHash: pad(toHex(tx)),
  };
}

function setUp(
  o: {
    enforcement?: GasPaymentEnforcement[];
    transactionGasLimit?: bigint | null;
    estimate?: bigint;
    atIntake?: Array<{ gasAmount: bigint; payment: bigint }>;
    /** What the n-th `process` (from 1) ends with; default: delivered. */
    processed?: (n: number, outbox: Outbox) => Promise<Processed>;
    /** Wraps the outbox the gas gate is given. */
    gateStore?: (outbox: Outbox) => GasGateOptions['store'];
  } = {},
) {
  const clock = createFakeClock(T0);
  const outbox: Outbox = createMemoryOutbox({ clock });
  outbox.enqueue([
    {
      id: ID,
      originChain: 'anvil1',
      txHash: `0x${'01'.repeat(32)}`,
      origin: 1,
      destination: 2,
      nonce: 0,
      raw: raw(),
      enqueuedAt: T0,
      gasPayments: (o.atIntake ?? []).map((p, i) => ({
        messageId: ID,
        destination: 2,
        ...p,
        txHash: `0x${'01'.repeat(32)}`,
        logIndex: i,
      })),
    },
  ]);
  // The origin chain: the transfer in block 100, each log in the block it was mined in.
  const chain = { head: 100n, logs: [] as Array<{ log: OriginLog; block: bigint }> };
  const mine = (...logs: OriginLog[]) => {
    chain.head++;
    chain.logs.push(...logs.map((log) => ({ log, block: chain.head })));
  };
  const filters: Array<{ topics: string[]; fromBlock: string; toBlock: string }> = [];
  let estimate = o.estimate ?? 100_000n;
  const destination = scriptedDestination({
    simulate: async () => ({ estimate, gas: (estimate * 120n) / 100n }),
    process: async () =>
      o.processed ? o.processed(destination.calls.process, outbox) : { hash: TX, status: 'success' },
  });
  const policy = createGasGate({
    enforcement: o.enforcement ?? [],
    transactionGasLimit: o.transactionGasLimit ?? null,
    gasMarginPercent: 20,
    store: o.gateStore?.(outbox) ?? outbox,
    origins: new Map([
      [
        1,
        {
          paymaster: IGP,
          getLogs: async (filter) => {
            filters.push(filter);
            return chain.logs
              .filter(({ block }) => block >= BigInt(filter.fromBlock) && block <= BigInt(filter.toBlock))
              .map(({ log }) => log)
              .filter((l) => l.topics[1] === filter.topics[1] && l.topics[2] === filter.topics[2]);
          },
          blockOf: async () => 100n,
          head: async () => chain.head,
        },
      ],
    ]),
  });
  const retried: string[] = [];
  const worker = createDeliveryWorker({
    outbox,
    destinations: new Map([[2, destination]]),
    clock,
    random: () => 1,
    policy,
    maxAttempts: 3,
    gasPaymentDeadlineHours: 2,
    events: { retried: (_d, kind) => retried.push(kind) },
  });
  const row = () => outbox.get(ID) as OutboxRecord;
  const setEstimate = (next: bigint) => {
    estimate = next;
  };
  return {
    clock,
    outbox,
    chain,
    mine,
    filters,
    /** What the loop asked of the destination (it never asks deliveredBy or resume here). */
    get calls() {
      const { metadata, simulate, process } = destination.calls;
      return { metadata, simulate, process };
    },
    /** The gas limit of each process transaction, in order. */
    get signed() {
      return destination.simulations.map((simulated) => simulated.gas);
    },
    worker,
    row,
    retried,
    setEstimate,
  };
}

describe('gas payment in the delivery loop (docs/gas.md#gas-payment-enforcement)', () => {
  test('unpaid: waits before metadata or estimate, not counted; a top-up found with eth_getLogs is stored, then delivered', async () => {
    const s = setUp({ enforcement: [{ type: 'minimum', payment: 1000n, matchingList: [] }] });
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      const before = s.clock.now();
      const [result] = await s.worker.runOnce();
      assert.equal(result.outcome, 'pending');
      const r = s.row();
      assert.equal(r.status, 'queued');
      assert.match(
        r.lastError!,
        /^gas_payment: no payment for this message's destination on the origin's InterchainGasPaymaster \(failures 0\/3\)$/,
      );
      assert.equal(r.failures, 0, 'waiting for a payment is not a failed attempt');
      delays.push(r.retryAt! - before);
      await s.clock.advanceTo(r.retryAt!);
    }
    assert.deepEqual(delays, [5_000, 10_000, 20_000, 40_000, 60_000, 60_000], 'a top-up is seen within a minute');
    assert.deepEqual(s.calls, { metadata: 0, simulate: 0, process: 0 }, 'an unpaid message costs nothing');
    assert.deepEqual(s.retried, Array(6).fill('gas_payment'), 'the metric label names the reason');
    assert.deepEqual(s.filters[0].topics.slice(0, 2), [GAS_PAYMENT_TOPIC, ID]);
    assert.deepEqual([s.filters[0].fromBlock, s.filters[0].toBlock], ['0x64', '0x64'], 'from the transfer block on');
    assert.equal(s.filters.length, 1, 'no block mined since: nothing more to read');

    // Underpaid: 400 of 1000 wei.
    s.mine(paymentLog(50_000n, 400n, 7));
    await s.worker.runOnce();
    assert.match(s.row().lastError!, /^gas_payment: paid 400 wei, the minimum is 1000 wei/);
    await s.clock.advanceTo(s.row().retryAt!);
    // A top-up in another transaction, and a payment for another destination that does not count.
    s.mine(paymentLog(50_000n, 600n, 8), paymentLog(1n, 10n ** 18n, 9, 3));
    const [result] = await s.worker.runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.equal(s.calls.process, 1);
    const stored = await s.outbox.gasPayments([ID]);
    assert.deepEqual(stored.map((p) => p.payment).sort(), [400n, 600n], 'both payments stored, once each');
  });

  test('a message not paid for by the deadline (from enqueue) is failed with the reason', async () => {
    const s = setUp({ enforcement: [{ type: 'minimum', payment: 1n, matchingList: [] }] });
    await s.worker.runOnce();
    await s.clock.advanceTo(T0 + 2 * HOUR);
    const [result] = await s.worker.runOnce();
    assert.equal(result.outcome, 'failed');
    assert.equal(s.row().status, 'failed');
    assert.match(
      s.row().lastError!,
      /^gas_payment: deadline passed \(2 h from enqueue\), still not paid for: no payment/,
    );
    assert.match(s.row().lastError!, /, final\)$/);
  });

  test('onChainFeeQuoting: a payment before metadata, enough gas after the estimate; the limit is the gas paid for if larger', async () => {
    const policy: GasPaymentEnforcement = {
      type: 'onChainFeeQuoting',
      gasFraction: { numerator: 1n, denominator: 2n },
      matchingList: [],
    };
    const unpaid = setUp({ enforcement: [policy] });
    await unpaid.worker.runOnce();
    assert.deepEqual(unpaid.calls, { metadata: 0, simulate: 0, process: 0 });

    const under = setUp({ enforcement: [policy], estimate: 100_000n, atIntake: [{ gasAmount: 49_999n, payment: 1n }] });
    await under.worker.runOnce();
    assert.deepEqual(under.calls, { metadata: 1, simulate: 1, process: 0 });
    assert.match(under.row().lastError!, /^gas_payment: paid for 49999 gas, 50000 required \(estimate 100000 × 1\/2\)/);
    assert.equal(under.row().failures, 0);

    const over = setUp({ enforcement: [policy], estimate: 100_000n, atIntake: [{ gasAmount: 300_000n, payment: 1n }] });
    await over.worker.runOnce();
    assert.deepEqual(over.signed, [300_000n], 'the gas paid for, above estimate + 20 %');

    const half = setUp({ enforcement: [policy], estimate: 100_000n, atIntake: [{ gasAmount: 50_000n, payment: 1n }] });
    await half.worker.runOnce();
    assert.deepEqual(half.signed, [120_000n], 'estimate + 20 % margin');
  });
});

describe('gas already spent and the required gas (docs/gas.md#gas-already-spent)', () => {
  const quoting: GasPaymentEnforcement = {
    type: 'onChainFeeQuoting',
    gasFraction: { numerator: 1n, denominator: 2n },
    matchingList: [],
  };
  const REVERTED = `0x${'ee'.repeat(32)}` as Hash;
  /** The first `process` is mined and reverts after using `gasUsed` (the sender records it in the gas book); later ones deliver. */
  const revertsOnce =
    (gasUsed: bigint, cost: bigint) =>
    async (n: number, outbox: Outbox): Promise<Processed> => {
      if (n > 1) return { hash: TX, status: 'success' };
      await outbox.addGasSpent([{ messageId: ID, txHash: REVERTED, gasUsed, cost }]);
      return { hash: REVERTED, status: 'reverted' };
    };

  test('a revert that spent Y of the X gas paid for: the next estimate needs more than X − Y, so the message waits', async () => {
    // Paid for 100 000 gas; the estimate is 100 000, so 50 000 are required. Our first transaction
    // was mined and reverted after using 60 000 (the sender records it in the gas book): 40 000 left.
    const s = setUp({
      enforcement: [quoting],
      estimate: 100_000n,
      atIntake: [{ gasAmount: 100_000n, payment: 1n }],
      processed: revertsOnce(60_000n, 60_000n * 7n),
    });
    const [first] = await s.worker.runOnce();
    assert.equal(first.outcome, 'retry');
    assert.deepEqual(s.signed, [120_000n], 'the first send: estimate + 20 %, above the 100 000 paid for');
    assert.match(s.row().lastError!, /^revert: process reverted in 0xee/);
    assert.equal(s.row().gasSpent, 60_000n);
    await s.clock.advanceTo(s.row().retryAt!);

    const [second] = await s.worker.runOnce();
    assert.equal(second.outcome, 'pending');
    assert.equal(
      s.row().lastError,
      'gas_payment: paid for 40000 gas (after 60000 spent), 50000 required (estimate 100000 × 1/2) (failures 1/3)',
    );
    assert.equal(s.row().failures, 1, 'the wait is not counted; the revert was');
    assert.equal(s.calls.process, 1, 'nothing sent while what is left falls short');
    assert.equal(s.row().requiredGas, 50_000n);
    await s.clock.advanceTo(s.row().retryAt!);

    // A top-up of 10 000 gas: 50 000 left, enough; the limit is the larger of estimate + 20 % and what is left.
    s.mine(paymentLog(10_000n, 1n, 7));
    const [third] = await s.worker.runOnce();
    assert.equal(third.outcome, 'delivered');
    assert.deepEqual(s.signed, [120_000n, 120_000n]);
  });

  test('a payment used up by reverts: the message waits before metadata or estimate, as an unpaid one', async () => {
    // Paid for 100 000 gas; the revert used 95 000: 5 000 left, below what any estimate requires
    // (21 000 × 1/2), so no gateway request and no estimate until a top-up.
    const s = setUp({
      enforcement: [quoting],
      estimate: 100_000n,
      atIntake: [{ gasAmount: 100_000n, payment: 1n }],
      processed: revertsOnce(95_000n, 1n),
    });
    await s.worker.runOnce();
    for (let i = 0; i < 3; i++) {
      await s.clock.advanceTo(s.row().retryAt!);
      await s.worker.runOnce();
      assert.equal(
        s.row().lastError,
        'gas_payment: paid for 5000 gas (after 95000 spent), at least 10500 required for any estimate (failures 1/3)',
      );
    }
    assert.deepEqual(s.calls, { metadata: 1, simulate: 1, process: 1 }, 'nothing spent on it since the revert');
    s.mine(paymentLog(60_000n, 1n, 7));
    await s.clock.advanceTo(s.row().retryAt!);
    const [result] = await s.worker.runOnce();
    assert.equal(result.outcome, 'delivered', s.row().lastError ?? '');
    assert.deepEqual(s.signed, [120_000n, 120_000n]);
  });

  test('minimum: the wei our reverts cost comes off the payment, and a requeue does not give it back', async () => {
    // Paid 250 000 wei against a minimum of 0; each of the first three transactions is mined,
    // reverts and costs 100 000 wei. The third spend (300 000 in all) fails the message for good
    // (maxAttempts 3); requeued, it waits before metadata for a top-up instead of a fourth send.
    const s = setUp({
      enforcement: [{ type: 'minimum', payment: 0n, matchingList: [] }],
      atIntake: [{ gasAmount: 100_000n, payment: 250_000n }],
      processed: async (n, outbox) => {
        if (n > 3) return { hash: TX, status: 'success' };
        await outbox.addGasSpent([{ messageId: ID, txHash: pad(toHex(n)) as Hash, gasUsed: 50_000n, cost: 100_000n }]);
        return { hash: pad(toHex(n)) as Hash, status: 'reverted' };
      },
    });
    for (let i = 0; i < 3; i++) {
      if (i > 0) await s.clock.advanceTo(s.row().retryAt!);
      await s.worker.runOnce();
    }
    assert.equal(s.row().status, 'failed', s.row().lastError ?? '');
    assert.equal(s.row().gasSpentWei, 300_000n);
    assert.equal(s.outbox.requeue(ID), true);
    const [waited] = await s.worker.runOnce();
    assert.equal(waited.outcome, 'pending');
    assert.match(s.row().lastError!, /^gas_payment: paid 0 wei \(after 300000 wei spent\), the minimum is 0 wei/);
    assert.deepEqual(s.calls, { metadata: 3, simulate: 3, process: 3 }, 'nothing spent on it since the requeue');
    // A top-up of 50 000 wei: 300 000 paid, 300 000 spent, the minimum of 0 met: delivered.
    s.mine(paymentLog(1n, 50_000n, 7));
    await s.clock.advanceTo(s.row().retryAt!);
    const [result] = await s.worker.runOnce();
    assert.equal(result.outcome, 'delivered', s.row().lastError ?? '');
    assert.equal(s.calls.process, 4);
  });

  test('the gas paid for and not spent is the gas limit when it is larger than the estimate + margin', async () => {
    const s = setUp({
      enforcement: [quoting],
      estimate: 100_000n,
      atIntake: [{ gasAmount: 400_000n, payment: 1n }],
      processed: revertsOnce(150_000n, 1n),
    });
    await s.worker.runOnce();
    await s.clock.advanceTo(s.row().retryAt!);
    await s.worker.runOnce();
    assert.deepEqual(s.signed, [400_000n, 250_000n], 'the gas paid for, then what is left of it');
  });

  test('a paid message costs one read of its stored payments per attempt, shared by both checks', async () => {
    const reads: string[][] = [];
    const s = setUp({
      enforcement: [quoting],
      estimate: 100_000n,
      atIntake: [{ gasAmount: 100_000n, payment: 1n }],
      gateStore: (outbox) => ({
        gasPayments: (ids) => (reads.push([...ids]), outbox.gasPayments(ids)),
        addGasPayments: (p) => outbox.addGasPayments(p),
      }),
    });
    const [result] = await s.worker.runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.deepEqual(reads, [[ID]], 'before metadata, and not again after the estimate');
  });

  test('the required gas is kept with the message, written only when it changes', async () => {
    const writes: bigint[] = [];
    const s = setUp({
      enforcement: [quoting],
      atIntake: [{ gasAmount: 10_500n, payment: 1n }],
      gateStore: (outbox) => ({
        gasPayments: (ids) => outbox.gasPayments(ids),
        addGasPayments: (p) => outbox.addGasPayments(p),
        setRequiredGas: (id, gas) => (writes.push(gas), outbox.setRequiredGas(id, gas)),
      }),
    });
    assert.equal(s.row().requiredGas, null, 'nothing before an estimate');
    for (const [next, expected] of [
      [100_000n, [50_000n]],
      [100_000n, [50_000n]],
      [100_001n, [50_000n]],
      [120_000n, [50_000n, 60_000n]],
    ] as const) {
      s.setEstimate(next);
      await s.worker.runOnce();
      await s.clock.advanceTo(s.row().retryAt!);
      assert.deepEqual(writes, expected, `estimate ${next}`);
    }
    assert.equal(s.row().requiredGas, 60_000n);
    assert.match(s.row().lastError!, /^gas_payment: paid for 10500 gas, 60000 required/);
  });

  test('a store that fails to keep the required gas does not fail the attempt; other policies keep none', async () => {
    const s = setUp({
      enforcement: [quoting],
      estimate: 100_000n,
      atIntake: [{ gasAmount: 100_000n, payment: 1n }],
      gateStore: (outbox) => ({
        gasPayments: (ids) => outbox.gasPayments(ids),
        addGasPayments: (p) => outbox.addGasPayments(p),
        setRequiredGas: async () => {
          throw new Error('disk full');
        },
      }),
    });
    const [result] = await s.worker.runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.equal(s.row().requiredGas, null);

    const minimum = setUp({
      enforcement: [{ type: 'minimum', payment: 1n, matchingList: [] }],
      atIntake: [{ gasAmount: 100_000n, payment: 1n }],
    });
    await minimum.worker.runOnce();
    assert.equal(minimum.row().status, 'delivered');
    assert.equal(minimum.row().requiredGas, null);
  });
});

describe('transactionGasLimit in the delivery loop (docs/hostile-recipients.md#hostile-recipients)', () => {
  test('an estimate above it is not sent (a counted failure, gas); no gas limit signed above it', async () => {
    const s = setUp({ transactionGasLimit: 1_000_000n, estimate: 1_000_001n });
    const [result] = await s.worker.runOnce();
    assert.equal(result.outcome, 'retry');
    assert.equal(s.calls.process, 0, 'nothing sent');
    assert.equal(s.row().lastError, 'gas: estimate 1000001 exceeds transactionGasLimit 1000000 (failures 1/3)');
    assert.deepEqual(s.retried, ['gas']);

    const near = setUp({ transactionGasLimit: 1_000_000n, estimate: 900_000n });
    await near.worker.runOnce();
    assert.deepEqual(near.signed, [1_000_000n], 'no process transaction above transactionGasLimit');

    const overpaid = setUp({
      transactionGasLimit: 1_000_000n,
      estimate: 100_000n,
      enforcement: [{ type: 'onChainFeeQuoting', gasFraction: { numerator: 1n, denominator: 2n }, matchingList: [] }],
      atIntake: [{ gasAmount: 5_000_000n, payment: 1n }],
    });
    await overpaid.worker.runOnce();
    assert.deepEqual(overpaid.signed, [1_000_000n], 'gas paid for above the limit only stops adding to it');
  });
});
