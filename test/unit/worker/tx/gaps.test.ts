/**
 * What a followed slot does at a new head (lib/worker/tx/gaps.ts, docs/transactions.md#gaps): the
 * rules one by one, then a property over a model of a node (mined count, pool, geth's pending
 * count that stops at a gap) and the journal, driven with random sends (accepted, refused, outcome
 * unknown), replacements, drops from the pool, mined blocks and restarts, where every head runs the rules for
 * every open slot with the real nonce book: no nonce is ever held by two live transactions, and
 * once sends stop every gap is filled and everything mined within two blocks per gap, leaving
 * no nonce skipped.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { nextMove, type HeadView, type NonceSlotLook } from '../../../../lib/worker/tx/gaps.ts';
import { createNonceBook, type NonceBook } from '../../../../lib/worker/tx/nonces.ts';
import { RUNS } from '../../../helpers/fixtures/properties.ts';

const RULES = { replaceAfterBlocks: 3, replaceAfterMs: 60_000, gasPriceCap: 100n };
const view = (v: Partial<HeadView>): HeadView => ({ head: 10n, mined: 5, pending: 8, baseFee: 10n, ...v });
const look = (l: Partial<NonceSlotLook>): NonceSlotLook => ({
  nonce: 5,
  maxFeePerGas: 20n,
  known: true,
  blocksSince: 0n,
  msSince: 0,
  missingBelow: false,
  ...l,
});

describe('gaps: the move of a slot at a new head (docs/transactions.md#gaps)', () => {
  test('the nonce the chain expects, lost by the node: re-broadcast at once, whatever its age', () => {
    assert.deepEqual(nextMove(look({ known: false }), view({}), RULES), { do: 'rebroadcast', why: 'gap' });
    assert.deepEqual(nextMove(look({ known: true }), view({}), RULES), { do: 'wait' });
    // Lost and below the base fee: the same bytes could not be mined; replaced within the cap.
    assert.deepEqual(nextMove(look({ known: false, maxFeePerGas: 9n }), view({}), RULES), {
      do: 'replace',
      why: 'gap',
    });
    assert.deepEqual(nextMove(look({ known: false, maxFeePerGas: 9n }), view({ baseFee: 101n }), RULES), {
      do: 'rebroadcast',
      why: 'gap',
    });
  });

  test('a free nonce below (its broadcast certainly failed) is filled; one below the mined count is not', () => {
    assert.deepEqual(nextMove(look({ nonce: 7, freedBelow: 5 }), view({}), RULES), { do: 'fill', nonce: 5 });
    assert.deepEqual(nextMove(look({ nonce: 7, freedBelow: 6 }), view({ pending: 6 }), RULES), {
      do: 'fill',
      nonce: 6,
    });
    assert.equal(nextMove(look({ nonce: 7, freedBelow: 4 }), view({}), RULES).do, 'wait');
  });

  test('behind a gap nothing is replaced: not below the base fee, not after replaceAfterBlocks', () => {
    const stale = look({ nonce: 7, maxFeePerGas: 1n, blocksSince: 50n, msSince: 600_000 });
    assert.deepEqual(nextMove(stale, view({ pending: 5 }), RULES), { do: 'wait', why: 'behind-gap' });
    assert.deepEqual(nextMove({ ...stale, missingBelow: true }, view({ pending: 9 }), RULES), {
      do: 'wait',
      why: 'behind-gap',
    });
    assert.deepEqual(nextMove(stale, view({ pending: 9 }), RULES), { do: 'replace', why: 'below-base-fee' });
  });

  test('a later nonce the node lost too: the same bytes again at once, behind the gap or not; never a replacement', () => {
    const lost = look({ nonce: 7, known: false, maxFeePerGas: 1n, blocksSince: 50n, msSince: 600_000 });
    assert.deepEqual(nextMove(lost, view({ pending: 5 }), RULES), { do: 'rebroadcast', why: 'lost' });
    assert.deepEqual(nextMove({ ...lost, missingBelow: true }, view({ pending: 9 }), RULES), {
      do: 'rebroadcast',
      why: 'lost',
    });
    assert.deepEqual(nextMove({ ...lost, known: true }, view({ pending: 5 }), RULES), {
      do: 'wait',
      why: 'behind-gap',
    });
  });

  test('below the base fee: replaced at the next head, unless the base fee is above gasPriceCap', () => {
    assert.deepEqual(nextMove(look({ maxFeePerGas: 9n }), view({}), RULES), { do: 'replace', why: 'below-base-fee' });
    assert.deepEqual(nextMove(look({ maxFeePerGas: 9n }), view({ baseFee: 101n }), RULES), {
      do: 'wait',
      why: 'above-cap',
    });
    assert.deepEqual(
      nextMove(look({ maxFeePerGas: 9n }), view({ baseFee: 10n }), { ...RULES, gasPriceCap: undefined }),
      {
        do: 'replace',
        why: 'below-base-fee',
      },
    );
  });

  test('at the bounds: a fee equal to the base fee is not below it; a base fee equal to gasPriceCap is not above it', () => {
    // maxFeePerGas exactly the base fee can be mined: not replaced for the base fee (a fresh one waits its blocks).
    assert.deepEqual(nextMove(look({ maxFeePerGas: 10n }), view({ baseFee: 10n }), RULES), { do: 'wait' });
    assert.deepEqual(nextMove(look({ maxFeePerGas: 10n, known: false }), view({ baseFee: 10n }), RULES), {
      do: 'rebroadcast',
      why: 'gap',
    });
    // A base fee at the cap: a replacement within the cap can still pay it.
    assert.deepEqual(nextMove(look({ maxFeePerGas: 9n }), view({ baseFee: 100n }), RULES), {
      do: 'replace',
      why: 'below-base-fee',
    });
    assert.deepEqual(nextMove(look({ maxFeePerGas: 9n, known: false }), view({ baseFee: 100n }), RULES), {
      do: 'replace',
      why: 'gap',
    });
  });

  test("behind a gap also when geth's pending count stops exactly at this nonce (the pool's run ends below it)", () => {
    const stale = look({ nonce: 7, maxFeePerGas: 1n, blocksSince: 50n });
    assert.deepEqual(nextMove(stale, view({ pending: 7 }), RULES), { do: 'wait', why: 'behind-gap' });
    assert.deepEqual(nextMove(stale, view({ pending: 8 }), RULES), { do: 'replace', why: 'below-base-fee' });
  });

  test('minable but not mined: replaced after replaceAfterBlocks heads, or replaceAfterMs, whichever first', () => {
    assert.equal(nextMove(look({ blocksSince: 2n }), view({}), RULES).do, 'wait');
    assert.deepEqual(nextMove(look({ blocksSince: 3n }), view({}), RULES), { do: 'replace', why: 'blocks' });
    assert.deepEqual(nextMove(look({ msSince: 60_000 }), view({}), RULES), { do: 'replace', why: 'time' });
  });

  test('a nonce below the mined count, none of its own mined: used by another transaction', () => {
    assert.deepEqual(nextMove(look({ nonce: 4 }), view({}), RULES), { do: 'used' });
  });
});

/** The node and the journal. */
interface World {
  mined: number;
  /** Nonces in the node's pool. */
  pool: Set<number>;
  /** Nonces of transactions that may still land (journaled or filling a gap, not settled). */
  live: Set<number>;
}

