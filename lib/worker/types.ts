/**
 * What the delivery loop (lib/worker/loop/) and the destinations it delivers to
 * (lib/worker/chain/destination.ts) agree on: the outbox's consumer API with its journal, one
 * destination chain, what one delivery ends with, the events the metrics count.
 */
import type { Hash, Hex } from 'viem';
import { DEFAULTS } from '../config/parse.ts';
import type { WorkerConfig } from '../types.ts';
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
 * (lib/worker/gas/gate.ts builds the one from a relayer config).
 */
export interface DeliveryPolicy {
  /** Throws DeliveryError `gas_payment` while the message's payment does not meet its policy. */
  beforeMetadata(m: ClaimedMessage): Promise<void>;
  /** `simulated` with the gas limit to sign; throws DeliveryError `gas_payment` (underpaid) or `gas` (too much). */
  gasLimit(m: ClaimedMessage, simulated: SimulateResult): Promise<SimulateResult>;
}

/** One destination chain as the loop sees it (lib/worker/chain/destination.ts builds the real one). */
export interface Destination {
  name: string;
  domain: number;
  /** The transaction that delivered `id` on this chain, or null while it is not delivered. */
  deliveredBy(id: Hex): Promise<Hash | null>;
  /**
   * Reads what `metadata` reads first (the recipient's ISM, its module type), shared per head, so
   * that it runs beside `deliveredBy` (docs/delivery.md#throughput). Resolves with the metadata when
   * it needs no other request (a NULL ISM: `0x`), else undefined; never rejects.
   */
  prefetch?(message: Hex): Promise<Hex | undefined>;
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
   * restart), until `signal` aborts (the worker stops). Resolves once the journal is read: the
   * worker claims nothing before, so that none of its own new sends is followed as recovered.
   */
  recover?(signal?: AbortSignal): Promise<void>;
}

export type DeliveryResult =
  | { id: string; outcome: 'delivered'; txHash: string; already: boolean; recorded: boolean }
  | { id: string; outcome: 'retry' | 'pending'; error: string; retryAt: number; recorded: boolean }
  | { id: string; outcome: 'failed'; error: string; recorded: boolean }
  | { id: string; outcome: 'released'; recorded: boolean };

/** What the ops server's /metrics reports (lib/worker/ops/server.ts). */
export interface DeliveryEvents {
  delivered(destination: string, already: boolean, enqueuedToDeliveredSeconds: number): void;
  failed(destination: string, kind: string): void;
  retried(destination: string, kind: string): void;
  /** Age of the oldest message a claim returned (0 when a claim returned nothing). */
  claimed(count: number, oldestAgeSeconds: number): void;
}

/** The delivery loop's settings: the config's own keys, names and units (a config's `worker` section is one). */
export type DeliveryLoopConfig = Pick<
  WorkerConfig,
  | 'leaseSeconds'
  | 'batch'
  | 'concurrency'
  | 'maxAttempts'
  | 'maxLeaseExpiries'
  | 'retryBaseSeconds'
  | 'retryMaxSeconds'
  | 'pendingRetrySeconds'
  | 'pendingRetryMaxSeconds'
  | 'pendingDeadlineHours'
  | 'gasPaymentDeadlineHours'
  | 'pollMs'
  | 'stopGraceSeconds'
>;

/** The keys of the config's `worker` section the delivery loop reads (docs/worker-configuration.md#the-worker-section). */
const LOOP_KEYS: readonly (keyof DeliveryLoopConfig)[] = [
  'leaseSeconds',
  'batch',
  'concurrency',
  'maxAttempts',
  'maxLeaseExpiries',
  'retryBaseSeconds',
  'retryMaxSeconds',
  'pendingRetrySeconds',
  'pendingRetryMaxSeconds',
  'pendingDeadlineHours',
  'gasPaymentDeadlineHours',
  'pollMs',
  'stopGraceSeconds',
];

/** The loop's defaults: the config's (lib/config/parse.ts DEFAULTS.worker). */
export const WORKER_DEFAULTS: Readonly<DeliveryLoopConfig> = Object.freeze(loopConfig(DEFAULTS.worker));

/** The loop keys of a config's `worker` section (or of options that hold more). */
export function loopConfig(worker: DeliveryLoopConfig): DeliveryLoopConfig;
export function loopConfig(worker: Partial<DeliveryLoopConfig>): Partial<DeliveryLoopConfig>;
export function loopConfig(worker: Partial<DeliveryLoopConfig>): Partial<DeliveryLoopConfig> {
  const out: Partial<Record<keyof DeliveryLoopConfig, number>> = {};
  for (const key of LOOP_KEYS) if (worker[key] !== undefined) out[key] = worker[key];
  return out;
}

/** The loop's settings as its timers use them (ms), converted once from the config's units. */
export interface WorkerSettings {
  readonly leaseMs: number;
  readonly batch: number;
  readonly concurrency: number;
  readonly maxAttempts: number;
  readonly maxLeaseExpiries: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly pendingBaseMs: number;
  readonly pendingMaxMs: number;
  readonly pendingDeadlineMs: number;
  readonly gasPaymentDeadlineMs: number;
  readonly pollMs: number;
  readonly stopGraceMs: number;
}

export function workerSettings(c: DeliveryLoopConfig): WorkerSettings {
  return {
    leaseMs: c.leaseSeconds * 1000,
    batch: c.batch,
    concurrency: c.concurrency,
    maxAttempts: c.maxAttempts,
    maxLeaseExpiries: c.maxLeaseExpiries,
    retryBaseMs: c.retryBaseSeconds * 1000,
    retryMaxMs: c.retryMaxSeconds * 1000,
    pendingBaseMs: c.pendingRetrySeconds * 1000,
    pendingMaxMs: c.pendingRetryMaxSeconds * 1000,
    pendingDeadlineMs: c.pendingDeadlineHours * 3_600_000,
    gasPaymentDeadlineMs: c.gasPaymentDeadlineHours * 3_600_000,
    pollMs: c.pollMs,
    stopGraceMs: c.stopGraceSeconds * 1000,
  };
}
