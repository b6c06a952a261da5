/**
 * The configuration tests use, built literally (independent of the config parser):
 * - `DOCUMENTED_DEFAULTS`: the defaults docs/configuration.md documents, read from it, so that
 *   test/unit/config.test.ts compares the parser with the documentation, not with itself;
 * - `testConfig(overrides)`: a RelayerConfig with two chains, those defaults, port 0 and :memory:;
 * - `fileChains(rpc)`: the `chains` section of a config file as an operator writes it, for the
 *   tests that start the real binaries.
 */
import { readFileSync } from 'node:fs';
import type { RelayerConfig } from '../../lib/types.ts';
import { CCTP_V2_TRANSMITTER, MAILBOX } from './builders.ts';

/** Base's Mailbox (registry chains/base/addresses.yaml), EIP-55 as an operator pastes it. */
export const BASE_MAILBOX = '0xeA87ae93Fa0019a82A727bfd3eBd1cFCa8f64f1D';

/**
 * Every default as docs/configuration.md documents it, read from there (not from lib/config/parse.ts),
 * so that test/unit/config.test.ts compares the parser with the documentation: the example file of
 * docs/configuration.md#the-configuration-file spells out `relayApi`, `server` and `db`, and the
 * table of docs/configuration.md#the-worker-section gives the worker's defaults. Frozen to the
 * leaves: a test that changed a shared default would change every other test's.
 */
export const DOCUMENTED_DEFAULTS: Readonly<Pick<RelayerConfig, 'relayApi' | 'server' | 'worker' | 'db'>> = deepFreeze(
  readDocumentedDefaults(),
);

function readDocumentedDefaults(): Pick<RelayerConfig, 'relayApi' | 'server' | 'worker' | 'db'> {
  const text = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  const example = /## The configuration file\n[\s\S]*?```json\n([\s\S]*?)```/.exec(text);
  const table = /### The worker section\n[\s\S]*?\n\n(\|[\s\S]*?)\n\n/.exec(text);
  if (example === null || table === null)
    throw new Error('docs/configuration.md: example file or worker table not found');
  const { relayApi, server, db } = JSON.parse(example[1]);
  const worker: Record<string, unknown> = {};
  // | `worker.a`, `worker.b` | 5, 600 | meaning |
  for (const row of table[1].split('\n').slice(2)) {
    const [keys, values] = row.split('|').slice(1, 3);
    const names = [...keys.matchAll(/`worker\.(\w+)`/g)].map((m) => m[1]);
    const given = values.split(',').map((v) => v.trim());
    if (names.length === 0 || names.length !== given.length) throw new Error(`worker table row not understood: ${row}`);
    names.forEach((name, i) => {
      const literal = given[i] === '`[]`' ? [] : given[i] === '`{}`' ? {} : given[i];
      worker[name] = /^\d+$/.test(given[i]) ? Number(given[i]) : literal;
    });
  }
  return { relayApi, server, worker: worker as unknown as RelayerConfig['worker'], db };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

export function testConfig(
  overrides: Partial<Omit<RelayerConfig, 'relayApi' | 'server' | 'worker'>> & {
    relayApi?: Partial<RelayerConfig['relayApi']>;
    server?: Partial<RelayerConfig['server']>;
    worker?: Partial<RelayerConfig['worker']>;
  } = {},
): RelayerConfig {
  const { relayApi, server, worker, ...rest } = overrides;
  const defaults = DOCUMENTED_DEFAULTS;
  return {
    chains: {
      ethereum: {
        name: 'ethereum',
        domainId: 1,
        chainId: 1,
        mailbox: MAILBOX,
        cctpMessageTransmitters: [CCTP_V2_TRANSMITTER],
        rpcUrls: ['http://rpc.invalid/eth'],
      },
      base: {
        name: 'base',
        domainId: 8453,
        chainId: 8453,
        mailbox: BASE_MAILBOX.toLowerCase(),
        cctpMessageTransmitters: [CCTP_V2_TRANSMITTER],
        rpcUrls: ['http://rpc.invalid/base'],
      },
    },
    relayChains: ['ethereum', 'base'],
    whitelist: [],
    blacklist: [],
    addressBlacklist: [],
    db: ':memory:',
    ...rest,
    relayApi: { ...defaults.relayApi, rateLimit: { ...defaults.relayApi.rateLimit }, ...relayApi },
    server: { ...defaults.server, port: 0, corsOrigins: [], ...server },
    worker: { ...defaults.worker, port: 0, ...worker },
  };
}

/**
 * The `chains` section of a config file (docs/configuration.md#the-configuration-file): ethereum,
 * counting the CCTP V2 transmitter, reading `ethereumRpc`, and base reading `baseRpc` (the same
 * endpoint unless told; null leaves base out).
 */
export function fileChains(ethereumRpc: string, baseRpc: string | null = ethereumRpc): Record<string, unknown> {
  const chains: Record<string, unknown> = {
    ethereum: {
      domainId: 1,
      chainId: 1,
      mailbox: MAILBOX,
      cctpMessageTransmitter: CCTP_V2_TRANSMITTER,
      rpcUrls: [{ http: ethereumRpc }],
    },
  };
  if (baseRpc !== null) {
    chains.base = { domainId: 8453, chainId: 8453, mailbox: BASE_MAILBOX, rpcUrls: [{ http: baseRpc }] };
  }
  return chains;
}

/**
 * A worker's stated gas choices for a test that needs none (docs/configuration.md#stated-gas-policy):
 * `"gasPaymentEnforcement": [{"type": "none"}]` unless the file states a policy, and
 * `"gasPriceCap": "none"` on every chain whose `transactionOverrides` state no cap. For a config
 * file's JSON, as an operator writes it; returns a copy.
 */
export function noGasGate<T extends Record<string, unknown>>(file: T): T {
  const chains: Record<string, unknown> = {};
  for (const [name, chain] of Object.entries((file.chains ?? {}) as Record<string, Record<string, unknown>>)) {
    const overrides = (chain.transactionOverrides ?? {}) as Record<string, unknown>;
    chains[name] = { ...chain, transactionOverrides: { gasPriceCap: 'none', ...overrides } };
  }
  return {
    gasPaymentEnforcement: [{ type: 'none' }],
    ...file,
    ...(file.chains !== undefined && { chains }),
  };
}

/** noGasGate for a parsed RelayerConfig (what an embedder gives createRelayerWorker); returns a copy. */
export function noGasGateConfig(config: RelayerConfig): RelayerConfig {
  const chains: RelayerConfig['chains'] = {};
  for (const [name, chain] of Object.entries(config.chains)) {
    chains[name] = { ...chain, transactionOverrides: { gasPriceCap: null, ...chain.transactionOverrides } };
  }
  return {
    ...config,
    gasPaymentEnforcement: config.gasPaymentEnforcement ?? [{ type: 'none', matchingList: [] }],
    chains,
  };
}
