/**
 * The metadata a message's ISM wants (docs/delivery.md#the-delivery-loop), by the ISM's
 * `moduleType()` (Hyperlane's IInterchainSecurityModule.Types):
 * - NULL (6): empty metadata (NoopIsm, TestIsm, TrustedRelayerIsm-like modules that check nothing
 *   in the metadata);
 * - ROUTING (1): `route(message)` names the ISM that verifies it; its metadata is the answer
 *   (followed to a bounded depth, so a routing loop cannot hold a worker);
 * - CCIP_READ (7): EIP-3668: `getOffchainVerifyInfo(message)` reverts with `OffchainLookup`; the
 *   gateway's answer is the metadata (the injected `offchain` reader does the HTTP part);
 * - anything else: final failure `unsupported ISM type N`.
 */
import { BaseError as ViemError, encodeFunctionData, parseAbi, type Address, type Hex, type PublicClient } from 'viem';
import { DeliveryError, describe } from './errors.ts';

export const ISM_TYPE = {
  UNUSED: 0,
  ROUTING: 1,
  AGGREGATION: 2,
  LEGACY_MULTISIG: 3,
  MERKLE_ROOT_MULTISIG: 4,
  MESSAGE_ID_MULTISIG: 5,
  NULL: 6,
  CCIP_READ: 7,
} as const;

export const MAILBOX_ABI = parseAbi([
  'function process(bytes metadata, bytes message) payable',
  'function delivered(bytes32 messageId) view returns (bool)',
  'function processedAt(bytes32 messageId) view returns (uint48)',
  'function recipientIsm(address recipient) view returns (address)',
  'event ProcessId(bytes32 indexed messageId)',
]);

export const ISM_ABI = parseAbi([
  'function moduleType() view returns (uint8)',
  'function route(bytes message) view returns (address)',
  'function getOffchainVerifyInfo(bytes message) view',
]);

/** Routing ISMs followed before giving up (Hyperlane deployments nest one or two). */
export const MAX_ROUTING_DEPTH = 4;

/**
 * Follows an OffchainLookup: given the revert data of `getOffchainVerifyInfo` on `ism`, asks the
 * gateways and returns the metadata. Throws a CcipReadError (kind `pending` when the proof is not
 * there yet) or a DeliveryError. `message` (the raw message the lookup is for) tells lookups apart
 * across attempts, whatever the ISM reverts with each time.
 */
export type OffchainReader = (revertData: Hex, ism: Address, signal?: AbortSignal, message?: Hex) => Promise<Hex>;

export interface MetadataOptions {
  publicClient: PublicClient;
  mailbox: Address;
  /** The raw Hyperlane message. */
  message: Hex;
  /** The message's recipient, 20 bytes. */
  recipient: Address;
  /** For CCIP_READ ISMs; without it they are `unsupported`. */
  offchain?: OffchainReader;
  signal?: AbortSignal;
}

/** The ISM that verifies `message` and the metadata it needs. */
export async function buildMetadata(options: MetadataOptions): Promise<{ ism: Address; type: number; metadata: Hex }> {
  const { publicClient, mailbox, message } = options;
  let ism = await publicClient.readContract({
    address: mailbox,
    abi: MAILBOX_ABI,
    functionName: 'recipientIsm',
    args: [options.recipient],
  });
  for (let depth = 0; ; depth++) {
    const type = await publicClient.readContract({ address: ism, abi: ISM_ABI, functionName: 'moduleType' });
    switch (type) {
      case ISM_TYPE.NULL:
        return { ism, type, metadata: '0x' };
      case ISM_TYPE.ROUTING: {
        if (depth >= MAX_ROUTING_DEPTH)
          throw new DeliveryError('unsupported', `routing ISMs nested deeper than ${MAX_ROUTING_DEPTH}`);
        ism = await publicClient.readContract({ address: ism, abi: ISM_ABI, functionName: 'route', args: [message] });
        continue;
      }
      case ISM_TYPE.CCIP_READ: {
        if (!options.offchain)
          throw new DeliveryError('unsupported', `unsupported ISM type ${type} (CCIP-read is not configured)`);
        const revert = await offchainLookupRevert(publicClient, ism, message);
        return { ism, type, metadata: await options.offchain(revert, ism, options.signal, message) };
      }
      default:
        throw new DeliveryError('unsupported', `unsupported ISM type ${type}`);
    }
  }
}

/**
 * The revert data of `ism.getOffchainVerifyInfo(message)` (which always reverts, with
 * OffchainLookup when the ISM wants a CCIP read). A call that does not revert is a broken ISM.
 */
export async function offchainLookupRevert(publicClient: PublicClient, ism: Address, message: Hex): Promise<Hex> {
  const data = encodeFunctionData({ abi: ISM_ABI, functionName: 'getOffchainVerifyInfo', args: [message] });
  try {
    await publicClient.request({ method: 'eth_call', params: [{ to: ism, data }, 'latest'] });
  } catch (error) {
    const found = revertData(error);
    if (found) return found;
    throw new DeliveryError('rpc', `getOffchainVerifyInfo: ${describe(error)}`, { cause: error });
  }
  throw new DeliveryError('metadata', 'the CCIP-read ISM did not revert with OffchainLookup');
}

/** The revert data inside a viem error (the JSON-RPC error's `data`), found with viem's own `walk()`, if any. */
export function revertData(error: unknown): Hex | null {
  if (!(error instanceof ViemError)) return null;
  let found: Hex | null = null;
  error.walk((e) => {
    const data = (e as { data?: unknown }).data;
    const inner = data && typeof data === 'object' ? (data as { data?: unknown }).data : data;
    if (typeof inner === 'string' && /^0x(?:[0-9a-fA-F]{2})+$/.test(inner)) found = inner as Hex;
    return found !== null;
  });
  return found;
}
