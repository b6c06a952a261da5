/**
 * The relay outbox (DESIGN.md §3, §7) on node:sqlite: one row per message id, inserted with
 * ON CONFLICT (id) DO NOTHING so a resubmission stores nothing twice; each batch in one
 * transaction. A batch is first checked by the memory outbox's validateOutboxBatch (ids and tx
 * hashes lower-case, domains and nonce uint32…), so both stores refuse the same batches with the
 * same TypeError; the table's CHECK constraints are the second line. Lookups lower-case the id.
 */
import type { DatabaseSync } from 'node:sqlite';
import type { Clock } from '../clock.ts';
import { validateOutboxBatch, type Outbox, type OutboxMessage, type PendingMessage } from '../outbox.ts';
import type { Transaction } from './transaction.ts';

interface Row {
  id: string;
  origin_chain: string;
  tx_hash: string;
  origin: number;
  destination: number;
  nonce: number;
  raw: Uint8Array;
  enqueued_at: number;
  delivered_at: number | null;
}

const COLUMNS = 'id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, delivered_at';

function toMessage(row: Row): PendingMessage {
  return {
    id: row.id,
    originChain: row.origin_chain,
    txHash: row.tx_hash,
    origin: row.origin,
    destination: row.destination,
    nonce: row.nonce,
    raw: row.raw,
    enqueuedAt: row.enqueued_at,
    deliveredAt: row.delivered_at,
  };
}

function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return -1; // SQLite: a negative LIMIT means no limit
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`pending(limit): expected a non-negative integer, got ${limit}`);
  return limit;
}

/** The Outbox with its synchronous return types spelled out (node:sqlite is synchronous). */
export interface SqliteOutbox extends Outbox {
  enqueue(batch: readonly OutboxMessage[]): number;
  pending(limit?: number): PendingMessage[];
  markDelivered(ids: readonly string[], at?: number): number;
  depth(): number;
  get(id: string): PendingMessage | undefined;
}

export function createSqliteOutbox(db: DatabaseSync, transaction: Transaction, clock: Clock): SqliteOutbox {
  // ON CONFLICT (id) DO NOTHING, not INSERT OR IGNORE: OR IGNORE also skips rows that fail a
  // CHECK or NOT NULL constraint, silently dropping a bad message from an acknowledged batch.
  const insert = db.prepare(
    'INSERT INTO outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
  );
  const selectPending = db.prepare(
    `SELECT ${COLUMNS} FROM outbox WHERE delivered_at IS NULL ORDER BY enqueued_at, rowid LIMIT ?`,
  );
  const deliver = db.prepare('UPDATE outbox SET delivered_at = ? WHERE id = ? AND delivered_at IS NULL');
  const countPending = db.prepare('SELECT count(*) AS n FROM outbox WHERE delivered_at IS NULL');
  const selectOne = db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE id = ?`);

  return {
    enqueue(batch) {
      validateOutboxBatch(batch);
      if (batch.length === 0) return 0;
      return transaction(() => {
        let stored = 0;
        for (const m of batch) {
          const { changes } = insert.run(
            m.id,
            m.originChain,
            m.txHash,
            m.origin,
            m.destination,
            m.nonce,
            m.raw,
            m.enqueuedAt,
          );
          stored += Number(changes);
        }
        return stored;
      });
    },
    pending(limit) {
      return (selectPending.all(checkLimit(limit)) as unknown as Row[]).map(toMessage);
    },
    markDelivered(ids, at = clock.now()) {
      if (ids.length === 0) return 0;
      return transaction(() => {
        let changed = 0;
        for (const id of ids) changed += Number(deliver.run(at, id.toLowerCase()).changes);
        return changed;
      });
    },
    depth() {
      return Number((countPending.get() as { n: number }).n);
    },
    get(id) {
      const row = selectOne.get(id.toLowerCase()) as Row | undefined;
      return row === undefined ? undefined : toMessage(row);
    },
  };
}
