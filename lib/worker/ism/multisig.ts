/**
 * Multisig ISMs (docs/isms.md#multisig): `validatorsAndThreshold(message)` on the destination,
 * the message's leaf index in the origin's MerkleTreeHook (its `InsertedIntoTree` log in the
 * dispatch transaction), then a quorum of the validators' signed checkpoints
 * (lib/worker/ism/checkpoints.ts). MessageIdMultisig metadata (Hyperlane's
 * MessageIdMultisigIsmMetadata): hook (bytes32) ‖ signed root ‖ uint32 signed index ‖ signatures
 * (65 bytes each, in validator order).
 */
import { concat, decodeEventLog, keccak256, numberToHex, pad, type Hex } from 'viem';
import type { Clock } from '../../clock.ts';
import { hexToBytes } from '../../codec/hex.ts';
import { parseMessageHeader } from '../../codec/message.ts';
import { DeliveryError } from '../errors.ts';
import { ISM_ABI, ISM_TYPE, MERKLE_TREE_HOOK_ABI } from './abi.ts';
import type { MessageSource, MultisigBuilder, OriginChain } from './types.ts';
import { checkedProof, encodeMerkleRootMetadata, MAX_LEAVES, treeLeaves } from './merkle-root.ts';
import type { CheckpointReader, LookupBudget } from './checkpoints.ts';

/** Hyperlane's relayer reads at most 50 validators per set. */
export const MAX_VALIDATORS = 50;

export type { OriginChain } from './types.ts';

export interface MultisigOptions {
  /** The configured origin with a merkleTreeHook and a validatorAnnounce, by domain. */
  origin(domain: number): Promise<OriginChain | undefined>;
  checkpoints: CheckpointReader;
  clock: Clock;
  /** Per message: the time and the object reads its checkpoints may take. */
  budgetMs: number;
  maxObjects: number;
  /** Told when the validators' root is not the origin tree's (a metric). */
  onMismatch?: () => void;
  /** The stored merkle tree insertions of `domain`, leaves 0..upTo (POST /merkle_tree_insertions); optional. */
  storedLeaves?: (domain: number, upTo: number) => Promise<readonly { leaf_index: number; message_id: string }[]>;
  /** Told when the stored insertions do not give the signed root: they contradict the chain and are not used. */
  onStoredMismatch?: (domain: number, index: number) => void;
}

/**
 * The proof from the stored insertions when they hold every leaf 0..index and give the signed root
 * (then they are the chain's: the validators signed the chain's root); undefined otherwise.
 */
async function storedProof(o: MultisigOptions, domain: number, index: number, id: Hex, root: Hex) {
  if (!o.storedLeaves || index + 1 > MAX_LEAVES) return undefined;
  const rows = await o.storedLeaves(domain, index).catch(() => []);
  const leaves: Hex[] = [];
  for (const row of rows) if (row.leaf_index === leaves.length) leaves.push(row.message_id as Hex);
  if (leaves.length !== index + 1) return undefined;
  try {
    return checkedProof(leaves, index, id, root);
  } catch {
    o.onStoredMismatch?.(domain, index);
    return undefined;
  }
}

export function encodeMessageIdMetadata(hook: Hex, root: Hex, index: number, signatures: readonly Hex[]): Hex {
  return concat([pad(hook, { size: 32 }), root, numberToHex(index, { size: 4 }), ...signatures]);
}

/** The leaf index of `id` in `hook`'s tree (its InsertedIntoTree log in the dispatch transaction) and that block. */
export async function leafIndex(
  origin: OriginChain,
  source: MessageSource | undefined,
  id: Hex,
): Promise<{ index: number; block: bigint }> {
  if (!source) throw new DeliveryError('metadata', 'the dispatch transaction of the message is not known');
  const receipt = await origin.publicClient.getTransactionReceipt({ hash: source.txHash as Hex });
  for (const log of receipt.logs) {
    if (log.address.toLowerCase() !== origin.merkleTreeHook.toLowerCase()) continue;
    try {
      const event = decodeEventLog({ abi: MERKLE_TREE_HOOK_ABI, topics: log.topics, data: log.data, strict: true });
      if (event.eventName === 'InsertedIntoTree' && event.args.messageId.toLowerCase() === id.toLowerCase())
        return { index: event.args.index, block: receipt.blockNumber };
    } catch {
      // another event of the hook
    }
  }
  throw new DeliveryError(
    'metadata',
    `the dispatch transaction has no InsertedIntoTree of the message by chains.${origin.name}.merkleTreeHook`,
  );
}

export function createMultisigBuilder(o: MultisigOptions): MultisigBuilder {
  return async (r) => {
    const raw = r.message;
    const domain = parseMessageHeader(hexToBytes(raw)).origin;
    const origin = await o.origin(domain);
    if (!origin)
      throw new DeliveryError(
        'config',
        `multisig ISM: no chain with merkleTreeHook and validatorAnnounce configured for origin domain ${domain}`,
      );
    const [validators, threshold] = await r.publicClient.readContract({
      address: r.ism,
      abi: ISM_ABI,
      functionName: 'validatorsAndThreshold',
      args: [raw],
    });
    if (threshold === 0 || threshold > validators.length)
      throw new DeliveryError(
        'unsupported',
        `multisig ISM with threshold ${threshold} of ${validators.length} validators`,
      );
    if (validators.length > MAX_VALIDATORS)
      throw new DeliveryError(
        'unsupported',
        `multisig ISM with ${validators.length} validators (at most ${MAX_VALIDATORS})`,
      );
    const id = keccak256(raw);
    const at = await leafIndex(origin, r.source, id);
    const index = at.index;
    const hook = pad(origin.merkleTreeHook, { size: 32 });
    r.shared.budget ??= { deadline: o.clock.now() + o.budgetMs, objects: o.maxObjects };
    const budget: LookupBudget = r.shared.budget;
    const quorum = await o.checkpoints.messageIdQuorum({
      origin: { publicClient: origin.publicClient, domain, hook, validatorAnnounce: origin.validatorAnnounce },
      validators,
      threshold,
      index,
      messageId: id,
      budget,
      signal: r.signal,
    });
    if (r.type === ISM_TYPE.MESSAGE_ID_MULTISIG)
      return encodeMessageIdMetadata(hook, quorum.root, index, quorum.signatures);
    // Merkle root: the checkpoint at the message's own index, its root proved from the stored
    // insertions when they agree with it, else from the origin's logs.
    let proof = await storedProof(o, domain, index, id, quorum.root);
    if (!proof) {
      const leaves = await treeLeaves(origin, index, at.block);
      try {
        proof = checkedProof(leaves, index, id, quorum.root);
      } catch (error) {
        o.onMismatch?.();
        throw error;
      }
    }
    const signatures = quorum.signatures;
    return encodeMerkleRootMetadata({
      hook,
      leafIndex: index,
      signedMessageId: id,
      proof,
      signedIndex: index,
      signatures,
    });
  };
}
