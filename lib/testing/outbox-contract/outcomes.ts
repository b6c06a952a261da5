/**
 * The outbox contract: markDelivered, markFailed and argument checks (docs/outbox.md#leases).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContractContext, outboxMessage, queuedRecord, LEASE, DEST_TX, id, ids, claimAll } from './context.ts';
import { MAX_ERROR_LENGTH } from '../../outbox/index.ts';
import { InvalidArgumentError, OutOfRangeError } from '../../errors/classes.ts';

export function outcomesSection(ctx: ContractContext): void {
  test('docs/outbox.md#leases: markDelivered: delivering -> delivered with the destination tx hash; depth drops', async () => {
    // delivered at the clock's time.
    await ctx.h.outbox.enqueue([1, 2, 3].map((n) => outboxMessage(n)));
    const claimed = await claimAll(ctx.h.outbox);
    await ctx.clock.advance(5_000);
    const two = claimed[1];
    assert.equal(await ctx.h.outbox.markDelivered(two.id, { destinationTxHash: DEST_TX, lease: two.lease }), true);
    assert.equal(await ctx.h.outbox.depth(), 2);
    const record = await ctx.h.outbox.get(two.id);
    assert.deepEqual(record, {
      ...queuedRecord(outboxMessage(2)),
      status: 'delivered',
      attempts: 1,
      deliveredAt: ctx.clock.now(),
      destinationTxHash: DEST_TX,
    });
    assert.equal((await ctx.h.outbox.get(id(1)))?.deliveredAt, null);
    // The other two come back after their leases; the delivered one never does.
    await ctx.clock.advance(LEASE);
    assert.deepEqual(ids(await claimAll(ctx.h.outbox)), [id(1), id(3)]);
  });

  test('docs/outbox.md#leases: markDelivered counts only changes', async () => {
    // Unknown ids are ignored; a second mark keeps the first time and hash.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const [first1, first2] = await claimAll(ctx.h.outbox);
    assert.equal(await ctx.h.outbox.markDelivered(id(99), { destinationTxHash: DEST_TX, lease: first1.lease }), false);
    const first = ctx.clock.now();
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: first1.lease }), true);
    await ctx.clock.advance(10);
    assert.equal(
      await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: '0x' + '11'.repeat(32), lease: first1.lease }),
      false,
    );
    assert.equal(await ctx.h.outbox.markDelivered(id(2), { destinationTxHash: DEST_TX, lease: first2.lease }), true);
    const one = await ctx.h.outbox.get(id(1));
    assert.equal(one?.deliveredAt, first);
    assert.equal(one?.destinationTxHash, DEST_TX);
    assert.equal(await ctx.h.outbox.depth(), 0);
    assert.deepEqual(await claimAll(ctx.h.outbox), []);
  });

  test('docs/outbox.md#leases: markDelivered needs the claim', async () => {
    // A queued message is not delivered by any lease; a wrong lease changes nothing.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: 'not-a-lease' }), false);
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'queued');
    const [claimed] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: 'not-a-lease' }), false);
    assert.equal(
      await ctx.h.outbox.markDelivered(id(2), { destinationTxHash: DEST_TX, lease: claimed.lease }),
      false,
      "another message's lease",
    );
    assert.equal((await ctx.h.outbox.get(id(2)))?.status, 'queued');
    assert.deepEqual(await ctx.h.outbox.get(id(1)), {
      ...queuedRecord(outboxMessage(1)),
      status: 'delivering',
      attempts: 1,
      claimedUntil: ctx.clock.now() + LEASE,
    });
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease }), true);
    assert.equal((await ctx.h.outbox.get(id(1)))?.deliveredAt, ctx.clock.now());
  });

  test('docs/outbox.md#leases: the lease is required: a call without it throws InvalidArgumentError', async () => {
    // It also leaves another worker's live claim alone.
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [held] = await ctx.h.outbox.claim(1, LEASE);
    const before = await ctx.h.outbox.get(id(1));
    const leaseless = [
      () => ctx.h.outbox.markFailed(id(1), { error: 'x', retryAt: ctx.clock.now() } as never),
      () => ctx.h.outbox.markFailed(id(1), { error: 'x', final: true } as never),
      () => ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX } as never),
      () => ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: undefined } as never),
      () => ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: '' }),
      () => ctx.h.outbox.markFailed(id(1), { error: 'x', final: true, lease: null } as never),
      () => ctx.h.outbox.extend(id(1), undefined as never, LEASE),
    ];
    for (const call of leaseless) await assert.rejects(async () => call(), InvalidArgumentError);
    // Still the holder's: not failed under it, not handed to a third worker (delivered twice).
    assert.deepEqual(await ctx.h.outbox.get(id(1)), before);
    assert.deepEqual(await ctx.h.outbox.claim(10, LEASE), []);
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: held.lease }), true);
  });

  test('docs/outbox.md#leases: markFailed with retryAt: delivering -> queued with lastError, not claimable before retryAt', async () => {
    // attempts keep counting.
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [claimed] = await ctx.h.outbox.claim(1, LEASE);
    const retryAt = ctx.clock.now() + 10_000;
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'execution reverted', retryAt, lease: claimed.lease }),
      true,
    );
    assert.deepEqual(await ctx.h.outbox.get(id(1)), {
      ...queuedRecord(outboxMessage(1)),
      attempts: 1,
      lastError: 'execution reverted',
      retryAt,
    });
    assert.equal(await ctx.h.outbox.depth(), 1, 'a message waiting for its retry is still in the outbox');
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'again', retryAt, lease: claimed.lease }),
      false,
      'a queued message is not failed again',
    );
    await ctx.clock.advance(9_999);
    assert.deepEqual(await claimAll(ctx.h.outbox), []);
    await ctx.clock.advance(1);
    const [again] = await claimAll(ctx.h.outbox);
    assert.equal(again.id, id(1));
    assert.equal(again.attempts, 2);
    assert.equal(again.retryAt, null);
    assert.equal(again.lastError, 'execution reverted', 'the last error stays visible while it is retried');
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: again.lease }), true);
    const done = await ctx.h.outbox.get(id(1));
    assert.equal(done?.status, 'delivered');
    assert.equal(done?.attempts, 2);
    assert.equal(done?.lastError, 'execution reverted');
    assert.equal(done?.retryAt, null);
  });

  test('docs/outbox.md#leases: markFailed with retryAt and error null: queued with lastError null, kept null by a delivery', async () => {
    // A release of a message that never failed (docs/delivery.md#stopping): no text of its own.
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [claimed] = await ctx.h.outbox.claim(1, LEASE);
    const retryAt = ctx.clock.now();
    assert.equal(await ctx.h.outbox.markFailed(id(1), { error: null, retryAt, lease: claimed.lease }), true);
    assert.deepEqual(await ctx.h.outbox.get(id(1)), { ...queuedRecord(outboxMessage(1)), attempts: 1, retryAt });
    const [again] = await claimAll(ctx.h.outbox);
    assert.equal(again.lastError, null);
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: again.lease }), true);
    assert.equal((await ctx.h.outbox.get(id(1)))?.lastError, null);
  });

  test('docs/outbox.md#leases: markFailed with a retryAt already past makes the message claimable at once', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [claimed] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), {
        error: 'nonce too low',
        retryAt: ctx.clock.now() - 1,
        lease: claimed.lease,
      }),
      true,
    );
    assert.deepEqual(ids(await claimAll(ctx.h.outbox)), [id(1)]);
  });

  test('docs/outbox.md#leases: markFailed final: delivering -> failed, out of depth and of claim, terminal', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const [claimed] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'recipient reverts', final: true, lease: claimed.lease }),
      true,
    );
    assert.deepEqual(await ctx.h.outbox.get(id(1)), {
      ...queuedRecord(outboxMessage(1)),
      status: 'failed',
      attempts: 1,
      lastError: 'recipient reverts',
    });
    assert.equal(await ctx.h.outbox.depth(), 1);
    await ctx.clock.advance(LEASE * 10);
    assert.deepEqual(ids(await claimAll(ctx.h.outbox)), [id(2)]);
    assert.equal(
      await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease }),
      false,
      'failed is terminal',
    );
    assert.equal(await ctx.h.outbox.markFailed(id(1), { error: 'x', final: true, lease: claimed.lease }), false);
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'x', retryAt: ctx.clock.now(), lease: claimed.lease }),
      false,
    );
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'failed');
  });

  test('docs/outbox.md#leases: markFailed only applies to a delivering message under the given lease', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    assert.equal(
      await ctx.h.outbox.markFailed(id(99), { error: 'x', final: true, lease: 'not-a-lease' }),
      false,
      'unknown id',
    );
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'x', final: true, lease: 'not-a-lease' }),
      false,
      'queued, never claimed',
    );
    const [claimed] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(await ctx.h.outbox.markFailed(id(1), { error: 'x', final: true, lease: 'not-a-lease' }), false);
    assert.equal(
      await ctx.h.outbox.markFailed(id(2), { error: 'x', final: true, lease: claimed.lease }),
      false,
      "another message's lease",
    );
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'delivering');
    assert.equal((await ctx.h.outbox.get(id(2)))?.status, 'queued');
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease }), true);
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'x', final: true, lease: claimed.lease }),
      false,
      'delivered is terminal',
    );
    assert.equal((await ctx.h.outbox.get(id(1)))?.lastError, null);
  });

  test(`docs/outbox.md#leases: markFailed keeps the first ${MAX_ERROR_LENGTH} characters of a long error`, async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [claimed] = await ctx.h.outbox.claim(1, LEASE);
    const long = 'e'.repeat(MAX_ERROR_LENGTH - 1) + '\u{1F600}' + 'tail';
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: long, retryAt: ctx.clock.now(), lease: claimed.lease }),
      true,
    );
    assert.equal((await ctx.h.outbox.get(id(1)))?.lastError, 'e'.repeat(MAX_ERROR_LENGTH - 1), 'not half an emoji');
  });

  test('docs/outbox.md#leases: invalid consumer arguments throw and change nothing', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    for (const [limit, leaseMs] of [
      [-1, LEASE],
      [1.5, LEASE],
      [Number.NaN, LEASE],
      [1, 0],
      [1, -5],
      [1, Number.POSITIVE_INFINITY],
    ]) {
      await assert.rejects(
        async () => ctx.h.outbox.claim(limit, leaseMs),
        OutOfRangeError,
        `claim(${limit}, ${leaseMs})`,
      );
    }
    for (const maxLeaseExpiries of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      await assert.rejects(
        async () => ctx.h.outbox.claim(1, LEASE, { maxLeaseExpiries }),
        OutOfRangeError,
        `maxLeaseExpiries ${maxLeaseExpiries}`,
      );
    }
    for (const leaseMs of [0, -1, 1.5, Number.NaN]) {
      await assert.rejects(
        async () => ctx.h.outbox.extend(id(1), 'a-lease', leaseMs),
        OutOfRangeError,
        `extend(leaseMs ${leaseMs})`,
      );
    }
    const lease = 'a-lease';
    const bad = [
      () => ctx.h.outbox.markDelivered(id(1), {} as never),
      () => ctx.h.outbox.markDelivered(id(1), { destinationTxHash: '', lease }),
      () => ctx.h.outbox.markDelivered(id(1), { destinationTxHash: 'x'.repeat(257), lease }),
      () => ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: 7 as never }),
      () => ctx.h.outbox.markFailed(id(1), { error: 'x', lease } as never),
      () => ctx.h.outbox.markFailed(id(1), { error: 'x', retryAt: Number.NaN, lease }),
      () => ctx.h.outbox.markFailed(id(1), { error: 'x', final: false, lease } as never),
      () => ctx.h.outbox.markFailed(id(1), { error: 42, final: true, lease } as never),
      () => ctx.h.outbox.markFailed(id(1), { error: null, final: true, lease } as never),
      () => ctx.h.outbox.extend(id(1), 7 as never, LEASE),
      () => ctx.h.outbox.claim(1, LEASE, 'often' as never),
    ];
    for (const call of bad) await assert.rejects(async () => call(), InvalidArgumentError);
    assert.deepEqual(await ctx.h.outbox.get(id(1)), queuedRecord(outboxMessage(1)));
  });
}
