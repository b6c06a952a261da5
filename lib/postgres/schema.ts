/**
 * The PostgreSQL schema (docs/design.md#postgresql, docs/replicas.md#how-replicas-agree), versioned: migration N (1-based)
 * takes the store from version N-1 to N, each in its own transaction together with the version
 * bump. Append new migrations; never edit a released one.
 *
 * Every table lives in one PostgreSQL schema (default `relayer`), so the store can share a
 * database with other applications and tests can keep stores apart. Replicas starting together
 * all call migrate(): a session advisory lock keyed by the schema name makes them take turns, so
 * exactly one runs each migration and the others find it done.
 *
 * Tables carry CHECK constraints mirroring the API's validation, like the SQLite store's.
 */
import { SchemaVersionError, InvalidArgumentError } from '../errors/classes.ts';
import { MAX_DESTINATION_TX_HASH_LENGTH, MAX_ERROR_LENGTH, MAX_RAW_TRANSACTION_LENGTH } from '../outbox/index.ts';
import { gasBookMigration, gasPaymentsMigration } from './gas-payments.ts';
import type { PgPool } from './pool.ts';
import { signerLeasesMigration } from './signer-leases.ts';
import { clientBucketsMigration, gasBookPushMigration, statusPushMigration } from './schema-push.ts';

const HEX_ID = (column: string) => `${column} ~ '^0x[0-9a-f]{64}$'`;
const UINT32 = (column: string) => `${column} BETWEEN 0 AND 4294967295`;

