/**
 * The outbox contract: the last look, maxLeaseExpiries, requeue and the attempt state (docs/delivery.md#retries-pending-proofs-dead-letters).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContractContext, queuedRecord, outboxMessage, T0, LEASE, DEST_TX, id, ids } from './context.ts';
import { deadLetterError } from '../../outbox/index.ts';

export function retriesSection(ctx: ContractContext): void {
  test('docs/delivery.md#retries-pending-proofs-dead-letters: leases expired maxLeaseExpiries times: one last look', async () => {
    // Handed out once more, flagged lastChance; if that lease expires too, it is the dead letter.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const leases: string[] = [];
    for (let round = 1; round <= 3; round++) {
      const got = await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 3 });
      assert.deepEqual(ids(got), [id(1)], `round ${round}`);
      assert.equal(got[0].attempts, round);
      assert.equal(got[0].leaseExpiries, round - 1);
      assert.equal(got[0].lastChance, undefined, `round ${round}: not the last look yet`);
      leases.push(got[0].lease);
      await ctx.clock.advance(1_000); // the worker holding it stopped
    }
    // The third lease expired: message 1 is handed out once more, flagged.
    const [last] = await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 3 });
    assert.equal(last.id, id(1));
    assert.equal(last.lastChance, true);
    assert.equal(last.leaseExpiries, 3);
    assert.equal(last.attempts, 4);
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'delivering');
    leases.push(last.lease);
    await ctx.clock.advance(1_000); // the last look's worker stopped too
    // Its lease expired as well: message 1 is the dead letter, and the claim hands out message 2.
    assert.deepEqual(ids(await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 3 })), [id(2)]);
    const dead = await ctx.h.outbox.get(id(1));
    assert.deepEqual(dead, {
      ...queuedRecord(outboxMessage(1)),
      status: 'failed',
      attempts: 4,
      leaseExpiries: 4,
      lastError: deadLetterError(4, 3),
    });
    assert.match(dead!.lastError!, /lease expired 4 times/);
    assert.equal(await ctx.h.outbox.depth(), 1);
    await ctx.clock.advance(60_000);
    assert.deepEqual(
      ids(await ctx.h.outbox.claim(10, 1_000)),
      [id(2)],
      'not claimable, with or without maxLeaseExpiries',
    );
    assert.equal(
      await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: leases[3] }),
      false,
      'its last lease is void',
    );
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'failed');
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: a last look that retried or waited is flagged again', async () => {
    // Its leaseExpiries stays at maxLeaseExpiries: claimed from queued, it is still the last look.
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    for (let round = 0; round < 2; round++) {
      await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 2 });
      await ctx.clock.advance(1_000);
    }
    const [last] = await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 2 });
    assert.equal(last.lastChance, true);
    const error = 'pending: transaction 0x… may still land';
    assert.equal(
      await ctx.h.outbox.markFailed(last.id, { error, retryAt: ctx.clock.now() + 5, lease: last.lease }),
      true,
    );
    await ctx.clock.advance(5);
    const [again] = await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 2 });
    assert.deepEqual([again.id, again.lastChance, again.leaseExpiries], [id(1), true, 2]);
    assert.deepEqual(await ctx.h.outbox.claim(1, 1_000), [], 'held');
    await ctx.clock.advance(1_000);
    const [plain] = await ctx.h.outbox.claim(1, 1_000);
    assert.equal(plain.lastChance, undefined, 'a claim without maxLeaseExpiries flags nothing');
  });

  test('docs/outbox.md#leases: maxLeaseExpiries counts expired leases only', async () => {
    // Retries recorded by markFailed and live leases never dead-letter.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    for (let round = 1; round <= 4; round++) {
      const [m] = await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 1 });
      assert.equal(m.id, id(1), `round ${round}`);
      assert.equal(
        await ctx.h.outbox.markFailed(m.id, { error: 'rpc timeout', retryAt: ctx.clock.now(), lease: m.lease }),
        true,
      );
    }
    assert.equal((await ctx.h.outbox.get(id(1)))?.attempts, 4);
    assert.equal((await ctx.h.outbox.get(id(1)))?.leaseExpiries, 0);
    // Held with live leases: a claim with maxLeaseExpiries 1 leaves them alone.
    const held = await ctx.h.outbox.claim(2, 1_000, { maxLeaseExpiries: 1 });
    assert.deepEqual(ids(held), [id(1), id(2)]);
    await ctx.clock.advance(999);
    assert.deepEqual(await ctx.h.outbox.claim(10, 1_000, { maxLeaseExpiries: 1 }), []);
    assert.deepEqual(ids(await ctx.h.outbox.claim(10, 1_000)), [], 'no claim without maxLeaseExpiries either');
    for (const m of held) assert.equal((await ctx.h.outbox.get(m.id))?.status, 'delivering');
  });

  test('docs/outbox.md#leases: without maxLeaseExpiries expired leases are counted but never dead-letter', async () => {
    // The count goes up only on a takeover.
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    for (let round = 0; round < 5; round++) {
      const [m] = await ctx.h.outbox.claim(1, 1_000);
      assert.equal(m.leaseExpiries, round);
      await ctx.clock.advance(1_000);
    }
    const record = await ctx.h.outbox.get(id(1));
    assert.equal(record?.status, 'delivering');
    assert.equal(record?.leaseExpiries, 4, 'the fifth lease expired but nobody has taken it over yet');
    // A later claim with maxLeaseExpiries sees the fifth expiry: 5 >= 5, the last look.
    const [last] = await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 5 });
    assert.equal(last.lastChance, true);
    await ctx.clock.advance(1_000);
    assert.deepEqual(await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 5 }), []);
    assert.equal((await ctx.h.outbox.get(id(1)))?.lastError, deadLetterError(6, 5));
  });

  test('docs/outbox.md#leases: requeue puts a failed message back to queued, claimable at once', async () => {
    // attempts and lastError are kept, the expired-lease count is reset.
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    for (let round = 0; round < 3; round++) {
      await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 2 });
      await ctx.clock.advance(1_000); // the third, the last look, lapses too
    }
    assert.deepEqual(ids(await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 2 })), [id(2)]);
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'failed');
    assert.equal(await ctx.h.outbox.requeue(id(1).toUpperCase().replace('0X', '0x')), true);
    assert.deepEqual(await ctx.h.outbox.get(id(1)), {
      ...queuedRecord(outboxMessage(1)),
      attempts: 3,
      lastError: deadLetterError(3, 2),
    });
    assert.equal(await ctx.h.outbox.depth(), 2);
    assert.equal(await ctx.h.outbox.requeue(id(1)), false, 'already queued');
    // Not dead-lettered again at once by the next claim with the same maxLeaseExpiries.
    const [again] = await ctx.h.outbox.claim(1, 1_000, { maxLeaseExpiries: 2 });
    assert.equal(again.id, id(1));
    assert.equal(again.attempts, 4);
    assert.equal(again.leaseExpiries, 0);
    assert.equal(again.lastChance, undefined, 'nor given a last look');
    assert.equal(await ctx.h.outbox.requeue(id(1)), false, 'delivering');
    assert.equal(await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: again.lease }), true);
    assert.equal(await ctx.h.outbox.requeue(id(1)), false, 'delivered');
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'delivered');
    assert.equal(await ctx.h.outbox.requeue(id(99)), false, 'unknown');
  });

  test('docs/outbox.md#leases: requeue re-drives a message its worker failed for good (markFailed final)', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const [m] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(
      await ctx.h.outbox.markFailed(m.id, { error: 'recipient reverts', final: true, lease: m.lease }),
      true,
    );
    assert.equal(await ctx.h.outbox.requeue(m.id), true);
    assert.deepEqual(await ctx.h.outbox.get(m.id), {
      ...queuedRecord(outboxMessage(1)),
      attempts: 1,
      lastError: 'recipient reverts',
    });
    const [again] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(again.id, m.id);
    assert.equal(
      await ctx.h.outbox.markFailed(m.id, { error: 'late', final: true, lease: m.lease }),
      false,
      'the first lease stays void',
    );
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: the attempt state lives in columns', async () => {
    // markFailed with state writes them, without state (a release) keeps them, requeue resets them.
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    let [m] = await ctx.h.outbox.claim(1, LEASE);
    const state = { failures: 2, pendingSince: T0 + 123.5, polls: 7 };
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'for people', retryAt: ctx.clock.now(), lease: m.lease, state }),
      true,
    );
    assert.deepEqual(await ctx.h.outbox.get(id(1)), {
      ...queuedRecord(outboxMessage(1)),
      attempts: 1,
      lastError: 'for people',
      retryAt: ctx.clock.now(),
      ...state,
    });
    [m] = await ctx.h.outbox.claim(1, LEASE);
    assert.deepEqual([m.failures, m.pendingSince, m.polls], [2, T0 + 123.5, 7], 'the next claim reads them');
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'released', retryAt: ctx.clock.now(), lease: m.lease }),
      true,
    );
    let record = await ctx.h.outbox.get(id(1));
    assert.deepEqual([record?.failures, record?.pendingSince, record?.polls], [2, T0 + 123.5, 7], 'kept');
    [m] = await ctx.h.outbox.claim(1, LEASE);
    const last = { failures: 5, pendingSince: null, polls: 0 };
    assert.equal(
      await ctx.h.outbox.markFailed(id(1), { error: 'given up', final: true, lease: m.lease, state: last }),
      true,
    );
    assert.equal(await ctx.h.outbox.requeue(id(1)), true);
    record = await ctx.h.outbox.get(id(1));
    assert.deepEqual(
      [record?.failures, record?.pendingSince, record?.polls],
      [0, null, 0],
      'requeue resets the count: the worker gives a re-driven message maxAttempts again',
    );
    for (const bad of [
      { failures: -1, pendingSince: null, polls: 0 },
      { failures: 1.5, pendingSince: null, polls: 0 },
      { failures: 0, pendingSince: 'soon', polls: 0 },
      { failures: 0, pendingSince: null, polls: Number.NaN },
    ]) {
      [m] = await ctx.h.outbox.claim(1, LEASE);
      await assert.rejects(async () =>
        ctx.h.outbox.markFailed(id(1), { error: 'x', retryAt: ctx.clock.now(), lease: m.lease, state: bad as never }),
      );
      assert.equal(
        await ctx.h.outbox.markFailed(id(1), { error: 'x', retryAt: ctx.clock.now(), lease: m.lease }),
        true,
      );
    }
  });
}
