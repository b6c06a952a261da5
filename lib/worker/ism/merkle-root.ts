/**
 * MerkleRootMultisig metadata (docs/isms.md#merkle-root-multisig; Hyperlane's
 * MerkleRootMultisigIsmMetadata): hook (bytes32) ‖ uint32 leaf index ‖ signed message id ‖ proof
 * (32 × 32 bytes) ‖ uint32 signed index ‖ signatures. The worker proves the message against the
 * checkpoint at its own index (validators sign every index), from the origin tree's leaves read
 * from its MerkleTreeHook's `InsertedIntoTree` logs, and checks the proof's root against the
 * signed root before anything is sent.
 */
import { concat, numberToHex, type Hex } from 'viem';
import { DeliveryError } from '../errors.ts';
import { MERKLE_TREE_HOOK_ABI } from './abi.ts';
import { proofOf, rootFromProof } from './merkle-tree.ts';
import type { OriginChain } from './types.ts';

/** Leaves hashed at most for one proof (about 2 × this many keccak256). */
export const MAX_LEAVES = 100_000;

export function encodeMerkleRootMetadata(m: {
  hook: Hex;
  leafIndex: number;
  signedMessageId: Hex;
  proof: readonly Hex[];
  signedIndex: number;
  signatures: readonly Hex[];
}): Hex {
  return concat([
    m.hook,
    numberToHex(m.leafIndex, { size: 4 }),
    m.signedMessageId,
    ...m.proof,
    numberToHex(m.signedIndex, { size: 4 }),
    ...m.signatures,
  ]);
}

/** Leaves 0..upTo of the origin tree, from its InsertedIntoTree logs up to `toBlock`; each index exactly once, in order. */
export async function treeLeaves(origin: OriginChain, upTo: number, toBlock: bigint): Promise<Hex[]> {
  if (upTo + 1 > MAX_LEAVES)
    throw new DeliveryError('unsupported', `merkle root multisig: more than ${MAX_LEAVES} leaves up to the message`);
  const logs = await origin.publicClient.getContractEvents({
    address: origin.merkleTreeHook,
    abi: MERKLE_TREE_HOOK_ABI,
    eventName: 'InsertedIntoTree',
    fromBlock: 0n,
    toBlock,
  });
  const leaves: Hex[] = [];
  for (const log of logs) {
    const { messageId, index } = log.args as { messageId: Hex; index: number };
    if (index > upTo) continue;
    if (index !== leaves.length)
      throw new DeliveryError('metadata', `the origin's InsertedIntoTree logs skip or repeat leaf ${leaves.length}`);
    leaves.push(messageId);
  }
  if (leaves.length !== upTo + 1)
    throw new DeliveryError('metadata', `the origin's InsertedIntoTree logs end at leaf ${leaves.length}`);
  return leaves;
}

/** The proof of leaf `index` (= `id`) checked against the signed `root`; DeliveryError `metadata` on a mismatch. */
export function checkedProof(leaves: readonly Hex[], index: number, id: Hex, root: Hex): Hex[] {
  if (leaves[index]?.toLowerCase() !== id.toLowerCase())
    throw new DeliveryError('metadata', `leaf ${index} of the origin tree is not the message`);
  const { root: treeRoot, proof } = proofOf(leaves, index);
  if (treeRoot !== root.toLowerCase() || rootFromProof(id.toLowerCase() as Hex, proof, index) !== treeRoot)
    throw new DeliveryError(
      'metadata',
      'merkle root mismatch: the validators signed another root than the origin tree',
    );
  return proof;
}
