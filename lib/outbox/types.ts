/**
 * The relay outbox's types (docs/design.md#enqueue, #storage, docs/outbox.md#message-lifecycle): a message, its
 * record and lifecycle, and the Outbox interface every engine implements.
 */
import type { PruneOptions, Pruned } from './retention.ts';
import type { GasBookStore, GasPayment, GasPaymentStore } from '../gas/payment.ts';
import type { SignerKey, SignerLease, SignerLeaseAnswer } from './signer-types.ts';
import type { Broadcast, BroadcastFence, JournalEntry, NonceSlot, NonceSlotOutcome } from './journal-types.ts';

export type { SignerKey, SignerLease, SignerLeaseAnswer };
export type { Broadcast, BroadcastFence, JournalEntry, NonceSlot, NonceSlotOutcome };
/** A message as it is stored in the relay outbox. */
export interface OutboxMessage {
  id: string;
  originChain: string;
  /** lower-case 0x + 64 hex */
  txHash: string;
  origin: number;
  destination: number;
  nonce: number;
  /** The raw Hyperlane message. */
  raw: Uint8Array;
  /** Milliseconds since the epoch when it was enqueued. */
  enqueuedAt: number;
  gasPayments?: readonly GasPayment[]; // in the same receipt, stored with it (lib/gas/payment.ts)
}

/** Where a message is in its life (docs/outbox.md#message-lifecycle). */
export type MessageStatus = 'queued' | 'delivering' | 'delivered' | 'failed';

/** An outbox row with its lifecycle: what `get`, `byTx` and the status endpoints read. */
export interface OutboxRecord extends OutboxMessage {
  status: MessageStatus;
  /** Delivery attempts begun: each claim() adds 1 (a lease that expires counted as one). */
  attempts: number;
  /**
   * Leases of this message that expired with no outcome recorded and were then taken over by a
   * later claim() (its worker stopped mid-delivery). claim's `maxLeaseExpiries` dead-letters on this
   * count; requeue() resets it to 0.
   */
  leaseExpiries: number;
  /** The error of the last failed attempt (kept after a later success, for the record). */
  lastError: string | null;
  /** Milliseconds since the epoch when it was marked delivered. */
  deliveredAt: number | null;
  destinationTxHash: string | null;
  /** End of the lease while 'delivering', else null. */
  claimedUntil: number | null;
  /** 'queued' after a failure: not claimable before this time, else null. */
  retryAt: number | null;
  /**
   * The delivery worker's own count (docs/delivery.md#retries-pending-proofs-dead-letters):
   * failed attempts counted toward its maxAttempts (pending polls and releases are not), kept by
   * the store between workers and restarts. Written by markFailed's `state`.
   */
  failures: number;
  /** When the message's proof was first found not ready (ms), or null while it never was. */
  pendingSince: number | null;
  /** Polls of a proof that was not ready. */
  polls: number;
  /** `onChainFeeQuoting`: the gas required at the message's last estimate, null before one (docs/gas.md#gas-already-spent). */
  requiredGas: bigint | null;
  /** Gas used by the relayer's own mined transactions of this message that did not deliver it (GasBookStore). */
  gasSpent: bigint;
  /** What those cost on the destination chain, in wei. */
  gasSpentWei: bigint;
}

/** What markFailed writes into the attempt-state columns (failures, pendingSince, polls). */
export interface AttemptState {
  failures: number;
  pendingSince: number | null;
  polls: number;
}

/** A message handed to one delivery worker by claim(). */
export interface ClaimedMessage extends OutboxRecord {
  /** Opaque token of this claim: required by extend, markDelivered and markFailed, so a worker
   * whose lease expired and was taken over cannot overwrite the new holder's outcome. */
  lease: string;
  /**
   * The last look (docs/delivery.md#retries-pending-proofs-dead-letters): its leases expired
   * `maxLeaseExpiries` times. The worker only follows the journal and checks whether it is delivered;
   * otherwise it fails it with deadLetterError's text. If this lease expires too, claim() dead-letters it.
   */
  lastChance?: true;
}

export interface MarkDeliveredOptions {
  destinationTxHash: string;
  /** The `lease` claim() returned with the message (required). */
  lease: string;
}

/**
 * `state`: the attempt state to store with the outcome (columns failures, pending_since, polls);
 * omitted, the columns are left as they are (a release). `error` null (with `retryAt` only): no
 * failure to show, lastError becomes null (a release of a message that never failed).
 */
