/**
 * The Outbox contract (lib/outbox.ts, DESIGN.md §3 and §7), one suite run against every store
 * (test/outbox.test.ts): memory, SQLite in memory, SQLite on a file. Messages are real Hyperlane
 * v3 messages encoded by viem, with their keccak256 ids computed by viem.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { hexToBytes } from 'viem';
import type { Outbox, OutboxMessage } from '../lib/outbox.ts';
import { hyperlaneMessage, messageId, txHash } from './helpers/fixtures.ts';

export interface OutboxHarness {
  outbox: Outbox;
  close(): void | Promise<void>;
}

const T0 = 1_700_000_000_000;

/** Message number `n`: a distinct nonce, so a distinct id. */
export function outboxMessage(n: number, enqueuedAt = T0 + n, overrides: Partial<OutboxMessage> = {}): OutboxMessage {
  const raw = hyperlaneMessage({ nonce: n, origin: 1, destination: 8453 });
  return {
    id: messageId(raw),
    originChain: 'ethereum',
    txHash: txHash(n),
    origin: 1,
    destination: 8453,
    nonce: n,
    raw: hexToBytes(raw),
    enqueuedAt,
    ...overrides,
  };
}

async function pendingIds(outbox: Outbox, limit?: number): Promise<string[]> {
  return (await outbox.pending(limit)).map((m) => m.id);
}

