/**
 * The outbox contract: list and requeueFailed (docs/outbox.md#listing-and-bulk-requeue).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContractContext, queuedRecord, outboxMessage, T0, LEASE, DEST_TX, id, ids } from './context.ts';
import { InvalidArgumentError, OutOfRangeError } from '../../errors/classes.ts';

export function listingSection(ctx: ContractContext): void {
  test('docs/outbox.md#listing-and-bulk-requeue: list filters by status and destination, oldest first, at most limit', async () => {
    // Without a status, list gives every message not delivered.
    await ctx.h.outbox.enqueue([
      outboxMessage(6, T0 + 60, { destination: 10 }),
      outboxMessage(5, T0 + 50, { destination: 10 }),
      ...[1, 2, 3, 4].map((n) => outboxMessage(n)),
    ]);
    // 1 delivered, 2 and 5 failed, 3 delivering; 4 and 6 stay queued (claimed one at a time).
    const take = async (n: number) => {
      const [m] = await ctx.h.outbox.claim(1, LEASE);
      assert.equal(m.id, id(n));
      return m;
    };
    const one = await take(1);
    await ctx.h.outbox.markDelivered(one.id, { destinationTxHash: DEST_TX, lease: one.lease });
    const two = await take(2);
    await ctx.h.outbox.markFailed(two.id, { error: 'gave up on 2', final: true, lease: two.lease });
    await take(3);
    const four = await take(4);
    await ctx.h.outbox.markFailed(four.id, {
      error: 'try later',
      retryAt: ctx.clock.now() + 60_000,
      lease: four.lease,
    });
    const five = await take(5);
    await ctx.h.outbox.markFailed(five.id, { error: 'gave up on 5', final: true, lease: five.lease });

    assert.deepEqual(
      ids(await ctx.h.outbox.list()),
      [id(2), id(3), id(4), id(5), id(6)],
      'not delivered, oldest first',
    );
    assert.deepEqual(ids(await ctx.h.outbox.list({ status: 'failed' })), [id(2), id(5)]);
    assert.deepEqual(ids(await ctx.h.outbox.list({ status: 'queued' })), [id(4), id(6)]);
    assert.deepEqual(ids(await ctx.h.outbox.list({ status: 'delivering' })), [id(3)]);
    assert.deepEqual(ids(await ctx.h.outbox.list({ status: 'delivered' })), [id(1)]);
    assert.deepEqual(ids(await ctx.h.outbox.list({ destination: 10 })), [id(5), id(6)]);
    assert.deepEqual(ids(await ctx.h.outbox.list({ status: 'failed', destination: 10 })), [id(5)]);
    assert.deepEqual(ids(await ctx.h.outbox.list({ destination: 11 })), []);
    assert.deepEqual(ids(await ctx.h.outbox.list({ limit: 2 })), [id(2), id(3)]);
    // The records are get()'s.
    assert.deepEqual((await ctx.h.outbox.list({ status: 'failed', limit: 1 }))[0], await ctx.h.outbox.get(id(2)));
    const [queued] = await ctx.h.outbox.list({ status: 'queued' });
    assert.equal(queued.lastError, 'try later');
    assert.equal(queued.attempts, 1);
    assert.equal(queued.retryAt, ctx.clock.now() + 60_000);
  });

  test('docs/outbox.md#listing-and-bulk-requeue: requeueFailed puts back every failed message, as requeue does', async () => {
    // Of one destination when given, oldest first, at most limit.
    await ctx.h.outbox.enqueue(
      [1, 2, 3, 4].map((n) => outboxMessage(n, T0 + n, { destination: n % 2 === 0 ? 10 : 8453 })),
    );
    for (const n of [1, 2, 3, 4]) {
      const [m] = await ctx.h.outbox.claim(1, LEASE);
      assert.equal(m.id, id(n));
      if (n === 4) continue; // stays delivering
      await ctx.h.outbox.markFailed(m.id, { error: `gave up on ${n}`, final: true, lease: m.lease });
    }
    assert.deepEqual(await ctx.h.outbox.requeueFailed({ destination: 10 }), [id(2)]);
    assert.deepEqual(await ctx.h.outbox.get(id(2)), {
      ...queuedRecord(outboxMessage(2, T0 + 2, { destination: 10 })),
      attempts: 1,
      lastError: 'gave up on 2',
    });
    assert.deepEqual(await ctx.h.outbox.requeueFailed({ destination: 10 }), [], 'nothing failed left there');
    assert.deepEqual(await ctx.h.outbox.requeueFailed({ limit: 1 }), [id(1)]);
    assert.deepEqual(await ctx.h.outbox.requeueFailed(), [id(3)]);
    assert.deepEqual(await ctx.h.outbox.requeueFailed(), []);
    assert.equal((await ctx.h.outbox.get(id(4)))?.status, 'delivering', 'only failed messages');
    assert.deepEqual(ids(await ctx.h.outbox.claim(10, LEASE)), [id(1), id(2), id(3)], 'claimable at once');
  });

  test('docs/outbox.md#listing-and-bulk-requeue: list and requeueFailed refuse bad options and change nothing', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [m] = await ctx.h.outbox.claim(1, LEASE);
    await ctx.h.outbox.markFailed(m.id, { error: 'x', final: true, lease: m.lease });
    const bad: unknown[] = [
      { limit: 0 },
      { limit: 1001 },
      { limit: 1.5 },
      { destination: -1 },
      { destination: 2 ** 32 },
      { status: 'stuck' },
      null,
    ];
    for (const opts of bad) {
      await assert.rejects(
        async () => ctx.h.outbox.list(opts as never),
        (e) => e instanceof InvalidArgumentError || e instanceof OutOfRangeError,
        JSON.stringify(opts),
      );
      if (!(opts !== null && typeof opts === 'object' && 'status' in opts))
        await assert.rejects(
          async () => ctx.h.outbox.requeueFailed(opts as never),
          (e) => e instanceof InvalidArgumentError || e instanceof OutOfRangeError,
          JSON.stringify(opts),
        );
    }
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'failed');
  });
}
