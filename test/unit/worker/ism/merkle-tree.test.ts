/**
 * The origin tree's proofs (lib/worker/ism/merkle-tree.ts, docs/isms.md#merkle-root-multisig),
 * against a top-down recursive computation of the same depth-32 tree from Merkle.sol's
 * definition (test/helpers/fixtures/merkle-reference.ts), not the bottom-up code under test. On anvil the real
 * MerkleRootMultisigIsm judges the proofs (test/e2e/isms.e2e.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keccak256, toHex } from 'viem';
import { merkleNode, ZERO_HASHES } from '../../../helpers/fixtures/merkle-reference.ts';
import { OutOfRangeError } from '../../../../lib/errors/classes.ts';
import { proofOf, rootFromProof } from '../../../../lib/worker/ism/merkle-tree.ts';

const leaves = Array.from({ length: 13 }, (_, i) => keccak256(toHex(`message ${i}`)));

test('docs/isms.md#merkle-root-multisig: roots and proofs match the tree computed top-down, for every leaf and size', () => {
  assert.equal(merkleNode([], 32, 0), ZERO_HASHES[32]);
  for (let n = 1; n <= leaves.length; n++) {
    const tree = leaves.slice(0, n);
    const root = merkleNode(tree, 32, 0);
    for (let i = 0; i < n; i++) {
      const { root: got, proof } = proofOf(tree, i);
      assert.equal(got, root, `root of ${n} leaves`);
      const siblings = proof.map((_, level) => merkleNode(tree, level, Math.floor(i / 2 ** level) ^ 1));
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