export type MarkFailedOptions =
  | { error: string | null; retryAt: number; lease: string; state?: AttemptState }
  | { error: string; final: true; lease: string; state?: AttemptState };

export interface ClaimOptions {
  /**
   * Dead-letter threshold for workers that stop mid-delivery: a message whose lease expired this
   * many times (`leaseExpiries` >= maxLeaseExpiries once claimed) is handed out once more flagged
   * `lastChance`; if a lease of it expires then, claim() does not hand it out again but makes it
   * `failed` with a `lastError` saying so (deadLetterError, leaseExpiries + 1). Only expired
   * leases count here; a worker's own failed attempts (markFailed with retryAt) are counted by
   * the worker from `attempts`. Omitted: expired leases are counted but never dead-letter.
   */
  maxLeaseExpiries?: number;
}

/**
 * Which messages list() and requeueFailed() take (docs/outbox.md#listing-and-bulk-requeue): to one
 * destination domain or all, at most `limit` (1..MAX_LIST_LIMIT; list's default DEFAULT_LIST_LIMIT,
 * requeueFailed's MAX_LIST_LIMIT: call again for the rest).
 */
export interface RequeueFailedOptions {
  destination?: number;
  limit?: number;
}

/** list() also takes one status; without it every message not delivered. */
export interface ListOptions extends RequeueFailedOptions {
  status?: MessageStatus;
}

/**
 * Where accepted messages go. `enqueue` stores the whole batch atomically (all or nothing) and
 * is idempotent by message id: a message already present is not stored twice.
 * Returns the number of messages newly stored.
 */
export interface RelayQueue {
  enqueue(batch: readonly OutboxMessage[]): number | Promise<number>;
}

/**
 * The outbox (docs/outbox.md#leases): the queue, its readers (the status endpoints) and its
 * consumers (delivery workers). Time comes from the engine's injected Clock.
 */
export interface Outbox extends RelayQueue, GasPaymentStore, GasBookStore {
  /** The message with this id (any case), or undefined. */
  get(id: string): OutboxRecord | undefined | Promise<OutboxRecord | undefined>;
  /** The messages accepted from one transaction (tx hash in any case), in enqueue order. */
  byTx(originChain: string, txHash: string): OutboxRecord[] | Promise<OutboxRecord[]>;
  /** Messages not yet delivered nor given up: queued + delivering. */
  depth(): number | Promise<number>;
  /**
   * Takes up to `limit` claimable messages, oldest enqueuedAt first (ties in enqueue order), for
   * `leaseMs`. Claimable: queued with retryAt null or <= now, or delivering with an expired lease
   * (claimedUntil <= now). Each becomes delivering with claimedUntil = now + leaseMs, attempts + 1
   * (and leaseExpiries + 1 when it was taken over from an expired lease) and a fresh lease. Two
   * concurrent claimers never get the same message. With `maxLeaseExpiries`, expired messages that
   * reached it are dead-lettered first (see ClaimOptions) and do not count toward `limit`.
   * `now` is read while the engine holds its lock (the database's clock on PostgreSQL).
   */
  claim(limit: number, leaseMs: number, opts?: ClaimOptions): ClaimedMessage[] | Promise<ClaimedMessage[]>;
  /**
   * Renews the lease: claimedUntil = now + leaseMs, for the holder of `lease` only (a worker
   * waiting for confirmations keeps its claim). Like markDelivered it still succeeds on a lease
   * that expired if nobody claimed the message since. false: another lease holds it, or it is
   * delivered, failed, queued again or unknown.
   */
  extend(id: string, lease: string, leaseMs: number): boolean | Promise<boolean>;
  /**
   * delivering -> delivered, deliveredAt = now, only under `lease`: the message must still be
   * delivering under that lease (an expired lease nobody took over still counts: the delivery it
   * covered happened). A missing lease throws InvalidArgumentError; a wrong or stale one, an unknown, queued,
   * delivered or failed message: false, nothing changed. In the same write, the journal's open
   * slot of this message that holds `destinationTxHash` is settled `mined` (its other broadcasts
   * `replaced`), so a delivery costs the store no separate closeNonceSlot.
   */
  markDelivered(id: string, opts: MarkDeliveredOptions): boolean | Promise<boolean>;
  /**
   * delivering -> queued (lastError, retryAt; claimable again from retryAt) or, with `final`,
   * -> failed; only under `lease`, like markDelivered. Returns whether it changed. `error` is
   * kept to its first MAX_ERROR_LENGTH characters.
   */
  markFailed(id: string, opts: MarkFailedOptions): boolean | Promise<boolean>;
  /**
   * An operator re-drives a dead letter: failed -> queued, claimable at once, attempts and
   * lastError kept, a fresh count (leaseExpiries, failures, pendingSince, polls back to 0: it gets
   * maxAttempts again). false for any other status or an unknown id.
   */
  requeue(id: string): boolean | Promise<boolean>;

