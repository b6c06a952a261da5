/**
 * Who a request counts for, in the per-client limits (docs/api.md#per-client-limits): the peer
 * address of its connection or, when that peer is one of `server.trustedProxies`, the address its
 * proxy added to `X-Forwarded-For`: walking the header from its end, the first address that is not
 * itself a trusted proxy (with one proxy, the last one). From any other peer the header is ignored:
 * a client cannot choose whom it counts as. An IPv6 client counts as its /64, the block one
 * subscriber usually holds.
 *
 * A hop may carry a port, as some load balancers write it (`203.0.113.7:51234`,
 * `[2001:db8::7]:443`); the port is dropped. A hop the walk reaches that is not an address is
 * refused (400 `invalid_request`): counting the request for the proxy that wrote it would put
 * every client behind that proxy in one bucket.
 */
import type { IncomingMessage } from 'node:http';
import { inBlock, parseAddressBlock, unmapped, type AddressBlock } from '../cidr.ts';
import { RelayError } from '../errors.ts';
import { parseIpAddress, type IpAddress } from '../ip-address.ts';

/** The key of one address: IPv4 as is, IPv6 as its /64. */
function clientKey(address: IpAddress): string {
  if (address.family === 4) return address.text;
  const b = address.bytes;
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push(((b[i] << 8) | b[i + 1]).toString(16));
  return `${groups.join(':')}::/64`;
}

/**
 * One X-Forwarded-For hop: an address, `a.b.c.d:port`, `[v6]` or `[v6]:port`; null when it is none
 * of these. IPv4 only as a dotted quad with a port (a bare hop takes every form parseIpAddress reads).
 */
export function parseForwardedHop(text: string): IpAddress | null {
  const hop = text.trim();
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(hop);
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(hop);
  const port = bracketed?.[2] ?? withPort?.[2];
  if (port !== undefined && Number(port) > 65_535) return null;
  if (bracketed) {
    const address = parseIpAddress(`[${bracketed[1]}]`);
    return address?.family === 6 ? address : null;
  }
  return parseIpAddress(withPort ? withPort[1] : hop);
}

/**
 * The function naming the client of a request, given the trusted proxies (already validated). It
 * throws 400 `invalid_request` when a trusted proxy's X-Forwarded-For hop cannot be read.
 */
export function createClientOf(trustedProxies: readonly string[]): (req: IncomingMessage) => string {
  const blocks = trustedProxies.map((text) => parseAddressBlock(text)).filter((b): b is AddressBlock => !!b);
  const trusted = (address: IpAddress) => blocks.some((block) => inBlock(address, block));
  const parse = (text: string | undefined) => {
    const parsed = text === undefined ? null : parseIpAddress(text.trim());
    return parsed === null ? undefined : unmapped(parsed);
  };
  const parseHop = (text: string) => {
    const parsed = parseForwardedHop(text);
    return parsed === null ? undefined : unmapped(parsed);
  };

  return (req) => {
    const peer = parse(req.socket.remoteAddress);
    // A socket already closed has no address: it is nobody's, and answers nothing anyway.
    if (peer === undefined) return 'unknown';
    if (blocks.length === 0 || !trusted(peer)) return clientKey(peer);
    const header = req.headers['x-forwarded-for'];
    const text = Array.isArray(header) ? header.join(',') : (header ?? '');
    // No header at all: the proxy made the request itself (a health check), it is the client.
    if (text.trim() === '') return clientKey(peer);
    const hops = text.split(',');
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parseHop(hops[i]);
      if (hop === undefined)
        throw new RelayError(
          'invalid_request',
          'X-Forwarded-For holds a hop that is not an IP address (address, address:port or [IPv6]:port)',
        );
      client = hop;
      if (!trusted(hop)) break;
    }
    return clientKey(client);
  };
}
