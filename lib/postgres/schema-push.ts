/**
 * The PostgreSQL migrations of status push and fairness (lib/postgres/schema.ts lists them in
 * order): the outbox's change version and NOTIFY triggers, and the per-client token buckets.
 */

// Migration 6, status push (docs/outbox.md#change-feed). `version` counts the
// changes of what a status shows (status, attempts, last_error, destination_tx_hash), per
// message: the row lock orders them. After each statement that inserted rows, or changed a
// version, the outbox NOTIFYs its channel (outboxChannel) with the message ids, and for inserts
// their transactions, as JSON of at most 7 000 bytes ({"ids":[…],"txs":[…]}; a large statement
// sends several). NOTIFY is delivered at commit and only then, to every replica that LISTENs
// (lib/postgres/changes.ts), whoever wrote: a relayer-worker's claim as a server's enqueue.
// Triggers, so no statement that writes the outbox, now or later, can forget it.
export const statusPushMigration = (s: string): string => `
  ALTER TABLE ${s}.outbox ADD COLUMN version bigint NOT NULL DEFAULT 0;
  CREATE FUNCTION ${s}.outbox_version() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF (NEW.status, NEW.attempts, NEW.last_error, NEW.destination_tx_hash)
       IS DISTINCT FROM (OLD.status, OLD.attempts, OLD.last_error, OLD.destination_tx_hash) THEN
      NEW.version := OLD.version + 1;
    END IF;
    RETURN NEW;
  END $$;
  CREATE TRIGGER outbox_version BEFORE UPDATE ON ${s}.outbox FOR EACH ROW EXECUTE FUNCTION ${s}.outbox_version();
  CREATE FUNCTION ${s}.outbox_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_notify(${quoteLiteral(outboxChannel(s))},
      json_build_object('ids', json_agg(id), 'txs', json_agg(DISTINCT origin_chain || chr(10) || tx_hash))::text)
    FROM (SELECT id, origin_chain, tx_hash, (row_number() OVER () - 1) / 20 AS chunk FROM inserted) c
    GROUP BY chunk;
    RETURN NULL;
  END $$;
  CREATE TRIGGER outbox_inserted AFTER INSERT ON ${s}.outbox REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION ${s}.outbox_inserted();
  CREATE FUNCTION ${s}.outbox_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_notify(${quoteLiteral(outboxChannel(s))}, json_build_object('ids', json_agg(id), 'txs', json_build_array())::text)
    FROM (
      SELECT n.id, (row_number() OVER () - 1) / 90 AS chunk
      FROM after_update n JOIN before_update o ON o.id = n.id WHERE n.version <> o.version
    ) c
    GROUP BY chunk;
    RETURN NULL;
  END $$;
  CREATE TRIGGER outbox_changed AFTER UPDATE ON ${s}.outbox
    REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
    FOR EACH STATEMENT EXECUTE FUNCTION ${s}.outbox_changed();`;

// Migration 11: a message's gas_payment is part of what its status shows (docs/api.md#status-events).
// The version trigger of migration 6 also counts changes of the required gas and the gas spent, and
// a statement that stores payments raises the version of each message it paid for (its own
// destination: a payment for another counts for nothing), which migration 6's statement trigger
// then NOTIFYs. Not a row the same transaction wrote: that is POST /relay storing a receipt's
// payments with its new messages, whose insert is told already.
export const gasBookPushMigration = (s: string): string => `
  CREATE OR REPLACE FUNCTION ${s}.outbox_version() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF (NEW.status, NEW.attempts, NEW.last_error, NEW.destination_tx_hash, NEW.required_gas, NEW.gas_spent, NEW.gas_spent_wei)
       IS DISTINCT FROM
       (OLD.status, OLD.attempts, OLD.last_error, OLD.destination_tx_hash, OLD.required_gas, OLD.gas_spent, OLD.gas_spent_wei) THEN
      NEW.version := OLD.version + 1;
    END IF;
    RETURN NEW;
  END $$;
  CREATE FUNCTION ${s}.gas_payments_stored() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE ${s}.outbox o SET version = o.version + 1
    FROM (SELECT DISTINCT message_id, destination FROM stored) p
    WHERE o.id = p.message_id AND o.destination = p.destination AND o.xmin <> pg_current_xact_id()::xid;
    RETURN NULL;
  END $$;
  CREATE TRIGGER gas_payments_stored AFTER INSERT ON ${s}.gas_payments REFERENCING NEW TABLE AS stored
    FOR EACH STATEMENT EXECUTE FUNCTION ${s}.gas_payments_stored();`;

// Migration 9: per-client token buckets (docs/api.md#per-client-limits; lib/postgres/client-rate-limit.ts):
// one row per budget and client, units as in token_buckets; swept by last use.
export const clientBucketsMigration = (s: string): string => `
  CREATE TABLE ${s}.client_buckets (
    name text NOT NULL,
    client text NOT NULL CHECK (octet_length(client) BETWEEN 1 AND 128),
    units double precision NOT NULL,
    updated_at double precision NOT NULL,
    taken boolean NOT NULL,
    PRIMARY KEY (name, client)
  );
  CREATE INDEX client_buckets_use ON ${s}.client_buckets (name, updated_at);`;

/**
 * The NOTIFY channel of the outbox of schema `s` (quoted): "<schema>.outbox", or for a schema
 * name too long for a channel (63 bytes), its first 40 characters and a hash of the whole.
 */
export function outboxChannel(s: string): string {
  const name = s.slice(1, -1);
  if (name.length <= 56) return `${name}.outbox`;
  let hash = 0;
  for (const c of name) hash = (Math.imul(hash, 31) + c.charCodeAt(0)) >>> 0;
  return `${name.slice(0, 40)}.${hash.toString(16)}.outbox`;
}

/** A string as an SQL literal (the channel names above: lower-case letters, digits, _ and .). */
function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
