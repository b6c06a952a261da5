/**
 * The nonce book of one signer on one chain (lib/worker/tx/nonces.ts, docs/transactions.md#nonces),
 * checked against a model of a node and the journal over random interleavings of sends (accepted,
 * refused, outcome unknown), replacements, drops from the pool, mined blocks, restarts, slots
 * resumed from the journal (hold) and nonces used by another sender: no nonce is handed out while
 * a transaction that may still land holds it, and none is skipped (every nonce between the mined
 * count and the top is held or waiting to be handed out first, and once everything is mined the
 * chain's count reaches the top).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { createNonceBook, type NonceBook } from '../../../../lib/worker/tx/nonces.ts';
import { RUNS } from '../../../helpers/fixtures/properties.ts';

/** The node and the journal: what is mined, what the pool holds, what may still land. */
interface World {
  /** The node's mined count. */
  mined: number;
  /** Nonces in the node's pool. */
  pool: Set<number>;
  /** Nonces of transactions that may still land (journaled, not settled). */
  live: Set<number>;
}

type Step =
  | { kind: 'send'; outcome: 'accepted' | 'refused' | 'unknown-in' | 'unknown-out' }
  | { kind: 'replace'; pick: number }
  | { kind: 'drop'; pick: number }
  | { kind: 'rebroadcast'; pick: number }
  | { kind: 'mine' }
  | { kind: 'restart' }
  | { kind: 'adopt'; pick: number }
  | { kind: 'foreign' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      outcome: fc.constantFrom('accepted', 'accepted', 'refused', 'unknown-in', 'unknown-out'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replace' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('rebroadcast' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('mine' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('adopt' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('foreign' as const) }) },
);

/** The node's pending count: mined plus the pool's run without a gap. */
function pending(w: World): number {
  let n = w.mined;
  while (w.pool.has(n)) n++;
  return n;
}

/** A new process: the book built from the node's counts and the journal. */
function restart(w: World): NonceBook {
  return createNonceBook({ mined: w.mined, pending: pending(w), held: [...w.live] });
}

/** Mines the pool's run from the mined count (a node mines nonces in order, a gap stops it). */
function mine(w: World, book: NonceBook): void {
  while (w.pool.has(w.mined)) {
    w.pool.delete(w.mined);
    w.live.delete(w.mined);
    book.consumed(w.mined);
    w.mined++;
  }
}

const pick = <T>(set: Set<T>, n: number): T | undefined => [...set][n % Math.max(1, set.size)];

/** No skip: every nonce from the mined count to the book's top is held by a live transaction or free to take. */
function checkNoSkip(w: World, book: NonceBook): void {
  const s = book.state();
  for (let n = w.mined; n < s.next; n++) {
    assert.ok(
      w.live.has(n) || s.freed.includes(n),
      `nonce ${n} is neither live nor free: skipped (${JSON.stringify(s)})`,
    );
  }
  for (const n of s.freed) {
    assert.ok(!w.live.has(n), `nonce ${n} is free while a live transaction holds it`);
    assert.ok(n >= w.mined, `nonce ${n} is free below the mined count ${w.mined}`);
  }
  assert.ok(s.mined === w.mined && s.next >= w.mined, `the book's counts ${JSON.stringify(s)}, mined ${w.mined}`);
}

function run(steps: Step[]): void {
  const w: World = { mined: 3, pool: new Set(), live: new Set() };
  let book = restart(w);
  const take = () => {
    const nonce = book.take();
    assert.ok(!w.live.has(nonce), `nonce ${nonce} handed out while a live transaction holds it`);
    assert.ok(nonce >= w.mined, `nonce ${nonce} is below the mined count ${w.mined}`);
    return nonce;
  };
  for (const s of steps) {
    switch (s.kind) {
      case 'send': {
        const nonce = take();
        if (s.outcome === 'refused') book.free(nonce);
        else {
          w.live.add(nonce);
          if (s.outcome !== 'unknown-out') w.pool.add(nonce);
        }
        break;
      }
      case 'replace': {
        // Same nonce, higher fees: the pool holds the replacement (the book is not asked).
        const nonce = pick(w.live, s.pick);
        if (nonce !== undefined) w.pool.add(nonce);
        break;
      }
      case 'drop': {
        const nonce = pick(w.pool, s.pick);
        if (nonce !== undefined) w.pool.delete(nonce);
        break;
      }
      case 'rebroadcast': {
        const nonce = pick(w.live, s.pick);
        if (nonce !== undefined) w.pool.add(nonce);
        break;
      }
      case 'mine':
        mine(w, book);
        book.observe(w.mined);
        break;
      case 'restart':
        book = restart(w);
        break;
      case 'foreign':
        // A transaction of the signer sent by something else is mined at the next nonce (one no
        // live transaction of ours holds): the book hears of it only through the mined count.
        if (!w.live.has(w.mined) && !w.pool.has(w.mined)) {
          w.mined++;
          book.observe(w.mined);
        }
        break;
      case 'adopt': {
        // A journaled transaction this book did not hand out (sent by an earlier holder of the
        // signer) is followed: hold() its nonce, a free one or one past the top. The sender
        // (lib/worker/tx/sender.ts follow) does this when it resumes a slot.
        const s0 = book.state();
        const candidates = [...s0.freed, s0.next, s0.next + 1].filter((n) => n >= w.mined && !w.live.has(n));
        const nonce = candidates[s.pick % candidates.length];
        w.live.add(nonce);
        w.pool.add(nonce);
        book.hold(nonce);
        break;
      }
    }
    checkNoSkip(w, book);
  }
  // The end: every live transaction is re-broadcast and mined, and the freed nonces are taken
  // first by new sends: the chain's count then reaches the top, with nothing left in the pool.
  for (const nonce of w.live) w.pool.add(nonce);
  mine(w, book);
  // Bounded: a book whose freed nonces never run out fails here rather than hanging the property.
  for (let sends = 0; book.state().freed.length > 0; sends++) {
    assert.ok(sends <= 200, `freed nonces never run out: ${JSON.stringify(book.state())}`);
    const nonce = take();
    w.live.add(nonce);
    w.pool.add(nonce);
    mine(w, book);
  }
  assert.equal(w.live.size, 0);
  assert.equal(w.pool.size, 0);
  assert.equal(w.mined, book.state().next, 'no nonce skipped: the mined count is the top');
}

describe('nonce book (docs/transactions.md#nonces)', () => {
  test('over interleavings of send / fail / replace / drop / restart / resume, no nonce is held twice and none is skipped', () => {
    // Held twice: by two live transactions.
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => run(steps)),
      RUNS,
    );
  });

  test('the pending count stops at a gap below live transactions: the book does not hand out a nonce they hold', () => {
    // Nonces 5, 6, 7 sent; 5 and 7 still in the pool, 6 dropped (it may come back). The node's
    // pending count says 6 (0..4 mined, 5 pending): a sequence re-read from it would send at 6.
    const book = createNonceBook({ mined: 5, pending: 6, held: [5, 6, 7] });
    assert.equal(book.take(), 8);
    book.free(8);
    assert.equal(book.take(), 8, 'a nonce freed (its broadcast certainly failed) is used first');
    book.observe(6);
    assert.equal(book.take(), 9);
  });

  test('a resumed slot holds its nonce: a free nonce, once held, is not handed out to another message', () => {
    const book = createNonceBook({ mined: 2, pending: 2, held: [3, 5] });
    assert.deepEqual(book.state().freed, [2, 4]);
    book.hold(4);
    assert.deepEqual(book.state(), { mined: 2, next: 6, held: [3, 4, 5], freed: [2] });
    assert.deepEqual([book.take(), book.take()], [2, 6], 'nonce 4 is held by the resumed transaction');
    // Past the top: the nonces between become gaps to fill first.
    book.hold(9);
    assert.deepEqual(book.state(), { mined: 2, next: 10, held: [2, 3, 4, 5, 6, 9], freed: [7, 8] });
    assert.deepEqual([book.take(), book.take(), book.take()], [7, 8, 10]);
  });

  test('a nonce mined, by us or anyone, is never handed out again, even when its broadcast is later found failed', () => {
    const book = createNonceBook({ mined: 0, pending: 0, held: [] });
    assert.deepEqual([book.take(), book.take()], [0, 1]);
    book.observe(2);
    book.free(1);
    assert.equal(book.take(), 2, 'nonce 1 is below the mined count: used, not free');
    // consumed(n): n is used on chain, so is every nonce below it.
    book.consumed(4);
    assert.deepEqual(book.state(), { mined: 5, next: 5, held: [0, 2], freed: [] });
    assert.equal(book.take(), 5);
  });

  test('a gap nobody holds is filled first: a nonce whose broadcast failed, or found between journaled ones after a restart', () => {
    const book = createNonceBook({ mined: 2, pending: 2, held: [3, 5] });
    assert.deepEqual(book.state(), { mined: 2, next: 6, held: [3, 5], freed: [2, 4] });
    assert.deepEqual([book.take(), book.take(), book.take()], [2, 4, 6]);
    book.free(4);
    book.consumed(2);
    book.consumed(3);
    assert.equal(book.take(), 4);
  });
  test('at start, journaled nonces below the mined count are used, and a pending count below it hands out nothing used', () => {
    // A node whose pending count lags its mined count (another backend behind the balancer): the
    // nonces from pending up to mined are used all the same.
    const lagging = createNonceBook({ mined: 5, pending: 3, held: [1, 6] });
    assert.deepEqual(lagging.state(), { mined: 5, next: 7, held: [6], freed: [5] });
    assert.deepEqual([lagging.take(), lagging.take()], [5, 7]);
  });

  test('hold, consumed and observe below or at the mined count change nothing a later take reads', () => {
    const book = createNonceBook({ mined: 5, pending: 5, held: [] });
    book.hold(2);
    book.observe(3);
    assert.deepEqual(book.state(), { mined: 5, next: 5, held: [], freed: [] }, 'the count never goes back');
    book.observe(5);
    assert.deepEqual(book.state(), { mined: 5, next: 5, held: [], freed: [] });
    book.hold(8);
    assert.deepEqual(book.state().freed, [5, 6, 7]);
    book.consumed(5);
    assert.deepEqual(book.state(), { mined: 6, next: 9, held: [8], freed: [6, 7] }, 'nonce 5 used: mined 6');
    book.consumed(8);
    assert.deepEqual(book.state(), { mined: 9, next: 9, held: [], freed: [] }, 'the gap below 8 was used too');
  });

  test('claim takes only a free nonce; one claimed and then failed is free again; freedBelow is strictly below', () => {
    const book = createNonceBook({ mined: 0, pending: 0, held: [3] });
    assert.deepEqual(book.state().freed, [0, 1, 2]);
    assert.equal(book.claim(3), false, 'held by a transaction that may land');
    assert.equal(book.claim(7), false, 'above the top: not free');
    assert.equal(book.freedBelow(0), undefined, 'nothing below 0');
    assert.equal(book.freedBelow(1), 0);
    assert.equal(book.claim(0), true);
    assert.equal(book.claim(0), false, 'taken once');
    assert.equal(book.freedBelow(1), undefined);
    assert.equal(book.freedBelow(2), 1);
    // The gap filler's broadcast certainly failed: the nonce is free again, first to go.
    book.free(0);
    assert.deepEqual(book.state(), { mined: 0, next: 4, held: [3], freed: [0, 1, 2] });
    assert.equal(book.take(), 0);
  });

  test('state() lists held and freed nonces in ascending order, whatever the order they came in', () => {
    const book = createNonceBook({ mined: 0, pending: 0, held: [9, 2, 6] });
    for (const n of [9, 6, 2]) book.free(n);
    assert.deepEqual(book.state(), { mined: 0, next: 10, held: [], freed: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] });
    const other = createNonceBook({ mined: 0, pending: 10, held: [] });
    for (const n of [8, 5, 1]) other.hold(n);
    for (const n of [8, 1, 5]) other.free(n);
    assert.deepEqual(other.state(), { mined: 0, next: 10, held: [], freed: [1, 5, 8] });
  });
});
