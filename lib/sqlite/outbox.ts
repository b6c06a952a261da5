/**
 * The relay outbox (docs/design.md#enqueue, #sqlite, docs/outbox.md#message-lifecycle) on node:sqlite: one row
 * per message id, inserted with ON CONFLICT (id) DO NOTHING so a resubmission stores nothing
 * twice; each batch in one transaction. A batch is first checked by the memory outbox's
 * validateOutboxBatch (ids and tx hashes lower-case, domains and nonce uint32…), so both stores
 * refuse the same batches with the same InvalidArgumentError; the table's CHECK constraints are the second
 * line. Lookups lower-case the id.
 *
 * Consumers: claim() dead-letters, selects and leases inside one BEGIN IMMEDIATE transaction,
 * which holds the database's write lock, so claimers in this process, in other processes or worker
 * threads on the same file are serialised and never take the same message. extend, markDelivered,
 * markFailed and requeue are single conditional UPDATEs naming the lease (atomic on their own).
 * Every method reads the clock when it runs, i.e. inside the worker's transaction, once the write
 * lock is held (lib/sqlite/worker.ts), never at the time the call was sent.
 */
import type { DatabaseSync } from 'node:sqlite';
import type { Clock } from '../clock.ts';
import {
  checkClaim,
  claimedMessage,
  checkExtend,
  checkMarkDelivered,
  checkMarkFailed,
  newLease,
  recordFromRow,
  validateOutboxBatch,
  type Outbox,
  type Synchronous,
  type OutboxRecord,
  type OutboxRow,
} from '../outbox/index.ts';
import { createSqliteGasPayments } from './gas-payments.ts';
import { createSqliteJournal } from './journal.ts';
import { createSqliteListing } from './outbox-listing.ts';
import { createSqlitePrune } from './retention.ts';
import { createSqliteSignerLeases } from './signer-leases.ts';
import type { Transaction } from './transaction.ts';

export interface Row extends OutboxRow {
  raw: Uint8Array;
}

export const COLUMNS =
  'id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, status, attempts, lease_expiries, last_error, ' +
  'delivered_at, destination_tx_hash, claimed_until, retry_at, failures, pending_since, polls, required_gas, gas_spent, gas_spent_wei';

/**
 * Rows claim() may take at `now` (the first term lets the planner use the outbox_open index); the
 * rows to dead-letter are gone by then. The dead-letter text is deadLetterError's (lib/outbox/types.ts).
 */
const CLAIMABLE =
  "status IN ('queued', 'delivering') AND " +
  "((status = 'queued' AND (retry_at IS NULL OR retry_at <= :now)) OR (status = 'delivering' AND claimed_until <= :now))";
const DEAD_LETTER =
  "UPDATE outbox SET status = 'failed', lease_expiries = lease_expiries + 1, claimed_until = NULL, lease = NULL, " +
  "last_error = 'dead letter: its lease expired ' || (lease_expiries + 1) || ' times with no outcome recorded (maxLeaseExpiries ' || CAST(:max AS INTEGER) || ')' " +
  "WHERE status IN ('queued', 'delivering') AND status = 'delivering' AND claimed_until <= :now AND lease_expiries >= :max";

function toRecord(row: Row): OutboxRecord {
  return recordFromRow(row, row.raw);
}

/** The Outbox with its synchronous return types (node:sqlite is synchronous). */
export type SqliteOutbox = Synchronous<Outbox>;

