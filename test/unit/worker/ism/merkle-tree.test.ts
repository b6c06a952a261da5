/**
 * The origin tree's proofs (lib/worker/ism/merkle-tree.ts, docs/isms.md#merkle-root-multisig),
 * against a top-down recursive computation of the same depth-32 tree written here from Merkle.sol's
 * definition (empty subtrees are Z(level)), not the bottom-up code under test. On anvil the real
 * MerkleRootMultisigIsm judges the proofs (test/e2e/isms.e2e.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { concat, keccak256, toHex, type Hex } from 'viem';
import { OutOfRangeError } from '../../../../lib/errors/classes.ts';
import { proofOf, rootFromProof } from '../../../../lib/worker/ism/merkle-tree.ts';

const zero: Hex[] = [toHex(0, { size: 32 })];
for (let i = 1; i <= 32; i++) zero.push(keccak256(concat([zero[i - 1], zero[i - 1]])));

/** The node at `level` (0 = leaves) and position `at`, top-down. */
function node(leaves: Hex[], level: number, at: number): Hex {
  if (at * 2 ** level >= leaves.length) return zero[level];
  if (level === 0) return leaves[at];
  return keccak256(concat([node(leaves, level - 1, 2 * at), node(leaves, level - 1, 2 * at + 1)]));
}

const leaves = Array.from({ length: 13 }, (_, i) => keccak256(toHex(`message ${i}`)));

test('docs/isms.md#merkle-root-multisig: roots and proofs match the tree computed top-down, for every leaf and size', () => {
  assert.equal(node([], 32, 0), zero[32]);
  for (let n = 1; n <= leaves.length; n++) {
    const tree = leaves.slice(0, n);
    const root = node(tree, 32, 0);
    for (let i = 0; i < n; i++) {
      const { root: got, proof } = proofOf(tree, i);
      assert.equal(got, root, `root of ${n} leaves`);
      const siblings = proof.map((_, level) => node(tree, level, Math.floor(i / 2 ** level) ^ 1));
      assert.deepEqual(proof, siblings, `proof of leaf ${i} of ${n}`);
      assert.equal(rootFromProof(tree[i], proof, i), root);
    }
  }
});

test('docs/isms.md#merkle-root-multisig: a proof does not lead to the root from another leaf or index', () => {
  const { root, proof } = proofOf(leaves, 5);
  assert.notEqual(rootFromProof(leaves[4], proof, 5), root);
  assert.notEqual(rootFromProof(leaves[5], proof, 4), root);
  assert.throws(() => proofOf(leaves, 13), OutOfRangeError);
});
