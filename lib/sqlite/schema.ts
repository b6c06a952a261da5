/**
 * The store's schema, versioned through `PRAGMA user_version`: migration N (1-based) takes a
 * database from version N-1 to N. Append new migrations; never edit a released one.
 *
 * Tables are STRICT (a float leaf index or a text nonce is refused, not coerced) and carry CHECK
 * constraints mirroring the API's validation, so a caller that skipped validation cannot store
 * a row the API would refuse.
 */
import type { DatabaseSync } from 'node:sqlite';
import { SchemaVersionError } from '../errors/classes.ts';
import { MAX_DESTINATION_TX_HASH_LENGTH, MAX_ERROR_LENGTH, MAX_RAW_TRANSACTION_LENGTH } from '../outbox/index.ts';
import { createTransaction, type Transaction } from './transaction.ts';

// unhex() is NULL unless every character is a hex digit; lower() then refuses A-F. A GLOB with a
// negated class ('*[^0-9a-f]*') says the same but costs several times as much, as much as the insert itself.
const HEX_ID = (column: string) =>
  `length(${column}) = 66 AND substr(${column}, 1, 2) = '0x' AND unhex(substr(${column}, 3)) IS NOT NULL AND lower(${column}) = ${column}`;
const UINT32 = (column: string) => `${column} BETWEEN 0 AND 4294967295`;
/** A uint256 as decimal text: 1 to 78 digits, no sign, no leading zero. */
const DECIMAL = (column: string) =>
  `length(${column}) BETWEEN 1 AND 78 AND ${column} NOT GLOB '*[^0-9]*' AND (${column} = '0' OR ${column} NOT GLOB '0*')`;

