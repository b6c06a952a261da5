/**
 * Retention on SQLite (docs/configuration.md#retention): prune() deletes one batch of delivered
 * messages (with their gas payments and gas book rows) and of closed journal rows, oldest first,
 * in one transaction. The rows are found through indexes (outbox_status, outbox_journal_closed:
 * schema migration 12), so a batch costs the same whatever the table's size, and the write lock is
 * held for one batch only: other writers run between two batches.
 */
import type { DatabaseSync } from 'node:sqlite';
import { checkPrune, type PruneOptions, type Pruned } from '../outbox/index.ts';
import type { Transaction } from './transaction.ts';

/**
 * The statements, for their query plans (test/unit/outbox/indexes.test.ts): the delivered
 * messages to prune (through outbox_status, oldest enqueued first: a message is enqueued before it
 * is delivered), and the journal rows.
 */
export const PRUNE_SQL = {
  messages:
    "SELECT id FROM outbox WHERE status = 'delivered' AND enqueued_at < :before AND delivered_at < :before " +
    'ORDER BY enqueued_at LIMIT :limit',
  journal:
    'DELETE FROM outbox_journal WHERE rowid IN (SELECT rowid FROM outbox_journal ' +
    'WHERE closed_at IS NOT NULL AND closed_at < :before ORDER BY closed_at LIMIT :limit)',
};

export function createSqlitePrune(db: DatabaseSync, transaction: Transaction): (opts: PruneOptions) => Pruned {
  const pick = db.prepare(PRUNE_SQL.messages);
  const deletePayments = db.prepare('DELETE FROM gas_payments WHERE message_id = ?');
  const deleteSpent = db.prepare('DELETE FROM gas_spent WHERE message_id = ?');
  const deleteMessage = db.prepare("DELETE FROM outbox WHERE id = ? AND status = 'delivered'");
  const deleteJournal = db.prepare(PRUNE_SQL.journal);
  return (opts) => {
    const { before, limit } = checkPrune(opts);
    return transaction(() => {
      let messages = 0;
      for (const { id } of pick.all({ before, limit }) as { id: string }[]) {
        deletePayments.run(id);
        deleteSpent.run(id);
        messages += Number(deleteMessage.run(id).changes);
      }
      return { messages, journal: Number(deleteJournal.run({ before, limit }).changes) };
    });
  };
}
