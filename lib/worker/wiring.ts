/**
 * `createRelayerWorker` wires everything from a relayer config (the one relayer-server reads):
 * one destination per relay chain (viem clients over its RPC URLs, in order), the signer, the
 * loop and its metrics. `bin/relayer-worker` adds the ops server and signals.
 */
import { createPublicClient, http, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { ChangeFeed } from '../outbox/change-feed.ts';
import { chainClient, RPC_TIMEOUT_MS } from './chain/client.ts';
import { isHexOfLength } from '../codec/hex.ts';
import { redactUrls, urlForLog } from '../redact.ts';
import { systemClock, type Clock } from '../clock.ts';
import { InvalidArgumentError } from '../errors/classes.ts';
import { silentLogger, type Logger } from '../log.ts';
import { assertStatedPolicy, effectiveTransactionGasLimit, policyOptOuts } from '../config/stated-policy.ts';
import type { MerkleStore, RelayerConfig } from '../types.ts';
import type { LocalAddresses, Resolver } from './ccip/read.ts';
import { createMailboxDestination } from './chain/destination.ts';
import { describe } from './errors.ts';
import { workerLookups } from './ccip/lookups.ts';
import { relayerGasGate, type RelayerWorkerOutbox } from './gas/config.ts';
import { createDeliveryWorker, type DeliveryWorker } from './loop/worker.ts';
import { createWorkerWatch, type WatchedChain, type WorkerWatch } from './chain/watch.ts';
import { createWorkerMetrics, type WorkerMetrics } from './ops/server.ts';
import { createSignerReporter } from './ops/signer-metrics.ts';
import { workerMultisig } from './ism/worker-multisig.ts';
import { awaitingSignaturesGauge } from './ism/awaiting.ts';
import { createTransactionSender } from './tx/sender.ts';
import { workerSignerHolds, type NamedSignerKey, type SignerHolds } from './chain/signer-lease.ts';
import { signerView, type SignerView, type SignerViewChain } from './ops/signers-view.ts';
import type { Destination } from './types.ts';

export interface RelayerWorkerOptions {
  config: RelayerConfig;
  /** With gasPayments/addGasPayments (every engine has them) when gasPaymentEnforcement is set. */
  outbox: RelayerWorkerOutbox;
  /** 0x + 64 hex: the key that signs Mailbox.process on every destination. */
  signerKey: Hex;
  logger?: Logger;
  clock?: Clock;
  random?: () => number;
  /**
   * Replaces the connection to CCIP-read gateways (an embedder's fetch); default node:http(s) to
   * the address checked. Either way a gateway at a non-public address is refused first.
   */
  fetch?: typeof fetch;
  /** Resolves CCIP-read gateway host names (tests inject one); default the system resolver. */
  resolve?: Resolver;
  /** This host's own interface addresses, refused as CCIP-read gateways (tests inject them); default node:os's. */
  localAddresses?: LocalAddresses;
  /** Queued + delivering, for the heartbeat (the outbox's depth()). */
  depth?: () => Promise<number>;
  /** This process in the signer leases (docs/transactions.md#one-worker-per-key); default host, pid and a random suffix. */
  holder?: string;
  /**
   * What wakes the loop on new work (docs/delivery.md#throughput): default the outbox's change
   * feed (`outbox.changes`); null polls every worker.pollMs only.
   */
  changes?: ChangeFeed | null;
  /** The stored merkle tree insertions (relayer-worker passes its store's): MerkleRootMultisig proofs (docs/isms.md). */
  merkle?: MerkleStore;
}

export interface RelayerWorker {
  worker: DeliveryWorker;
  metrics: WorkerMetrics;
  destinations: ReadonlyMap<number, Destination>;
  /** The signer's address (safe to show). */
  address: Hex;
  /** Chain ids and balances of the destinations, and the heartbeat (lib/worker/chain/watch.ts). */
  watch: WorkerWatch;
  /** Its signer leases (docs/transactions.md#one-worker-per-key): run() waits for all; a loss stops it (lost() says why). */
  signers: Pick<SignerHolds, 'holder' | 'lost' | 'lease'>;
  /** The signers' state on every destination (docs/workers.md#signers): what `GET /signers` serves. */
  signersView(): Promise<SignerView[]>;
}

/**
 * A gateway URL as logged: scheme, host and path (its {sender}/{data} template included), without
 * credentials or query string. Deprecated: the same as `urlForLog` of `relayer-api`.
 */
export const gatewayForLog: (url: string) => string = urlForLog;

/** 0x and 64 hex digits (lib/codec/hex.ts's rule for 32 bytes; relayer-worker checks it before loading viem). */
export function isPrivateKey(value: string): value is Hex {
  return isHexOfLength(value, 32);
}

export async function createRelayerWorker(options: RelayerWorkerOptions): Promise<RelayerWorker> {
  const { config, outbox } = options;
  const logger = options.logger ?? silentLogger;
  if (!isPrivateKey(options.signerKey))
    throw new InvalidArgumentError('the signer key must be 0x followed by 64 hex digits');
  // No silent unsafe default (docs/worker-configuration.md#stated-gas-policy): refused before any
  // connection, and every explicit opt-out warned at every start.
  assertStatedPolicy(config);
  for (const { key, effect } of policyOptOuts(config)) logger.warn('unsafe choice stated', { key, effect });
  const account = privateKeyToAccount(options.signerKey);
  const w = config.worker;
  // Slow gateways never hold every slot: lookups leave their slot after ccipReadHoldSeconds.
  const lookups = workerLookups(w, {
    fetch: options.fetch,
    resolve: options.resolve,
    localAddresses: options.localAddresses,
    clock: options.clock ?? systemClock,
    logger,
  });
  const destinations = new Map<number, Destination>();
  const watched: WatchedChain[] = [];
  let worker: DeliveryWorker | undefined;
  const metrics = createWorkerMetrics({ inFlight: () => worker?.inFlight() ?? 0 });
  const signers = createSignerReporter(metrics.registry, logger);
  const signer = account.address.toLowerCase();
  const keys: NamedSignerKey[] = [];
  const viewChains: SignerViewChain[] = [];
  // Nothing is broadcast for a chain without this signer's lease there (docs/transactions.md#one-worker-per-key).
  let stop = async () => {};
  const holds = workerSignerHolds({ ...options, logger, keys, onLost: () => void stop() });
  // One client per chain, shared by its destination and its checkpoints' origin reads.
  const clients = new Map<string, ReturnType<typeof chainClient>>();
  const clientOf = (chain: RelayerConfig['chains'][string]) => {
    const found = clients.get(chain.name) ?? chainClient(chain, (id) => holds.mayBroadcast(id, signer));
    clients.set(chain.name, found);
    found.catch(() => clients.delete(chain.name));
    return found;
  };
  const multisig = workerMultisig(config, {
    registry: metrics.registry,
    merkle: options.merkle,
    clock: options.clock ?? systemClock,
    logger,
    client: async (chain) => (await clientOf(chain)).publicClient,
  });
  // Forgotten when not built again within two of the longest pending polls and a lookup budget.
  const forgetMs = (2 * w.pendingRetryMaxSeconds + w.ccipReadBudgetSeconds) * 1000;
  const onMetadata = awaitingSignaturesGauge(metrics.registry, { clock: options.clock ?? systemClock, forgetMs });
  for (const name of config.relayChains) {
    const chain = config.chains[name];
    const { publicClient, viemChain } = await clientOf(chain);
    keys.push({ name, chainId: viemChain.id, signer });
    viewChains.push({ name, chainId: viemChain.id, publicClient });
    // Each URL asked on its own: a fallback transport would hide a second node of another chain.
    watched.push({
      name,
      chainId: viemChain.id,
      urls: chain.rpcUrls.map((url) => ({
        origin: redactUrls(url),
        chainId: () =>
          createPublicClient({ transport: http(url, { retryCount: 0, timeout: RPC_TIMEOUT_MS }) }).getChainId(),
      })),
      balance: () => publicClient.getBalance({ address: account.address }),
    });
    // One sender per chain on one client: its nonce book is shared by every concurrent send, and
    // every broadcast is recorded in the outbox's journal first.
    const sender = createTransactionSender({
      publicClient,
      account,
      chain: viemChain,
      journal: holds.journal(outbox),
      clock: options.clock,
      onRecovered: (nonce, outcome, detail) =>
        logger.info('journal', { destination: name, nonce, outcome, detail: describe(detail) }),
      gasMarginPercent: w.gasMarginPercent,
      replaceAfterMs: w.replaceAfterSeconds * 1000,
      replaceAfterBlocks: w.replaceAfterBlocks,
      onEvent: signers.onEvent(name),
      confirmations: w.confirmations,
      gasPriceCap: chain.transactionOverrides?.gasPriceCap ?? undefined,
      maxGas: effectiveTransactionGasLimit(config) ?? undefined,
    });
    signers.watch({ destination: name, signer: account.address.toLowerCase(), lowestOpen: sender.lowestOpen });
    destinations.set(
      chain.domainId,
      createMailboxDestination({
        name,
        domain: chain.domainId,
        mailbox: chain.mailbox as Hex,
        publicClient,
        sender,
        offchain: lookups.read,
        multisig,
        onMetadata,
        clock: options.clock,
      }),
    );
  }
  const policy = relayerGasGate(config, outbox, RPC_TIMEOUT_MS);
  const loop = createDeliveryWorker({
    outbox,
    destinations,
    clock: options.clock,
    random: options.random,
    logger,
    events: metrics.events,
    ...w,
    policy,
    changes: options.changes,
  });
  // Nothing starts before every signer lease is held; background gateway lookups and the leases end with the worker.
  const stopping = new AbortController();
  stop = () => {
    stopping.abort();
    return loop.stop().finally(() => Promise.all([lookups.close(), holds.release()]));
  };
  worker = {
    ...loop,
    run: async () => ((await holds.acquire(stopping.signal)) ? loop.run() : undefined),
    runOnce: async () => ((await holds.acquire(stopping.signal)) ? loop.runOnce() : []),
    stop,
  };
  const watch = createWorkerWatch({
    chains: watched,
    clock: options.clock ?? systemClock,
    logger,
    minBalanceWei: BigInt(w.minSignerBalanceGwei) * 1_000_000_000n,
    intervalMs: w.heartbeatSeconds * 1000,
    depth: options.depth,
    inFlight: () => worker?.inFlight() ?? 0,
  });
  metrics.registry.gauge(
    'relayer_worker_ccip_background_lookups',
    'CCIP-read lookups of slow gateways going on in the background now, outside the delivery slots.',
    () => lookups.running(),
  );
  metrics.registry.gauge(
    'relayer_worker_signer_balance_wei',
    "The signer's balance on each destination at the last check (start, then every heartbeat), in wei.",
    () => watch.balances(),
  );
  const signersView = () =>
    signerView({ outbox, chains: viewChains, signers: [signer], now: (options.clock ?? systemClock).now() });
  return { worker, metrics, destinations, address: account.address, watch, signers: holds, signersView };
}
