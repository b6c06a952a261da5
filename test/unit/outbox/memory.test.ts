import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import type { ClaimedMessage, OutboxMessage } from '../../../lib/outbox/index.ts';
import { createFakeClock, T0 } from '../../helpers/fakes/clock.ts';
import { queuedRecord } from '../../../lib/testing/index.ts';
import { InvalidArgumentError } from '../../../lib/errors/classes.ts';

const DEST = '0x' + 'de'.repeat(32);

function msg(n: number, overrides: Partial<OutboxMessage> = {}): OutboxMessage {
  return {
    id: '0x' + n.toString(16).padStart(64, '0'),
    originChain: 'ethereum',
    txHash: '0x' + 'ab'.repeat(32),
    origin: 1,
    destination: 8453,
    nonce: n,
    raw: new Uint8Array([3, n & 0xff]),
    enqueuedAt: T0 + n,
    ...overrides,
  };
}

describe('memory outbox (docs/design.md#enqueue, #storage)', () => {
  it('docs/design.md#enqueue: enqueue stores a batch and returns how many were new', () => {
    const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
    assert.equal(outbox.enqueue([msg(1), msg(2)]), 2);
    assert.equal(outbox.depth(), 2);
    assert.deepEqual(outbox.get(msg(1).id), queuedRecord(msg(1)));
  });

  it('docs/design.md#enqueue: idempotent by message id: a resubmission stores nothing twice', () => {
    const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
    outbox.enqueue([msg(1), msg(2)]);
    assert.equal(outbox.enqueue([msg(2, { enqueuedAt: T0 + 999 }), msg(3)]), 1);
    assert.equal(outbox.depth(), 3);
    assert.equal((outbox.get(msg(2).id) as { enqueuedAt: number }).enqueuedAt, T0 + 2, 'the first copy is kept');
  });

  it('a duplicate id inside one batch is stored once', () => {
    const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
    assert.equal(outbox.enqueue([msg(1), msg(1)]), 1);
    assert.equal(outbox.depth(), 1);
  });

  it('an empty batch stores nothing', () => {
    const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
    assert.equal(outbox.enqueue([]), 0);
    assert.equal(outbox.depth(), 0);
  });

  const invalid: [string, Partial<OutboxMessage>][] = [
    ['an upper-case id', { id: '0x' + 'AB'.repeat(32) }],
    ['a short id', { id: '0x1234' }],
    ['an empty originChain', { originChain: '' }],
    ['an upper-case txHash', { txHash: '0x' + 'AB'.repeat(32) }],
    ['a negative origin', { origin: -1 }],
    ['a destination above uint32', { destination: 2 ** 32 }],
    ['a fractional nonce', { nonce: 1.5 }],
    ['raw not bytes', { raw: [1, 2] as unknown as Uint8Array }],
    ['a NaN enqueuedAt', { enqueuedAt: Number.NaN }],
  ];
  for (const [name, overrides] of invalid) {
    it(`docs/design.md#enqueue atomic: a batch with ${name} stores nothing at all`, () => {
      const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
      assert.throws(
        () => outbox.enqueue([msg(1), msg(2, overrides)]),
        (e) => e instanceof InvalidArgumentError && /^batch\[1\]/.test(e.message),
      );
      assert.equal(outbox.depth(), 0);
      assert.equal(outbox.get(msg(1).id), undefined);
    });
  }

  it('claim takes queued messages oldest first, honouring the limit', () => {
    const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
    outbox.enqueue([msg(3), msg(1)]);
    outbox.enqueue([msg(2)]);
    assert.deepEqual(
      (outbox.claim(2, 1_000) as { nonce: number }[]).map((m) => m.nonce),
      [1, 2],
    );
    assert.deepEqual(outbox.claim(0, 1_000), []);
    assert.deepEqual(
      (outbox.claim(10, 1_000) as { nonce: number }[]).map((m) => m.nonce),
      [3],
    );
  });

  it('equal enqueue times keep enqueue order', () => {
    const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
    outbox.enqueue([msg(9, { enqueuedAt: T0 }), msg(4, { enqueuedAt: T0 }), msg(7, { enqueuedAt: T0 })]);
    assert.deepEqual(
      (outbox.claim(10, 1_000) as { nonce: number }[]).map((m) => m.nonce),
      [9, 4, 7],
    );
  });

  it('markDelivered stamps the clock time, reports changes, ignores unknown and repeated ids', async () => {
    const clock = createFakeClock(T0);
    const outbox = createMemoryOutbox({ clock });
    outbox.enqueue([msg(1), msg(2), msg(3)]);
    const [one, two] = outbox.claim(2, 60_000) as ClaimedMessage[];
    await clock.advance(5_000);
    assert.equal(outbox.markDelivered(msg(1).id, { destinationTxHash: DEST, lease: one.lease }), true);
    assert.equal(
      outbox.markDelivered('0x' + 'ff'.repeat(32), { destinationTxHash: DEST, lease: one.lease }),
      false,
      'unknown',
    );
    assert.equal(
      outbox.markDelivered(msg(1).id, { destinationTxHash: DEST, lease: one.lease }),
      false,
      'already delivered',
    );
    await clock.advance(37);
    assert.equal(outbox.markDelivered(msg(2).id, { destinationTxHash: DEST, lease: two.lease }), true);
    assert.equal(outbox.depth(), 1);
    assert.equal((outbox.get(msg(1).id) as { deliveredAt: number }).deliveredAt, T0 + 5_000);
    assert.equal((outbox.get(msg(2).id) as { deliveredAt: number }).deliveredAt, T0 + 5_037);
    assert.deepEqual(
      (outbox.claim(10, 1_000) as { nonce: number }[]).map((m) => m.nonce),
      [3],
    );
  });

  it('a delivered message re-enqueued is not stored again nor made claimable again', () => {
    const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
    outbox.enqueue([msg(1)]);
    const [claimed] = outbox.claim(1, 60_000) as ClaimedMessage[];
    assert.equal(outbox.markDelivered(msg(1).id, { destinationTxHash: DEST, lease: claimed.lease }), true);
    assert.equal(outbox.enqueue([msg(1)]), 0);
    assert.equal(outbox.depth(), 0);
    assert.deepEqual(outbox.claim(10, 1_000), []);
  });

  it('stored rows are copies: mutating the input or an output changes nothing inside', () => {
    const outbox = createMemoryOutbox({ clock: createFakeClock(T0) });
    const input = msg(1);
    outbox.enqueue([input]);
    input.raw[0] = 0xee;
    const out = outbox.get(input.id) as { raw: Uint8Array; destination: number };
    assert.equal(out.raw[0], 3);
    out.raw[0] = 0xdd;
    out.destination = 1;
    const again = outbox.get(input.id) as { raw: Uint8Array; destination: number };
    assert.equal(again.raw[0], 3);
    assert.equal(again.destination, 8453);
  });
});

describe('createMemoryOutbox options (docs/embedding.md#options)', () => {
  it('takes { clock } as every factory takes its options; the positional clock still works', async () => {
    for (const make of [
      (clock: ReturnType<typeof createFakeClock>) => createMemoryOutbox({ clock }),
      (clock: ReturnType<typeof createFakeClock>) => createMemoryOutbox({ clock }),
    ]) {
      const clock = createFakeClock(T0);
      const outbox = make(clock);
      outbox.enqueue([msg(1)]);
      const [claimed] = outbox.claim(1, 5_000);
      assert.equal(claimed.claimedUntil, T0 + 5_000, 'the lease runs on the given clock');
    }
  });
});