/** Each migration is SQL for the schema `s` (already quoted). */
export const MIGRATIONS: readonly ((s: string) => string)[] = [
  // 1: merkle insertions, the outbox with its lifecycle (docs/outbox.md#message-lifecycle), dedup
  // reservations, token buckets.
  (s) => `
  CREATE TABLE ${s}.merkle_insertions (
    chain bigint NOT NULL CHECK (${UINT32('chain')}),
    leaf_index bigint NOT NULL CHECK (${UINT32('leaf_index')}),
    insertion_block_number bigint NOT NULL CHECK (insertion_block_number BETWEEN 0 AND 9007199254740991),
    message_id text NOT NULL CHECK (${HEX_ID('message_id')}),
    PRIMARY KEY (chain, leaf_index)
  );

  -- seq records arrival order: it breaks ties between messages enqueued in the same millisecond.
  -- Times are double precision milliseconds since the epoch (the clock has sub-ms precision).
  CREATE TABLE ${s}.outbox (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    id text PRIMARY KEY CHECK (${HEX_ID('id')}),
    origin_chain text NOT NULL CHECK (octet_length(origin_chain) BETWEEN 1 AND 128),
    tx_hash text NOT NULL CHECK (${HEX_ID('tx_hash')}),
    origin bigint NOT NULL CHECK (${UINT32('origin')}),
    destination bigint NOT NULL CHECK (${UINT32('destination')}),
    nonce bigint NOT NULL CHECK (${UINT32('nonce')}),
    raw bytea NOT NULL,
    enqueued_at double precision NOT NULL,
    status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'delivering', 'delivered', 'failed')),
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text,
    delivered_at double precision,
    destination_tx_hash text,
    claimed_until double precision,
    retry_at double precision,
    lease text,
    CHECK ((status = 'delivered') = (delivered_at IS NOT NULL)),
    CHECK ((status = 'delivering') = (claimed_until IS NOT NULL AND lease IS NOT NULL)),
    CHECK (status = 'delivering' OR (claimed_until IS NULL AND lease IS NULL)),
    CHECK (retry_at IS NULL OR status = 'queued'),
    CHECK (destination_tx_hash IS NULL OR status = 'delivered')
  );
  CREATE INDEX outbox_open ON ${s}.outbox (enqueued_at, seq) WHERE status IN ('queued', 'delivering');
  CREATE INDEX outbox_tx ON ${s}.outbox (origin_chain, tx_hash, seq);

  -- One row per live (or expired, not yet swept) POST /relay reservation; token identifies the
  -- reservation that may commit or release it.
  CREATE TABLE ${s}.dedup (
    key text PRIMARY KEY,
    token uuid NOT NULL,
    committed boolean NOT NULL,
    expires_at double precision NOT NULL
  );
  CREATE INDEX dedup_expiry ON ${s}.dedup (expires_at);

  -- One row per bucket; units are tokens x 60 000 (see lib/relay/rate-limit.ts).
  CREATE TABLE ${s}.token_buckets (
    name text PRIMARY KEY,
    units double precision NOT NULL,
    updated_at double precision NOT NULL,
    taken boolean NOT NULL DEFAULT false
  );`,

  // 2: the outbox's length limits, which the SQLite table has had since its lifecycle migration:
  // last_error is cut to MAX_ERROR_LENGTH characters, a destination transaction hash is 1 to
  // MAX_DESTINATION_TX_HASH_LENGTH. Rows written by this package already hold to them.
  (s) => `
  ALTER TABLE ${s}.outbox
    ADD CONSTRAINT outbox_last_error_length CHECK (char_length(last_error) <= ${MAX_ERROR_LENGTH}),
    ADD CONSTRAINT outbox_destination_tx_hash_length
      CHECK (char_length(destination_tx_hash) BETWEEN 1 AND ${MAX_DESTINATION_TX_HASH_LENGTH});`,

  // 3: the count of expired leases taken over (lib/outbox/types.ts, leaseExpiries), on which claim's
  // maxLeaseExpiries dead-letters a message whose workers keep stopping. Existing rows start at 0.
  // The same column and CHECK as the SQLite table's migration 5.
  (s) => `
  ALTER TABLE ${s}.outbox ADD COLUMN lease_expiries integer NOT NULL DEFAULT 0
    CONSTRAINT outbox_lease_expiries_count CHECK (lease_expiries >= 0);`,

  // 4: the delivery worker's attempt state in columns (docs/delivery.md#retries-pending-proofs-dead-letters),
  // read back until now from the end of last_error ("(failures F/M; pending since <ISO>, poll P)"),
  // which existing rows are read from once here; and the transaction journal
  // (docs/transactions.md#the-transaction-journal): one row per signed transaction, recorded before
  // its broadcast, open until its slot (chain, signer, nonce) is settled. The same columns and
  // CHECKs as the SQLite table's migration 6.
  (s) => `
  ALTER TABLE ${s}.outbox
    ADD COLUMN failures integer NOT NULL DEFAULT 0 CONSTRAINT outbox_failures_count CHECK (failures >= 0),
    ADD COLUMN pending_since double precision,
    ADD COLUMN polls integer NOT NULL DEFAULT 0 CONSTRAINT outbox_polls_count CHECK (polls >= 0);
  UPDATE ${s}.outbox SET failures = substring(last_error from '\\(failures (\\d+)/')::integer
    WHERE last_error ~ '\\(failures \\d+/';
  UPDATE ${s}.outbox SET
    pending_since = extract(epoch from substring(last_error from '; pending since (\\S+), poll')::timestamptz) * 1000,
    polls = substring(last_error from ', poll (\\d+)')::integer
    WHERE last_error ~ '; pending since \\S+, poll \\d+';
  CREATE TABLE ${s}.outbox_journal (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    hash text PRIMARY KEY CHECK (${HEX_ID('hash')}),
    message_id text NOT NULL CHECK (${HEX_ID('message_id')}),
    chain_id bigint NOT NULL CHECK (chain_id BETWEEN 0 AND 9007199254740991),
    signer text NOT NULL CHECK (signer ~ '^0x[0-9a-f]{40}$'),
    nonce bigint NOT NULL CHECK (nonce BETWEEN 0 AND 9007199254740991),
    raw text NOT NULL CHECK (char_length(raw) BETWEEN 4 AND ${MAX_RAW_TRANSACTION_LENGTH}),
    sent_at double precision NOT NULL,
    outcome text CHECK (outcome IN ('mined', 'replaced', 'dropped')),
    closed_at double precision,
    CHECK ((outcome IS NULL) = (closed_at IS NULL))
  );
  CREATE INDEX outbox_journal_message ON ${s}.outbox_journal (message_id) WHERE closed_at IS NULL;
  CREATE INDEX outbox_journal_slot ON ${s}.outbox_journal (chain_id, signer, nonce) WHERE closed_at IS NULL;`,

  // 5: the number of dedup rows (live, and expired until a sweep deletes them), kept by statement
  // triggers on every insert and delete, whoever sends it. The capacity check reads this one row
  // instead of counting the live rows, whose cost grew with them
  // (docs/replicas.md#capacity-on-postgresql). The table is locked against writes while the
  // existing rows are counted, so no insert falls between the count and the triggers.
  (s) => `
  LOCK TABLE ${s}.dedup IN SHARE ROW EXCLUSIVE MODE;
  CREATE TABLE ${s}.dedup_rows (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    n bigint NOT NULL
  );
  INSERT INTO ${s}.dedup_rows (n) SELECT count(*) FROM ${s}.dedup;
  CREATE FUNCTION ${s}.dedup_rows_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE k bigint;
    BEGIN
      SELECT count(*) INTO k FROM inserted;
      IF k > 0 THEN UPDATE ${s}.dedup_rows SET n = n + k; END IF;
      RETURN NULL;
    END $$;
  CREATE FUNCTION ${s}.dedup_rows_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE k bigint;
    BEGIN
      SELECT count(*) INTO k FROM deleted;
      IF k > 0 THEN UPDATE ${s}.dedup_rows SET n = n - k; END IF;
      RETURN NULL;
    END $$;
  CREATE TRIGGER dedup_rows_insert AFTER INSERT ON ${s}.dedup REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION ${s}.dedup_rows_inserted();
  CREATE TRIGGER dedup_rows_delete AFTER DELETE ON ${s}.dedup REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION ${s}.dedup_rows_deleted();`,

  // 6: status push (lib/postgres/schema-push.ts).
  statusPushMigration,

  // 7: TRUNCATE fires no delete trigger: without this one, an operator emptying the dedup table
  // by hand would leave its row count (migration 5) at the old number, and every reservation
  // would be refused cache_full.
  (s) => `
  CREATE FUNCTION ${s}.dedup_rows_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE ${s}.dedup_rows SET n = 0;
      RETURN NULL;
    END $$;
  CREATE TRIGGER dedup_rows_truncate AFTER TRUNCATE ON ${s}.dedup
    FOR EACH STATEMENT EXECUTE FUNCTION ${s}.dedup_rows_truncated();`,

  // 8: gas payments (docs/gas.md#gas-payment-enforcement), beside the outbox: lib/postgres/gas-payments.ts.
  gasPaymentsMigration,

  // 9: per-client token buckets (lib/postgres/schema-push.ts).
  clientBucketsMigration,

  // 10: the gas book (docs/gas.md#gas-already-spent): lib/postgres/gas-payments.ts.
  gasBookMigration,

  // 11: gas-book changes and payments raise the version (lib/postgres/schema-push.ts).
  gasBookPushMigration,

  // 12: signer leases (docs/transactions.md#one-worker-per-key): lib/postgres/signer-leases.ts.
  signerLeasesMigration,

  // 13: indexes for an outbox of millions of rows (lib/postgres/outbox-listing.ts): the same as
  // the SQLite table's migration 12. CREATE INDEX holds off writes to the table while it builds
  // (seconds for a million rows), once, at the upgrade.
  (s) => `
  CREATE INDEX outbox_status ON ${s}.outbox (status, enqueued_at, seq);
  CREATE INDEX outbox_undelivered ON ${s}.outbox (enqueued_at, seq) WHERE status <> 'delivered';
  CREATE INDEX outbox_journal_closed ON ${s}.outbox_journal (closed_at) WHERE closed_at IS NOT NULL;`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** A lower-case SQL identifier, so it needs no escaping beyond the double quotes. */
export function quoteSchema(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name))
    throw new InvalidArgumentError(`schema must be a lower-case SQL identifier, got ${JSON.stringify(name)}`);
  return `"${name}"`;
}

