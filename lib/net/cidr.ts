/**
 * Address ranges as operators write them (docs/api.md#per-client-limits,
 * `server.trustedProxies`): one address (`10.0.0.7`, `::1`) or a CIDR block (`10.0.0.0/8`,
 * `fd00::/8`). An IPv4-mapped IPv6 address (`::ffff:10.0.0.7`, how a dual-stack socket reports an
 * IPv4 peer) is its IPv4 address. Pure: parsing and matching only.
 */
import { parseIpAddress, type IpAddress } from './ip-address.ts';

export interface AddressBlock {
  family: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
}

/** `address` with an IPv4-mapped IPv6 address turned into its IPv4 one. */
export function unmapped(address: IpAddress): IpAddress {
  const b = address.bytes;
  if (address.family === 6 && b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) {
    const bytes = b.slice(12);
    return { family: 4, bytes, text: bytes.join('.') };
  }
  return address;
}

/** Parses "address" or "address/prefix"; undefined when it is neither. */
export function parseAddressBlock(text: string): AddressBlock | undefined {
  const slash = text.indexOf('/');
  const parsed = parseIpAddress(slash === -1 ? text : text.slice(0, slash));
  if (parsed === null) return undefined;
  const address = slash === -1 ? unmapped(parsed) : parsed;
  const bits = address.family === 4 ? 32 : 128;
  let prefix = bits;
  if (slash !== -1) {
    const given = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(given) || Number(given) > bits) return undefined;
    prefix = Number(given);
  }
  return { family: address.family, bytes: address.bytes, prefix };
}

/** Whether `address` lies in `block`. */
export function inBlock(address: IpAddress, block: AddressBlock): boolean {
  if (address.family !== block.family) return false;
  const whole = block.prefix >> 3;
  for (let i = 0; i < whole; i++) if (address.bytes[i] !== block.bytes[i]) return false;
  const rest = block.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (address.bytes[whole] & mask) === (block.bytes[whole] & mask);
}
