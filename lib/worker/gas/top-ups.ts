/**
 * Where the worker looks for gas payments made after intake (top-ups), docs/gas.md#top-ups:
 * the origin chain's InterchainGasPaymaster logs, read with `eth_getLogs` in block ranges of at most
 * `chains.NAME.index.chunk` blocks, never "from the start of the chain" (most providers refuse
 * large ranges, and a range they accept can still answer too many logs to read).
 *
 * What has been searched for a message is one range of blocks, low..high, kept in memory. Each
 * check first reads the blocks mined since the last one (where a top-up made while the message
 * waits is), then goes further back, newest first, toward the block of the message's origin
 * transaction, at most `maxRequests` requests per check. The range grows only once the logs of a
 * request are stored, so a failure half-way loses nothing: the next check starts where it stopped.
 * A restart forgets the ranges: each message is searched again, from the newest blocks back.
 */
import { DeliveryError } from '../../errors/worker.ts';
import { gasPaymentLogFilter } from '../../gas/payment.ts';
import type { ClaimedMessage } from '../../outbox/index.ts';

/** One log as `eth_getLogs` gives it (viem's getLogs shape, the fields read here). */
export interface OriginLog {
  address: string;
  topics: readonly string[];
  data: string;
  logIndex: number | null;
  transactionHash: string | null;
}

/** An origin chain's paymaster and how to read it. */
export interface PaymentOrigin {
  /** The InterchainGasPaymaster, 20 bytes. */
  paymaster: string;
  /** eth_getLogs with the filter of gasPaymentLogFilter. */
  getLogs(filter: ReturnType<typeof gasPaymentLogFilter>): Promise<readonly OriginLog[]>;
  /** The block of the message's origin transaction; undefined when the node has no receipt for it. */
  blockOf(txHash: string): Promise<bigint | undefined>;
  /** The chain's newest block number (eth_blockNumber). */
  head(): Promise<bigint>;
  /** Blocks per eth_getLogs request (chains.NAME.index.chunk); DEFAULT_LOG_CHUNK when absent. */
  chunk?: number;
}

/** Hyperlane's default for `index.chunk`, which most providers accept for a filtered eth_getLogs. */
export const DEFAULT_LOG_CHUNK = 1999;

/** The block numbers searched for one message, and where its origin transaction is. */
interface Searched {
  origin: bigint;
  low: bigint;
  high: bigint;
}

export interface TopUpSearchOptions {
  /** eth_getLogs requests per check of one message (default 8). */
  maxRequests?: number;
  /** Messages whose searched range is remembered (default 10,000); the oldest is forgotten first. */
  maxTracked?: number;
}

/**
 * Reads the payment logs of `m` not read yet and hands each request's logs to `store` (which must
 * keep them before the search goes on). Throws a DeliveryError `rpc` when the node does not know
 * the origin transaction, or whatever `getLogs`/`head` threw.
 */
export type TopUpSearch = (
  origin: PaymentOrigin,
  m: ClaimedMessage,
  store: (logs: readonly OriginLog[]) => Promise<void>,
) => Promise<void>;

export function createTopUpSearch(o: TopUpSearchOptions = {}): TopUpSearch {
  const maxRequests = o.maxRequests ?? 8;
  const maxTracked = o.maxTracked ?? 10_000;
  const searched = new Map<string, Searched>();

  async function start(origin: PaymentOrigin, m: ClaimedMessage, head: bigint): Promise<Searched> {
    const from = await origin.blockOf(m.txHash);
    if (from === undefined)
      throw new DeliveryError(
        'rpc',
        `the origin chain's node has no receipt for the message's transaction ${m.txHash}`,
      );
    if (searched.size >= maxTracked) searched.delete(searched.keys().next().value as string);
    // Nothing searched yet: the range is empty, just above the newest block (or the origin block).
    const high = head >= from ? head : from - 1n;
    const s = { origin: from, low: high + 1n, high };
    searched.set(m.id, s);
    return s;
  }

  const search: TopUpSearch = async (origin, m, store) => {
    const head = await origin.head();
    const s = searched.get(m.id) ?? (await start(origin, m, head));
    const chunk = BigInt(origin.chunk ?? DEFAULT_LOG_CHUNK);
    const read = (from: bigint, to: bigint) => origin.getLogs(gasPaymentLogFilter(origin.paymaster, m, from, to));
    let requests = 0;
    // The blocks mined since the last check, oldest first.
    while (s.high < head && requests++ < maxRequests) {
      const to = s.high + chunk < head ? s.high + chunk : head;
      await store(await read(s.high + 1n, to));
      s.high = to;
    }
    // Then further back, newest first, down to the origin transaction's block.
    while (s.low > s.origin && requests++ < maxRequests) {
      const from = s.low - chunk > s.origin ? s.low - chunk : s.origin;
      await store(await read(from, s.low - 1n));
      s.low = from;
    }
  };
  return search;
}
