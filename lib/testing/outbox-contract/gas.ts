/**
 * The outbox contract: gas payments stored with their messages, and the gas book (docs/gas.md#gas-payment-enforcement, #gas-already-spent).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContractContext, outboxMessage, queuedRecord, DEST_TX, id, claimAll } from './context.ts';
import type { GasPayment, GasSpend } from '../../gas/payment.ts';
import { InvalidArgumentError } from '../../errors/classes.ts';
import { txHash } from '../messages.ts';

export function gasSection(ctx: ContractContext): void {
  // docs/gas.md#gas-payment-enforcement: the payments stored with their messages.
  const payment = (n: number, logIndex: number, over: Partial<GasPayment> = {}): GasPayment => ({
    messageId: id(n),
    destination: 8453,
    gasAmount: 50_000n + BigInt(logIndex),
    payment: 10n ** 15n,
    txHash: txHash(n),
    logIndex,
    ...over,
  });
  const sorted = (list: GasPayment[]) =>
    [...list].sort((a, b) => a.txHash.localeCompare(b.txHash) || a.logIndex - b.logIndex);

  test("docs/gas.md#gas-payment-enforcement: enqueue stores a message's gas payments; gasPayments reads them back by id", async () => {
    // gasPayments finds them by message id in any case.
    const big = payment(1, 3, { gasAmount: 2n ** 256n - 1n, payment: 2n ** 255n + 7n, destination: 4_294_967_295 });
    assert.equal(
      await ctx.h.outbox.enqueue([
        { ...outboxMessage(1), gasPayments: [payment(1, 1), big] },
        outboxMessage(2),
        { ...outboxMessage(3), gasPayments: [payment(3, 0)] },
      ]),
      3,
    );
    assert.deepEqual(sorted(await ctx.h.outbox.gasPayments([id(1).toUpperCase().replace('0X', '0x')])), [
      payment(1, 1),
      big,
    ]);
    assert.deepEqual(await ctx.h.outbox.gasPayments([id(2)]), []);
    assert.deepEqual(
      sorted(await ctx.h.outbox.gasPayments([id(1), id(3), id(9)])),
      sorted([payment(1, 1), big, payment(3, 0)]),
    );
    assert.deepEqual(await ctx.h.outbox.gasPayments([]), []);
    // The record itself is unchanged by its payments.
    assert.deepEqual(await ctx.h.outbox.get(id(1)), queuedRecord(outboxMessage(1)));
  });

  test('docs/gas.md#gas-payment-enforcement: each (tx hash, log index) is stored once', async () => {
    // Once: on a resubmission, for the same log twice in a batch, and for a top-up seen twice.
    await ctx.h.outbox.enqueue([{ ...outboxMessage(1), gasPayments: [payment(1, 1), payment(1, 1)] }]);
    assert.equal(await ctx.h.outbox.enqueue([{ ...outboxMessage(1), gasPayments: [payment(1, 1)] }]), 0);
    assert.deepEqual(await ctx.h.outbox.gasPayments([id(1)]), [payment(1, 1)]);
    // Top-ups found later (eth_getLogs): new logs are added, known ones are not.
    const topUp = payment(1, 7, { txHash: txHash(77) });
    assert.equal(await ctx.h.outbox.addGasPayments([topUp, payment(1, 1)]), 1);
    assert.equal(await ctx.h.outbox.addGasPayments([topUp]), 0);
    assert.equal(await ctx.h.outbox.addGasPayments([]), 0);
    assert.deepEqual(sorted(await ctx.h.outbox.gasPayments([id(1)])), sorted([payment(1, 1), topUp]));
  });

  test('docs/gas.md#gas-payment-enforcement: a batch with a bad payment stores nothing, messages included', async () => {
    // addGasPayments refuses a batch with a bad payment whole too.
    const bad: [string, Partial<GasPayment>][] = [
      ['messageId', { messageId: '0x1234' }],
      ['messageId', { messageId: id(1).toUpperCase().replace('0X', '0x') }],
      ['destination', { destination: -1 }],
      ['gasAmount', { gasAmount: -1n }],
      ['gasAmount', { gasAmount: 2n ** 256n }],
      ['payment', { payment: 5 as unknown as bigint }],
      ['txHash', { txHash: 'nope' }],
      ['logIndex', { logIndex: 1.5 }],
    ];
    for (const [field, over] of bad) {
      await assert.rejects(
        async () =>
          ctx.h.outbox.enqueue([
            outboxMessage(2),
            { ...outboxMessage(1), gasPayments: [payment(1, 0), payment(1, 1, over)] },
          ]),
        (e: Error) => e.name === 'InvalidArgumentError' && e.message.includes(field),
        field,
      );
      await assert.rejects(
        async () => ctx.h.outbox.addGasPayments([payment(1, 0), payment(1, 1, over)]),
        /invalid/,
        field,
      );
    }
    assert.equal(await ctx.h.outbox.depth(), 0);
    assert.deepEqual(await ctx.h.outbox.gasPayments([id(1), id(2)]), []);
  });

  // docs/gas.md#gas-already-spent: the gas book, on the message's record.
  const spend = (n: number, tx: number, gasUsed: bigint, cost = gasUsed * 7n): GasSpend => ({
    messageId: id(n),
    txHash: txHash(tx),
    gasUsed,
    cost,
  });
  const book = async (n: number) => {
    const r = await ctx.h.outbox.get(id(n));
    return r && { requiredGas: r.requiredGas, gasSpent: r.gasSpent, gasSpentWei: r.gasSpentWei };
  };

  test('docs/gas.md#gas-already-spent: setRequiredGas keeps the last required gas, says when it changed', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    assert.deepEqual(await book(1), { requiredGas: null, gasSpent: 0n, gasSpentWei: 0n });
    // The id in any case; the same value again is no change; a uint256 is kept whole.
    assert.equal(await ctx.h.outbox.setRequiredGas(id(1).toUpperCase().replace('0X', '0x'), 60_000n), true);
    assert.equal(await ctx.h.outbox.setRequiredGas(id(1), 60_000n), false);
    assert.equal((await ctx.h.outbox.get(id(1)))?.requiredGas, 60_000n);
    assert.equal(await ctx.h.outbox.setRequiredGas(id(1), 2n ** 256n - 1n), true);
    assert.equal((await ctx.h.outbox.get(id(1)))?.requiredGas, 2n ** 256n - 1n);
    assert.equal(await ctx.h.outbox.setRequiredGas(id(1), 0n), true);
    assert.equal((await ctx.h.outbox.get(id(1)))?.requiredGas, 0n);
    assert.equal((await ctx.h.outbox.get(id(2)))?.requiredGas, null, 'the other message is untouched');
    assert.equal(await ctx.h.outbox.setRequiredGas(id(9), 1n), false, 'an unknown id');
    assert.equal(await ctx.h.outbox.get(id(9)), undefined);
    // A claim hands it out with the message, and the lifecycle keeps it.
    await ctx.h.outbox.setRequiredGas(id(1), 75_000n);
    const [claimed] = await claimAll(ctx.h.outbox);
    assert.equal(claimed.requiredGas, 75_000n);
    await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease });
    assert.equal((await ctx.h.outbox.get(id(1)))?.requiredGas, 75_000n);
    for (const [gas, what] of [
      [-1n, 'negative'],
      [2n ** 256n, 'above uint256'],
      [5, 'a number'],
    ] as const) {
      await assert.rejects(async () => ctx.h.outbox.setRequiredGas(id(2), gas as bigint), InvalidArgumentError, what);
    }
    await assert.rejects(async () => ctx.h.outbox.setRequiredGas(7 as unknown as string, 1n), InvalidArgumentError);
    assert.equal((await ctx.h.outbox.get(id(2)))?.requiredGas, null);
  });

  test('docs/gas.md#gas-already-spent: addGasSpent adds each transaction once to its message, exactly', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    // Amounts beyond 2^63 (SQLite's integers) and 2^53 (a double) are summed exactly.
    const big = 2n ** 64n + 1n;
    assert.equal(
      await ctx.h.outbox.addGasSpent([spend(1, 101, 50_000n), spend(1, 102, big, 3n ** 100n), spend(2, 103, 21_000n)]),
      3,
    );
    assert.deepEqual(await book(1), {
      requiredGas: null,
      gasSpent: 50_000n + big,
      gasSpentWei: 350_000n + 3n ** 100n,
    });
    assert.deepEqual(await book(2), { requiredGas: null, gasSpent: 21_000n, gasSpentWei: 147_000n });
    // The same receipt seen again (a crash, a second look) counts nothing, whatever it says now.
    assert.equal(await ctx.h.outbox.addGasSpent([spend(1, 101, 50_000n)]), 0);
    assert.equal(await ctx.h.outbox.addGasSpent([spend(2, 101, 99n), spend(1, 102, 1n)]), 0);
    // Twice in one call: once.
    assert.equal(await ctx.h.outbox.addGasSpent([spend(2, 104, 10n), spend(2, 104, 10n)]), 1);
    assert.deepEqual(await book(2), { requiredGas: null, gasSpent: 21_010n, gasSpentWei: 147_070n });
    assert.deepEqual(await book(1), {
      requiredGas: null,
      gasSpent: 50_000n + big,
      gasSpentWei: 350_000n + 3n ** 100n,
    });
    assert.equal(await ctx.h.outbox.addGasSpent([]), 0);
    // The record is otherwise unchanged, and a claim and requeue keep what was spent.
    const [first] = await claimAll(ctx.h.outbox, 1);
    assert.equal(first.gasSpent, 50_000n + big);
    await ctx.h.outbox.markFailed(id(1), { error: 'revert', final: true, lease: first.lease });
    await ctx.h.outbox.requeue(id(1));
    assert.deepEqual(await ctx.h.outbox.get(id(1)), {
      ...queuedRecord(outboxMessage(1)),
      attempts: 1,
      lastError: 'revert',
      gasSpent: 50_000n + big,
      gasSpentWei: 350_000n + 3n ** 100n,
    });
  });

  test('docs/gas.md#gas-already-spent: a spend of an unknown message is not kept; a bad spend stores nothing', async () => {
    assert.equal(await ctx.h.outbox.addGasSpent([spend(1, 101, 50_000n)]), 0, 'message 1 is not in the outbox');
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    assert.deepEqual(await book(1), { requiredGas: null, gasSpent: 0n, gasSpentWei: 0n });
    // Nothing was kept of it: once the message is there, the same transaction counts.
    assert.equal(await ctx.h.outbox.addGasSpent([spend(1, 101, 50_000n), spend(9, 109, 1n)]), 1);
    assert.equal((await ctx.h.outbox.get(id(1)))?.gasSpent, 50_000n);
    const bad: [string, Partial<GasSpend>][] = [
      ['messageId', { messageId: '0x1234' }],
      ['messageId', { messageId: id(1).toUpperCase().replace('0X', '0x') }],
      ['txHash', { txHash: 'nope' }],
      ['txHash', { txHash: `0x${'AB'.repeat(32)}` }],
      ['gasUsed', { gasUsed: -1n }],
      ['gasUsed', { gasUsed: 5 as unknown as bigint }],
      ['cost', { cost: 2n ** 256n }],
    ];
    for (const [field, over] of bad) {
      await assert.rejects(
        async () => ctx.h.outbox.addGasSpent([spend(1, 105, 1n), { ...spend(1, 106, 1n), ...over }]),
        (e: Error) => e.name === 'InvalidArgumentError' && e.message.includes(field),
        field,
      );
    }
    assert.equal((await ctx.h.outbox.get(id(1)))?.gasSpent, 50_000n, 'the valid spend before the bad one is not kept');
    assert.equal(await ctx.h.outbox.addGasSpent([spend(1, 105, 1n)]), 1);
  });

  test('docs/gas.md#gas-already-spent: one transaction recorded over two connections at once counts once', async () => {
    if (!ctx.h.connect) return;
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const other = await ctx.h.connect();
    try {
      const counts = await Promise.all([
        ctx.h.outbox.addGasSpent([spend(1, 101, 50_000n)]),
        other.outbox.addGasSpent([spend(1, 101, 50_000n)]),
        other.outbox.addGasSpent([spend(1, 101, 50_000n), spend(1, 102, 1n)]),
      ]);
      assert.equal(counts[0] + counts[1] + counts[2], 2);
      assert.deepEqual(await book(1), { requiredGas: null, gasSpent: 50_001n, gasSpentWei: 350_007n });
    } finally {
      await other.close();
    }
  });
}
