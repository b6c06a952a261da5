/**
 * The recursive metadata builder (docs/isms.md#the-metadata-builder): the metadata a message's
 * ISM wants, by the ISM's `moduleType()`:
 * - NULL (6): empty metadata;
 * - ROUTING (1): `route(message)` names the ISM that verifies it; its metadata unchanged;
 * - AGGREGATION (2): exactly `threshold` sub-metadatas, each checked with a simulated `verify`
 *   (lib/worker/ism/aggregation.ts);
 * - MESSAGE_ID_MULTISIG (5), MERKLE_ROOT_MULTISIG (4): validators' signed checkpoints (the injected
 *   `multisig` builder, lib/worker/ism/multisig.ts);
 * - CCIP_READ (7): EIP-3668, the gateway's answer (the injected `offchain` reader);
 * - anything else: `unsupported ISM type N`.
 * Bounded: ISMs nested at most `maxDepth` deep and at most `maxIsms` ISMs per message, so a
 * recipient's ISM cannot hold a worker in a loop or a tree of thousands of modules.
 */
import type { Address, Hex } from 'viem';
import { DeliveryError } from '../errors.ts';
import { ISM_ABI, ISM_TYPE } from './abi.ts';
import { buildAggregation } from './aggregation.ts';
import { directIsmReads } from './head-reads.ts';
import { offchainLookupRevert } from './offchain.ts';
import type { BuildIsm, MetadataOptions } from './types.ts';

/** Hyperlane's relayer: ISM depth 13, 100 ISMs per message. */
export const MAX_ISM_DEPTH = 13;
export const MAX_ISMS_PER_MESSAGE = 100;

export type {
  BuildIsm,
  IsmContext,
  MessageSource,
  MetadataOptions,
  MultisigBuilder,
  MultisigIsmType,
  MultisigRequest,
} from './types.ts';

/** The ISM that verifies `message` (the recipient's) and the metadata it needs. */
export async function buildMetadata(options: MetadataOptions): Promise<{ ism: Address; type: number; metadata: Hex }> {
  const reads = options.reads ?? directIsmReads(options.publicClient, options.mailbox);
  const ism = await reads.recipientIsm(options.recipient);
  const built = await buildIsm({ ...options, reads, visited: 0, shared: {} }, ism, 0);
  return { ism, ...built };
}

/** The metadata of one ISM of the tree, `depth` levels below the recipient's. */
export const buildIsm: BuildIsm = async (c, ism, depth) => {
  const maxDepth = c.maxDepth ?? MAX_ISM_DEPTH;
  const maxIsms = c.maxIsms ?? MAX_ISMS_PER_MESSAGE;
  if (depth > maxDepth) throw new DeliveryError('unsupported', `ISMs nested deeper than ${maxDepth}`);
  if (++c.visited > maxIsms) throw new DeliveryError('unsupported', `more than ${maxIsms} ISMs for one message`);
  c.signal?.throwIfAborted();
  const { publicClient, message } = c;
  const type = await c.reads.moduleType(ism);
  switch (type) {
    case ISM_TYPE.NULL:
      return { type, metadata: '0x' };
    case ISM_TYPE.ROUTING: {
      const routed = await publicClient.readContract({
        address: ism,
        abi: ISM_ABI,
        functionName: 'route',
        args: [message],
      });
      return buildIsm(c, routed, depth + 1);
    }
    case ISM_TYPE.AGGREGATION:
      return { type, metadata: await buildAggregation(c, ism, depth, buildIsm) };
    case ISM_TYPE.MESSAGE_ID_MULTISIG:
    case ISM_TYPE.MERKLE_ROOT_MULTISIG: {
      if (!c.multisig)
        throw new DeliveryError(
          'unsupported',
          `unsupported ISM type ${type} (validator checkpoints are not configured)`,
        );
      const metadata = await c.multisig({
        publicClient,
        ism,
        type,
        message,
        source: c.source,
        signal: c.signal,
        shared: c.shared,
      });
      return { type, metadata };
    }
    case ISM_TYPE.CCIP_READ: {
      if (!c.offchain)
        throw new DeliveryError('unsupported', `unsupported ISM type ${type} (CCIP-read is not configured)`);
      const revert = await offchainLookupRevert(publicClient, ism, message);
      return { type, metadata: await c.offchain(revert, ism, c.signal, message) };
    }
    default:
      throw new DeliveryError('unsupported', `unsupported ISM type ${type}`);
  }
};
