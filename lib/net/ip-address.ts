/**
 * IP addresses as text, parsed and classified (docs/hostile-recipients.md, Hostile recipients): which
 * addresses a relayer may connect to when a stranger names them. Pure: no DNS, no sockets.
 *
 * Parsing accepts every spelling a URL's host may use, because a URL is where the addresses come
 * from: IPv4 in the forms the WHATWG URL standard (and inet_aton) read, so `2130706433`,
 * `0x7f.1`, `0177.0.0.1` and `127.1` are all 127.0.0.1; IPv6 with `::`, an IPv4 tail
 * (`::ffff:127.0.0.1`), brackets and a zone (`fe80::1%eth0`, as a resolver may return it).
 *
 * Classification follows the IANA IPv4 and IPv6 Special-Purpose Address Registries: an address is
 * public only outside every range below. IPv6 is public only inside 2000::/3 (global unicast, the
 * only block IANA allocates from); IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) addresses
 * are what their IPv4 address is, since that is where a connection to them goes.
 */

/** Why an address is not public; `public` when it is. */
export type AddressRange =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'unique-local'
  | 'reserved';

export interface IpAddress {
  family: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
  /** The canonical text: dotted quad, or RFC 5952 (lower case, longest zero run as `::`), no zone. */
  text: string;
}

// ---------------------------------------------------------------------------------------------
// Parsing

/** One part of a WHATWG IPv4 address: `0x` hex, a leading 0 octal, else decimal. */
function ipv4Number(part: string): number | undefined {
  let radix = 10;
  let digits = part;
  if (/^0x/i.test(part)) {
    radix = 16;
    digits = part.slice(2);
  } else if (part.length > 1 && part.startsWith('0')) {
    radix = 8;
    digits = part.slice(1);
  }
  if (digits === '') return 0; // "0x" alone is 0 in the standard
  const valid = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!valid.test(digits)) return undefined;
  const value = Number.parseInt(digits, radix);
  return Number.isSafeInteger(value) ? value : Number.POSITIVE_INFINITY;
}

/** The WHATWG URL standard's IPv4 parser: 1 to 4 parts, the last filling the bytes left. */
function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop(); // one trailing dot is allowed
  if (parts.length === 0 || parts.length > 4 || parts.includes('')) return undefined;
  const numbers: number[] = [];
  for (const part of parts) {
    const n = ipv4Number(part);
    if (n === undefined) return undefined;
    numbers.push(n);
  }
  const last = numbers.pop()!;
  if (numbers.some((n) => n > 255)) return undefined;
  if (last >= 256 ** (4 - numbers.length)) return undefined;
  let value = last;
  for (let i = 0; i < numbers.length; i++) value += numbers[i] * 256 ** (3 - i);
  return new Uint8Array([value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff]);
}

/** Four plain decimal parts without leading zeros: the only IPv4 form an IPv6 tail may take. */
function parseDottedQuad(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > 255)) return undefined;
  return new Uint8Array(parts.map(Number));
}

function parseIpv6(input: string): Uint8Array | undefined {
  let text = input;
  const zone = text.indexOf('%');
  if (zone !== -1) {
    if (zone === text.length - 1) return undefined;
    text = text.slice(0, zone);
  }
  let tail: Uint8Array | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    tail = parseDottedQuad(text.slice(lastColon + 1));
    if (!tail) return undefined;
    // The tail stands for two groups; keep the colon before it as a separator.
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (half: string): string[] | undefined => (half === '' ? [] : half.split(':'));
  const head = groups(halves[0]);
  const rest = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !rest) return undefined;
  const all = [...head, ...rest];
  if (all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  if (halves.length === 2 ? all.length > 7 : all.length !== 8) return undefined;
  const words = [...head.map((g) => Number.parseInt(g, 16))];
  for (let i = all.length; i < 8; i++) words.push(0);
  words.push(...rest.map((g) => Number.parseInt(g, 16)));
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 0xff;
  });
  if (tail) bytes.set(tail, 12);
  return bytes;
}

function ipv4Text(bytes: Uint8Array): string {
  return Array.from(bytes).join('.');
}

