/**
 * Aggregation ISMs (docs/isms.md#aggregation): `modulesAndThreshold(message)` names the modules
 * and how many must verify. Exactly `threshold` of them carry metadata (one more underflows the
 * ISM's count and reverts, one fewer fails); each candidate's metadata is built and checked with a
 * simulated `verify(metadata, message)` on that module before it is taken, and a module that
 * cannot be satisfied is skipped for the next, in the ISM's module order.
 *
 * Layout (Hyperlane's AggregationIsmMetadata): per module 8 bytes, start and end offsets (uint32
 * big-endian, from the start of the metadata, end exclusive), then the chosen sub-metadatas
 * concatenated. Start 0 means no metadata; an empty metadata (a NULL module) is a non-zero `[x, x]`.
 */
import { encodeFunctionData, decodeFunctionResult, type Address, type Hex } from 'viem';
import { bytesToHex, hexToBytes } from '../../codec/hex.ts';
import { DeliveryError, describe, ShortWait, toDeliveryError } from '../errors.ts';
import { scrub } from '../../redact.ts';
import { ISM_ABI } from './abi.ts';
import type { BuildIsm, IsmContext } from './types.ts';

/** The metadata of an aggregation of `count` modules, `chosen` giving the metadata of the modules that carry one. */
export function encodeAggregationMetadata(count: number, chosen: ReadonlyMap<number, Hex>): Hex {
  const table = new Uint8Array(count * 8);
  const view = new DataView(table.buffer);
  const parts: Uint8Array[] = [table];
  let offset = table.length;
  for (let i = 0; i < count; i++) {
    const metadata = chosen.get(i);
    if (metadata === undefined) continue;
    const bytes = hexToBytes(metadata);
    if (!bytes) throw new DeliveryError('metadata', `module ${i}'s metadata is not hex`);
    view.setUint32(i * 8, offset);
    view.setUint32(i * 8 + 4, offset + bytes.length);
    parts.push(bytes);
    offset += bytes.length;
  }
  if (offset > 0xffffffff) throw new DeliveryError('metadata', 'aggregation metadata over 4 GiB');
  const out = new Uint8Array(offset);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return bytesToHex(out) as Hex;
}

/** Whether `ism.verify(metadata, message)` returns true in a simulation (eth_call) on the destination. */
export async function simulateVerify(c: IsmContext, ism: Address, metadata: Hex): Promise<string | null> {
  const data = encodeFunctionData({ abi: ISM_ABI, functionName: 'verify', args: [metadata, c.message] });
  try {
    const result = (await c.publicClient.request({ method: 'eth_call', params: [{ to: ism, data }, 'latest'] })) as Hex;
    const ok = decodeFunctionResult({ abi: ISM_ABI, functionName: 'verify', data: result });
    return ok ? null : 'verify returned false';
  } catch (error) {
    return `verify reverted: ${describe(error)}`;
  }
}

export async function buildAggregation(c: IsmContext, ism: Address, depth: number, build: BuildIsm): Promise<Hex> {
  const [modules, threshold] = await c.publicClient.readContract({
    address: ism,
    abi: ISM_ABI,
    functionName: 'modulesAndThreshold',
    args: [c.message],
  });
  if (modules.length > 255) throw new DeliveryError('unsupported', `aggregation of ${modules.length} modules`);
  if (threshold > modules.length)
    throw new DeliveryError('unsupported', `aggregation threshold ${threshold} above its ${modules.length} modules`);
  const chosen = new Map<number, Hex>();
  const failures: DeliveryError[] = [];
  for (let i = 0; i < modules.length && chosen.size < threshold; i++) {
    try {
      const { metadata } = await build(c, modules[i], depth + 1);
      const refused = await simulateVerify(c, modules[i], metadata);
      if (refused) throw new DeliveryError('metadata', `module ${i + 1}: ${refused}`);
      chosen.set(i, metadata);
    } catch (error) {
      if (c.signal?.aborted) throw error;
      const failure = toDeliveryError(error);
      if (failure.code === 'stopped') throw failure;
      failures.push(failure);
    }
  }
  if (chosen.size === threshold) return encodeAggregationMetadata(modules.length, chosen);
  const summary = `aggregation: ${chosen.size} of ${threshold} modules verified`;
  // Not ready yet (signatures awaited, a proof pending, every lookup slot busy) is a wait, not a failure.
  const busy = failures.find((f) => f instanceof ShortWait);
  if (busy) throw busy;
  const waiting = failures.find((f) => f.code === 'pending');
  if (waiting) throw new DeliveryError('pending', scrub(`${waiting.message} (${summary})`), { cause: waiting });
  const why = failures.map((f) => `${f.code}: ${f.message}`).join('; ');
  throw new DeliveryError('metadata', scrub(`${summary}; ${why}`));
}
