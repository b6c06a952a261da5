/**
 * The outbox contract: signer leases (docs/transactions.md#one-worker-per-key), one worker per (chain,
 * signer): taken by one holder, told to the others, lapsed and taken over, released, and the
 * journal's fence on them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClaimedMessage } from '../../outbox/index.ts';
import { type ContractContext, outboxMessage, LEASE, SIGNER, OTHER_SIGNER, id } from './context.ts';

export function signersSection(ctx: ContractContext): void {
  /** A signed transaction of message `n` at `nonce` (its bytes stand in for one; the store does not parse them). */
  const broadcast = (n: number, nonce: number, replacement = 0, signer = SIGNER) => ({
    messageId: id(n),
    chainId: 31337,
    signer,
    nonce,
    hash: `0x${(n * 1_000 + nonce * 10 + replacement).toString(16).padStart(64, '0')}`,
    raw: `0x02f8${(n * 1_000 + nonce * 10 + replacement).toString(16).padStart(8, '0')}`,
  });
  const hashes = (entries: readonly { hash: string }[]) => entries.map((e) => e.hash);
  // One worker per key (docs/transactions.md#one-worker-per-key): a signer lease per (chain, signer).
  const signerKey = { chainId: 31337, signer: SIGNER };

  test('docs/transactions.md#one-worker-per-key: a signer lease is taken by one holder; another is told who holds it until when', async () => {
    const first = await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-a', 10_000);
    assert.ok(first.acquired);
    assert.equal(first.expiresAt, ctx.clock.now() + 10_000);
    await ctx.clock.advance(1_000);
    assert.deepEqual(await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-b', 10_000), {
      acquired: false,
      holder: 'worker-a',
      expiresAt: first.expiresAt,
    });
    // The holder asking again renews its own lease, same token.
    assert.deepEqual(await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-a', 10_000), {
      acquired: true,
      lease: first.lease,
      expiresAt: ctx.clock.now() + 10_000,
    });
    // Another signer, or the same signer on another chain, is another lease.
    assert.ok(
      (await ctx.h.outbox.acquireSignerLease({ chainId: 31337, signer: OTHER_SIGNER }, 'worker-b', 5_000)).acquired,
    );
    assert.ok((await ctx.h.outbox.acquireSignerLease({ chainId: 1, signer: SIGNER }, 'worker-b', 5_000)).acquired);
    assert.deepEqual(await ctx.h.outbox.signerLeases(), [
      { chainId: 1, signer: SIGNER, holder: 'worker-b', expiresAt: ctx.clock.now() + 5_000 },
      { chainId: 31337, signer: OTHER_SIGNER, holder: 'worker-b', expiresAt: ctx.clock.now() + 5_000 },
      { chainId: 31337, signer: SIGNER, holder: 'worker-a', expiresAt: ctx.clock.now() + 10_000 },
    ]);
  });

  test('docs/transactions.md#one-worker-per-key: a lapsed signer lease is taken over; the old lease then renews nothing', async () => {
    const a = await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-a', 10_000);
    assert.ok(a.acquired);
    assert.equal(await ctx.h.outbox.renewSignerLease(signerKey, 'not-the-lease', 10_000), false);
    await ctx.clock.advance(5_000);
    assert.equal(await ctx.h.outbox.renewSignerLease(signerKey, a.lease, 10_000), true);
    assert.equal((await ctx.h.outbox.signerLeases())[0].expiresAt, ctx.clock.now() + 10_000, 'renewed from now');
    // Lapsed, nobody took it: the holder's renewal still counts (like a message's extend).
    await ctx.clock.advance(10_000);
    assert.equal(await ctx.h.outbox.renewSignerLease(signerKey, a.lease, 10_000), true);
    await ctx.clock.advance(10_000);
    const b = await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-b', 10_000);
    assert.ok(b.acquired, 'lapsed: taken over');
    assert.notEqual(b.lease, a.lease);
    assert.equal(await ctx.h.outbox.renewSignerLease(signerKey, a.lease, 10_000), false, 'the old lease is fenced off');
    assert.equal(await ctx.h.outbox.releaseSignerLease(signerKey, a.lease), false);
    const again = await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-a', 10_000);
    assert.equal(again.acquired, false);
    assert.equal(again.acquired === false && again.holder, 'worker-b');
  });

  test('docs/transactions.md#one-worker-per-key: a released signer lease is free at once and its lease is dead', async () => {
    const b = await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-b', 60_000);
    assert.ok(b.acquired);
    await ctx.clock.advance(1_000);
    assert.equal(await ctx.h.outbox.releaseSignerLease(signerKey, b.lease), true);
    assert.deepEqual(
      await ctx.h.outbox.signerLeases(),
      [{ ...signerKey, holder: 'worker-b', expiresAt: ctx.clock.now() }],
      'kept, lapsed, with its last holder',
    );
    assert.equal(await ctx.h.outbox.renewSignerLease(signerKey, b.lease, 60_000), false, 'released: no renewal');
    assert.equal(await ctx.h.outbox.releaseSignerLease(signerKey, b.lease), false);
    const a = await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-a', 60_000);
    assert.ok(a.acquired, 'taken at once, before the old expiry');
    assert.notEqual(a.lease, b.lease);
  });

  test('docs/transactions.md#one-worker-per-key: the journal records a broadcast only under the signer lease that holds the signer', async () => {
    await ctx.h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
    const [m1, m2] = await ctx.h.outbox.claim(2, LEASE);
    const fence = (m: ClaimedMessage) => ({ lease: m.lease, leaseMs: LEASE });
    // No signer lease anywhere: recorded as before (a sender without leases).
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 0), fence(m1)), true);
    const a = await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-a', 10_000);
    assert.ok(a.acquired);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(2, 1), fence(m2)), false, 'without the live lease');
    assert.equal(
      await ctx.h.outbox.recordBroadcast({ ...broadcast(2, 1), signerLease: 'not-the-lease' }, fence(m2)),
      false,
      'under another lease',
    );
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 0, 1)), false, 'a replacement without the lease');
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 0), fence(m1)), false, 'nor a hash already recorded');
    assert.deepEqual(hashes(await ctx.h.outbox.openBroadcasts({ messageId: id(2) })), []);
    const claimedUntil = (await ctx.h.outbox.get(id(2)))?.claimedUntil;
    await ctx.clock.advance(1);
    assert.equal(
      await ctx.h.outbox.recordBroadcast({ ...broadcast(2, 1), signerLease: 'not-the-lease' }, fence(m2)),
      false,
    );
    assert.equal(
      (await ctx.h.outbox.get(id(2)))?.claimedUntil,
      claimedUntil,
      'a refused record renews no message lease',
    );
    assert.equal(await ctx.h.outbox.recordBroadcast({ ...broadcast(2, 1), signerLease: a.lease }, fence(m2)), true);
    assert.equal(await ctx.h.outbox.recordBroadcast({ ...broadcast(1, 0, 1), signerLease: a.lease }), true);
    assert.equal(
      await ctx.h.outbox.recordBroadcast({ ...broadcast(2, 2, 0, OTHER_SIGNER) }, fence(m2)),
      true,
      'another signer is not held',
    );
    const [entry] = await ctx.h.outbox.openBroadcasts({ messageId: id(2) });
    assert.deepEqual(entry, { ...broadcast(2, 1), sentAt: ctx.clock.now() }, 'the lease is not part of the entry');
    // Lapsed and not taken over: its holder still records, and so may a sender without a lease.
    await ctx.clock.advance(10_000);
    assert.equal(await ctx.h.outbox.recordBroadcast({ ...broadcast(1, 0, 2), signerLease: a.lease }), true);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 0, 3)), true);
    // Taken over: the old holder records nothing more.
    const b = await ctx.h.outbox.acquireSignerLease(signerKey, 'worker-b', 10_000);
    assert.ok(b.acquired);
    assert.equal(await ctx.h.outbox.recordBroadcast({ ...broadcast(1, 0, 4), signerLease: a.lease }), false);
    assert.equal(await ctx.h.outbox.recordBroadcast({ ...broadcast(1, 0, 4), signerLease: b.lease }), true);
    // Released: its lease records nothing, a sender without one may again.
    assert.equal(await ctx.h.outbox.releaseSignerLease(signerKey, b.lease), true);
    assert.equal(await ctx.h.outbox.recordBroadcast({ ...broadcast(1, 0, 5), signerLease: b.lease }), false);
    assert.equal(await ctx.h.outbox.recordBroadcast(broadcast(1, 0, 5)), true);
  });

  test('docs/transactions.md#one-worker-per-key: invalid signer lease arguments throw and take nothing', async () => {
    const calls = [
      () => ctx.h.outbox.acquireSignerLease(signerKey, '', 1_000),
      () => ctx.h.outbox.acquireSignerLease(signerKey, 'x'.repeat(201), 1_000),
      () => ctx.h.outbox.acquireSignerLease(signerKey, 'line\nbreak', 1_000),
      () => ctx.h.outbox.acquireSignerLease(signerKey, 7 as never, 1_000),
      () => ctx.h.outbox.acquireSignerLease(signerKey, 'worker-a', 0),
      () => ctx.h.outbox.acquireSignerLease(signerKey, 'worker-a', 1.5),
      () =>
        ctx.h.outbox.acquireSignerLease({ ...signerKey, signer: SIGNER.toUpperCase().replace('0X', '0x') }, 'a', 1_000),
      () => ctx.h.outbox.acquireSignerLease({ ...signerKey, chainId: -1 }, 'worker-a', 1_000),
      () => ctx.h.outbox.renewSignerLease(signerKey, '', 1_000),
      () => ctx.h.outbox.renewSignerLease(signerKey, 'lease', 0),
      () => ctx.h.outbox.releaseSignerLease(signerKey, ''),
      () => ctx.h.outbox.recordBroadcast({ ...broadcast(1, 0), signerLease: '' }),
    ];
    for (const call of calls) await assert.rejects(async () => call());
    assert.deepEqual(await ctx.h.outbox.signerLeases(), []);
  });

  test('docs/transactions.md#one-worker-per-key: holders racing for one signer, over every connection: exactly one takes it', async () => {
    const others = ctx.h.connect ? await Promise.all([ctx.h.connect(), ctx.h.connect()]) : [];
    try {
      const outboxes = [ctx.h.outbox, ...others.map((o) => o.outbox)];
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          Promise.resolve().then(() =>
            outboxes[i % outboxes.length].acquireSignerLease(signerKey, `worker-${i}`, 10_000),
          ),
        ),
      );
      const winners = answers.flatMap((a, i) => (a.acquired ? [i] : []));
      assert.equal(winners.length, 1, 'one holder');
      const holder = `worker-${winners[0]}`;
      for (const a of answers) if (!a.acquired) assert.equal(a.holder, holder, 'the others are told who');
    } finally {
      for (const o of others) await o.close();
    }
  });
}