  /**
   * The transaction journal (docs/transactions.md#the-transaction-journal). Records `b` before it is
   * broadcast. With `fence` (the first broadcast at a nonce): only while the message is
   * delivering under `fence.lease` (expired or not, as long as nobody claimed it since), whose
   * lease it renews to now + leaseMs in the same write; false: not recorded, do not broadcast.
   * Without `fence` (a replacement, or the same bytes again): only when the slot (chain, signer,
   * nonce) already has an open broadcast for the same message. Recording a hash already in the
   * journal changes nothing and answers true. First of all, in the same write, the signer lease
   * (Broadcast.signerLease): refused, nothing is recorded and the answer is false.
   */
  recordBroadcast(b: Broadcast, fence?: BroadcastFence): boolean | Promise<boolean>;
  /**
   * Removes an open broadcast the node certainly refused (it never existed on chain, so its slot
   * may be used again once it has no other open broadcast). false: no such open broadcast.
   */
  forgetBroadcast(hash: string): boolean | Promise<boolean>;
  /** Settles every open broadcast of `slot`; returns how many. */
  closeNonceSlot(slot: NonceSlot, outcome: NonceSlotOutcome): number | Promise<number>;
  /**
   * Open broadcasts (of slots not settled), oldest first: a message's (`{ messageId }`), or a
   * signer's on a chain (`{ chainId, signer }`).
   */
  openBroadcasts(
    of: { messageId: string } | { chainId: number; signer: string },
  ): JournalEntry[] | Promise<JournalEntry[]>;
  /**
   * One worker per key (docs/transactions.md#one-worker-per-key): takes the lease of `key` for
   * `holder` (printable text, 1..200 characters) for `leaseMs` when nobody holds it, its lease
   * lapsed (expiresAt <= now) or `holder` holds it already (renewed, same lease). Otherwise it
   * answers who holds it and until when, changing nothing.
   */
  acquireSignerLease(key: SignerKey, holder: string, leaseMs: number): SignerLeaseAnswer | Promise<SignerLeaseAnswer>;
  /**
   * expiresAt = now + leaseMs for the holder of `lease` only; like extend(), also when it lapsed
   * and nobody took it over since. false: another lease holds the signer, or it was released.
   */
  renewSignerLease(key: SignerKey, lease: string, leaseMs: number): boolean | Promise<boolean>;
  /** Ends `lease` now (a clean stop): the next acquirer takes the signer at once. false: not this lease's. */
  releaseSignerLease(key: SignerKey, lease: string): boolean | Promise<boolean>;
  /** Every signer lease, lapsed ones included (the last holder), by chain id then signer. */
  signerLeases(): SignerLease[] | Promise<SignerLease[]>;
  /** What is stuck, for an operator: the records selected, oldest enqueuedAt first (ties in enqueue order). */
  list(opts?: ListOptions): OutboxRecord[] | Promise<OutboxRecord[]>;
  /** requeue() for every failed message selected, oldest first; the ids requeued, in that order. */
  requeueFailed(opts?: RequeueFailedOptions): string[] | Promise<string[]>;
  /**
   * Retention (docs/configuration.md#retention): deletes up to `limit` messages delivered before
   * `before` (oldest enqueued first, with their gas payments and gas book rows) and up to `limit`
   * journal rows closed before it, in one short transaction. Call again while either count is `limit`.
   */
  prune(opts: PruneOptions): Pruned | Promise<Pruned>;
}

/** `T`'s methods answering synchronously (node:sqlite, the in-memory engine). */
export type Synchronous<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Awaited<R> : T[K];
};

/** `T`'s methods answering with promises (PostgreSQL, the SQLite store's worker proxy). */
export type Asynchronous<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K];
};
