/**
 * The outbox contract: enqueue and the reads (get, byTx) (docs/design.md#enqueue).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContractContext, outboxMessage, queuedRecord, T0, LEASE, DEST_TX, id, ids, claimAll } from './context.ts';
import { txHash } from '../messages.ts';

export function enqueueSection(ctx: ContractContext): void {
  test('docs/design.md#enqueue: enqueue stores the whole batch and returns how many were newly stored', async () => {
    const batch = [outboxMessage(1), outboxMessage(2), outboxMessage(3)];
    assert.equal(await ctx.h.outbox.enqueue(batch), 3);
    assert.equal(await ctx.h.outbox.depth(), 3);
    for (const m of batch) {
      const stored = await ctx.h.outbox.get(m.id);
      assert.deepEqual(stored, queuedRecord(m));
    }
  });

  test('docs/design.md#enqueue: enqueue is idempotent by message id (a resubmission stores nothing twice)', async () => {
    assert.equal(await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]), 2);
    // The same messages seen again later (a resubmission after the dedup window).
    assert.equal(await ctx.h.outbox.enqueue([outboxMessage(1, T0 + 500), outboxMessage(2, T0 + 500)]), 0);
    assert.equal(await ctx.h.outbox.enqueue([outboxMessage(2, T0 + 600), outboxMessage(3)]), 1);
    assert.equal(await ctx.h.outbox.depth(), 3);
    // The first copy is kept, not overwritten by the later one.
    assert.equal((await ctx.h.outbox.get(id(1)))?.enqueuedAt, T0 + 1);
  });

  test('docs/design.md#enqueue: one id twice in the same batch is stored once', async () => {
    assert.equal(await ctx.h.outbox.enqueue([outboxMessage(7), outboxMessage(7)]), 1);
    assert.equal(await ctx.h.outbox.depth(), 1);
  });

  test('docs/design.md#enqueue: an empty batch stores nothing and returns 0', async () => {
    assert.equal(await ctx.h.outbox.enqueue([]), 0);
    assert.equal(await ctx.h.outbox.depth(), 0);
  });

  for (const [what, bad] of [
    ['an id that is not 32 bytes', { id: '0x1234' }],
    ['an upper-case id', { id: outboxMessage(2).id.toUpperCase().replace('0X', '0x') }],
    ['a negative nonce', { nonce: -1 }],
    ['an origin of -0 (the engines would store it as 0 and -0)', { origin: -0 }],
    ['a destination above uint32', { destination: 2 ** 32 }],
    ['raw that is not bytes', { raw: 'not bytes' as unknown as Uint8Array }],
  ] as const) {
    test(`docs/design.md#enqueue: enqueue is atomic: a batch with ${what} in the middle stores nothing`, async () => {
      const batch = [outboxMessage(1), outboxMessage(2, T0 + 2, bad), outboxMessage(3)];
      await assert.rejects(async () => ctx.h.outbox.enqueue(batch));
      assert.equal(await ctx.h.outbox.depth(), 0);
      assert.deepEqual(await claimAll(ctx.h.outbox), []);
      assert.equal(await ctx.h.outbox.get(id(1)), undefined);
      assert.deepEqual(await ctx.h.outbox.byTx('ethereum', outboxMessage(1).txHash), []);
      // Nothing half-stored blocks a later, valid enqueue of the same messages.
      assert.equal(await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(3)]), 2);
    });
  }

  test('docs/design.md#enqueue: enqueue is atomic: an element that throws while being read stores nothing', async () => {
    const exploding = outboxMessage(2);
    Object.defineProperty(exploding, 'raw', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    await assert.rejects(async () => ctx.h.outbox.enqueue([outboxMessage(1), exploding, outboxMessage(3)]), /boom/);
    assert.equal(await ctx.h.outbox.depth(), 0);
    assert.equal(await ctx.h.outbox.get(id(1)), undefined);
  });

  test('Outbox: get returns undefined for an unknown id and finds an id in any case', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    assert.equal(await ctx.h.outbox.get(id(2)), undefined);
    assert.deepEqual(await ctx.h.outbox.get(id(1).toUpperCase().replace('0X', '0x')), queuedRecord(outboxMessage(1)));
  });

  test('docs/design.md#http-surface: byTx lists the messages of one (chain, tx) in enqueue order, tx hash in any case', async () => {
    const tx = txHash(42);
    const batch = [outboxMessage(3, T0, { txHash: tx }), outboxMessage(1, T0, { txHash: tx })];
    await ctx.h.outbox.enqueue(batch);
    await ctx.h.outbox.enqueue([
      outboxMessage(2, T0 - 5, { txHash: tx }),
      outboxMessage(4),
      outboxMessage(5, T0, { txHash: tx, originChain: 'base' }),
    ]);
    const expected = [3, 1, 2].map(id);
    assert.deepEqual(ids(await ctx.h.outbox.byTx('ethereum', tx)), expected);
    assert.deepEqual(ids(await ctx.h.outbox.byTx('ethereum', tx.toUpperCase().replace('0X', '0x'))), expected);
    assert.deepEqual(ids(await ctx.h.outbox.byTx('base', tx)), [id(5)]);
    assert.deepEqual(await ctx.h.outbox.byTx('polygon', tx), []);
    assert.deepEqual(await ctx.h.outbox.byTx('ethereum', txHash(43)), []);
    assert.deepEqual(await ctx.h.outbox.byTx('base', tx), [
      queuedRecord(outboxMessage(5, T0, { txHash: tx, originChain: 'base' })),
    ]);
    // Records carry their lifecycle.
    const claimed = await claimAll(ctx.h.outbox);
    const one = claimed.find((m) => m.id === id(1))!;
    await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: one.lease });
    const records = await ctx.h.outbox.byTx('ethereum', tx);
    assert.deepEqual(
      records.map((r) => r.status),
      ['delivering', 'delivered', 'delivering'],
    );
    assert.deepEqual(records[0], {
      ...queuedRecord(batch[0]),
      status: 'delivering',
      attempts: 1,
      claimedUntil: ctx.clock.now() + LEASE,
    });
  });

  test('docs/design.md#enqueue: a delivered message enqueued again is not stored again and stays delivered', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1)]);
    const at = ctx.clock.now();
    const [claimed] = await claimAll(ctx.h.outbox);
    await ctx.h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease });
    await ctx.clock.advance(50);
    assert.equal(await ctx.h.outbox.enqueue([outboxMessage(1, T0 + 50)]), 0);
    assert.equal(await ctx.h.outbox.depth(), 0);
    assert.equal((await ctx.h.outbox.get(id(1)))?.deliveredAt, at);
  });

  test('docs/outbox.md#leases: a claimed or failed message enqueued again keeps its status and attempts', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    await ctx.h.outbox.claim(1, LEASE);
    const [two] = await ctx.h.outbox.claim(1, LEASE);
    assert.equal(await ctx.h.outbox.markFailed(id(2), { error: 'gave up', final: true, lease: two.lease }), true);
    assert.equal(await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]), 0);
    assert.equal((await ctx.h.outbox.get(id(1)))?.status, 'delivering');
    assert.equal((await ctx.h.outbox.get(id(2)))?.status, 'failed');
    assert.equal((await ctx.h.outbox.get(id(2)))?.attempts, 1);
  });

  test('Outbox: the store keeps its own copy of the raw bytes', async () => {
    const m = outboxMessage(1);
    const original = m.raw.slice();
    await ctx.h.outbox.enqueue([m]);
    m.raw.fill(0); // the caller reuses its buffer
    const read = await ctx.h.outbox.get(m.id);
    assert.deepEqual(read?.raw, original);
    read!.raw.fill(0xff); // a reader scribbles on what it got
    assert.deepEqual((await ctx.h.outbox.get(m.id))?.raw, original);
    assert.deepEqual((await ctx.h.outbox.byTx('ethereum', m.txHash))[0].raw, original);
    const [claimed] = await claimAll(ctx.h.outbox);
    assert.deepEqual(claimed.raw, original);
    claimed.raw.fill(0xff);
    assert.deepEqual((await ctx.h.outbox.get(m.id))?.raw, original);
  });
}
