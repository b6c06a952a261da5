/**
 * The outbox's versioned reads on PostgreSQL (docs/outbox.md#change-feed): get and byTx with each
 * row's change version, which schema migrations 6 and 11's triggers keep, and the message's gas
 * payments read in the same statement (what a status event shows: docs/api.md#status-events).
 */
import { gasPaymentsFromJson, type GasPaymentRow } from '../gas/payment.ts';
import type { Asynchronous, VersionedReads } from '../outbox/index.ts';
import { columns, toRecord, type Row } from './outbox.ts';
import { run, type PgPool } from './pool.ts';

export type PostgresVersions = Asynchronous<VersionedReads>;

type VersionedRow = Row & { version: number; payments: GasPaymentRow[] | null };

export function createPostgresVersions(pool: PgPool, s: string): PostgresVersions {
  // Amounts as text: uint256 does not fit a JSON number.
  const payments = `(SELECT json_agg(json_build_object('tx_hash', p.tx_hash, 'log_index', p.log_index,
      'message_id', p.message_id, 'destination', p.destination, 'gas_amount', p.gas_amount::text,
      'payment', p.payment::text))
    FROM ${s}.gas_payments p WHERE p.message_id = o.id) AS payments`;
  const select = `SELECT ${columns('o')}, o.version::float8 AS version, ${payments} FROM ${s}.outbox o`;
  const versioned = (row: VersionedRow) => ({
    ...toRecord(row),
    version: row.version,
    gasPayments: gasPaymentsFromJson(row.payments),
  });
  return {
    async getVersioned(id) {
      const { rows } = await run<VersionedRow>(pool, `${select} WHERE id = $1`, [String(id).toLowerCase()]);
      return rows.length === 0 ? undefined : versioned(rows[0]);
    },
    async byTxVersioned(originChain, txHash) {
      const { rows } = await run<VersionedRow>(
        pool,
        `${select} WHERE origin_chain = $1 AND tx_hash = $2 ORDER BY seq`,
        [originChain, String(txHash).toLowerCase()],
      );
      return rows.map(versioned);
    },
  };
}
