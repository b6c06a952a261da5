/**
 * Who a request counts for, in the per-client limits (docs/api.md#per-client-limits): the peer
 * address of its connection or, when that peer is one of `server.trustedProxies`, the address its
 * proxy added to `X-Forwarded-For`: walking the header from its end, the first address that is not
 * itself a trusted proxy (with one proxy, the last one). From any other peer the header is ignored:
 * a client cannot choose whom it counts as. An IPv6 client counts as its /64, the block one
 * subscriber usually holds, and also within its /56 and /48, which hold at most 2× and 5× what one
 * /64 may: a network handed a /48 (65 536 /64s) takes no more than five clients' share.
 *
 * A hop may carry a port, as some load balancers write it (`203.0.113.7:51234`,
 * `[2001:db8::7]:443`); the port is dropped. A hop the walk reaches that is not an address is
 * refused (400 `invalid_request`): counting the request for the proxy that wrote it would put
 * every client behind that proxy in one bucket.
 */
import type { IncomingMessage } from 'node:http';
import { inBlock, parseAddressBlock, unmapped, type AddressBlock } from '../net/cidr.ts';
import { RelayError } from '../errors/classes.ts';
import { parseIpAddress, type IpAddress } from '../net/ip-address.ts';

/**
 * One block a request counts in: its key, the limit it is counted against (`client`: one IPv4
 * address or IPv6 /64; `56`, `48`: the wider IPv6 blocks) and how many clients' allowance it holds.
 */
export interface ClientBlock {
  key: string;
  scope: 'client' | '56' | '48';
  share: number;
}

/** The blocks a request counts in, narrowest first: one for IPv4, three for IPv6. */
export type Client = readonly ClientBlock[];

/** The wider IPv6 blocks and their share of a /64's allowance (a /56 is one site, RFC 6177). */
export const IPV6_WIDER: readonly { prefix: 56 | 48; share: number }[] = [
  { prefix: 56, share: 2 },
  { prefix: 48, share: 5 },
];

/** The key of an IPv6 block: its leading groups, the bits past `prefix` zeroed, and the prefix. */
function blockKey(bytes: Uint8Array, prefix: number): string {
  const b = bytes.slice();
  for (let bit = prefix; bit < 128; bit++) b[bit >> 3] &= ~(0x80 >> (bit & 7));
  const groups: string[] = [];
  for (let i = 0; i < Math.ceil(prefix / 16) * 2; i += 2) groups.push(((b[i] << 8) | b[i + 1]).toString(16));
  return `${groups.join(':')}::/${prefix}`;
}

/** The blocks of one address: IPv4 as is; IPv6 as its /64, /56 and /48. */
function clientBlocks(address: IpAddress): Client {
  if (address.family === 4) return [{ key: address.text, scope: 'client', share: 1 }];
  return [
    { key: blockKey(address.bytes, 64), scope: 'client', share: 1 },
    ...IPV6_WIDER.map(({ prefix, share }) => ({
      key: blockKey(address.bytes, prefix),
      scope: String(prefix) as '56' | '48',
      share,
    })),
  ];
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
export function createClientOf(trustedProxies: readonly string[]): (req: IncomingMessage) => Client {
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
    if (peer === undefined) return [{ key: 'unknown', scope: 'client', share: 1 }];
    if (blocks.length === 0 || !trusted(peer)) return clientBlocks(peer);
    const header = req.headers['x-forwarded-for'];
    const text = Array.isArray(header) ? header.join(',') : (header ?? '');
    // No header at all: the proxy made the request itself (a health check), it is the client.
    if (text.trim() === '') return clientBlocks(peer);
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
    return clientBlocks(client);
  };
}