/** RFC 5952: lower-case hex, no leading zeros, the first longest run of two or more zero groups as `::`. */
function ipv6Text(bytes: Uint8Array): string {
  const words = Array.from({ length: 8 }, (_, i) => (bytes[2 * i] << 8) | bytes[2 * i + 1]);
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best === -1) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLength).join(':')}`;
}

/**
 * The address `text` spells, or null when it is not an IP address (a name, or malformed). IPv6 may
 * come in brackets, as a URL's host does.
 */
export function parseIpAddress(text: string): IpAddress | null {
  if (typeof text !== 'string' || text === '' || text.length > 128) return null;
  if (text.startsWith('[') || text.includes(':')) {
    const inner = text.startsWith('[') ? (text.endsWith(']') ? text.slice(1, -1) : undefined) : text;
    const bytes = inner === undefined ? undefined : parseIpv6(inner);
    return bytes ? { family: 6, bytes, text: ipv6Text(bytes) } : null;
  }
  const bytes = parseIpv4(text);
  return bytes ? { family: 4, bytes, text: ipv4Text(bytes) } : null;
}

// ---------------------------------------------------------------------------------------------
// Classification

type Block = readonly [prefix: readonly number[], bits: number, range: AddressRange];

/** The IANA IPv4 Special-Purpose Address Registry's blocks that are not globally reachable. */
const IPV4_BLOCKS: readonly Block[] = [
  [[0], 8, 'unspecified'], // "this network" (RFC 791)
  [[10], 8, 'private'], // RFC 1918
  [[100, 64], 10, 'shared'], // carrier-grade NAT (RFC 6598)
  [[127], 8, 'loopback'],
  [[169, 254], 16, 'link-local'], // RFC 3927; 169.254.169.254 is the cloud metadata service
  [[172, 16], 12, 'private'],
  [[192, 0, 0], 24, 'reserved'], // IETF protocol assignments (RFC 6890)
  [[192, 0, 2], 24, 'documentation'], // TEST-NET-1 (RFC 5737)
  [[192, 88, 99], 24, 'reserved'], // 6to4 relay anycast, deprecated (RFC 7526)
  [[192, 168], 16, 'private'],
  [[198, 18], 15, 'benchmarking'], // RFC 2544
  [[198, 51, 100], 24, 'documentation'], // TEST-NET-2
  [[203, 0, 113], 24, 'documentation'], // TEST-NET-3
  [[224], 4, 'multicast'],
  [[255, 255, 255, 255], 32, 'broadcast'],
  [[240], 4, 'reserved'], // future use (RFC 1112)
];

/** Inside global unicast (2000::/3), the blocks that are not globally reachable. */
const IPV6_GLOBAL_BLOCKS: readonly Block[] = [
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'documentation'], // RFC 3849
  [[0x20, 0x01, 0x00, 0x02, 0x00, 0x00], 48, 'benchmarking'], // RFC 5180
  [[0x20, 0x01, 0x00], 23, 'reserved'], // IETF protocol assignments: Teredo, ORCHID, … (RFC 2928)
  [[0x20, 0x02], 16, 'reserved'], // 6to4 (RFC 3056), which embeds any IPv4 address
  [[0x3f, 0xff], 20, 'documentation'], // RFC 9637
];

/** Outside global unicast: why (everything there is not public). */
const IPV6_OTHER_BLOCKS: readonly Block[] = [
  [[0xfc], 7, 'unique-local'], // RFC 4193
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'reserved'], // site-local, deprecated (RFC 3879)
  [[0xff], 8, 'multicast'],
];

function inBlock(bytes: Uint8Array, prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i * 8 < bits; i++) {
    const take = Math.min(8, bits - i * 8);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[i] & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

function blockRange(bytes: Uint8Array, blocks: readonly Block[]): AddressRange | undefined {
  for (const [prefix, bits, range] of blocks) if (inBlock(bytes, prefix, bits)) return range;
  return undefined;
}

const MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
const NAT64 = [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0];

/**
 * Where a connection to `address` goes: the IPv4 address inside an IPv4-mapped or NAT64 one,
 * else `address` itself.
 */
export function connectionAddress(address: IpAddress): IpAddress {
  const { bytes } = address;
  if (address.family === 6 && (inBlock(bytes, MAPPED, 96) || inBlock(bytes, NAT64, 96))) {
    const v4 = bytes.slice(12);
    return { family: 4, bytes: v4, text: ipv4Text(v4) };
  }
  return address;
}

/** The range `address` is in: `public` only when it is globally reachable. */
export function addressRange(address: IpAddress): AddressRange {
  const { bytes } = address;
  if (address.family === 4) return blockRange(bytes, IPV4_BLOCKS) ?? 'public';
  // Where a connection to these goes is their IPv4 address.
  if (inBlock(bytes, MAPPED, 96) || inBlock(bytes, NAT64, 96)) return addressRange(connectionAddress(address));
  if (bytes.every((b) => b === 0)) return 'unspecified';
  if (bytes.subarray(0, 15).every((b) => b === 0) && bytes[15] === 1) return 'loopback';
  if (!inBlock(bytes, [0x20], 3)) return blockRange(bytes, IPV6_OTHER_BLOCKS) ?? 'reserved';
  return blockRange(bytes, IPV6_GLOBAL_BLOCKS) ?? 'public';
}

export function isPublicAddress(address: IpAddress): boolean {
  return addressRange(address) === 'public';
}
