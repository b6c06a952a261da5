/**
 * The nonces of one signer on one chain (docs/transactions.md#nonces), after Hyperlane's Lander: the
 * nonces between the node's mined count and an upper bound are each held by a transaction that
 * may still land, or free. A nonce is freed only when its broadcast certainly failed, and freed
 * nonces are handed out before new ones, so the sequence on chain has no gap; a nonce a live
 * transaction holds is never handed out again, whatever the node's pending count says (it stops
 * at the first gap in the pool, below nonces that are still held).
 *
 * The book is pure: what the node and the journal say is handed to it (createNonceBook at start,
 * `observe` afterwards). One book per signer and chain per process (lib/worker/tx/sender.ts).
 */

export interface NonceBookStart {
  /** The node's count of the signer's mined transactions (`latest`): every nonce below is used. */
  mined: number;
  /** The node's pending count: the mined ones and those in its pool without a gap. */
  pending: number;
  /** Nonces of transactions the journal says may still land. */
  held: readonly number[];
}

export interface NonceBook {
  /** The nonce for a new transaction, held from now on: the lowest freed one, else the next new one. */
  take(): number;
  /** A transaction found in the journal holds `nonce` (a slot resumed). */
  hold(nonce: number): void;
  /** Nothing that may still land holds `nonce` any more: its broadcast certainly failed. Used first. */
  free(nonce: number): void;
  /** `nonce` is used on chain (one of ours was mined there, or another transaction was). */
  consumed(nonce: number): void;
  /** The node's mined count now: freed nonces below it are gone (something else used them). */
  observe(mined: number): void;
  /**
   * Takes `nonce` if it is free (nothing that may still land holds it), to fill a gap with
   * (docs/transactions.md#gaps); false when it is held or used.
   */
  claim(nonce: number): boolean;
  /** The lowest free nonce below `nonce` (a gap under a transaction holding `nonce`), or undefined. */
  freedBelow(nonce: number): number | undefined;
  /** For tests and logs. */
  state(): { mined: number; next: number; held: number[]; freed: number[] };
}

export function createNonceBook(start: NonceBookStart): NonceBook {
  let mined = start.mined;
  const held = new Set(start.held.filter((n) => n >= mined));
  let next = Math.max(start.mined, start.pending, ...[...held].map((n) => n + 1));
  // A nonce between the pending count and the top that nothing holds is a gap: every later
  // transaction waits behind it, so it is the first to fill.
  const freed = new Set<number>();
  for (let n = Math.max(mined, start.pending); n < next; n++) if (!held.has(n)) freed.add(n);

  const lowest = (set: Set<number>) => {
    let low = Number.POSITIVE_INFINITY;
    for (const n of set) if (n < low) low = n;
    return low;
  };

  return {
    take() {
      let nonce: number;
      if (freed.size > 0) {
        nonce = lowest(freed);
        freed.delete(nonce);
      } else {
        nonce = Math.max(next, mined);
        next = nonce + 1;
      }
      held.add(nonce);
      return nonce;
    },
    hold(nonce) {
      if (nonce < mined) return;
      freed.delete(nonce);
      held.add(nonce);
      if (nonce >= next) {
        for (let n = next; n < nonce; n++) freed.add(n);
        next = nonce + 1;
      }
    },
    free(nonce) {
      if (!held.delete(nonce)) return;
      if (nonce >= mined) freed.add(nonce);
    },
    consumed(nonce) {
      held.delete(nonce);
      freed.delete(nonce);
      if (nonce >= mined) this.observe(nonce + 1);
    },
    observe(count) {
      if (count <= mined) return;
      mined = count;
      for (const n of freed) if (n < mined) freed.delete(n);
      if (next < mined) next = mined;
    },
    claim(nonce) {
      if (!freed.delete(nonce)) return false;
      held.add(nonce);
      return true;
    },
    freedBelow(nonce) {
      const low = lowest(freed);
      return low < nonce ? low : undefined;
    },
    state: () => ({
      mined,
      next,
      held: [...held].sort((a, b) => a - b),
      freed: [...freed].sort((a, b) => a - b),
    }),
  };
}
