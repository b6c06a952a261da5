/**
 * What the delivery loop (lib/worker/loop/) and the destinations it delivers to
 * (lib/worker/destination.ts) agree on: the outbox's consumer API with its journal, one
 * destination chain, what one delivery ends with, the events the metrics count.
 */
import type { Hash, Hex } from 'viem';
import type { ChangeFeed } from '../outbox/change-feed.ts';
import type {
  BroadcastFence,
  ClaimedMessage,
  JournalEntry,
  MarkDeliveredOptions,
  MarkFailedOptions,
} from '../outbox/index.ts';
import type { TransactionJournal } from './tx/journal.ts';
import type { SimulateResult } from './tx/types.ts';

/** What the loop needs of the outbox: its consumer API and the transaction journal (docs/outbox.md, Leases). */
export interface DeliveryOutbox extends TransactionJournal {
  claim(
    limit: number,
    leaseMs: number,
    options?: { maxLeaseExpiries?: number },
  ): ClaimedMessage[] | Promise<ClaimedMessage[]>;
  extend(id: string, lease: string, leaseMs: number): boolean | Promise<boolean>;
  markDelivered(id: string, opts: MarkDeliveredOptions): boolean | Promise<boolean>;
  markFailed(id: string, opts: MarkFailedOptions): boolean | Promise<boolean>;
  openBroadcasts(
    of: { messageId: string } | { chainId: number; signer: string },
  ): JournalEntry[] | Promise<JournalEntry[]>;
  /** The outbox's change feed (every engine has one): the loop wakes on it instead of waiting pollMs. */
  readonly changes?: ChangeFeed;
}

/** A transaction of `process` that was mined. */
export interface Processed {
  hash: Hash;
  status: 'success' | 'reverted';
}

/** What `process` needs besides the call: the lease its first broadcast is recorded under, the wait hook. */
export interface ProcessOptions {
  /** The message id (lower-case), the journal's key. */
  messageId: string;
  fence: BroadcastFence;
  /** Called while the transaction waits for its confirmations. */
  onWait: () => Promise<void>;
}

/**
 * Where a message's journaled transactions stand (`resume`): one was mined, or none can land any
 * more (`dropped`), or one may still land and this worker cannot replace it (`open`: another
 * signer's).
 */
export type Resumed = Processed | { status: 'dropped' } | { status: 'open'; detail: string };

/**
 * The operator's limits on what a delivery may cost (docs/hostile-recipients.md#hostile-recipients), asked by
 * the loop before anything is spent on a message and once its `process` is estimated
 * (lib/worker/gas-gate.ts builds the one from a relayer config).
 */
export interface DeliveryPolicy {
  /** Throws DeliveryError `gas_payment` while the message's payment does not meet its policy. */
  beforeMetadata(m: ClaimedMessage): Promise<void>;
  /** `simulated` with the gas limit to sign; throws DeliveryError `gas_payment` (underpaid) or `gas` (too much). */
  gasLimit(m: ClaimedMessage, simulated: SimulateResult): Promise<SimulateResult>;
}

/** One destination chain as the loop sees it (lib/worker/destination.ts builds the real one). */
export interface Destination {
  name: string;
  domain: number;
  /** The transaction that delivered `id` on this chain, or null while it is not delivered. */
  deliveredBy(id: Hex): Promise<Hash | null>;
  /**
   * The metadata the recipient's ISM wants (throws DeliveryError, CcipReadError); `source` (origin
   * chain and dispatch transaction) locates the message in its origin's merkle tree (multisig ISMs).
   */
  metadata(message: Hex, signal?: AbortSignal, source?: { originChain: string; txHash: string }): Promise<Hex>;
  /** eth_estimateGas of process(metadata, message): throws on a revert (TransactionError kind revert). */
  simulate(metadata: Hex, message: Hex): Promise<SimulateResult>;
  /**
   * Sends process(metadata, message) with the gas limit of `simulated` (what `simulate` of this
   * call resolved with just before), records it in the journal first under `opts.fence`, and
   * waits for its confirmations.
   */
  process(metadata: Hex, message: Hex, simulated: SimulateResult, opts: ProcessOptions): Promise<Processed>;
  /**
   * The message's open journal entries of this chain (a slot: one nonce of one signer): this
   * signer's are followed to their end (replaced while pending); another signer's are looked at.
   */
  resume(entries: readonly JournalEntry[], opts: Pick<ProcessOptions, 'onWait'>): Promise<Resumed>;
  /**
   * Follows, in the background, the open transactions of this signer the journal holds (after a
   * restart), until `signal` aborts (the worker stops).
   */
  recover?(signal?: AbortSignal): Promise<void>;
}

export type DeliveryResult =
  | { id: string; outcome: 'delivered'; txHash: string; already: boolean; recorded: boolean }
  | { id: string; outcome: 'retry' | 'pending'; error: string; retryAt: number; recorded: boolean }
  | { id: string; outcome: 'failed'; error: string; recorded: boolean }
  | { id: string; outcome: 'released'; recorded: boolean };

/** What the ops server's /metrics reports (lib/worker/ops.ts). */
export interface DeliveryEvents {
  delivered(destination: string, already: boolean, enqueuedToDeliveredSeconds: number): void;
  failed(destination: string, kind: string): void;
  retried(destination: string, kind: string): void;
  /** Age of the oldest message a claim returned (0 when a claim returned nothing). */
  claimed(count: number, oldestAgeSeconds: number): void;
}

export const WORKER_DEFAULTS = Object.freeze({
  leaseMs: 60_000,
  batch: 10,
  concurrency: 32,
  maxAttempts: 5,
  maxLeaseExpiries: 5,
  retryBaseMs: 5_000,
  retryMaxMs: 600_000,
  pendingBaseMs: 5_000,
  pendingMaxMs: 60_000,
  pendingDeadlineMs: 48 * 3_600_000,
  /** From enqueue: how long a message may wait for its gas payment before it is failed (7 days). */
  gasPaymentDeadlineMs: 7 * 24 * 3_600_000,
  pollMs: 1_000,
  stopGraceMs: 30_000,
});

/** The loop's settings: WORKER_DEFAULTS with the options given. */
export type WorkerSettings = { readonly [K in keyof typeof WORKER_DEFAULTS]: number };
