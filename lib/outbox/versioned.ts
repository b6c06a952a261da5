/**
 * The outbox's status-push side (docs/outbox.md#change-feed): records with their change version,
 * the versioned reads, and an outbox that can be followed.
 */
import type { ChangeFeed } from './change-feed.ts';
import type { GasPayment } from '../gas/payment.ts';
import type { OutboxRecord } from './types.ts';

/**
 * A record with its change version, for status push (docs/outbox.md#change-feed): the version
 * grows with every change of what the message's status shows (its status, attempts, last_error,
 * destination_tx_hash, and its gas_payment: a new payment for its destination, the required gas,
 * the gas spent; an engine may count per message or share one counter among all), and with
 * nothing else.
 */
export interface VersionedRecord extends OutboxRecord {
  version: number;
  /**
   * Every stored gas payment of the message (what Outbox.gasPayments answers for it), read in the
   * same statement as the record, so a status event costs one read (docs/api.md#status-events).
   * Absent from an outbox that does not read them with the record.
   */
  gasPayments?: readonly GasPayment[];
}

/** What status push reads: the versioned lookups. */
export interface VersionedReads {
  /** get() with the version. */
  getVersioned(id: string): VersionedRecord | undefined | Promise<VersionedRecord | undefined>;
  /** byTx() with the versions. */
  byTxVersioned(originChain: string, txHash: string): VersionedRecord[] | Promise<VersionedRecord[]>;
}

/** An outbox that can be followed: its change feed (lib/outbox/change-feed.ts) and versioned lookups. */
export interface OutboxWatch extends VersionedReads {
  readonly changes: ChangeFeed;
}
