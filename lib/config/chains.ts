/**
 * The `chains` and `relayChains` sections of the configuration (docs/configuration.md, The
 * configuration file): each chain entry checked in the Hyperlane agent-config style, the built-in
 * table when a file has no `chains`, and the destinations a relayer serves. lib/config/parse.ts calls
 * these; the `chains` record has a null prototype, so a request's `origin_chain` such as
 * "constructor" finds nothing instead of an Object.prototype member.
 */
import { DEFAULT_CCTP_V2_TRANSMITTERS } from '../codec/cctp.ts';
import { BUILTIN_CHAINS } from './chains.generated.ts';
import { ConfigError } from '../errors/classes.ts';
import {
  address20,
  array,
  integer,
  join,
  listNames,
  nearest,
  nonEmptyString,
  object,
  required,
  string,
  typeName,
  uint256,
  type Obj,
} from './fields.ts';
import { UINT32_MAX } from '../codec/hex.ts';
import type { ChainConfig, TransactionOverrides } from '../types.ts';

const CHAIN_NAME = /^[a-z][a-z0-9]*$/;

function httpUrl(value: unknown, key: string): string {
  const s = nonEmptyString(value, key);
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new ConfigError(key, `not a URL: ${JSON.stringify(s)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(key, `expected an http(s) URL, got ${url.protocol}`);
  return s;
}

const CHAIN_KEYS = [
  'domainId',
  'chainId',
  'mailbox',
  'cctpMessageTransmitter',
  'rpcUrls',
  'interchainGasPaymaster',
  'transactionOverrides',
  'index',
  'merkleTreeHook',
  'validatorAnnounce',
] as const;

/** Blocks per eth_getLogs request at most (a provider's limit is lower; this bounds a typo). */
const MAX_INDEX_CHUNK = 1_000_000;

/**
 * `index` (Hyperlane's key): `chunk`, the blocks per eth_getLogs request of the worker's top-up
 * search. Hyperlane's `from` and `mode` (where its indexer starts, how it pages) are checked and
 * dropped: nothing here indexes a whole chain.
 */
function parseIndex(value: unknown, key: string): { chunk?: number } {
  const obj = object(value, key, ['chunk', 'from', 'mode']);
  if (obj.from !== undefined) integer(obj.from, join(key, 'from'), 0, Number.MAX_SAFE_INTEGER);
  if (obj.mode !== undefined && obj.mode !== 'block' && obj.mode !== 'sequence')
    throw new ConfigError(join(key, 'mode'), `expected "block" or "sequence", got ${JSON.stringify(obj.mode)}`);
  return obj.chunk === undefined ? {} : { chunk: integer(obj.chunk, join(key, 'chunk'), 1, MAX_INDEX_CHUNK) };
}

/** `transactionOverrides`: of Hyperlane's keys, the fee ceiling (the others are refused by name). */
function parseTransactionOverrides(value: unknown, key: string): TransactionOverrides {
  const obj = object(value, key, ['gasPriceCap'], '{"gasPriceCap": WEI}');
  const overrides: TransactionOverrides = {};
  // "none": no ceiling, stated (docs/worker-configuration.md#stated-gas-policy).
  if (obj.gasPriceCap === 'none') overrides.gasPriceCap = null;
  else if (obj.gasPriceCap !== undefined)
    overrides.gasPriceCap = uint256(obj.gasPriceCap, join(key, 'gasPriceCap'), 1n);
  return overrides;
}
/** Hyperlane chain-metadata keys accepted for copy-paste convenience, checked, then dropped. */
const TOLERATED_CHAIN_KEYS = ['name', 'protocol', 'displayName', 'isTestnet'] as const;

function parseTransmitters(value: unknown, key: string): string[] {
  if (value === undefined) return [...DEFAULT_CCTP_V2_TRANSMITTERS];
  const list = Array.isArray(value) ? value.map((v, i) => address20(v, `${key}[${i}]`)) : [address20(value, key)];
  return [...new Set(list)];
}

/** The shape of one `rpcUrls` entry, as errors name it. */
const RPC_URL_SHAPE = '{"http": URL}';

function parseRpcUrls(value: unknown, key: string): string[] {
  if (typeof value === 'string')
    throw new ConfigError(key, `expected an array of ${RPC_URL_SHAPE}, got a string: write [{"http": "https://…"}]`);
  const list = array(value, key);
  if (list.length === 0) throw new ConfigError(key, 'needs at least one {"http": "…"} entry');
  return list.map((entry, i) => {
    const where = `${key}[${i}]`;
    const obj = object(entry, where, ['http'], RPC_URL_SHAPE);
    return httpUrl(required(obj, 'http', where), join(where, 'http'));
  });
}

function checkToleratedKeys(name: string, obj: Obj, key: string): void {
  if (obj.name !== undefined && obj.name !== name) {
    throw new ConfigError(join(key, 'name'), `must equal the chain's key ${JSON.stringify(name)}`);
  }
  if (obj.protocol !== undefined && obj.protocol !== 'ethereum') {
    throw new ConfigError(
      join(key, 'protocol'),
      `only "ethereum" (EVM) chains are supported, got ${JSON.stringify(obj.protocol)}`,
    );
  }
  if (obj.displayName !== undefined) string(obj.displayName, join(key, 'displayName'));
  if (obj.isTestnet !== undefined && typeof obj.isTestnet !== 'boolean') {
    throw new ConfigError(join(key, 'isTestnet'), `expected a boolean, got ${typeName(obj.isTestnet)}`);
  }
}

