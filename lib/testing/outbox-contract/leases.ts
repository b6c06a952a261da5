/**
 * The outbox contract: claim and extend (docs/outbox.md#leases).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContractContext, queuedRecord, outboxMessage, T0, LEASE, DEST_TX, id, ids, claimAll } from './context.ts';
import type { OutboxRecord } from '../../outbox/index.ts';

export function leasesSection(ctx: ContractContext): void {
  test('docs/outbox.md#leases: claim takes queued messages oldest first, a batch in its own order', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(5, T0 + 300)]);
    await ctx.h.outbox.enqueue([outboxMessage(9, T0 + 100), outboxMessage(3, T0 + 100), outboxMessage(4, T0 + 100)]);
    await ctx.h.outbox.enqueue([outboxMessage(1, T0 + 200)]);
    const claimed = await claimAll(ctx.h.outbox);
    assert.deepEqual(ids(claimed), [9, 3, 4, 1, 5].map(id));
    for (const m of claimed) {
      assert.equal(m.deliveredAt, null);
      assert.equal(m.status, 'delivering');
    }
  });

  test('docs/outbox.md#leases: claim(limit) returns at most limit messages, the oldest; the rest stay claimable', async () => {
    await ctx.h.outbox.enqueue([1, 2, 3, 4].map((n) => outboxMessage(n)));
    assert.deepEqual(ids(await ctx.h.outbox.claim(2, LEASE)), [id(1), id(2)]);
    assert.deepEqual(await ctx.h.outbox.claim(0, LEASE), []);
    assert.deepEqual(ids(await ctx.h.outbox.claim(100, LEASE)), [id(3), id(4)]);
    assert.deepEqual(await ctx.h.outbox.claim(100, LEASE), [], 'all four are held');
  });

  test('docs/outbox.md#leases: claim leases a message to the caller with a lease token; get shows it without the token', async () => {
    // The claimed record: delivering, claimedUntil = now + leaseMs, attempts + 1, a lease token.
    const m = outboxMessage(1);
    await ctx.h.outbox.enqueue([m]);
    const now = ctx.clock.now();
    const [claimed] = await ctx.h.outbox.claim(10, 5_000);
    assert.equal(typeof claimed.lease, 'string');
    assert.ok(claimed.lease.length > 0);
    const { lease, ...record } = claimed;
    const expected: OutboxRecord = {
      ...queuedRecord(m),
      status: 'delivering',
      attempts: 1,
      claimedUntil: now + 5_000,
    };
    assert.deepEqual(record, expected);
    assert.deepEqual(await ctx.h.outbox.get(m.id), expected);
    assert.equal(await ctx.h.outbox.depth(), 1, 'a delivering message is still in the outbox');
    assert.deepEqual(await ctx.h.outbox.claim(10, 5_000), [], 'a live lease is not claimable');
  });

  test('docs/outbox.md#leases: an expired lease makes the message claimable again, with a new lease, and the old lease is void', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const [first] = await ctx.h.outbox.claim(1, 5_000);
    await ctx.clock.advance(4_999);
    assert.deepEqual(ids(await ctx.h.outbox.claim(10, 5_000)), [id(2)], 'message 1 is still held one ms before expiry');
    await ctx.clock.advance(1);
    const [second, ...none] = await ctx.h.outbox.claim(10, 5_000);
    assert.deepEqual(none, []);
    assert.equal(second.id, id(1));
    assert.equal(second.attempts, 2, 'the expired attempt counts');
    assert.equal(second.leaseExpiries, 1, 'and is counted as an expired lease');
    assert.notEqual(second.lease, first.lease);
    assert.equal(second.claimedUntil, ctx.clock.now() + 5_000);
    // The first worker wakes up late: its outcome no longer applies.
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: first.lease }), false);
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'late', retryAt: ctx.clock.now(), lease: first.lease }),
      false,
    );
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'delivering');
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: second.lease }), true);
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'delivered');
  });

  test('docs/outbox.md#leases: a lease that expired but was not taken over still lets its holder mark the outcome', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [claimed] = await ctx.h.outbox.claim(1, 1_000);
    await ctx.clock.advance(60_000);
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease }), true);
    assert.deepEqual(await ctx.h.outbox.claim(10, 1_000), []);
  });

  test('docs/outbox.md#leases: extend renews a live lease for its holder only: claimedUntil = now + leaseMs', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const [held] = await ctx.h.outbox.claim(1, 5_000);
    await ctx.clock.advance(4_000);
    assert.equal(await ctx.h.outbox.extend(id(1), 'not-a-lease', 60_000), false, 'a wrong lease');
    assert.equal(await ctx.h.outbox.extend(id(2), held.lease, 60_000), false, 'another message (queued)');
    assert.equal(await ctx.h.outbox.extend(id(99), held.lease, 60_000), false, 'an unknown id');
    assert.equal((await ctx.h.outbox.get(id(1)))?.claimedUntil, T0 + 1_000_000 + 5_000, 'unchanged by refused calls');
    assert.equal(await ctx.h.outbox.extend(id(1).toUpperCase().replace('0X', '0x'), held.lease, 5_000), true);
    assert.deepEqual(await ctx.h.outbox.get(id(1)), {
      ...queuedRecord(outboxMessage(1)),
      status: 'delivering',
      attempts: 1,
      claimedUntil: ctx.clock.now() + 5_000,
    });
    await ctx.clock.advance(4_999); // past the first lease's end, within the renewed one
    assert.deepEqual(ids(await ctx.h.outbox.claim(10, 5_000)), [id(2)], 'the renewed message is still held');
    assert.equal(
      await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: held.lease }),
      true,
      'the lease is the same token',
    );
    assert.equal(await ctx.h.outbox.extend(id(1), held.lease, 5_000), false, 'delivered');
  });

  test('docs/outbox.md#leases: extend is refused once the lease was taken over, or the message failed or went back to the queue', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2), outboxMessage(3)]);
    const [first, _two, three] = await ctx.h.outbox.claim(3, 1_000);
    await ctx.clock.advance(1_000);
    // Expired but nobody claimed it since: the holder keeps it, like markDelivered.
    assert.equal(await ctx.h.outbox.extend(id(3), three.lease, 1_000), true);
    assert.equal((await ctx.h.outbox.get(id(3)))?.claimedUntil, ctx.clock.now() + 1_000);
    const [second, ...rest] = await ctx.h.outbox.claim(10, 1_000);
    assert.deepEqual(ids([second, ...rest]), [id(1), id(2)]);
    assert.equal(await ctx.h.outbox.extend(id(1), first.lease, 60_000), false, 'taken over');
    assert.equal(
      (await ctx.h.outbox.get(id(1)))?.claimedUntil,
      ctx.clock.now() + 1_000,
      "the new holder's lease is unchanged",
    );
    assert.equal(
      await ctx.h.outbox.markFailed(id(2), { error: 'x', retryAt: ctx.clock.now() + 5, lease: rest[0].lease }),
      true,
    );
    assert.equal(await ctx.h.outbox.extend(id(2), rest[0].lease, 60_000), false, 'queued again');
    assert.equal((await ctx.h.outbox.get(id(2)))?.status, 'queued');
    assert.equal(await ctx.h.outbox.markFailed(id(3), { error: 'x', final: true, lease: three.lease }), true);
    assert.equal(await ctx.h.outbox.extend(id(3), three.lease, 60_000), false, 'failed');
    assert.equal((await ctx.h.outbox.get(id(3)))?.claimedUntil, null);
    assert.equal(await ctx.h.outbox.extend(id(1), second.lease, 60_000), true, 'the new holder may');
  });

  test('docs/outbox.md#leases: an expired lease is claimed in age order among queued messages', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2), outboxMessage(3)]);
    await ctx.h.outbox.claim(2, 1_000); // 1 and 2
    await ctx.clock.advance(1_000);
    assert.deepEqual(ids(await claimAll(ctx.h.outbox)), [id(1), id(2), id(3)]);
  });
}
