/**
 * The in-memory outbox's change versions and feed (docs/outbox.md#change-feed): one counter for
 * the whole outbox, as the SQLite store keeps, advanced only for what a status shows.
 */
import { createChangeHub, txKey, type ChangeHub } from './change-feed.ts';
import type { GasPayment } from '../gas/payment.ts';
import type { OutboxRecord, Synchronous } from './types.ts';
import type { VersionedReads } from './versioned.ts';

/** A row as the versioning sees it: its record, its version and what that version was given for. */
export interface VersionedRow extends OutboxRecord {
  version: number;
  shown: string;
}

const shown = (row: VersionedRow) => JSON.stringify([row.status, row.attempts, row.lastError, row.destinationTxHash]);

export function createVersioning(): {
  changes: ChangeHub;
  /**
   * Gives the rows whose status, attempts, last_error or destination_tx_hash changed (or new ones)
   * the next versions, and tells the feed; `all`: every row of `touched` (its gas_payment changed).
   */
  changed(touched: readonly VersionedRow[], inserted?: boolean, all?: boolean): void;
} {
  const changes = createChangeHub();
  let version = 0;
  return {
    changes,
    changed(touched, inserted = false, all = false) {
      const moved = all ? touched : touched.filter((row) => row.shown !== shown(row));
      if (moved.length === 0) return;
      for (const row of moved) {
        row.version = ++version;
        row.shown = shown(row);
      }
      changes.publish({
        ids: moved.map((row) => row.id),
        txs: inserted ? [...new Set(moved.map((row) => txKey(row.originChain, row.txHash)))] : [],
      });
    },
  };
}

/** The versioned reads over the memory outbox's rows (with their payments), and the rows of one transaction. */
export function versionedReads<R extends VersionedRow>(
  rows: ReadonlyMap<string, R>,
  toRecord: (row: R) => OutboxRecord,
  paymentsOf: (ids: string[]) => GasPayment[],
): Synchronous<VersionedReads> & { ofTx(originChain: string, txHash: string): R[] } {
  const toVersioned = (row: R) => ({ ...toRecord(row), version: row.version, gasPayments: paymentsOf([row.id]) });
  function ofTx(originChain: string, txHash: string): R[] {
    const hash = txHash.toLowerCase();
    const found: R[] = [];
    for (const row of rows.values()) if (row.originChain === originChain && row.txHash === hash) found.push(row);
    return found;
  }
  return {
    ofTx,
    getVersioned(id) {
      const row = rows.get(id.toLowerCase());
      return row && toVersioned(row);
    },
    byTxVersioned: (originChain, txHash) => ofTx(originChain, txHash).map(toVersioned),
  };
}
