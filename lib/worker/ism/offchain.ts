/**
 * The CCIP-read step of the metadata builder (docs/delivery.md#ccip-read): the revert data of an ISM's
 * `getOffchainVerifyInfo(message)`, which the injected OffchainReader (lib/worker/ccip/) follows
 * to its gateways.
 */
import { BaseError as ViemError, encodeFunctionData, type Address, type Hex, type PublicClient } from 'viem';
import { DeliveryError, describe } from '../errors.ts';
import { ISM_ABI } from './abi.ts';

/**
 * Follows an OffchainLookup: given the revert data of `getOffchainVerifyInfo` on `ism`, asks the
 * gateways and returns the metadata. Throws a CcipReadError (kind `pending` when the proof is not
 * there yet) or a DeliveryError. `message` (the raw message the lookup is for) tells lookups apart
 * across attempts, whatever the ISM reverts with each time.
 */
export type OffchainReader = (revertData: Hex, ism: Address, signal?: AbortSignal, message?: Hex) => Promise<Hex>;

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
