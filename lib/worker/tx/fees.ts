/**
 * Gas and fees for the transaction sender (docs/delivery.md, Transactions): the gas limit is the
 * node's estimate plus a margin; EIP-1559 fees come from the node, and a replacement raises both
 * by the bump (and at least to what the node asks now).
 */
import type { Abi, Chain, PublicClient } from 'viem';
import { classify, transactionError } from './node-errors.ts';
import type { Fees } from './types.ts';

export type { Fees } from './types.ts';

/** A percentage in basis points (12.5 → 1250n). */
export function basisPoints(percent: number): bigint {
  return BigInt(Math.round(percent * 100));
}

/** x * (1 + basisPoints / 10 000), rounded up, so a bump (or a margin) is never lost to rounding. */
export function bump(x: bigint, basisPoints: bigint): bigint {
  return (x * (10_000n + basisPoints) + 9_999n) / 10_000n;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** The node's EIP-1559 fees now. */
export async function nodeFees(publicClient: PublicClient, chain: Chain | undefined, errorAbi?: Abi): Promise<Fees> {
  try {
    const f = await publicClient.estimateFeesPerGas({ chain, type: 'eip1559' });
    return { maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
  } catch (err) {
    throw transactionError(classify(err), 'reading fees', errorAbi, err);
  }
}

/** The fees of a replacement: both of `previous` bumped, at least `current`, the cap at least the tip. */
export function replacementFees(previous: Fees, current: Fees, bumpBp: bigint): Fees {
  const fees: Fees = {
    maxPriorityFeePerGas: max(bump(previous.maxPriorityFeePerGas, bumpBp), current.maxPriorityFeePerGas),
    maxFeePerGas: max(bump(previous.maxFeePerGas, bumpBp), current.maxFeePerGas),
  };
  if (fees.maxFeePerGas < fees.maxPriorityFeePerGas) fees.maxFeePerGas = fees.maxPriorityFeePerGas;
  return fees;
}
