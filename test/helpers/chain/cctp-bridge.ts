/**
 * Hyperlane's real CCTP V2 token bridge between two chains: `TokenBridgeCctpV2` (bytecode from
 * the @hyperlane-xyz/core typechain factory, behind OpenZeppelin's TransparentUpgradeableProxy
 * as Hyperlane deploys it: its constructor disables initializers), the package's MockToken and
 * MockCircleMessageTransmitter in V2 format (`setVersion(1)`) on both sides, the package's
 * MockCircleTokenMessenger on the destination and CctpV2TokenMessengerStandIn on the origin
 * (the package's messenger never calls the transmitter, so no MessageSent; see the .sol file).
 *
 * A transfer then has production's call graph on the origin: transferRemote → depositForBurn →
 * sendMessage (`MessageSent`, a CCTP V2 message with a BurnMessageV2 body) and → Mailbox.dispatch
 * (`Dispatch`, `DispatchId`). On the destination the router is its own ISM (a CCIP-read ISM
 * whose `verify` takes `abi.encode(cctpMessage, attestation)` and hands it to the transmitter).
 */
import { encodeFunctionData, pad, type Address, type Hash } from 'viem';
import { DEV_ACCOUNT, type Chain } from './clients.ts';
import { hyperlaneArtifact, mailboxLogs, type HyperlaneDeployment } from './hyperlane.ts';
import { compiledContract } from './solidity.ts';

/** Circle's domains (0 Ethereum, 6 Base). The package's mock transmitter always sends from 0. */
export const CIRCLE_ORIGIN_DOMAIN = 0;
export const CIRCLE_DESTINATION_DOMAIN = 6;
/** CCTP V2 "fast" finality, what Hyperlane's CCTP V2 fast routes are deployed with. */
export const MIN_FINALITY_THRESHOLD = 1000;
/**
 * The proxies' admin. A transparent proxy never forwards its admin's calls, so it must not be
 * the dev account that configures the router; nothing here upgrades, so any other address does.
 */
const PROXY_ADMIN: Address = '0x000000000000000000000000000000000000a11c';
/**
 * The routers' CCIP-read URL at initialization (initialize refuses an empty list). A route that
 * is delivered through CCIP-read gets its gateway's URLs with `setCcipReadUrls` (the real
 * `setUrls`), as Hyperlane points production routers at its CCTP attestation service.
 */
const UNSET_ATTESTATION_URL = 'http://127.0.0.1/cctp-attestation-not-set';

export const bridgeArtifacts = {
  router: () => hyperlaneArtifact('token/TokenBridgeCctpV2'),
  token: () => hyperlaneArtifact('mock/MockToken'),
  transmitter: () => hyperlaneArtifact('mock/MockCircleMessageTransmitter'),
  tokenMessenger: () => hyperlaneArtifact('mock/MockCircleTokenMessenger'),
  proxy: () =>
    hyperlaneArtifact(
      '@openzeppelin/contracts/proxy/transparent/TransparentUpgradeableProxy.sol/TransparentUpgradeableProxy',
    ),
};

export interface CctpV2Side {
  /** The token bridge (the proxy): sender on the origin, recipient and ISM on the destination. */
  router: Address;
  token: Address;
  /** The CCTP V2 MessageTransmitter: the relayer's `cctpMessageTransmitter` on the origin. */
  transmitter: Address;
  tokenMessenger: Address;
}

export interface CctpV2Route {
  origin: CctpV2Side;
  destination: CctpV2Side;
}

interface Side {
  chain: Chain;
  hyperlane: HyperlaneDeployment;
}

async function send(
  chain: Chain,
  address: Address,
  abi: readonly unknown[],
  fn: string,
  args: readonly unknown[],
): Promise<void> {
  const receipt = await chain.callAndWait(address, abi as never, fn, args);
  if (receipt.status !== 'success') throw new Error(`${fn} reverted: ${receipt.transactionHash}`);
}

/** Token, V2 transmitter, the given messenger and a proxied, initialized TokenBridgeCctpV2. */
async function deploySide(
  side: Side,
  deployMessenger: (token: Address, transmitter: Address) => Promise<Address>,
): Promise<CctpV2Side> {
  const { chain, hyperlane } = side;
  const tokenA = bridgeArtifacts.token();
  const transmitterA = bridgeArtifacts.transmitter();
  const routerA = bridgeArtifacts.router();
  const token = await chain.deploy(tokenA.abi, tokenA.bytecode);
  const transmitter = await chain.deploy(transmitterA.abi, transmitterA.bytecode, [token]);
  await send(chain, transmitter, transmitterA.abi, 'setVersion', [1]);
  const tokenMessenger = await deployMessenger(token, transmitter);
  const implementation = await chain.deploy(routerA.abi, routerA.bytecode, [
    token,
    hyperlane.mailbox,
    transmitter,
    tokenMessenger,
    0n, // maxFeePpm: no Circle fee, so the burn equals the amount sent
    MIN_FINALITY_THRESHOLD,
  ]);
  // hook 0: the Mailbox's default hook (MerkleTreeHook) and its required hook run on dispatch.
  const initialize = encodeFunctionData({
    abi: routerA.abi,
    functionName: 'initialize',
    args: ['0x0000000000000000000000000000000000000000', DEV_ACCOUNT, [UNSET_ATTESTATION_URL]],
  });
  const proxyA = bridgeArtifacts.proxy();
  const router = await chain.deploy(proxyA.abi, proxyA.bytecode, [implementation, PROXY_ADMIN, initialize]);
  return { router, token, transmitter, tokenMessenger };
}

