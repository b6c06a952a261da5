/**
 * The origin's merkle tree (docs/isms.md#merkle-root-multisig), as Hyperlane's Merkle.sol builds
 * it: depth 32, leaves are message ids in insertion order, node = keccak256(left ‖ right), empty
 * subtrees Z0 = 32 zero bytes and Z(i+1) = keccak256(Zi ‖ Zi). `proofOf` gives the root of the
 * tree of the leaves given and the 32 sibling hashes of one leaf (what MerkleRootMultisig metadata
 * carries); `rootFromProof` is the ISM's branchRoot, to check a proof before anything is sent.
 */
import { concat, keccak256, type Hex } from 'viem';
import { OutOfRangeError } from '../../errors/classes.ts';

export const TREE_DEPTH = 32;

const ZERO_HASHES: Hex[] = (() => {
  const z: Hex[] = [`0x${'00'.repeat(32)}`];
  for (let i = 1; i <= TREE_DEPTH; i++) z.push(keccak256(concat([z[i - 1], z[i - 1]])));
  return z;
})();

/** The root of the tree holding `leaves` and the proof of leaf `index` (which must be one of them). */
export function proofOf(leaves: readonly Hex[], index: number): { root: Hex; proof: Hex[] } {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length)
    throw new OutOfRangeError('leaf index out of the tree');
  const proof: Hex[] = [];
  let level: Hex[] = leaves.map((l) => l.toLowerCase() as Hex);
  let at = index;
  for (let depth = 0; depth < TREE_DEPTH; depth++) {
    proof.push(level[at ^ 1] ?? ZERO_HASHES[depth]);
    const next: Hex[] = [];
    for (let i = 0; i < level.length; i += 2)
      next.push(keccak256(concat([level[i], level[i + 1] ?? ZERO_HASHES[depth]])));
    level = next;
    at >>= 1;
  }
  return { root: level[0], proof };
}

/** The root a leaf and its proof lead to (Merkle.sol's branchRoot). */
export function rootFromProof(leaf: Hex, proof: readonly Hex[], index: number): Hex {
  let node = leaf;
  for (let depth = 0; depth < TREE_DEPTH; depth++) {
    const bit = Math.floor(index / 2 ** depth) % 2;
    node = keccak256(bit === 1 ? concat([proof[depth], node]) : concat([node, proof[depth]]));
  }
  return node;
}
