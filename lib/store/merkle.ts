/**
 * The in-memory merkle store (docs/design.md#merkle-tree-insertions): for tests, embedders
 * without persistence, and as the reference the SQLite table is checked against
 * (test/helpers/contracts/merkle.ts runs on both). A batch is validated whole before anything is written,
 * so it is all or nothing like the SQLite transaction; a repeated (chain, leaf_index) replaces
 * the row.
 */
import type { MerkleInsertion, MerkleStore } from '../types.ts';
import { validateMerkleRequest } from '../relay/validate.ts';

export interface MemoryMerkleStore extends MerkleStore {
  insertMerkle(records: readonly MerkleInsertion[]): number;
  listMerkle(domain: number, start: number, end: number): MerkleInsertion[];
  /** Rows stored. */
  size(): number;
}

export function createMemoryMerkleStore(): MemoryMerkleStore {
  const chains = new Map<number, Map<number, MerkleInsertion>>();
  let rows = 0;
  return {
    insertMerkle(records) {
      if (records.length === 0) return 0;
      // The request validator is the one definition of a valid record; it also lower-cases ids.
      const valid = validateMerkleRequest({ merkle_tree_insertions: records }).records;
      for (const record of valid) {
        let leaves = chains.get(record.chain);
        if (leaves === undefined) {
          leaves = new Map();
          chains.set(record.chain, leaves);
        }
        if (!leaves.has(record.leaf_index)) rows++;
        leaves.set(record.leaf_index, record);
      }
      return valid.length;
    },
    listMerkle(domain, start, end) {
      const found: MerkleInsertion[] = [];
      for (const [leaf, record] of chains.get(domain) ?? [])
        if (leaf >= start && leaf <= end) found.push({ ...record });
      return found.sort((a, b) => a.leaf_index - b.leaf_index);
    },
    size: () => rows,
  };
}
