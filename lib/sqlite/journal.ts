/**
 * The transaction journal of the outbox on node:sqlite (docs/transactions.md#the-transaction-journal):
 * `outbox_journal` (migration 6), one row per signed transaction, recorded before its broadcast.
 * The first broadcast of a nonce is recorded in the transaction that checks and renews the
 * message's lease, a replacement only beside an open broadcast of the same slot, and either only
 * under the signer's lease (lib/sqlite/signer-leases.ts, docs/transactions.md#one-worker-per-key).
 */
import type { DatabaseSync } from 'node:sqlite';
import type { Clock } from '../clock.ts';
import {
  checkBroadcast,
  checkJournalFilter,
  checkNonceSlot,
  checkNonceSlotOutcome,
  type Broadcast,
  type JournalEntry,
  type Outbox,
  type Synchronous,
} from '../outbox/index.ts';
import type { Transaction } from './transaction.ts';

const JOURNAL_COLUMNS = 'message_id AS messageId, chain_id AS chainId, signer, nonce, hash, raw, sent_at AS sentAt';

type Journal = Pick<Synchronous<Outbox>, 'recordBroadcast' | 'forgetBroadcast' | 'closeNonceSlot' | 'openBroadcasts'>;

export function createSqliteJournal(
  db: DatabaseSync,
  transaction: Transaction,
  clock: Clock,
  signerAllows: (b: Broadcast, now: number) => boolean,
): Journal & {
  /** markDelivered's part, inside its transaction: the open slot of message `id` holding `hash` is settled, `hash` mined. */
  settleDelivered(id: string, hash: string, now: number): void;
} {
  const journalHas = db.prepare('SELECT 1 FROM outbox_journal WHERE hash = ?');
  const fenced = db.prepare(
    "UPDATE outbox SET claimed_until = :until WHERE id = :id AND status = 'delivering' AND lease = :lease",
  );
  const nonceSlotOpenFor = db.prepare(
    'SELECT 1 FROM outbox_journal WHERE chain_id = :chainId AND signer = :signer AND nonce = :nonce ' +
      'AND message_id = :messageId AND closed_at IS NULL LIMIT 1',
  );
  const journalInsert = db.prepare(
    'INSERT INTO outbox_journal (hash, message_id, chain_id, signer, nonce, raw, sent_at) ' +
      'VALUES (:hash, :messageId, :chainId, :signer, :nonce, :raw, :now)',
  );
  const journalForget = db.prepare('DELETE FROM outbox_journal WHERE hash = ? AND closed_at IS NULL');
  const journalClose = db.prepare(
    "UPDATE outbox_journal SET closed_at = :now, outcome = CASE WHEN :dropped THEN 'dropped' " +
      "WHEN hash = :hash THEN 'mined' ELSE 'replaced' END " +
      'WHERE chain_id = :chainId AND signer = :signer AND nonce = :nonce AND closed_at IS NULL',
  );
  // The slot holding the delivering transaction, settled with the delivery (markDelivered).
  const settleDelivered = db.prepare(
    "UPDATE outbox_journal SET closed_at = :now, outcome = CASE WHEN hash = :hash THEN 'mined' ELSE 'replaced' END " +
      'WHERE closed_at IS NULL AND (chain_id, signer, nonce) = ' +
      '(SELECT chain_id, signer, nonce FROM outbox_journal WHERE hash = :hash AND message_id = :id AND closed_at IS NULL)',
  );
  const journalOfMessage = db.prepare(
    `SELECT ${JOURNAL_COLUMNS} FROM outbox_journal WHERE message_id = ? AND closed_at IS NULL ORDER BY rowid`,
  );
  const journalOfSigner = db.prepare(
    `SELECT ${JOURNAL_COLUMNS} FROM outbox_journal WHERE chain_id = ? AND signer = ? AND closed_at IS NULL ORDER BY rowid`,
  );
  const journalEntry = (row: JournalEntry): JournalEntry => ({
    messageId: row.messageId,
    chainId: Number(row.chainId),
    signer: row.signer,
    nonce: Number(row.nonce),
    hash: row.hash,
    raw: row.raw,
    sentAt: row.sentAt,
  });

  return {
    settleDelivered(id, hash, now) {
      settleDelivered.run({ id, now, hash: hash.toLowerCase() });
    },
    recordBroadcast(b, f) {
      const { broadcast, fence } = checkBroadcast(b, f);
      return transaction(() => {
        const now = clock.now();
        if (!signerAllows(broadcast, now)) return false;
        if (journalHas.get(broadcast.hash)) return true;
        if (fence) {
          const { changes } = fenced.run({ id: broadcast.messageId, lease: fence.lease, until: now + fence.leaseMs });
          if (Number(changes) !== 1) return false;
        } else if (
          !nonceSlotOpenFor.get({
            chainId: broadcast.chainId,
            signer: broadcast.signer,
            nonce: broadcast.nonce,
            messageId: broadcast.messageId,
          })
        ) {
          return false;
        }
        const { messageId, chainId, signer, nonce, hash, raw } = broadcast;
        journalInsert.run({ messageId, chainId, signer, nonce, hash, raw, now });
        return true;
      });
    },
    forgetBroadcast(hash) {
      return Number(journalForget.run(String(hash).toLowerCase()).changes) === 1;
    },
    closeNonceSlot(s, o) {
      const slot = checkNonceSlot(s, 'closeNonceSlot');
      const outcome = checkNonceSlotOutcome(o);
      const { changes } = journalClose.run({
        ...slot,
        now: clock.now(),
        dropped: outcome.outcome === 'dropped' ? 1 : 0,
        hash: outcome.outcome === 'mined' ? outcome.hash : null,
      });
      return Number(changes);
    },
    openBroadcasts(of) {
      const filter = checkJournalFilter(of);
      const rows =
        'messageId' in filter
          ? journalOfMessage.all(filter.messageId)
          : journalOfSigner.all(filter.chainId, filter.signer);
      return (rows as unknown as JournalEntry[]).map(journalEntry);
    },
  };
}
