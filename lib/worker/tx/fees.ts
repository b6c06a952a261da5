/**
 * Gas and fees for the transaction sender (docs/transactions.md, Transactions): the gas limit is the
 * node's estimate plus a margin; EIP-1559 fees come from the node, at most the chain's gasPriceCap
 * (lib/gas/fee-ceiling.ts; a replacement's bound is applied by lib/worker/tx/follow.ts).
 */
import type { Abi, Chain, PublicClient } from 'viem';
import { feesWithinCap } from '../../gas/fee-ceiling.ts';
import { DeliveryError } from '../errors.ts';
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

/** The node's EIP-1559 fees now. */
export async function nodeFees(publicClient: PublicClient, chain: Chain | undefined, errorAbi?: Abi): Promise<Fees> {
  try {
    const f = await publicClient.estimateFeesPerGas({ chain, type: 'eip1559' });
    return { maxFeePerGas: f.maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
  } catch (err) {
    throw transactionError(classify(err), 'reading fees', errorAbi, err);
  }
}

/**
 * The fees of a first send: the node's, with maxFeePerGas at most `cap`. While the latest block's
 * base fee is above the cap nothing is signed: DeliveryError `fee`, a wait (the loop asks again later).
 */
export async function cappedFees(
  publicClient: PublicClient,
  chain: Chain | undefined,
  cap: bigint | undefined,
  errorAbi?: Abi,
): Promise<Fees> {
  const suggested = await nodeFees(publicClient, chain, errorAbi);
  if (cap === undefined || suggested.maxFeePerGas <= cap) return suggested;
  let baseFee: bigint;
  try {
    baseFee = (await publicClient.getBlock({ blockTag: 'latest' })).baseFeePerGas ?? 0n;
  } catch (err) {
    throw transactionError(classify(err), 'reading fees', errorAbi, err);
  }
  const decision = feesWithinCap(suggested, baseFee, cap);
  if (!decision.ok) throw new DeliveryError('fee', decision.message);
  return decision.fees;
}