/**
 * The router's OffchainLookup URLs (AbstractCcipReadIsm.setUrls, owner only: the dev account).
 * The destination router is the ISM of messages from the origin, so its URLs are where a relayer
 * asks for their attestation.
 */
export async function setCcipReadUrls(chain: Chain, router: Address, urls: readonly string[]): Promise<void> {
  await send(chain, router, bridgeArtifacts.router().abi, 'setUrls', [urls]);
}

/**
 * Deploys both sides and enrolls each router with the other (Hyperlane and Circle domains).
 * With `ccipReadUrls`, the destination router's OffchainLookup points there.
 */
export async function deployCctpV2Route(
  origin: Side,
  destination: Side,
  opts: { ccipReadUrls?: readonly string[] } = {},
): Promise<CctpV2Route> {
  const messengerA = bridgeArtifacts.tokenMessenger();
  const dest = await deploySide(destination, async (token) => {
    const messenger = await destination.chain.deploy(messengerA.abi, messengerA.bytecode, [token]);
    await send(destination.chain, messenger, messengerA.abi, 'setVersion', [1]);
    return messenger;
  });
  const standIn = compiledContract('CctpV2TokenMessengerStandIn');
  const orig = await deploySide(origin, (_token, transmitter) =>
    origin.chain.deploy(standIn.abi, standIn.bytecode, [transmitter, pad(dest.tokenMessenger)]),
  );
  const routerAbi = bridgeArtifacts.router().abi;
  await send(origin.chain, orig.router, routerAbi, 'enrollRemoteRouter', [
    destination.hyperlane.domain,
    pad(dest.router),
  ]);
  await send(origin.chain, orig.router, routerAbi, 'addDomain', [
    destination.hyperlane.domain,
    CIRCLE_DESTINATION_DOMAIN,
  ]);
  await send(destination.chain, dest.router, routerAbi, 'enrollRemoteRouter', [
    origin.hyperlane.domain,
    pad(orig.router),
  ]);
  await send(destination.chain, dest.router, routerAbi, 'addDomain', [origin.hyperlane.domain, CIRCLE_ORIGIN_DOMAIN]);
  if (opts.ccipReadUrls) await setCcipReadUrls(destination.chain, dest.router, opts.ccipReadUrls);
  return { origin: orig, destination: dest };
}

/**
 * A user's transfer: mint `amount` of the origin token to the dev account, approve the router,
 * then `transferRemote`. Returns the transferRemote transaction's hash (not waited for, so a test
 * can hold it unmined).
 */
export async function sendBridgeTransfer(
  chain: Chain,
  route: CctpV2Route,
  t: { destination: number; recipient: Address; amount: bigint },
): Promise<Hash> {
  const tokenAbi = bridgeArtifacts.token().abi;
  await send(chain, route.origin.token, tokenAbi, 'mint', [DEV_ACCOUNT, t.amount]);
  await send(chain, route.origin.token, tokenAbi, 'approve', [route.origin.router, t.amount]);
  return chain.call(route.origin.router, bridgeArtifacts.router().abi, 'transferRemote', [
    t.destination,
    pad(t.recipient),
    t.amount,
  ]);
}

/**
 * A transfer as a user makes it, mined, and the one Hyperlane message it dispatched: the
 * transaction to relay and the message id POST /relay should answer (npm run demo, devnet:send).
 */
export async function sendBridgeTransferMessage(
  chain: Chain,
  route: Pick<CctpV2Route, 'origin'>,
  mailbox: Address,
  t: { destination: number; recipient: Address; amount: bigint },
): Promise<{ hash: Hash; id: Hash; receipt: Awaited<ReturnType<Chain['receipt']>> }> {
  const hash = await sendBridgeTransfer(chain, route as CctpV2Route, t);
  const receipt = await chain.receipt(hash);
  const { ids } = mailboxLogs(receipt, mailbox);
  if (receipt.status !== 'success' || ids.length !== 1)
    throw new Error(`the transfer ${hash} dispatched ${ids.length} messages (status ${receipt.status})`);
  return { hash, id: ids[0].toLowerCase() as Hash, receipt };
}

/**
 * Runtime code that reverts on every call (PUSH1 0 PUSH1 0 REVERT), deployed by its init code: a
 * Hyperlane recipient whose `handle` always reverts (its ISM is the Mailbox's default, since the
 * `interchainSecurityModule()` call reverts too). npm run devnet deploys one on the destination.
 */
export const ALWAYS_REVERTS_INIT_CODE = '0x6460006000fd6000526005601bf3' as const;

/**
 * Points the origin router's remote router for `domain` at `recipient` (owner only: the dev
 * account), so the next transfer's message goes there; returns a function that points it back.
 */
export async function redirectRemoteRouter(
  chain: Chain,
  originRouter: Address,
  domain: number,
  recipient: Address,
  restore: Address,
): Promise<() => Promise<void>> {
  const abi = bridgeArtifacts.router().abi;
  await send(chain, originRouter, abi, 'enrollRemoteRouter', [domain, pad(recipient)]);
  return () => send(chain, originRouter, abi, 'enrollRemoteRouter', [domain, pad(restore)]);
}
