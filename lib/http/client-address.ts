/**
 * Who a request counts for, in the per-client limits (docs/api.md#per-client-limits): the peer
 * address of its connection or, when that peer is one of `server.trustedProxies`, the address its
 * proxy added to `X-Forwarded-For`: walking the header from its end, the first address that is not
 * itself a trusted proxy (with one proxy, the last one). From any other peer the header is ignored:
 * a client cannot choose whom it counts as. An IPv6 client counts as its /64, the block one
 * subscriber usually holds.
 */
import type { IncomingMessage } from 'node:http';
import { inBlock, parseAddressBlock, unmapped, type AddressBlock } from '../cidr.ts';
import { parseIpAddress, type IpAddress } from '../ip-address.ts';

/** The key of one address: IPv4 as is, IPv6 as its /64. */
function clientKey(address: IpAddress): string {
  if (address.family === 4) return address.text;
  const b = address.bytes;
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push(((b[i] << 8) | b[i + 1]).toString(16));
  return `${groups.join(':')}::/64`;
}

/** The function naming the client of a request, given the trusted proxies (already validated). */
export function createClientOf(trustedProxies: readonly string[]): (req: IncomingMessage) => string {
  const blocks = trustedProxies.map((text) => parseAddressBlock(text)).filter((b): b is AddressBlock => !!b);
  const trusted = (address: IpAddress) => blocks.some((block) => inBlock(address, block));
  const parse = (text: string | undefined) => {
    const parsed = text === undefined ? null : parseIpAddress(text.trim());
    return parsed === null ? undefined : unmapped(parsed);
  };

  return (req) => {
    const peer = parse(req.socket.remoteAddress);
    // A socket already closed has no address: it is nobody's, and answers nothing anyway.
    if (peer === undefined) return 'unknown';
    if (blocks.length === 0 || !trusted(peer)) return clientKey(peer);
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parse(hops[i]);
      // A hop that is not an address: the proxy did not write it; stop at what is known.
      if (hop === undefined) break;
      client = hop;
      if (!trusted(hop)) break;
    }
    return clientKey(client);
  };
}