export function outboxContract(name: string, make: () => Promise<OutboxHarness>): void {
  describe(`Outbox contract: ${name}`, () => {
    let h: OutboxHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.close();
    });

    test('DESIGN 3: enqueue stores the whole batch and returns how many were newly stored', async () => {
      const batch = [outboxMessage(1), outboxMessage(2), outboxMessage(3)];
      assert.equal(await h.outbox.enqueue(batch), 3);
      assert.equal(await h.outbox.depth(), 3);
      for (const m of batch) {
        const stored = await h.outbox.get(m.id);
        assert.deepEqual(stored, { ...m, deliveredAt: null });
      }
    });

    test('DESIGN 3: enqueue is idempotent by message id (a resubmission stores nothing twice)', async () => {
      assert.equal(await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]), 2);
      // The same messages seen again later (a resubmission after the dedup window).
      assert.equal(await h.outbox.enqueue([outboxMessage(1, T0 + 500), outboxMessage(2, T0 + 500)]), 0);
      assert.equal(await h.outbox.enqueue([outboxMessage(2, T0 + 600), outboxMessage(3)]), 1);
      assert.equal(await h.outbox.depth(), 3);
      // The first copy is kept, not overwritten by the later one.
      assert.equal((await h.outbox.get(outboxMessage(1).id))?.enqueuedAt, T0 + 1);
    });

    test('DESIGN 3: one id twice in the same batch is stored once', async () => {
      assert.equal(await h.outbox.enqueue([outboxMessage(7), outboxMessage(7)]), 1);
      assert.equal(await h.outbox.depth(), 1);
    });

    test('DESIGN 3: an empty batch stores nothing and returns 0', async () => {
      assert.equal(await h.outbox.enqueue([]), 0);
      assert.equal(await h.outbox.depth(), 0);
    });

    for (const [what, bad] of [
      ['an id that is not 32 bytes', { id: '0x1234' }],
      ['an upper-case id', { id: outboxMessage(2).id.toUpperCase().replace('0X', '0x') }],
      ['a negative nonce', { nonce: -1 }],
      ['a destination above uint32', { destination: 2 ** 32 }],
      ['raw that is not bytes', { raw: 'not bytes' as unknown as Uint8Array }],
    ] as const) {
      test(`DESIGN 3: enqueue is atomic: a batch with ${what} in the middle stores nothing`, async () => {
        const batch = [outboxMessage(1), outboxMessage(2, T0 + 2, bad), outboxMessage(3)];
        await assert.rejects(async () => h.outbox.enqueue(batch));
        assert.equal(await h.outbox.depth(), 0);
        assert.deepEqual(await h.outbox.pending(), []);
        assert.equal(await h.outbox.get(outboxMessage(1).id), undefined);
        // Nothing half-stored blocks a later, valid enqueue of the same messages.
        assert.equal(await h.outbox.enqueue([outboxMessage(1), outboxMessage(3)]), 2);
      });
    }

    test('DESIGN 3: enqueue is atomic: an element that throws while being read stores nothing', async () => {
      const exploding = outboxMessage(2);
      Object.defineProperty(exploding, 'raw', {
        enumerable: true,
        get() {
          throw new Error('boom');
        },
      });
      await assert.rejects(async () => h.outbox.enqueue([outboxMessage(1), exploding, outboxMessage(3)]), /boom/);
      assert.equal(await h.outbox.depth(), 0);
      assert.equal(await h.outbox.get(outboxMessage(1).id), undefined);
    });

    test('Outbox: pending lists undelivered messages oldest first, a batch in its own order', async () => {
      await h.outbox.enqueue([outboxMessage(5, T0 + 300)]);
      await h.outbox.enqueue([outboxMessage(9, T0 + 100), outboxMessage(3, T0 + 100), outboxMessage(4, T0 + 100)]);
      await h.outbox.enqueue([outboxMessage(1, T0 + 200)]);
      const order = [9, 3, 4, 1, 5].map((n) => outboxMessage(n).id);
      assert.deepEqual(await pendingIds(h.outbox), order);
      for (const m of await h.outbox.pending()) assert.equal(m.deliveredAt, null);
    });

    test('Outbox: pending(limit) returns at most limit messages, the oldest', async () => {
      await h.outbox.enqueue([1, 2, 3, 4].map((n) => outboxMessage(n)));
      assert.deepEqual(await pendingIds(h.outbox, 2), [outboxMessage(1).id, outboxMessage(2).id]);
      assert.deepEqual(await pendingIds(h.outbox, 0), []);
      assert.equal((await h.outbox.pending(100)).length, 4);
    });

    test('Outbox: get returns undefined for an unknown id', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      assert.equal(await h.outbox.get(outboxMessage(2).id), undefined);
    });

    test('Outbox: markDelivered takes messages out of pending and depth and records the time', async () => {
      await h.outbox.enqueue([1, 2, 3].map((n) => outboxMessage(n)));
      const [one, two, three] = [1, 2, 3].map((n) => outboxMessage(n).id);
      assert.equal(await h.outbox.markDelivered([two], T0 + 5_000), 1);
      assert.equal(await h.outbox.depth(), 2);
      assert.deepEqual(await pendingIds(h.outbox), [one, three]);
      assert.equal((await h.outbox.get(two))?.deliveredAt, T0 + 5_000);
      assert.equal((await h.outbox.get(one))?.deliveredAt, null);
    });

    test('Outbox: markDelivered counts only changes: unknown ids are ignored, a second mark keeps the first time', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const [one, two] = [outboxMessage(1).id, outboxMessage(2).id];
      assert.equal(await h.outbox.markDelivered([one, outboxMessage(99).id], T0 + 10), 1);
      assert.equal(await h.outbox.markDelivered([one, two], T0 + 20), 1);
      assert.equal((await h.outbox.get(one))?.deliveredAt, T0 + 10);
      assert.equal(await h.outbox.markDelivered([], T0 + 30), 0);
      assert.equal(await h.outbox.depth(), 0);
      assert.deepEqual(await h.outbox.pending(), []);
    });

    test('Outbox: markDelivered without a time stamps the message with the clock', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      assert.equal(await h.outbox.markDelivered([outboxMessage(1).id]), 1);
      const at = (await h.outbox.get(outboxMessage(1).id))?.deliveredAt;
      assert.equal(typeof at, 'number');
      assert.ok(Number.isFinite(at));
    });

    test('DESIGN 3: a delivered message enqueued again is not stored again and stays delivered', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      await h.outbox.markDelivered([outboxMessage(1).id], T0 + 10);
      assert.equal(await h.outbox.enqueue([outboxMessage(1, T0 + 50)]), 0);
      assert.equal(await h.outbox.depth(), 0);
      assert.equal((await h.outbox.get(outboxMessage(1).id))?.deliveredAt, T0 + 10);
    });

    test('Outbox: the store keeps its own copy of the raw bytes', async () => {
      const m = outboxMessage(1);
      const original = m.raw.slice();
      await h.outbox.enqueue([m]);
      m.raw.fill(0); // the caller reuses its buffer
      const read = await h.outbox.get(m.id);
      assert.deepEqual(read?.raw, original);
      read!.raw.fill(0xff); // a reader scribbles on what it got
      assert.deepEqual((await h.outbox.get(m.id))?.raw, original);
      assert.deepEqual((await h.outbox.pending())[0].raw, original);
    });
  });
}
