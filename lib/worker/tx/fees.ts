/**
 * Gas and fees for the transaction sender (docs/transactions.md, Transactions): the gas limit is the
 * node's estimate plus a margin; EIP-1559 fees come from the node, at most the chain's gasPriceCap
 * (lib/gas/fee-ceiling.ts; a replacement's bound is applied by lib/worker/tx/follow.ts). First sends
 * on one node client share the node's suggestion for FEES_FRESH_MS (docs/delivery.md#throughput).
 */
import type { Abi, Chain, PublicClient } from 'viem';
import type { Clock } from '../../clock.ts';
import { feesWithinCap } from '../../gas/fee-ceiling.ts';
import { DeliveryError } from '../errors.ts';
import { classify, transactionError } from './node-errors.ts';
import { headsOf } from './heads.ts';
import { perClient } from './per-client.ts';
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
 * How long the node's fee suggestion is shared by the first sends on one node client: two reads
 * (the latest block, eth_maxPriorityFeePerGas) one after the other, ahead of every broadcast, cost
 * two round trips per message; sends that start together take one suggestion instead. It is
 * shared while the read is under way, and after it for FEES_FRESH_MS as long as the chain's head
 * (as the sender's head watcher last read it: lib/worker/tx/heads.ts) is the one it was read at: a
 * new block, or no head known, means a new read. Within one block the base fee does not move.
 */
export const FEES_FRESH_MS = 500;

interface Quote {
  at: number;
  head: bigint | undefined;
  done: boolean;
  fees: Promise<Fees>;
}

const quotes = perClient<Clock, { current?: Quote }>();

/**
 * The node's fees, read once for concurrent callers and reused for FEES_FRESH_MS at the same head
 * (per node client and clock; a failed read is not kept).
 */
export function sharedFees(
  publicClient: PublicClient,
  chain: Chain | undefined,
  clock: Clock,
  errorAbi?: Abi,
): Promise<Fees> {
  const slot = quotes(publicClient, clock, () => ({}));
  const now = clock.now();
  const head = headsOf(publicClient, clock).latest();
  const held = slot.current;
  const fresh = held && head !== undefined && held.head === head && now - held.at < FEES_FRESH_MS;
  if (held && (!held.done || fresh)) return held.fees;
  const quote: Quote = { at: now, head, done: false, fees: nodeFees(publicClient, chain, errorAbi) };
  slot.current = quote;
  quote.fees.then(
    () => {
      quote.done = true;
    },
    () => {
      if (slot.current === quote) slot.current = undefined;
    },
  );
  return quote.fees;
}

/**
 * The fees of a first send: the node's (shared for FEES_FRESH_MS when `clock` is given), with
 * maxFeePerGas at most `cap`. While the latest block's
 * base fee is above the cap nothing is signed: DeliveryError `fee`, a wait (the loop asks again later).
 */
export async function cappedFees(
  publicClient: PublicClient,
  chain: Chain | undefined,
  cap: bigint | undefined,
  errorAbi?: Abi,
  clock?: Clock,
): Promise<Fees> {
  const suggested = await (clock
    ? sharedFees(publicClient, chain, clock, errorAbi)
    : nodeFees(publicClient, chain, errorAbi));
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
