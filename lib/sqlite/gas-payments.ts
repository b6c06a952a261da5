/**
 * Gas payments on node:sqlite (docs/gas.md#gas-payment-enforcement): the `gas_payments` table
 * beside the outbox, one row per GasPayment log (tx hash, log index), amounts as decimal text
 * (uint256). `add` runs inside the outbox's enqueue transaction, so a batch's payments commit with
 * its messages; top-ups and reads go through the two Outbox methods. The gas book
 * (docs/gas.md#gas-already-spent): a spend is a `gas_spent` row (by tx hash) and its amounts
 * added to the message's row in the same transaction, summed here as bigints (SQLite's integers
 * stop at 2^63).
 */
import type { DatabaseSync } from 'node:sqlite';
import { gasPaymentFromRow, type GasPayment, type GasPaymentRow } from '../gas/payment.ts';
import { checkGasPayments, checkGasSpent, checkRequiredGas, type Outbox, type Synchronous } from '../outbox/index.ts';
import type { Transaction } from './transaction.ts';

export function createSqliteGasPayments(
  db: DatabaseSync,
  transaction: Transaction,
): Pick<Synchronous<Outbox>, 'addGasPayments' | 'gasPayments' | 'addGasSpent' | 'setRequiredGas'> & {
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
  // A spend of a message the outbox holds, each transaction once.
  const insertSpend = db.prepare(
    'INSERT INTO gas_spent (tx_hash, message_id, gas_used, cost) SELECT :hash, :id, :gas, :cost ' +
      'WHERE EXISTS (SELECT 1 FROM outbox WHERE id = :id) ON CONFLICT (tx_hash) DO NOTHING',
  );
  const spentOf = db.prepare('SELECT gas_spent, gas_spent_wei FROM outbox WHERE id = ?');
  const setSpent = db.prepare('UPDATE outbox SET gas_spent = :gas, gas_spent_wei = :wei WHERE id = :id');
  const setRequired = db.prepare('UPDATE outbox SET required_gas = :gas WHERE id = :id AND required_gas IS NOT :gas');
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
    addGasSpent(spends) {
      checkGasSpent(spends);
      if (spends.length === 0) return 0;
      return transaction(() => {
        let added = 0;
        for (const p of spends) {
          const gas = String(p.gasUsed);
          const { changes } = insertSpend.run({ hash: p.txHash, id: p.messageId, gas, cost: String(p.cost) });
          if (Number(changes) === 0) continue;
          const row = spentOf.get(p.messageId) as { gas_spent: string; gas_spent_wei: string };
          setSpent.run({
            id: p.messageId,
            gas: String(BigInt(row.gas_spent) + p.gasUsed),
            wei: String(BigInt(row.gas_spent_wei) + p.cost),
          });
          added++;
        }
        return added;
      });
    },
    setRequiredGas(id, gas) {
      const key = checkRequiredGas(id, gas);
      return Number(setRequired.run({ id: key, gas: String(gas) }).changes) === 1;
    },
  };
}
