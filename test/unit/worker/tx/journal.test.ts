/**
 * The in-process journal (lib/worker/tx/journal.ts, docs/transactions.md#the-transaction-journal):
 * what a sender built without an outbox records before each broadcast, reads back to follow a
 * signer's open slots, and closes when a slot ends. Entries are keyed by hash; a slot is a chain,
 * a signer and a nonce, and closing one leaves every other (same nonce on another chain or of
 * another signer) open.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createProcessJournal } from '../../../../lib/worker/tx/journal.ts';
import type { Broadcast } from '../../../../lib/outbox/index.ts';

const A = `0x${'a1'.repeat(20)}`;
const B = `0x${'b2'.repeat(20)}`;
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const broadcast = (n: number, slot: { chainId?: number; signer?: string; nonce?: number } = {}): Broadcast => ({
  messageId: `0x${'ee'.repeat(32)}`,
  chainId: 1,
  signer: A,
  nonce: 7,
  hash: hash(n),
  raw: `0x02${n.toString(16).padStart(4, '0')}`,
  ...slot,
});

describe('createProcessJournal (docs/transactions.md#the-transaction-journal)', () => {
  test('records each broadcast once, at the time of its first record, and lists a signer’s on a chain', async () => {
    let now = 1_000;
    const journal = createProcessJournal(() => now);
    assert.equal(await journal.recordBroadcast(broadcast(1)), true);
    now = 2_000;
    assert.equal(await journal.recordBroadcast(broadcast(2, { nonce: 8 })), true);
    assert.equal(await journal.recordBroadcast(broadcast(3, { chainId: 10 })), true);
    assert.equal(await journal.recordBroadcast(broadcast(4, { signer: B })), true);
    now = 3_000;
    // The same transaction recorded again (a re-broadcast): one entry, its first time kept.
    assert.equal(await journal.recordBroadcast({ ...broadcast(1), messageId: 'other' }), true);
    assert.deepEqual(await journal.openBroadcasts({ chainId: 1, signer: A }), [
      { ...broadcast(1), sentAt: 1_000 },
      { ...broadcast(2, { nonce: 8 }), sentAt: 2_000 },
    ]);
    assert.deepEqual(await journal.openBroadcasts({ chainId: 10, signer: A }), [
      { ...broadcast(3, { chainId: 10 }), sentAt: 2_000 },
    ]);
    assert.deepEqual(await journal.openBroadcasts({ chainId: 1, signer: B }), [
      { ...broadcast(4, { signer: B }), sentAt: 2_000 },
    ]);
    assert.deepEqual(await journal.openBroadcasts({ chainId: 10, signer: B }), []);
  });

  test('forgetBroadcast removes one transaction (a refused broadcast) and says whether it was there', async () => {
    const journal = createProcessJournal(() => 0);
    await journal.recordBroadcast(broadcast(1));
    await journal.recordBroadcast(broadcast(2));
    assert.equal(await journal.forgetBroadcast(hash(1)), true);
    assert.equal(await journal.forgetBroadcast(hash(1)), false);
    assert.deepEqual(
      (await journal.openBroadcasts({ chainId: 1, signer: A })).map((e) => e.hash),
      [hash(2)],
    );
  });

  test('closeNonceSlot closes every transaction of that chain, signer and nonce, and no other', async () => {
    const journal = createProcessJournal(() => 0);
    await journal.recordBroadcast(broadcast(1));
    await journal.recordBroadcast(broadcast(2)); // a replacement at the same nonce
    await journal.recordBroadcast(broadcast(3, { nonce: 8 }));
    await journal.recordBroadcast(broadcast(4, { chainId: 10 }));
    await journal.recordBroadcast(broadcast(5, { signer: B }));
    assert.equal(
      await journal.closeNonceSlot({ chainId: 1, signer: A, nonce: 7 }, { outcome: 'mined', hash: hash(2) }),
      2,
    );
    assert.equal(await journal.closeNonceSlot({ chainId: 1, signer: A, nonce: 7 }, { outcome: 'dropped' }), 0);
    assert.deepEqual(
      (await journal.openBroadcasts({ chainId: 1, signer: A })).map((e) => e.hash),
      [hash(3)],
    );
    assert.deepEqual(
      (await journal.openBroadcasts({ chainId: 10, signer: A })).map((e) => e.hash),
      [hash(4)],
    );
    assert.deepEqual(
      (await journal.openBroadcasts({ chainId: 1, signer: B })).map((e) => e.hash),
      [hash(5)],
    );
    assert.equal(await journal.closeNonceSlot({ chainId: 1, signer: A, nonce: 8 }, { outcome: 'dropped' }), 1);
    assert.deepEqual(await journal.openBroadcasts({ chainId: 1, signer: A }), []);
  });
});
