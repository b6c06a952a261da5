/**
 * The outbox's status-push side (docs/design.md#change-feed): records with their change version,
 * the versioned reads, and an outbox that can be followed.
 */
import type { ChangeFeed } from '../change-feed.ts';
import type { OutboxRecord } from './types.ts';

/**
 * A record with its change version, for status push (docs/design.md#change-feed): the version
 * grows with every change of the message's status, attempts, last_error or destination_tx_hash
 * (an engine may count per message or share one counter among all), and with nothing else.
 */
export interface VersionedRecord extends OutboxRecord {
  version: number;
}

/** What status push reads: the versioned lookups. */
export interface VersionedReads {
  /** get() with the version. */
  getVersioned(id: string): VersionedRecord | undefined | Promise<VersionedRecord | undefined>;
  /** byTx() with the versions. */
  byTxVersioned(originChain: string, txHash: string): VersionedRecord[] | Promise<VersionedRecord[]>;
}

/** An outbox that can be followed: its change feed (lib/change-feed.ts) and versioned lookups. */
export interface OutboxWatch extends VersionedReads {
  readonly changes: ChangeFeed;
}
