/**
 * `relayer-api/worker`: the delivery worker, the outbox's consumer (docs/operations.md, Delivery
 * worker). `viem` is its one dependency, an optional peer dependency of the package: only this
 * entry point loads it.
 *
 * `createRelayerWorker` wires everything from a relayer config (the one relayer-server reads):
 * one destination per relay chain (viem clients over its RPC URLs, in order), the signer, the
 * loop and its metrics. `bin/relayer-worker` adds the ops server and signals.
 */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  fallback,
  http,
  nonceManager,
  type Account,
  type Chain,
  type Hex,
  type PublicClient,
  type Tokens,
  type Transport,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { Clock } from '../clock.ts';
import { silentLogger, type Logger } from '../log.ts';
import type { RelayerConfig } from '../types.ts';
import { createBasicSender } from './basic-sender.ts';
import { createDeliveryWorker, type DeliveryOutbox, type DeliveryWorker, type Destination } from './delivery.ts';
import { createMailboxDestination } from './destination.ts';
import { createWorkerMetrics, type WorkerMetrics } from './ops.ts';

export { createDeliveryWorker, formatAttemptState, readAttemptState, WORKER_DEFAULTS } from './delivery.ts';
export type { AttemptState, DeliveryEvents, DeliveryOutbox, DeliveryResult, DeliveryWorker, DeliveryWorkerOptions, Destination } from './delivery.ts';
export { createMailboxDestination, type MailboxDestinationOptions, type TransactionRequest, type TransactionSender } from './destination.ts';
export { DeliveryError, type DeliveryErrorKind } from './errors.ts';
export { buildMetadata, ISM_TYPE, MAILBOX_ABI, type MetadataOptions, type OffchainReader } from './metadata.ts';
export { createOpsServer, createWorkerMetrics, DELIVERY_BUCKETS, type OpsServer, type OpsServerOptions, type WorkerMetrics } from './ops.ts';

/** Per JSON-RPC request to a chain's node. */
const RPC_TIMEOUT_MS = 10_000;

export interface RelayerWorkerOptions {
  config: RelayerConfig;
  outbox: DeliveryOutbox;
  /** 0x + 64 hex: the key that signs Mailbox.process on every destination. */
  signerKey: Hex;
  logger?: Logger;
  clock?: Clock;
  random?: () => number;
}

export interface RelayerWorker {
  worker: DeliveryWorker;
  metrics: WorkerMetrics;
  destinations: ReadonlyMap<number, Destination>;
  /** The signer's address (safe to show). */
  address: Hex;
}

export function isPrivateKey(value: string): value is Hex {
  return /^0x[0-9a-fA-F]{64}$/.test(value);
}

/** viem clients for one configured chain, over its RPC URLs in order. */
async function chainClients(chain: RelayerConfig['chains'][string], account: Account): Promise<{ publicClient: PublicClient; walletClient: WalletClient; viemChain: Chain }> {
  const transports = chain.rpcUrls.map((url) => http(url, { retryCount: 0, timeout: RPC_TIMEOUT_MS }));
  const transport = transports.length === 1 ? transports[0] : fallback(transports, { retryCount: 0 });
  let id = chain.chainId;
  if (id === undefined) {
    try {
      id = await createPublicClient({ transport }).getChainId();
    } catch {
      throw new Error(`chain ${chain.name}: no chainId in the config and its RPC node did not tell it`);
    }
  }
  const viemChain = defineChain({ id, name: chain.name, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: chain.rpcUrls } } });
  // The general client types: tsc need not prove the specific ones assignable (seconds of typecheck).
  const publicClient = createPublicClient<Transport, Chain | undefined, undefined, undefined, Tokens | undefined>({ chain: viemChain, transport, pollingInterval: 1_000 });
  const walletClient = createWalletClient<Transport, Chain | undefined, Account | undefined, undefined, Tokens | undefined>({ chain: viemChain, transport, account });
  return { publicClient, walletClient, viemChain };
}

export async function createRelayerWorker(options: RelayerWorkerOptions): Promise<RelayerWorker> {
  const { config, outbox } = options;
  const logger = options.logger ?? silentLogger;
  if (!isPrivateKey(options.signerKey)) throw new Error('the signer key must be 0x followed by 64 hex digits');
  // viem's nonce manager: concurrent sends of this process get consecutive nonces.
  const account = privateKeyToAccount(options.signerKey, { nonceManager });
  const w = config.worker;
  const destinations = new Map<number, Destination>();
  for (const name of config.relayChains) {
    const chain = config.chains[name];
    const { publicClient, walletClient, viemChain } = await chainClients(chain, account);
    const sender = createBasicSender({ publicClient, walletClient, account, chain: viemChain, confirmations: w.confirmations, gasMarginPercent: w.gasMarginPercent });
    destinations.set(chain.domainId, createMailboxDestination({ name, domain: chain.domainId, mailbox: chain.mailbox as Hex, publicClient, sender }));
  }
  let worker: DeliveryWorker | undefined;
  const metrics = createWorkerMetrics({ inFlight: () => worker?.inFlight() ?? 0 });
  worker = createDeliveryWorker({
    outbox,
    destinations,
    clock: options.clock,
    random: options.random,
    logger,
    events: metrics.events,
    leaseMs: w.leaseSeconds * 1000,
    batch: w.batch,
    concurrency: w.concurrency,
    maxAttempts: w.maxAttempts,
    maxLeaseExpiries: w.maxLeaseExpiries,
    retryBaseMs: w.retryBaseSeconds * 1000,
    retryMaxMs: w.retryMaxSeconds * 1000,
    pendingDeadlineMs: w.pendingDeadlineHours * 3_600_000,
    pollMs: w.pollMs,
    stopGraceMs: w.stopGraceSeconds * 1000,
  });
  return { worker, metrics, destinations, address: account.address };
}