function parseChain(name: string, value: unknown, key: string): ChainConfig {
  const obj = object(value, key, [...CHAIN_KEYS, ...TOLERATED_CHAIN_KEYS]);
  checkToleratedKeys(name, obj, key);
  const chain: ChainConfig = {
    name,
    domainId: integer(required(obj, 'domainId', key), join(key, 'domainId'), 0, UINT32_MAX),
    mailbox: address20(required(obj, 'mailbox', key), join(key, 'mailbox')),
    cctpMessageTransmitters: parseTransmitters(obj.cctpMessageTransmitter, join(key, 'cctpMessageTransmitter')),
    rpcUrls: parseRpcUrls(required(obj, 'rpcUrls', key), join(key, 'rpcUrls')),
  };
  if (obj.chainId !== undefined) chain.chainId = integer(obj.chainId, join(key, 'chainId'), 1, Number.MAX_SAFE_INTEGER);
  if (obj.interchainGasPaymaster !== undefined)
    chain.interchainGasPaymaster = address20(obj.interchainGasPaymaster, join(key, 'interchainGasPaymaster'));
  if (obj.transactionOverrides !== undefined)
    chain.transactionOverrides = parseTransactionOverrides(obj.transactionOverrides, join(key, 'transactionOverrides'));
  if (obj.index !== undefined) chain.index = parseIndex(obj.index, join(key, 'index'));
  if (obj.merkleTreeHook !== undefined)
    chain.merkleTreeHook = address20(obj.merkleTreeHook, join(key, 'merkleTreeHook'));
  if (obj.validatorAnnounce !== undefined)
    chain.validatorAnnounce = address20(obj.validatorAnnounce, join(key, 'validatorAnnounce'));
  return chain;
}

export function parseChains(value: unknown, key: string): Record<string, ChainConfig> {
  const obj = object(value, key);
  const chains: Record<string, ChainConfig> = Object.create(null);
  const byDomain = new Map<number, string>();
  for (const name of Object.keys(obj)) {
    const where = join(key, name);
    if (!CHAIN_NAME.test(name) || name.length > 128) {
      throw new ConfigError(
        where,
        'chain names are lower-case letters and digits, starting with a letter (at most 128)',
      );
    }
    const chain = parseChain(name, obj[name], where);
    const taken = byDomain.get(chain.domainId);
    if (taken !== undefined)
      throw new ConfigError(join(where, 'domainId'), `domain ${chain.domainId} is already used by chain ${taken}`);
    byDomain.set(chain.domainId, name);
    chains[name] = chain;
  }
  if (byDomain.size === 0) throw new ConfigError(key, 'needs at least one chain');
  return chains;
}

export function builtinChains(): Record<string, ChainConfig> {
  const chains: Record<string, ChainConfig> = Object.create(null);
  for (const c of BUILTIN_CHAINS) {
    chains[c.name] = { ...c, cctpMessageTransmitters: [...DEFAULT_CCTP_V2_TRANSMITTERS], rpcUrls: [...c.rpcUrls] };
  }
  return chains;
}

/** `unknown chain "bsae"; did you mean "base"? The configured chains are "ethereum" or "base"`. */
function unknownChain(name: string, configured: readonly string[]): string {
  const near = nearest(name, configured);
  return `unknown chain ${JSON.stringify(name.slice(0, 64))}${near === undefined ? '' : `; did you mean "${near}"?`} (the configured chains: ${listNames(configured)})`;
}

export function parseRelayChains(value: unknown, key: string, chains: Record<string, ChainConfig>): string[] {
  const names =
    typeof value === 'string'
      ? value.split(',').map((part) => ({ name: part.trim(), where: key }))
      : array(value, key).map((v, i) => ({ name: string(v, `${key}[${i}]`), where: `${key}[${i}]` }));
  const out: string[] = [];
  for (const { name, where } of names) {
    if (!Object.hasOwn(chains, name)) throw new ConfigError(where, unknownChain(name, Object.keys(chains)));
    if (!out.includes(name)) out.push(name);
  }
  if (out.length === 0) throw new ConfigError(key, 'must name at least one chain');
  return out;
}
