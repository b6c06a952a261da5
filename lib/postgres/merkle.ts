/**
 * Merkle tree insertions (docs/design.md#merkle-tree-insertions) on PostgreSQL: a batch is one
 * INSERT … ON CONFLICT (chain, leaf_index) DO UPDATE over unnest()ed arrays, so it is one
 * statement, hence one transaction: all written or none, whatever its size, in one round trip.
 */
import type { MerkleInsertion, MerkleStore } from '../types.ts';
import { run, type PgPool } from './pool.ts';

export interface PostgresMerkleStore extends MerkleStore {
  insertMerkle(records: readonly MerkleInsertion[]): Promise<number>;
  listMerkle(domain: number, start: number, end: number): Promise<MerkleInsertion[]>;
}

export function createPostgresMerkleStore(pool: PgPool, s: string): PostgresMerkleStore {
  const upsertSql = `
    INSERT INTO ${s}.merkle_insertions (chain, leaf_index, insertion_block_number, message_id)
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[])
    ON CONFLICT (chain, leaf_index) DO UPDATE
      SET insertion_block_number = excluded.insertion_block_number, message_id = excluded.message_id`;
  // float8, not bigint: drivers return bigint as a string; every value here is below 2^53.
  const selectSql = `
    SELECT chain::float8 AS chain, insertion_block_number::float8 AS insertion_block_number,
           leaf_index::float8 AS leaf_index, message_id
    FROM ${s}.merkle_insertions WHERE chain = $1 AND leaf_index BETWEEN $2 AND $3 ORDER BY leaf_index`;

  return {
    async insertMerkle(records) {
      if (records.length === 0) return 0;
      // One statement may not update a row twice, so of a key repeated within the batch the last
      // record is written: the outcome of writing them one after the other, as SQLite does.
      const last = new Map<string, MerkleInsertion>();
      for (const r of records) {
        const key = `${r.chain}:${r.leaf_index}`;
        last.delete(key);
        last.set(key, r);
      }
      const rows = [...last.values()];
      await run(pool, upsertSql, [
        rows.map((r) => r.chain),
        rows.map((r) => r.leaf_index),
        rows.map((r) => r.insertion_block_number),
        rows.map((r) => r.message_id.toLowerCase()),
      ]);
      return records.length;
    },
    async listMerkle(domain, start, end) {
      const { rows } = await run<MerkleInsertion>(pool, selectSql, [domain, start, end]);
      return rows.map((row) => ({
        chain: Number(row.chain),
        insertion_block_number: Number(row.insertion_block_number),
        leaf_index: Number(row.leaf_index),
        message_id: row.message_id,
      }));
    },
  };
}