export const MIGRATIONS: readonly string[] = [
  // 1: merkle tree insertions (docs/design.md#merkle-tree-insertions). Key (chain, leaf_index): a
  // repeated key replaces the row. WITHOUT ROWID: the primary key is the only access path
  // (listing a leaf range).
  `CREATE TABLE merkle_insertions (
     chain INTEGER NOT NULL CHECK (${UINT32('chain')}),
     leaf_index INTEGER NOT NULL CHECK (${UINT32('leaf_index')}),
     insertion_block_number INTEGER NOT NULL CHECK (insertion_block_number BETWEEN 0 AND 9007199254740991),
     message_id TEXT NOT NULL CHECK (${HEX_ID('message_id')}),
     PRIMARY KEY (chain, leaf_index)
   ) STRICT, WITHOUT ROWID;`,

  // 2: relay outbox (docs/design.md#storage): one row per message id. The rowid records arrival
  // order, which breaks ties between messages enqueued in the same millisecond (one batch).
  // Times are REAL milliseconds: the system clock has sub-millisecond precision.
  `CREATE TABLE outbox (
     id TEXT PRIMARY KEY NOT NULL CHECK (${HEX_ID('id')}),
     origin_chain TEXT NOT NULL CHECK (length(origin_chain) BETWEEN 1 AND 128),
     tx_hash TEXT NOT NULL CHECK (${HEX_ID('tx_hash')}),
     origin INTEGER NOT NULL CHECK (${UINT32('origin')}),
     destination INTEGER NOT NULL CHECK (${UINT32('destination')}),
     nonce INTEGER NOT NULL CHECK (${UINT32('nonce')}),
     raw BLOB NOT NULL,
     enqueued_at REAL NOT NULL,
     delivered_at REAL
   ) STRICT;
   CREATE INDEX outbox_pending ON outbox (enqueued_at) WHERE delivered_at IS NULL;`,

  // 3: message lifecycle (docs/outbox.md#message-lifecycle). The table is rebuilt, not altered,
  // because ALTER TABLE cannot add the table CHECKs tying status to its columns. Rows keep their
  // rowid (arrival order) and become 'delivered' or 'queued' as their delivered_at says. Open
  // rows (queued, delivering) are indexed by age for claim() and depth(); byTx reads the (chain,
  // tx) index.
  `CREATE TABLE outbox_v3 (
     id TEXT PRIMARY KEY NOT NULL CHECK (${HEX_ID('id')}),
     origin_chain TEXT NOT NULL CHECK (length(origin_chain) BETWEEN 1 AND 128),
     tx_hash TEXT NOT NULL CHECK (${HEX_ID('tx_hash')}),
     origin INTEGER NOT NULL CHECK (${UINT32('origin')}),
     destination INTEGER NOT NULL CHECK (${UINT32('destination')}),
     nonce INTEGER NOT NULL CHECK (${UINT32('nonce')}),
     raw BLOB NOT NULL,
     enqueued_at REAL NOT NULL,
     status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'delivering', 'delivered', 'failed')),
     attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
     last_error TEXT CHECK (length(last_error) <= ${MAX_ERROR_LENGTH}),
     delivered_at REAL,
     destination_tx_hash TEXT CHECK (length(destination_tx_hash) BETWEEN 1 AND ${MAX_DESTINATION_TX_HASH_LENGTH}),
     claimed_until REAL,
     retry_at REAL,
     lease TEXT,
     CHECK ((status = 'delivered') = (delivered_at IS NOT NULL)),
     CHECK ((status = 'delivering') = (claimed_until IS NOT NULL AND lease IS NOT NULL)),
     CHECK (status = 'delivering' OR (claimed_until IS NULL AND lease IS NULL)),
     CHECK (retry_at IS NULL OR status = 'queued'),
     CHECK (destination_tx_hash IS NULL OR status = 'delivered')
   ) STRICT;
   INSERT INTO outbox_v3 (rowid, id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at, status, delivered_at)
     SELECT rowid, id, origin_chain, tx_hash, origin, destination, nonce, raw, enqueued_at,
            CASE WHEN delivered_at IS NULL THEN 'queued' ELSE 'delivered' END, delivered_at
     FROM outbox ORDER BY rowid;
   DROP TABLE outbox;
   ALTER TABLE outbox_v3 RENAME TO outbox;
   CREATE INDEX outbox_open ON outbox (enqueued_at) WHERE status IN ('queued', 'delivering');
   CREATE INDEX outbox_tx ON outbox (origin_chain, tx_hash);`,

  // 4: merkle message ids as 32-byte BLOBs instead of '0x' + 64 hex digits. A STRICT BLOB of
  // length 32 is a message id by construction, so the per-row hex CHECK (unhex() and lower() on
  // every insert, a third of the insert's cost) goes, and each row is 34 bytes smaller. The
  // store converts at its edge (lib/sqlite/merkle.ts); the API's records are unchanged.
  `CREATE TABLE merkle_insertions_v4 (
     chain INTEGER NOT NULL CHECK (${UINT32('chain')}),
     leaf_index INTEGER NOT NULL CHECK (${UINT32('leaf_index')}),
     insertion_block_number INTEGER NOT NULL CHECK (insertion_block_number BETWEEN 0 AND 9007199254740991),
     message_id BLOB NOT NULL CHECK (length(message_id) = 32),
     PRIMARY KEY (chain, leaf_index)
   ) STRICT, WITHOUT ROWID;
   INSERT INTO merkle_insertions_v4 (chain, leaf_index, insertion_block_number, message_id)
     SELECT chain, leaf_index, insertion_block_number, unhex(substr(message_id, 3)) FROM merkle_insertions;
   DROP TABLE merkle_insertions;
   ALTER TABLE merkle_insertions_v4 RENAME TO merkle_insertions;`,

  // 5: the count of expired leases taken over (lib/outbox/types.ts, leaseExpiries), on which claim's
  // maxLeaseExpiries dead-letters a message whose workers keep stopping. Existing rows start at 0.
  // The same column and CHECK as PostgreSQL's migration 3, so both refuse the same rows.
  `ALTER TABLE outbox ADD COLUMN lease_expiries INTEGER NOT NULL DEFAULT 0 CHECK (lease_expiries >= 0);`,

  // 6: the delivery worker's attempt state in columns (docs/delivery.md#retries-pending-proofs-dead-letters),
  // read back until now from the end of last_error ("(failures F/M; pending since <ISO>, poll P)"),
  // which existing rows are read from once here; and the transaction journal
  // (docs/transactions.md#the-transaction-journal): one row per signed transaction, recorded before
  // its broadcast, open until its slot (chain, signer, nonce) is settled. The same columns and
  // CHECKs as PostgreSQL's migration 4.
  `ALTER TABLE outbox ADD COLUMN failures INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0);
   ALTER TABLE outbox ADD COLUMN pending_since REAL;
   ALTER TABLE outbox ADD COLUMN polls INTEGER NOT NULL DEFAULT 0 CHECK (polls >= 0);
   UPDATE outbox SET failures = CAST(substr(last_error, instr(last_error, '(failures ') + 10) AS INTEGER)
     WHERE instr(last_error, '(failures ') > 0;
   UPDATE outbox SET
     pending_since = round((julianday(substr(last_error, instr(last_error, '; pending since ') + 16, 24)) - 2440587.5) * 86400000.0),
     polls = CAST(substr(last_error, instr(last_error, ', poll ') + 7) AS INTEGER)
     WHERE instr(last_error, '; pending since ') > 0 AND instr(last_error, ', poll ') > 0;
   CREATE TABLE outbox_journal (
     hash TEXT PRIMARY KEY NOT NULL CHECK (${HEX_ID('hash')}),
     message_id TEXT NOT NULL CHECK (${HEX_ID('message_id')}),
     chain_id INTEGER NOT NULL CHECK (chain_id BETWEEN 0 AND 9007199254740991),
     signer TEXT NOT NULL CHECK (length(signer) = 42 AND substr(signer, 1, 2) = '0x' AND unhex(substr(signer, 3)) IS NOT NULL AND lower(signer) = signer),
     nonce INTEGER NOT NULL CHECK (nonce BETWEEN 0 AND 9007199254740991),
     raw TEXT NOT NULL CHECK (length(raw) BETWEEN 4 AND ${MAX_RAW_TRANSACTION_LENGTH}),
     sent_at REAL NOT NULL,
     outcome TEXT CHECK (outcome IN ('mined', 'replaced', 'dropped')),
     closed_at REAL,
     CHECK ((outcome IS NULL) = (closed_at IS NULL))
   ) STRICT;
   CREATE INDEX outbox_journal_message ON outbox_journal (message_id) WHERE closed_at IS NULL;
   CREATE INDEX outbox_journal_slot ON outbox_journal (chain_id, signer, nonce) WHERE closed_at IS NULL;`,

  // 7: the change version of status push (lib/outbox.ts VersionedRecord, docs/outbox.md#change-feed).
  // One counter for the whole file: every insert, and every update that changes what a status
  // shows, gives the row the next number. SQLite has one writer at a time, so the numbers follow
  // the commit order and the store's watcher finds everything committed since its last look as
  // `version > cursor` (lib/sqlite/changes.ts), whichever connection or process wrote it. Triggers,
  // so no statement that writes the outbox, now or later, can forget it. Existing rows start at 0.
  `ALTER TABLE outbox ADD COLUMN version INTEGER NOT NULL DEFAULT 0 CHECK (version >= 0);
   CREATE INDEX outbox_version ON outbox (version);
   CREATE TRIGGER outbox_inserted AFTER INSERT ON outbox BEGIN
     UPDATE outbox SET version = (SELECT max(version) FROM outbox) + 1 WHERE rowid = NEW.rowid;
   END;
   CREATE TRIGGER outbox_changed AFTER UPDATE OF status, attempts, last_error, destination_tx_hash ON outbox
     WHEN OLD.status IS NOT NEW.status OR OLD.attempts IS NOT NEW.attempts
       OR OLD.last_error IS NOT NEW.last_error OR OLD.destination_tx_hash IS NOT NEW.destination_tx_hash
   BEGIN
     UPDATE outbox SET version = (SELECT max(version) FROM outbox) + 1 WHERE rowid = NEW.rowid;
   END;`,

  // 8: gas payments (docs/gas.md#gas-payment-enforcement): the InterchainGasPaymaster's
  // GasPayment logs for a message, one row per log (transaction hash, log index), beside the
  // outbox rather than in it. Amounts are uint256, so decimal text. The same columns and CHECKs
  // as PostgreSQL's migration 8.
  `CREATE TABLE gas_payments (
     tx_hash TEXT NOT NULL CHECK (${HEX_ID('tx_hash')}),
     log_index INTEGER NOT NULL CHECK (log_index BETWEEN 0 AND 9007199254740991),
     message_id TEXT NOT NULL CHECK (${HEX_ID('message_id')}),
     destination INTEGER NOT NULL CHECK (${UINT32('destination')}),
     gas_amount TEXT NOT NULL CHECK (${DECIMAL('gas_amount')}),
     payment TEXT NOT NULL CHECK (${DECIMAL('payment')}),
     PRIMARY KEY (tx_hash, log_index)
   ) STRICT, WITHOUT ROWID;
   CREATE INDEX gas_payments_message ON gas_payments (message_id);`,

  // 9: the gas book (docs/gas.md#gas-already-spent): on the message's row the gas
  // onChainFeeQuoting required at its last estimate (NULL before one) and the gas (and wei) its
  // reverted transactions spent, summed; beside it one row per such transaction, by hash, so a
  // receipt seen twice counts once. Decimal text like the payments. Existing rows start with
  // nothing spent. The same columns and CHECKs as PostgreSQL's migration 10.
  `ALTER TABLE outbox ADD COLUMN required_gas TEXT CHECK (${DECIMAL('required_gas')});
   ALTER TABLE outbox ADD COLUMN gas_spent TEXT NOT NULL DEFAULT '0' CHECK (${DECIMAL('gas_spent')});
   ALTER TABLE outbox ADD COLUMN gas_spent_wei TEXT NOT NULL DEFAULT '0' CHECK (${DECIMAL('gas_spent_wei')});
   CREATE TABLE gas_spent (
     tx_hash TEXT PRIMARY KEY NOT NULL CHECK (${HEX_ID('tx_hash')}),
     message_id TEXT NOT NULL CHECK (${HEX_ID('message_id')}),
     gas_used TEXT NOT NULL CHECK (${DECIMAL('gas_used')}),
     cost TEXT NOT NULL CHECK (${DECIMAL('cost')})
   ) STRICT, WITHOUT ROWID;
   CREATE INDEX gas_spent_message ON gas_spent (message_id);`,

  // 10: a message's gas_payment is part of what its status shows (docs/api.md#status-events), so
  // its changes give the row the next version like migration 7's: the required gas and the gas
  // spent on the row, and a payment stored for the message's own destination (one for another
  // destination counts for nothing and changes nothing). enqueue stores a receipt's payments before
  // its messages, so at intake this trigger finds no row and costs one index probe.
  `DROP TRIGGER outbox_changed;
   CREATE TRIGGER outbox_changed
     AFTER UPDATE OF status, attempts, last_error, destination_tx_hash, required_gas, gas_spent, gas_spent_wei ON outbox
     WHEN OLD.status IS NOT NEW.status OR OLD.attempts IS NOT NEW.attempts
       OR OLD.last_error IS NOT NEW.last_error OR OLD.destination_tx_hash IS NOT NEW.destination_tx_hash
       OR OLD.required_gas IS NOT NEW.required_gas OR OLD.gas_spent IS NOT NEW.gas_spent
       OR OLD.gas_spent_wei IS NOT NEW.gas_spent_wei
   BEGIN
     UPDATE outbox SET version = (SELECT max(version) FROM outbox) + 1 WHERE rowid = NEW.rowid;
   END;
   CREATE TRIGGER gas_payment_stored AFTER INSERT ON gas_payments BEGIN
     UPDATE outbox SET version = (SELECT max(version) FROM outbox) + 1
       WHERE id = NEW.message_id AND destination = NEW.destination;
   END;`,

  // 11: signer leases (docs/transactions.md#one-worker-per-key): one row per (chain, signer), the
  // worker holding it and until when; a row outlives its release (lapsed, with its last holder).
  // The journal refuses a broadcast of a signer whose live lease is another's. The same columns
  // and CHECKs as PostgreSQL's migration 12.
  `CREATE TABLE signer_leases (
     chain_id INTEGER NOT NULL CHECK (chain_id BETWEEN 0 AND 9007199254740991),
     signer TEXT NOT NULL CHECK (length(signer) = 42 AND substr(signer, 1, 2) = '0x' AND unhex(substr(signer, 3)) IS NOT NULL AND lower(signer) = signer),
     holder TEXT NOT NULL CHECK (length(holder) BETWEEN 1 AND 200),
     lease TEXT NOT NULL CHECK (length(lease) BETWEEN 1 AND 200),
     expires_at REAL NOT NULL,
     PRIMARY KEY (chain_id, signer)
   ) STRICT, WITHOUT ROWID;`,

  // 12: indexes for an outbox of millions of rows (BENCHMARKS.md#growth-node-benchgrowthts), so no
  // path grows with the delivered rows: listing by status (outbox_status, also retention's way to
  // the oldest delivered rows) and every status not delivered (outbox_undelivered) read their rows
  // in order and stop at the limit, where both scanned the table; retention finds closed journal
  // rows by age (outbox_journal_closed, for the retention setting). The same indexes as
  // PostgreSQL's migration 13.
  `CREATE INDEX outbox_status ON outbox (status, enqueued_at);
   CREATE INDEX outbox_undelivered ON outbox (enqueued_at) WHERE status <> 'delivered';
   CREATE INDEX outbox_journal_closed ON outbox_journal (closed_at) WHERE closed_at IS NOT NULL;`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function readSchemaVersion(db: DatabaseSync): number {
  return Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version);
}

/**
 * Brings the database to SCHEMA_VERSION in one IMMEDIATE transaction. The version is read inside
 * the transaction so two processes opening a fresh file do not both run migration 1.
 */
export function migrate(db: DatabaseSync, transaction: Transaction = createTransaction(db)): void {
  transaction(() => {
    const found = readSchemaVersion(db);
    if (found > SCHEMA_VERSION) throw new SchemaVersionError(found, SCHEMA_VERSION);
    for (let v = found; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]);
    if (found !== SCHEMA_VERSION) db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
  });
}