export function createSqliteOutbox(db: DatabaseSync, transaction: Transaction, clock: Clock): SqliteOutbox {
  // ON CONFLICT (id) DO NOTHING, not INSERT OR IGNORE: OR IGNORE also skips rows that fail a
  // CHECK or NOT NULL constraint, silently dropping a bad message from an acknowledged batch.
  const insert = db.prepare(
    'INSERT INTO outbox (id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
  );
  const payments = createSqliteGasPayments(db, transaction);
  const countOpen = db.prepare("SELECT count(*) AS n FROM outbox WHERE status IN ('queued', 'delivering')");
  const selectOne = db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE id = ?`);
  const selectTx = db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE origin_chain = ? AND tx_hash = ? ORDER BY rowid`);
  const selectClaimable = db.prepare(
    `SELECT ${COLUMNS} FROM outbox WHERE ${CLAIMABLE} ORDER BY enqueued_at, rowid LIMIT :limit`,
  );
  const deadLetter = db.prepare(DEAD_LETTER);
  // An expired lease taken over counts in lease_expiries (the old value of status in SET).
  const lease = db.prepare(
    "UPDATE outbox SET status = 'delivering', claimed_until = ?, lease = ?, retry_at = NULL, attempts = attempts + 1, " +
      "lease_expiries = lease_expiries + (status = 'delivering') WHERE id = ?",
  );
  // Only the holder of :lease, expired or not, as long as nobody claimed the message since.
  const renew = db.prepare(
    "UPDATE outbox SET claimed_until = :until WHERE id = :id AND status = 'delivering' AND lease = :lease",
  );
  const deliver = db.prepare(
    "UPDATE outbox SET status = 'delivered', delivered_at = :now, destination_tx_hash = :hash, " +
      'claimed_until = NULL, lease = NULL, retry_at = NULL ' +
      "WHERE id = :id AND status = 'delivering' AND lease = :lease",
  );
  // :keep 1: the attempt-state columns stay as they are (a release).
  const STATE =
    'failures = CASE WHEN :keep THEN failures ELSE :failures END, ' +
    'pending_since = CASE WHEN :keep THEN pending_since ELSE :since END, ' +
    'polls = CASE WHEN :keep THEN polls ELSE :polls END';
  const retry = db.prepare(
    `UPDATE outbox SET status = 'queued', last_error = :error, retry_at = :retryAt, claimed_until = NULL, lease = NULL, ${STATE} ` +
      "WHERE id = :id AND status = 'delivering' AND lease = :lease",
  );
  const giveUp = db.prepare(
    `UPDATE outbox SET status = 'failed', last_error = :error, claimed_until = NULL, lease = NULL, ${STATE} ` +
      "WHERE id = :id AND status = 'delivering' AND lease = :lease",
  );
  const signers = createSqliteSignerLeases(db, transaction, clock);
  const { settleDelivered, ...journal } = createSqliteJournal(db, transaction, clock, signers.allows);
  const redrive = db.prepare(
    "UPDATE outbox SET status = 'queued', retry_at = NULL, lease_expiries = 0, failures = 0, pending_since = NULL, polls = 0 " +
      "WHERE id = ? AND status = 'failed'",
  );

  return {
    enqueue(batch) {
      validateOutboxBatch(batch);
      if (batch.length === 0) return 0;
      return transaction(() => {
        let stored = 0;
        // The payments first: migration 10's trigger then finds no row to give a version to (the
        // insert gives the messages theirs).
        for (const m of batch) payments.add(m.gasPayments ?? []);
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
    claim(limit, leaseMs, opts) {
      const maxLeaseExpiries = checkClaim(limit, leaseMs, opts);
      if (limit === 0) return [];
      return transaction(() => {
        // Read the time inside the lock: a claimer that waited for it must not judge leases by
        // the time it started waiting, nor get a lease shortened by the wait.
        const now = clock.now();
        if (maxLeaseExpiries !== null) deadLetter.run({ now, max: maxLeaseExpiries });
        const rows = selectClaimable.all({ now, limit }) as unknown as Row[];
        return rows.map((row) => {
          const token = newLease();
          const claimedUntil = now + leaseMs;
          lease.run(claimedUntil, token, row.id);
          const record = {
            ...toRecord(row),
            status: 'delivering' as const,
            attempts: row.attempts + 1,
            leaseExpiries: row.lease_expiries + (row.status === 'delivering' ? 1 : 0),
            claimedUntil,
            retryAt: null,
          };
          return claimedMessage(record, token, maxLeaseExpiries);
        });
      });
    },
    extend(id, held, leaseMs) {
      const token = checkExtend(held, leaseMs);
      const { changes } = renew.run({ id: String(id).toLowerCase(), lease: token, until: clock.now() + leaseMs });
      return Number(changes) === 1;
    },
    markDelivered(id, opts) {
      const { destinationTxHash, lease: held } = checkMarkDelivered(opts);
      const message = String(id).toLowerCase();
      return transaction(() => {
        const now = clock.now();
        const { changes } = deliver.run({ id: message, now, hash: destinationTxHash, lease: held });
        if (Number(changes) !== 1) return false;
        settleDelivered(message, destinationTxHash, now);
        return true;
      });
    },
    markFailed(id, opts) {
      const { error, retryAt, lease: held, state } = checkMarkFailed(opts);
      const params = {
        id: String(id).toLowerCase(),
        error,
        lease: held,
        keep: state === null ? 1 : 0,
        failures: state?.failures ?? 0,
        since: state?.pendingSince ?? null,
        polls: state?.polls ?? 0,
      };
      const { changes } = retryAt === null ? giveUp.run(params) : retry.run({ ...params, retryAt });
      return Number(changes) === 1;
    },
    requeue(id) {
      return Number(redrive.run(String(id).toLowerCase()).changes) === 1;
    },
    addGasPayments: payments.addGasPayments,
    gasPayments: payments.gasPayments,
    addGasSpent: payments.addGasSpent,
    setRequiredGas: payments.setRequiredGas,
    ...journal,
    acquireSignerLease: signers.acquireSignerLease,
    renewSignerLease: signers.renewSignerLease,
    releaseSignerLease: signers.releaseSignerLease,
    signerLeases: signers.signerLeases,
    ...createSqliteListing({ db, transaction, columns: COLUMNS, toRecord, redrive }),
    prune: createSqlitePrune(db, transaction),
  };
}
