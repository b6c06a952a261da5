/**
 * Where a CCIP-read gateway URL may lead (docs/hostile-recipients.md, Hostile recipients): the recipient's
 * ISM names the URL, so its host must be a public address, however it is spelled, and a name must
 * resolve to public addresses only, every one of them. The addresses checked are the ones the
 * connection then goes to (lib/worker/ccip/transport.ts), so a name that resolves differently a
 * moment later (DNS rebinding) reaches nothing unchecked. The host's own interface addresses are
 * refused like private ones, public or not (a gateway there is a service of this host), and only
 * ports 80 and 443 are asked (no port scan of a public host). Origins the operator allows
 * (`worker.ccipReadAllowOrigins`, after URL normalisation) skip the checks: a gateway of their own.
 */
import { lookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import {
  addressRange,
  connectionAddress,
  parseIpAddress,
  type AddressRange,
  type IpAddress,
} from '../../net/ip-address.ts';

/** One address a name resolves to, as node:dns `lookup({all: true})` lists them. */
export interface ResolvedAddress {
  address: string;
  family?: number;
}

/** Resolves a host name to every address a connection could use (the system resolver by default). */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** A gateway URL found fit to ask: the addresses to connect to, all checked (or allowed). */
export interface GatewayTarget {
  url: URL;
  /** In the resolver's order; one for an IP-literal host. */
  addresses: readonly IpAddress[];
  /** The origin is in the allow-list: the addresses were not held to the public rule. */
  allowed: boolean;
}

/** The addresses of this host's own network interfaces (tests inject them). */
export type LocalAddresses = () => Iterable<string>;

/**
 * Why a gateway URL is not asked: its host is, or resolves to, a non-public address (`this-host`:
 * an address of this host's own interfaces), or its port is not 80 or 443 (`port`).
 */
export interface TargetRefusal {
  /** The address refused (canonical), the name when it is `localhost` itself, `host:port` for a port. */
  address: string;
  range: AddressRange | 'localhost' | 'this-host' | 'port';
}

/** The ports a gateway not in the allow-list may be asked on: HTTP's and HTTPS's own. */
export const GATEWAY_PORTS: ReadonlySet<number> = new Set([80, 443]);

export type TargetCheck =
  | { ok: true; target: GatewayTarget }
  | { ok: false; refusal: TargetRefusal }
  | { ok: false; unresolved: string };

/** The system resolver: what the operating system would connect to (hosts file included). */
export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, order: 'verbatim' });

/** Every address of this host's interfaces, as node:os lists them (loopback, LAN and public ones). */
export const systemLocalAddresses: LocalAddresses = () =>
  Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((info) => info.address));

/** `addresses` as the canonical text of where a connection to each goes; what is not an address is skipped. */
export function ownAddresses(addresses: Iterable<string>): ReadonlySet<string> {
  const own = new Set<string>();
  for (const text of addresses) {
    const address = parseIpAddress(String(text));
    if (address) own.add(connectionAddress(address).text);
  }
  return own;
}

/** `origins` as URL origins (`http://host:port`, default port dropped, host normalised); bad entries throw. */
export function normalizeOrigins(origins: readonly string[]): ReadonlySet<string> {
  return new Set(origins.map((origin) => new URL(origin).origin));
}

/** RFC 6761: `localhost` and every name under it are the loopback, whatever a resolver answers. */
function isLocalhostName(hostname: string): boolean {
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Checks one gateway URL (http or https, already parsed). An IP-literal host is classified as
 * written (the URL parser has already turned `2130706433` or `0x7f.1` into 127.0.0.1); a name is
 * resolved and every address classified. A name that resolves to nothing is `unresolved` (the
 * gateway is unavailable, not refused).
 */
export async function checkGatewayTarget(
  url: URL,
  opts: { resolve: Resolver; allowOrigins: ReadonlySet<string>; ownAddresses?: ReadonlySet<string> },
): Promise<TargetCheck> {
  const allowed = opts.allowOrigins.has(url.origin);
  const own = opts.ownAddresses ?? new Set<string>();
  const rangeOf = (address: IpAddress): TargetRefusal['range'] =>
    own.has(connectionAddress(address).text) ? 'this-host' : addressRange(address);
  // A URL without a port has its scheme's default, 80 or 443: both are gateway ports.
  const portRefused = url.port !== '' && !GATEWAY_PORTS.has(Number(url.port)) && !allowed;
  const portRefusal: TargetCheck = { ok: false, refusal: { address: url.host, range: 'port' } };
  // A non-public address is the stronger reason: it is named first, the port after.
  const literal = parseIpAddress(url.hostname);
  if (literal) {
    const range = rangeOf(literal);
    if (range !== 'public' && !allowed) return { ok: false, refusal: { address: literal.text, range } };
    if (portRefused) return portRefusal;
    return { ok: true, target: { url, addresses: [literal], allowed } };
  }
  if (isLocalhostName(url.hostname) && !allowed) {
    return { ok: false, refusal: { address: url.hostname, range: 'localhost' } };
  }
  let answers: readonly ResolvedAddress[];
  try {
    answers = await opts.resolve(url.hostname);
  } catch {
    return { ok: false, unresolved: 'did not resolve' };
  }
  const addresses: IpAddress[] = [];
  for (const answer of answers) {
    const address = parseIpAddress(String(answer?.address));
    // A resolver that answers something other than an address is not trusted with the rest.
    if (!address) return { ok: false, unresolved: 'resolved to something other than an address' };
    const range = rangeOf(address);
    if (range !== 'public' && !allowed) return { ok: false, refusal: { address: address.text, range } };
    addresses.push(address);
  }
  if (addresses.length === 0) return { ok: false, unresolved: 'did not resolve' };
  if (portRefused) return portRefusal;
  return { ok: true, target: { url, addresses, allowed } };
}
