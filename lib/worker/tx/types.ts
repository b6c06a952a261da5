/**
 * What flows through the transaction sender (docs/transactions.md#transactions), typed from the
 * simulation to the receipt: the request, its simulation (the gas limit a send signs), the fees,
 * and what a send ends with.
 */
import type { Address, Hash, Hex, TransactionReceipt } from 'viem';

export interface TransactionRequest {
  to: Address;
  data: Hex;
  value?: bigint;
}

/** A request simulated (`eth_estimateGas`): handed to `send`, which signs its gas limit. */
export interface SimulateResult {
  /** The node's estimate. */
  estimate: bigint;
  /** The gas limit a send uses: the estimate plus the margin. */
  gas: bigint;
}

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** A send's end: the transaction that was mined (one of its replacements, maybe) and its receipt. */
export interface SendResult {
  hash: Hash;
  receipt: TransactionReceipt;
  /** The nonce it was sent under. */
  nonce: number;
}

/**
 * What the sender did or found on the chain (docs/transactions.md#gaps), for logs and metrics: every
 * broadcast of a new transaction, every replacement, every re-broadcast of bytes the node lost,
 * and every gap (a nonce the chain waits on that the node holds nothing for).
 */
export interface TxEvent {
  kind: 'broadcast' | 'replacement' | 'rebroadcast' | 'gap' | 'fill';
  chainId: number;
  /** Lower-case. */
  signer: string;
  nonce: number;
  /** The transaction concerned (none for a gap found). */
  hash?: Hash;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  /** The message its transactions deliver (none for a self-transfer filling a gap). */
  messageId?: string;
  /**
   * Why: the rule that replaced it (`below-base-fee`, `blocks`, `time`, `gap`), what the gap is; for
   * a re-broadcast `gap` (the chain waits on its nonce) or `lost` (a later nonce the node lost too).
   */
  reason?: string;
}
