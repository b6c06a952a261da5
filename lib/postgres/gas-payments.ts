/**
 * Gas payments on PostgreSQL (docs/gas.md#gas-payment-enforcement): the `gas_payments` table
 * beside the outbox, one row per GasPayment log (tx hash, log index). A batch's payments are
 * written by a data-modifying CTE of the statement that inserts its messages (lib/postgres/outbox.ts),
 * so both commit together; top-ups and reads go through the two methods below.
 */
import { gasPaymentFromRow, type GasPayment, type GasPaymentRow } from '../gas/payment.ts';
import {
  checkGasPayments,
  checkGasSpent,
  checkRequiredGas,
  type Asynchronous,
  type Outbox,
  type OutboxMessage,
} from '../outbox/index.ts';
import { run, type PgPool } from './pool.ts';

/** Gas payments as the six array parameters of gasPaymentInsertSql (amounts as decimal text). */
function gasPaymentColumns(payments: readonly GasPayment[]): unknown[][] {
  return [
    payments.map((p) => p.txHash),
    payments.map((p) => p.logIndex),
    payments.map((p) => p.messageId),
    payments.map((p) => p.destination),
    payments.map((p) => String(p.gasAmount)),
    payments.map((p) => String(p.payment)),
  ];
}

/** The payments of a batch's messages, as gasPaymentColumns: the parameters after outboxColumns(batch). */
export function batchPaymentColumns(batch: readonly OutboxMessage[]): unknown[][] {
  return gasPaymentColumns(batch.flatMap((m) => m.gasPayments ?? []));
}

/**
 * The insert of gas payments given as six arrays from `$first` (batchPaymentColumns, after a batch's
 * eight outboxColumns()): each (tx hash, log index) once. A data-modifying CTE
 * of the statement that inserts the messages, so both commit together.
 */
export function gasPaymentInsertSql(s: string, first: number): string {
  const [tx, index, id, destination, gas, payment] = Array.from({ length: 6 }, (_, i) => `$${first + i}`);
  return `
    INSERT INTO ${s}.gas_payments (tx_hash, log_index, message_id, destination, gas_amount, payment)
    SELECT * FROM unnest(${tx}::text[], ${index}::bigint[], ${id}::text[], ${destination}::bigint[], ${gas}::numeric[], ${payment}::numeric[])
    ON CONFLICT (tx_hash, log_index) DO NOTHING`;
}

/**
 * Outbox.addGasPayments and Outbox.gasPayments on schema `s`, and the gas book
 * (docs/gas.md#gas-already-spent): addGasSpent is one statement, the new `gas_spent` rows (by
 * tx hash, of messages the outbox holds) and their sums added to the messages' rows together.
 */
