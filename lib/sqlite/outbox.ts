/**
 * The relay outbox (DESIGN.md §3, §7, §11) on node:sqlite: one row per message id, inserted with
 * ON CONFLICT (id) DO NOTHING so a resubmission stores nothing twice; each batch in one
 * transaction. A batch is first checked by the memory outbox's validateOutboxBatch (ids and tx
 * hashes lower-case, domains and nonce uint32…), so both stores refuse the same batches with the
 * same TypeError; the table's CHECK constraints are the second line. Lookups lower-case the id.
 *
 * Consumers: claim() selects and leases inside one BEGIN IMMEDIATE transaction, which holds the
 * database's write lock, so claimers in this process, in other processes or worker threads on the
 * same file are serialised and never take the same message. markDelivered/markFailed are single
 * conditional UPDATEs (atomic on their own). Times come from the injected clock.
 */
import type { DatabaseSync } from 'node:sqlite';
import type { Clock } from '../clock.ts';
import {
  checkClaim,
  checkMarkDelivered,
  checkMarkFailed,
  newLease,
  recordFromRow,
  validateOutboxBatch,
  type ClaimedMessage,
  type MarkDeliveredOptions,
  type MarkFailedOptions,
  type Outbox,
  type OutboxMessage,
  type OutboxRecord,
  type OutboxRow,
} from '../outbox.ts';
import type { Transaction } from './transaction.ts';

interface Row extends OutboxRow {
  raw: Uint8Array;
}

const COLUMNS =
  'id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, status, attempts, last_error, ' +
  'delivered_at, destination_tx_hash, claimed_until, retry_at';

/** Rows claim() may take at `now` (the first term lets the planner use the outbox_open index). */
const CLAIMABLE =
  "status IN ('queued', 'delivering') AND " +
  "((status = 'queued' AND (retry_at IS NULL OR retry_at <= :now)) OR (status = 'delivering' AND claimed_until <= :now))";

function toRecord(row: Row): OutboxRecord {
  return recordFromRow(row, row.raw);
}

/** The Outbox with its synchronous return types spelled out (node:sqlite is synchronous). */
export interface SqliteOutbox extends Outbox {
  enqueue(batch: readonly OutboxMessage[]): number;
  get(id: string): OutboxRecord | undefined;
  byTx(originChain: string, txHash: string): OutboxRecord[];
  depth(): number;
  claim(limit: number, leaseMs: number): ClaimedMessage[];
  markDelivered(id: string, opts: MarkDeliveredOptions): boolean;
  markFailed(id: string, opts: MarkFailedOptions): boolean;
}

export function createSqliteOutbox(db: DatabaseSync, transaction: Transaction, clock: Clock): SqliteOutbox {
  // ON CONFLICT (id) DO NOTHING, not INSERT OR IGNORE: OR IGNORE also skips rows that fail a
  // CHECK or NOT NULL constraint, silently dropping a bad message from an acknowledged batch.
  const insert = db.prepare(
    'INSERT INTO outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
  );
  const countOpen = db.prepare("SELECT count(*) AS n FROM outbox WHERE status IN ('queued', 'delivering')");
  const selectOne = db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE id = ?`);
  const selectTx = db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE origin_chain = ? AND tx_hash = ? ORDER BY rowid`);
  const selectClaimable = db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE ${CLAIMABLE} ORDER BY enqueued_at, rowid LIMIT :limit`);
  const lease = db.prepare(
    "UPDATE outbox SET status = 'delivering', claimed_until = ?, lease = ?, retry_at = NULL, attempts = attempts + 1 WHERE id = ?",
  );
  // :lease NULL means "whoever holds it"; otherwise only the holder of that lease.
  const deliver = db.prepare(
    "UPDATE outbox SET status = 'delivered', delivered_at = :now, destination_tx_hash = :hash, " +
      'claimed_until = NULL, lease = NULL, retry_at = NULL ' +
      "WHERE id = :id AND status IN ('queued', 'delivering') AND (:lease IS NULL OR (status = 'delivering' AND lease = :lease))",
  );
  const requeue = db.prepare(
    "UPDATE outbox SET status = 'queued', last_error = :error, retry_at = :retryAt, claimed_until = NULL, lease = NULL " +
      "WHERE id = :id AND status = 'delivering' AND (:lease IS NULL OR lease = :lease)",
  );
  const giveUp = db.prepare(
    "UPDATE outbox SET status = 'failed', last_error = :error, claimed_until = NULL, lease = NULL " +
      "WHERE id = :id AND status = 'delivering' AND (:lease IS NULL OR lease = :lease)",
  );

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
    get(id) {
      const row = selectOne.get(id.toLowerCase()) as Row | undefined;
      return row === undefined ? undefined : toRecord(row);
    },
    byTx(originChain, txHash) {
      return (selectTx.all(originChain, txHash.toLowerCase()) as unknown as Row[]).map(toRecord);
    },
    depth() {
      return Number((countOpen.get() as { n: number }).n);
    },
    claim(limit, leaseMs) {
      checkClaim(limit, leaseMs);
      if (limit === 0) return [];
      return transaction(() => {
        // Read the time inside the lock: a claimer that waited for it must not judge leases by
        // the time it started waiting.
        const now = clock.now();
        const rows = selectClaimable.all({ now, limit }) as unknown as Row[];
        return rows.map((row) => {
          const token = newLease();
          const claimedUntil = now + leaseMs;
          lease.run(claimedUntil, token, row.id);
          return {
            ...toRecord(row),
            status: 'delivering',
            attempts: row.attempts + 1,
            claimedUntil,
            retryAt: null,
            lease: token,
          };
        });
      });
    },
    markDelivered(id, opts) {
      const { destinationTxHash, lease: held } = checkMarkDelivered(opts);
      const { changes } = deliver.run({ id: id.toLowerCase(), now: clock.now(), hash: destinationTxHash, lease: held });
      return Number(changes) === 1;
    },
    markFailed(id, opts) {
      const { error, retryAt, lease: held } = checkMarkFailed(opts);
      const params = { id: id.toLowerCase(), error, lease: held };
      const { changes } = retryAt === null ? giveUp.run(params) : requeue.run({ ...params, retryAt });
      return Number(changes) === 1;
    },
  };
}
