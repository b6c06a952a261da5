/**
 * The outbox's versioned reads on PostgreSQL (docs/design.md#change-feed): get and byTx with each
 * row's change version, which schema migration 6's trigger keeps.
 */
import type { Asynchronous, VersionedReads } from '../outbox/index.ts';
import { columns, toRecord, type Row } from './outbox.ts';
import { run, type PgPool } from './pool.ts';

export type PostgresVersions = Asynchronous<VersionedReads>;

export function createPostgresVersions(pool: PgPool, s: string): PostgresVersions {
  const select = `SELECT ${columns('o')}, o.version::float8 AS version FROM ${s}.outbox o`;
  const versioned = (row: Row & { version: number }) => ({ ...toRecord(row), version: row.version });
  return {
    async getVersioned(id) {
      const { rows } = await run<Row & { version: number }>(pool, `${select} WHERE id = $1`, [
        String(id).toLowerCase(),
      ]);
      return rows.length === 0 ? undefined : versioned(rows[0]);
    },
    async byTxVersioned(originChain, txHash) {
      const { rows } = await run<Row & { version: number }>(
        pool,
        `${select} WHERE origin_chain = $1 AND tx_hash = $2 ORDER BY seq`,
        [originChain, String(txHash).toLowerCase()],
      );
      return rows.map(versioned);
    },
  };
}
