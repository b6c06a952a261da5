/**
 * The outbox contract: the transaction journal (docs/transactions.md#the-transaction-journal).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContractContext, outboxMessage, LEASE, DEST_TX, SIGNER, OTHER_SIGNER, id } from './context.ts';

export function journalSection(ctx: ContractContext): void {
  /** A signed transaction of message `n` at `nonce` (its bytes stand in for one; the store does not parse them). */
  const broadcast = (n: number, nonce: number, replacement = 0, signer = SIGNER) => ({
    messageId: id(n),
    chainId: 31337,
    signer,
    nonce,
    hash: `0x${(n * 1_000 + nonce * 10 + replacement).toString(16).padStart(64, '0')}`,
    raw: `0x02f8${(n * 1_000 + nonce * 10 + replacement).toString(16).padStart(8, '0')}`,
  });
  const nonceSlotOf = (b: { chainId: number; signer: string; nonce: number }) => ({
    chainId: b.chainId,
    signer: b.signer,
    nonce: b.nonce,
  });
  const hashes = (entries: readonly { hash: string }[]) => entries.map((e) => e.hash);

  test('docs/transactions.md#the-transaction-journal: a first broadcast is recorded under the live lease, which it renews', async () => {
    // Without the live lease nothing is recorded.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const [m] = await ctx.h.outbox.claim(1, 5_000);
    await ctx.clock.advance(4_000);
    const first = broadcast(1, 0);
    assert.equal(await ctx.h.outbox.recordBroadcast(first, { lease: 'not-the-lease', leaseMs: 5_000 }), false);
    assert.equal(
      await ctx.h.outbox.recordBroadcast(broadcast(2, 1), { lease: m.lease, leaseMs: 5_000 }),
      false,
      'another message (queued)',
    );
    assert.deepEqual(await ctx.h.outbox.openBroadcasts({ messageId: id(1) }), []);
    assert.equal(await ctx.h.outbox.recordBroadcast(first, { lease: m.lease, leaseMs: 5_000 }), true);
    assert.equal(
      (await ctx.h.outbox.get(id(1)))?.claimedUntil,
      ctx.clock.now() + 5_000,
      'the lease is renewed by the record',
    );
    const [entry] = await ctx.h.outbox.openBroadcasts({ messageId: id(1) });
    assert.deepEqual(entry, { ...first, sentAt: ctx.clock.now() });
    assert.equal(
      await ctx.h.outbox.recordBroadcast(first, { lease: m.lease, leaseMs: 5_000 }),
      true,
      'the same hash again',
    );
    assert.equal((await ctx.h.outbox.openBroadcasts({ messageId: id(1) })).length, 1, 'recorded once');
    // The lease expires and another worker claims the message: the first holder's fence is gone.
    await ctx.clock.advance(5_000);
    const [taken] = await ctx.h.outbox.claim(1, 5_000);
    assert.equal(taken.id, id(1));
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 1), { lease: m.lease, leaseMs: 5_000 }), false);
    assert.deepEqual(
      hashes(await ctx.h.outbox.openBroadcasts({ messageId: id(1) })),
      [first.hash],
      'the next holder reads it',
    );
  });

  test('docs/transactions.md#the-transaction-journal: a replacement is recorded only beside an open broadcast', async () => {
    // A replacement (no lease) needs an open broadcast of the same slot and message.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const [m] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 4, 1)), false, 'no open slot yet');
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 4), { lease: m.lease, leaseMs: LEASE }), true);
    await ctx.clock.advance(1);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 4, 1)), true, 'a replacement at the same nonce');
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 5, 1)), false, 'another nonce');
    assert.equal(await ctx.h.outbox.recordBroadcast({ ...broadcast(2, 4, 2), nonce: 4 }), false, 'another message');
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 4, 2, OTHER_SIGNER)), false, 'another signer');
    assert.deepEqual(hashes(await ctx.h.outbox.openBroadcasts({ messageId: id(1) })), [
      broadcast(1, 4).hash,
      broadcast(1, 4, 1).hash,
    ]);
    // Recorded while the message is delivered or queued too: the signer's own replacement needs no lease.
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: m.lease }), true);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 4, 3)), true);
  });

  test('docs/transactions.md#the-transaction-journal: forgetBroadcast, closeNonceSlot and openBroadcasts', async () => {
    // forgetBroadcast drops a refused broadcast; closeNonceSlot settles a slot; openBroadcasts lists what may
    // still land, by message or by signer, oldest first.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2), outboxMessage(3)]);
    const claimed = await ctx.h.outbox.claim(3, LEASE);
    const fence = (n: number) => ({ lease: claimed[n - 1].lease, leaseMs: LEASE });
    for (const [n, nonce] of [
      [1, 0],
      [2, 1],
      [3, 2],
    ]) {
      assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(n, nonce), fence(n)), true);
      await ctx.clock.advance(1);
    }
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(2, 1, 1)), true);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(3, 7, 0, OTHER_SIGNER), fence(3)), true);
    const mine = { chainId: 31337, signer: SIGNER };
    assert.deepEqual(hashes(await ctx.h.outbox.openBroadcasts(mine)), [
      broadcast(1, 0).hash,
      broadcast(2, 1).hash,
      broadcast(3, 2).hash,
      broadcast(2, 1, 1).hash,
    ]);
    assert.deepEqual(await ctx.h.outbox.openBroadcasts({ chainId: 1, signer: SIGNER }), [], 'another chain');
    // The node refused message 3's broadcast for good: it never existed.
    assert.equal(await ctx.h.outbox.forgetBroadcast(broadcast(3, 2).hash), true);
    assert.equal(await ctx.h.outbox.forgetBroadcast(broadcast(3, 2).hash), false);
    // Nonce 1: the replacement was mined; nonce 0: used by a transaction not in the journal.
    assert.equal(
      await ctx.h.outbox.closeNonceSlot(nonceSlotOf(broadcast(2, 1)), {
        outcome: 'mined',
        hash: broadcast(2, 1, 1).hash,
      }),
      2,
    );
    assert.equal(await ctx.h.outbox.closeNonceSlot(nonceSlotOf(broadcast(1, 0)), { outcome: 'dropped' }), 1);
    assert.equal(
      await ctx.h.outbox.closeNonceSlot(nonceSlotOf(broadcast(1, 0)), { outcome: 'dropped' }),
      0,
      'settled once',
    );
    assert.deepEqual(await ctx.h.outbox.openBroadcasts(mine), []);
    assert.deepEqual(await ctx.h.outbox.openBroadcasts({ messageId: id(2) }), []);
    assert.deepEqual(hashes(await ctx.h.outbox.openBroadcasts({ messageId: id(3) })), [
      broadcast(3, 7, 0, OTHER_SIGNER).hash,
    ]);
    assert.equal(await ctx.h.outbox.forgetBroadcast(broadcast(2, 1).hash), false, 'a settled broadcast is history');
    assert.equal(
      await ctx.h.outbox.recordBroadcast(broadcast(2, 1, 4)),
      false,
      'no replacement once its slot is settled',
    );
    assert.equal(
      await ctx.h.outbox.recordBroadcast(broadcast(2, 1, 5), fence(2)),
      true,
      'a settled nonce does not hold the slot (a new first broadcast under the lease)',
    );
  });

  test("docs/transactions.md#the-transaction-journal: markDelivered settles the delivering transaction's slot, only that one", async () => {
    // In the same write as the delivery.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const [m1, m2] = await ctx.h.outbox.claim(2, LEASE);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 0), { lease: m1.lease, leaseMs: LEASE }), true);
    await ctx.clock.advance(1);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 0, 1)), true);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(2, 1), { lease: m2.lease, leaseMs: LEASE }), true);
    // A wrong lease settles nothing.
    assert.equal(
      await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: broadcast(1, 0, 1).hash, lease: m2.lease }),
      false,
    );
    assert.equal((await ctx.h.outbox.openBroadcasts({ messageId: id(1) })).length, 2);
    assert.equal(
      await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: broadcast(1, 0, 1).hash, lease: m1.lease }),
      true,
    );
    assert.deepEqual(
      await ctx.h.outbox.openBroadcasts({ messageId: id(1) }),
      [],
      'both broadcasts of the slot settled',
    );
    // Delivered by a transaction the journal does not hold (another relayer): its slot stays open.
    assert.equal(await ctx.h.outbox.markDelivered(id(2), { destinationTxHash: DEST_TX, lease: m2.lease }), true);
    assert.deepEqual(hashes(await ctx.h.outbox.openBroadcasts({ messageId: id(2) })), [broadcast(2, 1).hash]);
  });

  test('docs/transactions.md#the-transaction-journal: invalid journal arguments throw and record nothing', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [m] = await ctx.h.outbox.claim(1, LEASE);
    const fence = { lease: m.lease, leaseMs: LEASE };
    const good = broadcast(1, 0);
    const calls = [
      () => ctx.h.outbox.recordBroadcast({ ...good, hash: good.hash.toUpperCase().replace('0X', '0x') }, fence),
      () => ctx.h.outbox.recordBroadcast({ ...good, hash: '0x1234' }, fence),
      () => ctx.h.outbox.recordBroadcast({ ...good, signer: '0xABCDEF0000000000000000000000000000000000' }, fence),
      () => ctx.h.outbox.recordBroadcast({ ...good, nonce: -1 }, fence),
      () => ctx.h.outbox.recordBroadcast({ ...good, nonce: 1.5 }, fence),
      () => ctx.h.outbox.recordBroadcast({ ...good, chainId: -1 }, fence),
      () => ctx.h.outbox.recordBroadcast({ ...good, raw: 'f86b' }, fence),
      () => ctx.h.outbox.recordBroadcast({ ...good, raw: '0x123' }, fence),
      () => ctx.h.outbox.recordBroadcast({ ...good, messageId: 'x' }, fence),
      () => ctx.h.outbox.recordBroadcast(good, { lease: '', leaseMs: LEASE }),
      () => ctx.h.outbox.recordBroadcast(good, { lease: m.lease, leaseMs: 0 }),
      () => ctx.h.outbox.closeNonceSlot(nonceSlotOf(good), { outcome: 'mined' } as never),
      () => ctx.h.outbox.closeNonceSlot(nonceSlotOf(good), { outcome: 'lost' } as never),
      () => ctx.h.outbox.closeNonceSlot({ ...nonceSlotOf(good), signer: 'nobody' }, { outcome: 'dropped' }),
      () => ctx.h.outbox.openBroadcasts({ chainId: 1, signer: 'nobody' }),
    ];
    for (const call of calls) await assert.rejects(async () => call());
    assert.deepEqual(await ctx.h.outbox.openBroadcasts({ messageId: id(1) }), []);
    assert.equal(await ctx.h.outbox.recordBroadcast(good, fence), true);
  });
}
