/**
 * The outbox's versioned reads on node:sqlite (docs/outbox.md#change-feed): get and byTx with
 * each row's change version, which schema migrations 7 and 10's triggers keep, and the message's
 * gas payments read in the same statement (what a status event shows: docs/api.md#status-events).
 * A table of its own for the store's worker, beside the outbox's.
 */
import type { DatabaseSync } from 'node:sqlite';
import { gasPaymentsFromJson } from '../gas/payment.ts';
import { recordFromRow, type Synchronous, type VersionedReads, type VersionedRecord } from '../outbox/index.ts';
import { COLUMNS, type Row } from './outbox.ts';

/** The versioned reads with their synchronous return types. */
export type SqliteVersions = Synchronous<VersionedReads>;

type VersionedRow = Row & { version: number; payments: string };

const toVersioned = (row: VersionedRow): VersionedRecord => ({
  ...recordFromRow(row, row.raw),
  version: row.version,
  gasPayments: gasPaymentsFromJson(row.payments),
});

/** The message's payments as a JSON array of gas_payments rows (GasPaymentRow), through their index. */
const PAYMENTS = `(SELECT json_group_array(json_object('tx_hash', p.tx_hash, 'log_index', p.log_index,
  'message_id', p.message_id, 'destination', p.destination, 'gas_amount', p.gas_amount, 'payment', p.payment))
  FROM gas_payments p WHERE p.message_id = outbox.id) AS payments`;

export function createSqliteVersions(db: DatabaseSync): SqliteVersions {
  const one = db.prepare(`SELECT ${COLUMNS}, version, ${PAYMENTS} FROM outbox WHERE id = ?`);
  const ofTx = db.prepare(
    `SELECT ${COLUMNS}, version, ${PAYMENTS} FROM outbox WHERE origin_chain = ? AND tx_hash = ? ORDER BY rowid`,
  );
  return {
    getVersioned(id) {
      const row = one.get(String(id).toLowerCase()) as VersionedRow | undefined;
      return row === undefined ? undefined : toVersioned(row);
    },
    byTxVersioned(originChain, txHash) {
      return (ofTx.all(originChain, String(txHash).toLowerCase()) as unknown as VersionedRow[]).map(toVersioned);
    },
  };
}
