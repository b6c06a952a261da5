/**
 * The outbox contract: racing claimers and holders (docs/outbox.md#leases).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContractContext, outboxMessage, LEASE, DEST_TX, id, ids } from './context.ts';
import { deadLetterError } from '../../outbox/index.ts';

export function concurrencySection(ctx: ContractContext): void {
  test('docs/outbox.md#leases: concurrent claimers never hand out a message twice, and all are claimed', async () => {
    // Many claim() calls race on the same queue.
    const N = 60;
    await ctx.h.outbox.enqueue(Array.from({ length: N }, (_, i) => outboxMessage(i + 1)));
    const handles = [ctx.h.outbox];
    const extra: { close(): void | Promise<void> }[] = [];
    if (ctx.h.connect) {
      for (let i = 0; i < 3; i++) {
        const c = await ctx.h.connect();
        extra.push(c);
        handles.push(c.outbox);
      }
    }
    try {
      const seen = new Map<string, number>();
      // Rounds of racing claimers until nothing is left; every call starts before any settles.
      for (let round = 0; round < N; round++) {
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            Promise.resolve().then(() => handles[i % handles.length].claim(2, LEASE)),
          ),
        );
        const got = results.flat();
        for (const m of got) seen.set(m.id, (seen.get(m.id) ?? 0) + 1);
        if (got.length === 0) break;
      }
      assert.equal(seen.size, N, 'every message claimed');
      for (const [mid, times] of seen) assert.equal(times, 1, `${mid} claimed once`);
      for (let i = 1; i <= N; i++) assert.equal((await ctx.h.outbox.get(id(i)))?.attempts, 1);
      assert.equal(await ctx.h.outbox.depth(), N);
    } finally {
      for (const c of extra) await c.close();
    }
  });

  test('docs/outbox.md#leases: racing claimers dead-letter or claim each expired message once, never both', async () => {
    // Claimers with and without maxLeaseExpiries race on expired messages.
    const N = 30;
    await ctx.h.outbox.enqueue(Array.from({ length: N }, (_, i) => outboxMessage(i + 1)));
    await ctx.h.outbox.claim(N, 1_000);
    await ctx.clock.advance(1_000);
    assert.equal((await ctx.h.outbox.claim(N, 1_000)).length, N, 'taken over once: one expired lease each');
    await ctx.clock.advance(1_000);
    const last = await ctx.h.outbox.claim(N, 1_000, { maxLeaseExpiries: 2 });
    assert.equal(last.filter((m) => m.lastChance).length, N, 'the second expiry: a last look each');
    await ctx.clock.advance(1_000); // the last look's lease expired too: maxLeaseExpiries 2 dead-letters them
    const handles = [ctx.h.outbox];
    const extra: { close(): void | Promise<void> }[] = [];
    if (ctx.h.connect) {
      for (let i = 0; i < 2; i++) {
        const c = await ctx.h.connect();
        extra.push(c);
        handles.push(c.outbox);
      }
    }
    try {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          Promise.resolve().then(() =>
            handles[i % handles.length].claim(3, 1_000, i % 3 === 0 ? undefined : { maxLeaseExpiries: 2 }),
          ),
        ),
      );
      const claimed = ids(results.flat());
      assert.equal(new Set(claimed).size, claimed.length, 'no message handed out twice');
      for (let i = 1; i <= N; i++) {
        const record = (await ctx.h.outbox.get(id(i)))!;
        assert.equal(record.leaseExpiries, 3, `${id(i)}: its third expiry counted once`);
        if (claimed.includes(id(i))) {
          assert.equal(record.status, 'delivering');
          assert.equal(record.attempts, 4);
        } else {
          assert.equal(record.status, 'failed', `${id(i)}: neither claimed nor dead-lettered`);
          assert.equal(record.lastError, deadLetterError(3, 2));
          assert.equal(record.attempts, 3);
        }
      }
    } finally {
      for (const c of extra) await c.close();
    }
  });

  test("docs/outbox.md#leases: claim and a lease-holder's markDelivered racing: the message ends delivered once, never reclaimed", async () => {
    await ctx.h.outbox.enqueue(Array.from({ length: 20 }, (_, i) => outboxMessage(i + 1)));
    const claimed = await ctx.h.outbox.claim(20, 1_000);
    await ctx.clock.advance(1_000); // every lease expired: claimers and late holders now race
    const [marks, reclaimed] = await Promise.all([
      Promise.all(
        claimed.map((m) =>
          Promise.resolve().then(() =>
            ctx.h.outbox.markDelivered(m.id, { destinationTxHash: DEST_TX, lease: m.lease }),
          ),
        ),
      ),
      Promise.all(Array.from({ length: 10 }, () => Promise.resolve().then(() => ctx.h.outbox.claim(2, 1_000)))).then(
        (r) => r.flat(),
      ),
    ]);
    const reclaimedIds = new Set(ids(reclaimed));
    assert.equal(reclaimedIds.size, reclaimed.length, 'no message reclaimed twice');
    for (let i = 0; i < claimed.length; i++) {
      const m = claimed[i];
      const record = await ctx.h.outbox.get(m.id);
      // Exactly one of the two won: the late holder delivered it, or a new claimer holds it.
      assert.equal(marks[i], !reclaimedIds.has(m.id), `${m.id}: delivered xor reclaimed`);
      assert.equal(record?.status, marks[i] ? 'delivered' : 'delivering');
    }
  });
}
