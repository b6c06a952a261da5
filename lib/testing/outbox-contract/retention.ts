/**
 * The outbox contract: retention (docs/configuration.md#retention), prune().
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError, OutOfRangeError } from '../../errors/classes.ts';
import type { GasPayment } from '../../gas/payment.ts';
import { txHash } from '../messages.ts';
import { type ContractContext, outboxMessage, LEASE, SIGNER, id, ids } from './context.ts';

export function retentionSection(ctx: ContractContext): void {
  const payment = (n: number): GasPayment => ({
    messageId: id(n),
    destination: 8453,
    gasAmount: 50_000n,
    payment: 10n ** 15n,
    txHash: txHash(n),
    logIndex: 0,
  });
  /** Claims message `n` (the oldest claimable) and marks it delivered now, its journal row closed with it. */
  const deliver = async (n: number) => {
    const [m] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(m.id, id(n));
    const hash = `0x${(0xd00 + n).toString(16).padStart(64, '0')}`;
    const sent = { messageId: m.id, chainId: 31337, signer: SIGNER, nonce: n, hash, raw: '0x02f8' };
    assert.equal(await ctx.h.outbox.recordBroadcast(sent, { lease: m.lease, leaseMs: LEASE }), true);
    assert.equal(await ctx.h.outbox.markDelivered(m.id, { destinationTxHash: hash, lease: m.lease }), true);
  };

  test('docs/configuration.md#retention: prune deletes messages delivered before the cut, oldest first, at most limit', async () => {
    // Messages 1-3 delivered at t, 4 delivered 10 s later, 5 failed, 6 delivering, 7 queued:
    // only 1-3 are older than the cut, and two go per call.
    await ctx.h.outbox.enqueue(
      [1, 2, 3, 4, 5, 6, 7].map((n) => outboxMessage(n, undefined, { gasPayments: [payment(n)] })),
    );
    for (const n of [1, 2, 3]) await deliver(n);
    const cut = ctx.clock.now() + 1;
    await ctx.clock.advance(10_000);
    await deliver(4);
    const [five] = await ctx.h.outbox.claim(1, LEASE);
    await ctx.h.outbox.markFailed(five.id, { error: 'gave up', final: true, lease: five.lease });
    await ctx.h.outbox.claim(1, LEASE);
    await ctx.h.outbox.addGasSpent([{ messageId: id(1), txHash: txHash(101), gasUsed: 21_000n, cost: 7n }]);

    assert.deepEqual(await ctx.h.outbox.prune({ before: cut, limit: 2 }), { messages: 2, journal: 2 });
    assert.equal(await ctx.h.outbox.get(id(1)), undefined, 'the oldest went first');
    assert.equal(await ctx.h.outbox.get(id(2)), undefined);
    assert.equal((await ctx.h.outbox.get(id(3)))?.status, 'delivered', 'beyond the limit: the next call');
    assert.deepEqual(await ctx.h.outbox.prune({ before: cut, limit: 2 }), { messages: 1, journal: 1 });
    assert.deepEqual(await ctx.h.outbox.prune({ before: cut, limit: 2 }), { messages: 0, journal: 0 });

    assert.deepEqual(ids(await ctx.h.outbox.list({ status: 'delivered' })), [id(4)], 'delivered after the cut: kept');
    assert.deepEqual(ids(await ctx.h.outbox.list()), [id(5), id(6), id(7)], 'never a message not delivered');
    assert.deepEqual(await ctx.h.outbox.byTx('ethereum', outboxMessage(1).txHash), []);
    assert.deepEqual(
      (await ctx.h.outbox.gasPayments([1, 2, 3, 4].map(id))).map((p) => p.messageId),
      [id(4)],
      'the pruned messages’ gas payments went with them',
    );
    // The gas book went too: the same message enqueued again counts the same spend anew.
    assert.equal(await ctx.h.outbox.enqueue([outboxMessage(1)]), 1, 'a pruned id is new again');
    assert.equal(
      await ctx.h.outbox.addGasSpent([{ messageId: id(1), txHash: txHash(101), gasUsed: 21_000n, cost: 7n }]),
      1,
    );
    assert.equal((await ctx.h.outbox.get(id(1)))?.gasSpent, 21_000n);
  });

  test('docs/configuration.md#retention: prune deletes closed journal rows before the cut, never an open one', async () => {
    // Message 1's broadcast is settled by its delivery; message 2's stays open (still delivering).
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    await deliver(1);
    const [two] = await ctx.h.outbox.claim(1, LEASE);
    const open = {
      messageId: two.id,
      chainId: 31337,
      signer: SIGNER,
      nonce: 9,
      hash: `0x${'9'.repeat(64)}`,
      raw: '0x02f8',
    };
    assert.equal(await ctx.h.outbox.recordBroadcast(open, { lease: two.lease, leaseMs: LEASE }), true);
    assert.deepEqual(
      await ctx.h.outbox.prune({ before: ctx.clock.now(), limit: 10 }),
      { messages: 0, journal: 0 },
      'closed now: not before the cut',
    );
    await ctx.clock.advance(1);
    assert.deepEqual(await ctx.h.outbox.prune({ before: ctx.clock.now(), limit: 10 }), { messages: 1, journal: 1 });
    assert.deepEqual(
      (await ctx.h.outbox.openBroadcasts({ messageId: id(2) })).map((e) => e.hash),
      [open.hash],
      'the open broadcast stays',
    );
  });

  test('docs/configuration.md#retention: prune refuses a limit out of 1..10 000 and a cut that is not a time', async () => {
    for (const limit of [0, 10_001, 1.5, -1])
      await assert.rejects(async () => ctx.h.outbox.prune({ before: 0, limit }), OutOfRangeError, `limit ${limit}`);
    for (const before of [Number.NaN, Number.POSITIVE_INFINITY, '1' as unknown as number])
      await assert.rejects(async () => ctx.h.outbox.prune({ before, limit: 1 }), InvalidArgumentError, String(before));
  });
}
