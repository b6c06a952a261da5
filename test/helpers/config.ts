/** A RelayerConfig for tests, built literally (independent of the config parser). */
import type { RelayerConfig } from '../../lib/types.ts';
import { CCTP_V2_TRANSMITTER, MAILBOX } from './fixtures.ts';

export function testConfig(
  overrides: Partial<Omit<RelayerConfig, 'relayApi' | 'server' | 'worker'>> & {
    relayApi?: Partial<RelayerConfig['relayApi']>;
    server?: Partial<RelayerConfig['server']>;
    worker?: Partial<RelayerConfig['worker']>;
  } = {},
): RelayerConfig {
  const { relayApi, server, worker, ...rest } = overrides;
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
        mailbox: '0xeA87ae93Fa0019a82A727bfd3eBd1cFCa8f64f1D'.toLowerCase(),
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
    relayApi: {
      rateLimit: { burst: 100, perMinute: 100 },
      dedupWindowSeconds: 300,
      dedupCapacity: 10_000,
      receiptTimeoutSeconds: 10,
      maxMessagesPerTx: 10,
      ...relayApi,
    },
    server: {
      host: '127.0.0.1',
      port: 0,
      adminToken: null,
      corsOrigins: [],
      maxRelayBodyBytes: 65_536,
      maxMerkleBodyBytes: 16_777_216,
      ...server,
    },
    worker: {
      host: '127.0.0.1',
      port: 0,
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
      ...worker,
    },
  };
}
