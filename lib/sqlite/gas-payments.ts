/**
 * Gas payments on node:sqlite (docs/delivery.md#gas-payment-enforcement): the `gas_payments` table
 * beside the outbox, one row per GasPayment log (tx hash, log index), amounts as decimal text
 * (uint256). `add` runs inside the outbox's enqueue transaction, so a batch's payments commit with
 * its messages; top-ups and reads go through the two Outbox methods.
 */
import type { DatabaseSync } from 'node:sqlite';
import { gasPaymentFromRow, type GasPayment, type GasPaymentRow } from '../gas-payment.ts';
import { checkGasPayments, type Outbox, type Synchronous } from '../outbox/index.ts';
import type { Transaction } from './transaction.ts';

export function createSqliteGasPayments(
  db: DatabaseSync,
  transaction: Transaction,
): Pick<Synchronous<Outbox>, 'addGasPayments' | 'gasPayments'> & {
  /** Stores `payments` in the caller's transaction; returns how many were new. */
  add(payments: readonly GasPayment[]): number;
} {
  const insert = db.prepare(
    'INSERT INTO gas_payments (tx_hash, log_index, message_id, destination, gas_amount, payment) ' +
      'VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tx_hash, log_index) DO NOTHING',
  );
  const select = db.prepare(
    'SELECT tx_hash, log_index, message_id, destination, gas_amount, payment FROM gas_payments ' +
      'WHERE message_id IN (SELECT value FROM json_each(?))',
  );
  const add = (payments: readonly GasPayment[]): number => {
    let added = 0;
    for (const p of payments) {
      const { changes } = insert.run(
        p.txHash,
        p.logIndex,
        p.messageId,
        p.destination,
        String(p.gasAmount),
        String(p.payment),
      );
      added += Number(changes);
    }
    return added;
  };
  return {
    add,
    addGasPayments(payments) {
      checkGasPayments(payments);
      return payments.length === 0 ? 0 : transaction(() => add(payments));
    },
    gasPayments(ids) {
      const rows = select.all(JSON.stringify(ids.map((id) => String(id).toLowerCase()))) as unknown as GasPaymentRow[];
      return rows.map(gasPaymentFromRow);
    },
  };
}