type Outcome = 'accepted' | 'refused' | 'unknown-in' | 'unknown-out';

/** A send takes its nonce at once and learns its broadcast's outcome at a later `land` (sends overlap). */
type Step =
  | { kind: 'send'; outcome: Outcome }
  | { kind: 'land'; pick: number }
  | { kind: 'drop'; pick: number; after: boolean }
  | { kind: 'replace'; pick: number }
  | { kind: 'head' }
  | { kind: 'mine' }
  | { kind: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      outcome: fc.constantFrom('accepted', 'accepted', 'refused', 'unknown-in', 'unknown-out'),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('land' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('drop' as const), pick: fc.nat(), after: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replace' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('head' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('mine' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const) }) },
);

/** geth's pending count: mined, then the pool's run without a gap. */
function pending(w: World): number {
  let n = w.mined;
  while (w.pool.has(n)) n++;
  return n;
}

function mine(w: World, book: NonceBook): void {
  while (w.pool.has(w.mined)) {
    w.pool.delete(w.mined);
    w.live.delete(w.mined);
    book.consumed(w.mined);
    w.mined++;
  }
  book.observe(w.mined);
}

/** How many gaps the property filled, so a generator that never makes one fails the test. */
const fills = { count: 0 };

/** A new head: every open slot, lowest first, takes its move (nothing replaced here: fees are not modelled). */
function head(w: World, book: NonceBook): void {
  const v: HeadView = { head: 0n, mined: w.mined, pending: pending(w), baseFee: undefined };
  book.observe(w.mined);
  for (const nonce of [...w.live].sort((a, b) => a - b)) {
    const move = nextMove(
      {
        nonce,
        maxFeePerGas: 1n,
        // The follower asks where the chain waits and for any transaction that missed a block (every slot here).
        known: w.pool.has(nonce),
        blocksSince: 0n,
        msSince: 0,
        freedBelow: book.freedBelow(nonce),
        missingBelow: false,
      },
      v,
      { replaceAfterBlocks: 1_000, replaceAfterMs: Number.MAX_SAFE_INTEGER },
    );
    assert.notEqual(move.do, 'used', `nonce ${nonce} is live below the mined count ${w.mined}`);
    if (move.do === 'rebroadcast') w.pool.add(nonce);
    if (move.do === 'fill' && book.claim(move.nonce)) {
      assert.ok(!w.live.has(move.nonce), `nonce ${move.nonce} filled while a live transaction holds it`);
      fills.count++;
      w.live.add(move.nonce);
      w.pool.add(move.nonce);
    }
  }
}

function run(steps: Step[]): void {
  const w: World = { mined: 3, pool: new Set(), live: new Set() };
  const restart = () => createNonceBook({ mined: w.mined, pending: pending(w), held: [...w.live] });
  let book = restart();
  /** Sends whose broadcast has not answered yet: their nonce is held, their outcome comes at `land`. */
  const inflight: { nonce: number; outcome: Outcome }[] = [];
  const land = (i: number) => {
    const [{ nonce, outcome }] = inflight.splice(i, 1);
    if (outcome === 'refused') book.free(nonce);
    else {
      w.live.add(nonce);
      if (outcome !== 'unknown-out') w.pool.add(nonce);
    }
  };
  for (const s of steps) {
    switch (s.kind) {
      case 'send': {
        const nonce = book.take();
        const held = w.live.has(nonce) || inflight.some((f) => f.nonce === nonce);
        assert.ok(!held, `nonce ${nonce} handed out while a live transaction holds it`);
        inflight.push({ nonce, outcome: s.outcome });
        break;
      }
      case 'land':
        if (inflight.length > 0) land(s.pick % inflight.length);
        break;
      case 'drop': {
        // One transaction, or (as anvil and a restarted node do) it and every later one of the signer.
        const nonce = [...w.pool][s.pick % Math.max(1, w.pool.size)];
        if (nonce !== undefined)
          for (const n of [...w.pool]) if (n === nonce || (s.after && n > nonce)) w.pool.delete(n);
        break;
      }
      case 'replace': {
        // Same nonce, higher fees: the pool holds the replacement, the book is not asked.
        const nonce = [...w.live][s.pick % Math.max(1, w.live.size)];
        if (nonce !== undefined) w.pool.add(nonce);
        break;
      }
      case 'head':
        head(w, book);
        break;
      case 'mine':
        mine(w, book);
        break;
      case 'restart':
        // The process dies mid-send: each of those was journaled before its broadcast, which may not have gone out.
        for (const f of inflight) f.outcome = 'unknown-out';
        while (inflight.length > 0) land(0);
        book = restart();
        break;
    }
  }
  while (inflight.length > 0) land(0);
  // Sends stop: a head gives the node back everything it lost, whatever the nonce, and fills the
  // lowest free nonce; a block mines up to the next free one. So a round per free nonce, plus one.
  const rounds = book.state().freed.length + 1;
  for (let round = 0; round < rounds && w.live.size > 0; round++) {
    head(w, book);
    mine(w, book);
  }
  assert.deepEqual([...w.live], [], `every live transaction mined (mined count ${w.mined})`);
  assert.deepEqual([...w.pool], [], 'the pool is empty');
  const { freed } = book.state();
  for (let n = w.mined; n < book.state().next; n++)
    assert.ok(freed.includes(n), `nonce ${n} above the mined count is neither mined nor free: skipped`);
}

describe('gaps: healing over random sends, replacements, drops, blocks and restarts (docs/transactions.md#gaps)', () => {
  test('no nonce held by two live transactions; once sends stop, every gap is filled and nothing is skipped', () => {
    // endOnFailure: a counterexample is reported as found (sequences are at most 40 steps), not shrunk for minutes.
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => run(steps)),
      { ...RUNS, endOnFailure: true },
    );
    assert.ok(fills.count > 10, `the sequences made gaps to fill (${fills.count})`);
  });
});