export function createPostgresGasPayments(
  pool: PgPool,
  s: string,
): Pick<Asynchronous<Outbox>, 'addGasPayments' | 'gasPayments' | 'addGasSpent' | 'setRequiredGas'> {
  const insertSql = gasPaymentInsertSql(s, 1);
  const selectSql = `
    SELECT tx_hash, log_index::float8 AS log_index, message_id, destination::float8 AS destination,
      gas_amount::text AS gas_amount, payment::text AS payment
    FROM ${s}.gas_payments WHERE message_id = ANY($1::text[])`;
  const spendSql = `
    WITH ins AS (
      INSERT INTO ${s}.gas_spent (tx_hash, message_id, gas_used, cost)
      SELECT u.tx_hash, u.message_id, u.gas_used, u.cost
      FROM unnest($1::text[], $2::text[], $3::numeric[], $4::numeric[]) AS u(tx_hash, message_id, gas_used, cost)
      WHERE EXISTS (SELECT 1 FROM ${s}.outbox o WHERE o.id = u.message_id)
      ON CONFLICT (tx_hash) DO NOTHING
      RETURNING message_id, gas_used, cost
    ),
    sums AS (SELECT message_id, sum(gas_used) AS g, sum(cost) AS c, count(*) AS n FROM ins GROUP BY message_id),
    upd AS (
      UPDATE ${s}.outbox o SET gas_spent = o.gas_spent + sums.g, gas_spent_wei = o.gas_spent_wei + sums.c
      FROM sums WHERE o.id = sums.message_id
      RETURNING sums.n
    )
    SELECT coalesce(sum(n), 0)::integer AS n FROM upd`;
  const requiredSql = `
    UPDATE ${s}.outbox SET required_gas = $2::numeric WHERE id = $1 AND required_gas IS DISTINCT FROM $2::numeric`;
  return {
    async addGasPayments(payments) {
      checkGasPayments(payments);
      if (payments.length === 0) return 0;
      const { rowCount } = await run(pool, insertSql, gasPaymentColumns(payments));
      return rowCount ?? 0;
    },
    async gasPayments(ids) {
      const { rows } = await run<GasPaymentRow>(pool, selectSql, [ids.map((id) => String(id).toLowerCase())]);
      return rows.map(gasPaymentFromRow);
    },
    async addGasSpent(spends) {
      checkGasSpent(spends);
      if (spends.length === 0) return 0;
      const { rows } = await run<{ n: number }>(pool, spendSql, [
        spends.map((p) => p.txHash),
        spends.map((p) => p.messageId),
        spends.map((p) => String(p.gasUsed)),
        spends.map((p) => String(p.cost)),
      ]);
      return rows[0].n;
    },
    async setRequiredGas(id, gas) {
      const key = checkRequiredGas(id, gas);
      const { rowCount } = await run(pool, requiredSql, [key, String(gas)]);
      return rowCount === 1;
    },
  };
}

/**
 * The migration that creates the table (lib/postgres/schema.ts, migration 8): one row per
 * GasPayment log (transaction hash, log index). The same columns and CHECKs as the SQLite table's
 * migration 8.
 */
export function gasPaymentsMigration(s: string): string {
  return `
  CREATE TABLE ${s}.gas_payments (
    tx_hash text NOT NULL CHECK (tx_hash ~ '^0x[0-9a-f]{64}$'),
    log_index bigint NOT NULL CHECK (log_index BETWEEN 0 AND 9007199254740991),
    message_id text NOT NULL CHECK (message_id ~ '^0x[0-9a-f]{64}$'),
    destination bigint NOT NULL CHECK (destination BETWEEN 0 AND 4294967295),
    gas_amount numeric(78, 0) NOT NULL CHECK (gas_amount BETWEEN 0 AND ${2n ** 256n - 1n}),
    payment numeric(78, 0) NOT NULL CHECK (payment BETWEEN 0 AND ${2n ** 256n - 1n}),
    PRIMARY KEY (tx_hash, log_index)
  );
  CREATE INDEX gas_payments_message ON ${s}.gas_payments (message_id);`;
}

/**
 * The gas book (lib/postgres/schema.ts, migration 10; docs/gas.md#gas-already-spent): on the
 * message's row the gas required at its last estimate and what its reverted transactions spent,
 * summed; one `gas_spent` row per such transaction. The same columns and CHECKs as the SQLite
 * store's migration 9.
 */
export function gasBookMigration(s: string): string {
  const uint256 = (column: string) => `${column} BETWEEN 0 AND ${2n ** 256n - 1n}`;
  return `
  ALTER TABLE ${s}.outbox ADD COLUMN required_gas numeric(78, 0) CHECK (${uint256('required_gas')}),
    ADD COLUMN gas_spent numeric(78, 0) NOT NULL DEFAULT 0 CHECK (${uint256('gas_spent')}),
    ADD COLUMN gas_spent_wei numeric(78, 0) NOT NULL DEFAULT 0 CHECK (${uint256('gas_spent_wei')});
  CREATE TABLE ${s}.gas_spent (
    tx_hash text PRIMARY KEY CHECK (tx_hash ~ '^0x[0-9a-f]{64}$'),
    message_id text NOT NULL CHECK (message_id ~ '^0x[0-9a-f]{64}$'),
    gas_used numeric(78, 0) NOT NULL CHECK (${uint256('gas_used')}),
    cost numeric(78, 0) NOT NULL CHECK (${uint256('cost')})
  );
  CREATE INDEX gas_spent_message ON ${s}.gas_spent (message_id);`;
}
