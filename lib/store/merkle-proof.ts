/**
 * Merkle proofs from the stored merkle tree insertions (docs/api.md#get-merkle_proofs), as
 * Hyperlane's relayer serves them: the proof of leaf `leaf_index` in the origin tree of leaves
 * 0..`root_index` (depth 32, node = keccak256(left ‖ right), empty subtrees zero-hashed, as
 * Merkle.sol), and that tree's root. Pure core: keccak from lib/codec/keccak.ts.
 */
import { RelayError } from '../errors/classes.ts';
import { bytesToHex, decimal, hexToBytes, UINT32_MAX } from '../codec/hex.ts';
import { keccak256 } from '../codec/keccak.ts';
import type { MerkleInsertion } from '../types.ts';

export const TREE_DEPTH = 32;
/** Leaves one proof may read and hash (root_index + 1). */
export const MAX_PROOF_LEAVES = 100_000;

export interface ProofQuery {
  domain: number;
  leaf: number;
  root: number;
}

export interface MerkleProofAnswer {
  proof: { leaf: string; index: number; path: string[] };
  root: string;
}

const ZERO: Uint8Array[] = ((): Uint8Array[] => {
  const z: Uint8Array[] = [new Uint8Array(32)];
  for (let i = 1; i <= TREE_DEPTH; i++) z.push(hashPair(z[i - 1], z[i - 1]));
  return z;
})();

function hashPair(left: Uint8Array, right: Uint8Array): Uint8Array {
  const both = new Uint8Array(64);
  both.set(left, 0);
  both.set(right, 32);
  return keccak256(both);
}

/** `domain_id`, `leaf_index`, `root_index`: integers, leaf ≤ root, root + 1 ≤ MAX_PROOF_LEAVES; else invalid_request. */
export function validateProofQuery(params: URLSearchParams): ProofQuery {
  const read = (name: string): number => {
    const values = params.getAll(name);
    if (values.length !== 1) throw new RelayError('invalid_request', `${name} is required exactly once`);
    const value = decimal(values[0]);
    if (value === undefined || value > UINT32_MAX)
      throw new RelayError('invalid_request', `${name} must be an integer from 0 to ${UINT32_MAX}`);
    return value;
  };
  const q = { domain: read('domain_id'), leaf: read('leaf_index'), root: read('root_index') };
  if (q.leaf > q.root) throw new RelayError('invalid_request', 'leaf_index must not exceed root_index');
  if (q.root >= MAX_PROOF_LEAVES)
    throw new RelayError('invalid_request', `root_index must be below ${MAX_PROOF_LEAVES} (leaves hashed per proof)`);
  return q;
}

/** The root of the tree of `leaves` and the 32 siblings of leaf `index`. */
export function merkleProof(leaves: readonly Uint8Array[], index: number): { root: Uint8Array; path: Uint8Array[] } {
  const path: Uint8Array[] = [];
  let level = [...leaves];
  let at = index;
  for (let depth = 0; depth < TREE_DEPTH; depth++) {
    path.push(level[at ^ 1] ?? ZERO[depth]);
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(hashPair(level[i], level[i + 1] ?? ZERO[depth]));
    level = next;
    at >>= 1;
  }
  return { root: level[0] ?? ZERO[TREE_DEPTH], path };
}

/** The answer for `q` from the stored rows of leaves 0..root (every one needed: a gap is not_found). */
export function proofFromInsertions(rows: readonly MerkleInsertion[], q: ProofQuery): MerkleProofAnswer {
  const leaves: Uint8Array[] = [];
  for (const row of rows) {
    if (row.leaf_index !== leaves.length) break;
    leaves.push(hexToBytes(row.message_id) as Uint8Array);
  }
  if (leaves.length < q.root + 1)
    throw new RelayError('not_found', `no stored insertion of leaf ${leaves.length} of domain ${q.domain}`);
  const { root, path } = merkleProof(leaves.slice(0, q.root + 1), q.leaf);
  return {
    proof: { leaf: bytesToHex(leaves[q.leaf]), index: q.leaf, path: path.map(bytesToHex) },
    root: bytesToHex(root),
  };
}
