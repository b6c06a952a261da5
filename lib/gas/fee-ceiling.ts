/**
 * The fee ceiling of the transactions the worker signs (docs/hostile-recipients.md#hostile-recipients):
 * `chains.NAME.transactionOverrides.gasPriceCap`, and replacements that escalate but never above
 * min(3 × the node's fresh suggestion, cap). Pure arithmetic on wei (bigint), for the transaction
 * sender to call; the rule of the bound is Hyperlane's escalator
 * (rust/main/lander/src/adapter/chains/ethereum/adapter/gas_price/escalator.rs: the larger of the
 * bumped old price and the fresh estimate, at most 3 × the fresh estimate), with the cap on top.
 * A replacement that cannot be both above the node's replacement rule and within the bound is not
 * made: the transaction already sent keeps its chance, and nothing is signed above the bound.
 */

/** EIP-1559 fees, wei per gas. A legacy `gasPrice` is checked as a `maxFeePerGas` with no tip. */
export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** Not now: why, for `last_error` (`fee: …`): a wait, not a failure. */
export interface FeeWait {
  ok: false;
  message: string;
}

export type FeeDecision = { ok: true; fees: Fees } | FeeWait;

/** Hyperlane's bound on escalation: at most this many times the fresh suggestion. */
export const ESCALATION_BOUND_MULTIPLIER = 3n;

const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/**
 * The fees of a first send: the node's suggestion, with `maxFeePerGas` at most `cap` (and the tip at
 * most the fee). While the base fee is above the cap no transaction could be mined within it: wait.
 */
export function feesWithinCap(suggested: Fees, baseFee: bigint, cap: bigint | undefined): FeeDecision {
  if (cap === undefined) return { ok: true, fees: suggested };
  if (baseFee > cap) {
    return { ok: false, message: `base fee ${baseFee} wei is above gasPriceCap ${cap} wei; waiting for it to fall` };
  }
  const maxFeePerGas = min(suggested.maxFeePerGas, cap);
  return { ok: true, fees: { maxFeePerGas, maxPriorityFeePerGas: min(suggested.maxPriorityFeePerGas, maxFeePerGas) } };
}

/** `value` raised by `percent` (to 0.001 %), rounded up: a node compares a replacement with at least this. */
function bumped(value: bigint, percent: number): bigint {
  const scaled = value * BigInt(Math.round((100 + percent) * 1000));
  return scaled / 100_000n + (scaled % 100_000n === 0n ? 0n : 1n);
}

/**
 * The fees of a replacement at the same nonce: each of the two raised by `bumpPercent` (what the
 * node requires of a replacement, 10 % on geth), or the fresh suggestion when higher, bounded by
 * min(3 × the fresh suggestion, cap). When the bumped fee does not fit under the bound, no
 * replacement: wait for the one sent (`fee: …`).
 */
export function replacementFees(previous: Fees, fresh: Fees, opts: { bumpPercent: number; cap?: bigint }): FeeDecision {
  const bound = (suggestion: bigint) =>
    opts.cap === undefined
      ? suggestion * ESCALATION_BOUND_MULTIPLIER
      : min(suggestion * ESCALATION_BOUND_MULTIPLIER, opts.cap);
  const feeFloor = bumped(previous.maxFeePerGas, opts.bumpPercent);
  const tipFloor = bumped(previous.maxPriorityFeePerGas, opts.bumpPercent);
  const feeBound = bound(fresh.maxFeePerGas);
  if (feeFloor > feeBound) {
    return {
      ok: false,
      message: `a replacement needs maxFeePerGas ${feeFloor} wei, above the bound ${feeBound} wei (min(3 × the node's ${fresh.maxFeePerGas}${opts.cap === undefined ? '' : `, gasPriceCap ${opts.cap}`})); waiting for the transaction sent`,
    };
  }
  const maxFeePerGas = min(max(feeFloor, fresh.maxFeePerGas), feeBound);
  const tip = min(max(tipFloor, fresh.maxPriorityFeePerGas), maxFeePerGas);
  if (tip < tipFloor) {
    return {
      ok: false,
      message: `a replacement needs maxPriorityFeePerGas ${tipFloor} wei, above its maxFeePerGas ${maxFeePerGas} wei; waiting for the transaction sent`,
    };
  }
  return { ok: true, fees: { maxFeePerGas, maxPriorityFeePerGas: tip } };
}
