/** Merkle tree insertions (DESIGN.md §4) on node:sqlite. Statements are prepared once. */
import type { DatabaseSync } from 'node:sqlite';
import type { MerkleInsertion } from '../types.ts';
import type { Transaction } from './transaction.ts';

export interface MerkleTable {
  /** Writes every record in one transaction (all or none); a repeated (chain, leaf_index) replaces. Returns rows written. */
  insert(records: readonly MerkleInsertion[]): number;
  /** Records of `domain` with start <= leaf_index <= end, ordered by leaf_index. */
  list(domain: number, start: number, end: number): MerkleInsertion[];
  count(): number;
}

interface Row {
  chain: number;
  insertion_block_number: number;
  leaf_index: number;
  message_id: string;
}

export function createMerkleTable(db: DatabaseSync, transaction: Transaction): MerkleTable {
  const upsert = db.prepare(
    'INSERT OR REPLACE INTO merkle_insertions (chain, leaf_index, insertion_block_number, message_id) VALUES (?, ?, ?, ?)',
  );
  const select = db.prepare(
    'SELECT chain, insertion_block_number, leaf_index, message_id FROM merkle_insertions ' +
      'WHERE chain = ? AND leaf_index BETWEEN ? AND ? ORDER BY leaf_index',
  );
  const countRows = db.prepare('SELECT count(*) AS n FROM merkle_insertions');

  return {
    insert(records) {
      if (records.length === 0) return 0;
      return transaction(() => {
        let written = 0;
        for (const r of records) {
          written += Number(upsert.run(r.chain, r.leaf_index, r.insertion_block_number, r.message_id.toLowerCase()).changes);
        }
        return written;
      });
    },
    list(domain, start, end) {
      // Plain objects (node:sqlite rows have a null prototype) in the API's field order.
      return (select.all(domain, start, end) as unknown as Row[]).map((row) => ({
        chain: row.chain,
        insertion_block_number: row.insertion_block_number,
        leaf_index: row.leaf_index,
        message_id: row.message_id,
      }));
    },
    count() {
      return Number((countRows.get() as { n: number }).n);
    },
  };
}
