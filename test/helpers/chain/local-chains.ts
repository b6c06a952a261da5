/**
 * Local chains for the e2e tests and `npm run demo`: one anvil with a Hyperlane Mailbox for
 * domain 1 and the stand-ins (relay scenarios), or two anvils with a Mailbox each and Hyperlane's
 * CCTP V2 bridge between them (delivery).
 */
import { privateKeyToAccount } from 'viem/accounts';
import { ANVIL_CHAIN_ID, ANVIL_DEV_KEYS, startAnvil, type Anvil } from './anvil.ts';
import { deployCctpV2Route, type CctpV2Route } from './cctp-bridge.ts';
import { startCcipGateway, type CcipGateway } from './ccip-gateway.ts';
import type { Address } from 'viem';
import type { Destination } from '../../../lib/worker/types.ts';
import { createMailboxDestination } from '../../../lib/worker/chain/destination.ts';
import { createTransactionSender } from '../../../lib/worker/tx/sender.ts';
import { connectChain, type Chain } from './clients.ts';
import { deployHyperlane, type HyperlaneDeployment } from './hyperlane.ts';
import { deployStandIns, type StandIns } from './stand-ins.ts';

/** The Hyperlane domain of the anvil chain. */
export const ORIGIN_DOMAIN = 1;

export interface ChainNode {
  anvil: Anvil;
  chain: Chain;
  hyperlane: HyperlaneDeployment;
}

export interface LocalChain extends ChainNode {
  standIns: StandIns;
}

/** Starts anvil and deploys a Mailbox for `domain`; stops anvil again if a deployment fails. */
async function startNode(domain: number, chainId: number): Promise<ChainNode> {
  const anvil = await startAnvil({ chainId });
  try {
    const chain = connectChain(anvil.rpcUrl, chainId);
    return { anvil, chain, hyperlane: await deployHyperlane(chain, domain) };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

/** Starts anvil and deploys everything; stops anvil again if a deployment fails. */
export async function startLocalChain(): Promise<LocalChain> {
  const node = await startNode(ORIGIN_DOMAIN, ANVIL_CHAIN_ID);
  try {
    return { ...node, standIns: await deployStandIns(node.chain, node.hyperlane.mailbox) };
  } catch (error) {
    await node.anvil.stop();
    throw error;
  }
}

/** The destination chain of the two-chain set-up: its Hyperlane domain and (distinct) chain id. */
export const DESTINATION_DOMAIN = 2;
export const DESTINATION_CHAIN_ID = 31338;

export interface TwoChains {
  origin: ChainNode;
  destination: ChainNode;
  /** Hyperlane's CCTP V2 token bridge from origin to destination. */
  route: CctpV2Route;
  /**
   * The CCIP-read gateway standing in for Hyperlane's CCTP attestation service: the destination
   * router's OffchainLookup URL is `gateway.url`.
   */
  gateway: CcipGateway;
  /** Stops the gateway and both nodes. */
  stop(): Promise<void>;
}

/**
 * Two anvil nodes (origin: domain 1, chain id 31337; destination: domain 2, chain id 31338),
 * each with a Mailbox (NoopIsm default ISM), the CCTP V2 bridge between them and the local
 * CCIP-read gateway its destination router points to.
 */
export async function startTwoChains(): Promise<TwoChains> {
  const started = await Promise.allSettled([
    startNode(ORIGIN_DOMAIN, ANVIL_CHAIN_ID),
    startNode(DESTINATION_DOMAIN, DESTINATION_CHAIN_ID),
  ]);
  const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  let gateway: CcipGateway | undefined;
  const stop = async () => {
    await Promise.all([gateway?.close(), ...nodes.map((n) => n.anvil.stop())]);
  };
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const [origin, destination] = nodes;
    gateway = await startCcipGateway({ origin: origin.chain.publicClient, mailbox: origin.hyperlane.mailbox });
    const route = await deployCctpV2Route(origin, destination, { ccipReadUrls: [gateway.url] });
    gateway.setTransmitters([route.origin.transmitter]);
    return { origin, destination, route, gateway, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The relayer's chain names for the two-chain set-up. */
export const ORIGIN_CHAIN_NAME = 'anvil1';
export const DESTINATION_CHAIN_NAME = 'anvil2';

/** bin/relayer-server.ts's config for the two chains: relays from anvil1 to anvil2, into `db`. */
export function twoChainRelayerConfig(two: TwoChains, db: string) {
  return {
    chains: {
      [ORIGIN_CHAIN_NAME]: {
        domainId: ORIGIN_DOMAIN,
        chainId: two.origin.anvil.chainId,
        mailbox: two.origin.hyperlane.mailbox,
        cctpMessageTransmitter: two.route.origin.transmitter,
        rpcUrls: [{ http: two.origin.anvil.rpcUrl }],
      },
      [DESTINATION_CHAIN_NAME]: {
        domainId: DESTINATION_DOMAIN,
        chainId: two.destination.anvil.chainId,
        mailbox: two.destination.hyperlane.mailbox,
        cctpMessageTransmitter: two.route.destination.transmitter,
        rpcUrls: [{ http: two.destination.anvil.rpcUrl }],
        // 100 gwei, far above a local chain's fees: a worker states its fee ceiling per destination.
        transactionOverrides: { gasPriceCap: '100000000000' },
      },
    },
    relayChains: [DESTINATION_CHAIN_NAME],
    // A worker states who pays (docs/worker-configuration.md#stated-gas-policy): no InterchainGasPaymaster
    // here, so nobody; the worker warns about it at every start.
    gasPaymentEnforcement: [{ type: 'none' }],
    // The gateway listens on loopback, which a CCIP-read URL may name only as an allowed origin.
    worker: { ccipReadAllowOrigins: [new URL(two.gateway.url).origin] },
    db,
  };
}

/** The delivery worker's view of a node (lib/worker/chain/destination.ts), signing here as the dev account. */
export function deliveryDestination(node: ChainNode, name = DESTINATION_CHAIN_NAME): Destination {
  const sender = createTransactionSender({
    publicClient: node.chain.publicClient,
    account: privateKeyToAccount(ANVIL_DEV_KEYS[0]),
    pollMs: 25,
  });
  return createMailboxDestination({
    name,
    domain: node.hyperlane.domain,
    mailbox: node.hyperlane.mailbox as Address,
    publicClient: node.chain.publicClient,
    sender,
  });
}