/**
 * Brings schema `name` to SCHEMA_VERSION and returns the version found before. Refuses a newer
 * schema (another replica runs a newer release) with SchemaVersionError. Runs at start-up,
 * not on a request path, so the driver's errors pass through as they are (they say what is wrong).
 * The session runs without `statement_timeout` and `lock_timeout`; a client-side limit of the pool
 * (`pg`'s `query_timeout`) still applies, so relayer-server migrates on a pool without one.
 */
export async function migrate(pool: PgPool, name: string): Promise<number> {
  const s = quoteSchema(name);
  const lockName = `relayer-api migrate ${name}`;
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    // A session lock: held across the per-migration transactions below, and freed by the server
    // if this process dies half-way.
    // No server-side limits for this session: a replica starting while another runs a long
    // migration waits for the lock as long as it takes, and a migration may take long itself.
    // RESET below gives the pooled connection back with the limits it was opened with.
    await client.query('SET statement_timeout = 0; SET lock_timeout = 0');
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockName]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_version (version integer NOT NULL)`);
      const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${s}.schema_version`);
      const found = rows[0]?.version ?? 0;
      if (found > SCHEMA_VERSION) throw new SchemaVersionError(found, SCHEMA_VERSION);
      if (rows.length === 0) await client.query(`INSERT INTO ${s}.schema_version (version) VALUES (0)`);
      for (let v = found; v < SCHEMA_VERSION; v++) {
        await client.query('BEGIN');
        try {
          await client.query(MIGRATIONS[v](s));
          await client.query(`UPDATE ${s}.schema_version SET version = $1`, [v + 1]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch((e: Error) => (broken = e));
          throw error;
        }
      }
      return found;
    } finally {
      await client
        .query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockName])
        .catch((e: Error) => (broken = e));
      await client.query('RESET statement_timeout; RESET lock_timeout').catch((e: Error) => (broken = e));
    }
  } catch (error) {
    broken ??= error as Error;
    throw error;
  } finally {
    client.release(broken);
  }
}
