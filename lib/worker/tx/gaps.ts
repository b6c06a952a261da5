/**
 * What a followed slot does at a new head (docs/transactions.md#gaps: the rules, in words), decided
 * from the node's state read once per head and signer (`HeadView`) and what the process knows of
 * the slot: a pure function, so the rules are checked on their own (test/unit/worker/tx/gaps.test.ts).
 * The moves, as the doc's rules name them: `used` (the nonce went to another transaction),
 * `rebroadcast` with `gap` (the nonce the chain waits on, held by no node) or `lost` (a later one the
 * node dropped too), `replace` (below the base fee, or not mined after replaceAfterBlocks or
 * replaceAfterMs; never behind a gap), `fill` (a free nonce below: a self-transfer), or `wait`
 * (behind a gap, or the base fee above gasPriceCap).
 */

/**
 * Default `replaceAfterBlocks`: a transaction that pays at least the base fee and is in none of the
 * next 3 blocks is being outbid on its tip (or the node lost it): one block can be missed because
 * it was built before the transaction arrived, a second because it was full; a third is a pattern.
 * 3 blocks is 36 s on Ethereum, 6 s on a 2 s L2; each replacement raises the fees by
 * feeBumpPercent within min(3 × the node's suggestion, gasPriceCap) (docs/transactions.md#gaps).
 */
export const DEFAULT_REPLACE_AFTER_BLOCKS = 3;

/** The node's state for one signer at one head. */
export interface HeadView {
  head: bigint;
  /** `eth_getTransactionCount(latest)`: the nonce the chain expects next. */
  mined: number;
  /** `eth_getTransactionCount(pending)`: on geth the mined count plus the pool's run without a gap. */
  pending: number;
  /** The head's base fee (undefined before EIP-1559, or when the node did not say). */
  baseFee: bigint | undefined;
}

export interface NonceSlotLook {
  nonce: number;
  /** The newest transaction's maxFeePerGas. */
  maxFeePerGas: bigint;
  /**
   * Whether the node holds one of the slot's transactions; asked when the chain expects the nonce,
   * or when the newest has waited a head without being mined.
   */
  known?: boolean;
  /** Heads seen since the newest was sent. */
  blocksSince: bigint;
  /** Milliseconds since the newest was sent. */
  msSince: number;
  /** The lowest free nonce below this one in the nonce book, if any. */
  freedBelow?: number;
  /** A nonce below this one whose transactions the node is known to have lost (being healed). */
  missingBelow: boolean;
}

export interface ReplaceRules {
  replaceAfterBlocks: number;
  replaceAfterMs: number;
  gasPriceCap?: bigint;
}

export type Move =
  | { do: 'wait'; why?: 'behind-gap' | 'above-cap' }
  | { do: 'used' }
  | { do: 'rebroadcast'; why: 'gap' | 'lost' }
  | { do: 'fill'; nonce: number }
  | { do: 'replace'; why: 'below-base-fee' | 'blocks' | 'time' | 'gap' };

export function nextMove(look: NonceSlotLook, view: HeadView, rules: ReplaceRules): Move {
  if (view.mined > look.nonce) return { do: 'used' };
  if (look.freedBelow !== undefined && look.freedBelow >= view.mined) return { do: 'fill', nonce: look.freedBelow };
  const belowBaseFee = view.baseFee !== undefined && look.maxFeePerGas < view.baseFee;
  const aboveCap = rules.gasPriceCap !== undefined && view.baseFee !== undefined && view.baseFee > rules.gasPriceCap;
  if (look.nonce === view.mined) {
    // Lost bytes that could not be mined at this base fee anyway are replaced rather than sent again.
    if (look.known === false)
      return belowBaseFee && !aboveCap ? { do: 'replace', why: 'gap' } : { do: 'rebroadcast', why: 'gap' };
  } else if (look.known === false) return { do: 'rebroadcast', why: 'lost' };
  else if (look.missingBelow || view.pending <= look.nonce) return { do: 'wait', why: 'behind-gap' };
  if (belowBaseFee) return aboveCap ? { do: 'wait', why: 'above-cap' } : { do: 'replace', why: 'below-base-fee' };
  if (look.blocksSince >= BigInt(rules.replaceAfterBlocks)) return { do: 'replace', why: 'blocks' };
  if (look.msSince >= rules.replaceAfterMs) return { do: 'replace', why: 'time' };
  return { do: 'wait' };
}
