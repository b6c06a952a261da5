/**
 * The configuration tests use, built literally (independent of the config parser):
 * - `DOCUMENTED_DEFAULTS`: the defaults docs/configuration.md documents, written out once here so
 *   that test/config.test.ts compares the parser with the documentation, not with itself;
 * - `testConfig(overrides)`: a RelayerConfig with two chains, those defaults, port 0 and :memory:;
 * - `fileChains(rpc)`: the `chains` section of a config file as an operator writes it, for the
 *   tests that start the real binaries.
 */
import type { RelayerConfig } from '../../lib/types.ts';
import { CCTP_V2_TRANSMITTER, MAILBOX } from './fixtures.ts';

/** Base's Mailbox (registry chains/base/addresses.yaml), EIP-55 as an operator pastes it. */
export const BASE_MAILBOX = '0xeA87ae93Fa0019a82A727bfd3eBd1cFCa8f64f1D';

/** Frozen to the leaves: a test that changed a shared default would change every other test's. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

/** Every default of docs/configuration.md#the-configuration-file and docs/configuration.md#the-worker-section. */
export const DOCUMENTED_DEFAULTS: Readonly<Pick<RelayerConfig, 'relayApi' | 'server' | 'worker' | 'db'>> = deepFreeze({
  relayApi: {
    rateLimit: { burst: 100, perMinute: 100 },
    dedupWindowSeconds: 300,
    dedupCapacity: 10_000,
    receiptTimeoutSeconds: 10,
    maxMessagesPerTx: 10,
  },
  server: {
    host: '127.0.0.1',
    port: 9090,
    adminToken: null,
    corsOrigins: [],
    maxRelayBodyBytes: 65_536,
    maxMerkleBodyBytes: 16_777_216,
  },
  worker: {
    host: '127.0.0.1',
    port: 9091,
    batch: 10,
    concurrency: 4,
    leaseSeconds: 60,
    maxAttempts: 5,
    maxLeaseExpiries: 5,
    confirmations: 1,
    pendingDeadlineHours: 48,
    pendingRetrySeconds: 5,
    pendingRetryMaxSeconds: 60,
    retryBaseSeconds: 5,
    retryMaxSeconds: 600,
    pollMs: 1_000,
    gasMarginPercent: 20,
    replaceAfterSeconds: 60,
    ccipReadTimeoutSeconds: 10,
    stopGraceSeconds: 30,
  },
  db: './relayer.db',
});

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
