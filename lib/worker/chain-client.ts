/**
 * The viem client of one configured chain (docs/delivery.md#transactions): its RPC URLs in order,
 * each request bounded, and the chain id from the config or, when the config has none, from the node.
 */
import {
  createPublicClient,
  defineChain,
  fallback,
  http,
  type Chain,
  type PublicClient,
  type Tokens,
  type Transport,
} from 'viem';
import { ConfigError } from '../errors.ts';
import type { RelayerConfig } from '../types.ts';

/** Per JSON-RPC request to a chain's node. */
export const RPC_TIMEOUT_MS = 10_000;

/** The viem client for one configured chain, over its RPC URLs in order. */
export async function chainClient(
  chain: RelayerConfig['chains'][string],
): Promise<{ publicClient: PublicClient; viemChain: Chain }> {
  const transports = chain.rpcUrls.map((url) => http(url, { retryCount: 0, timeout: RPC_TIMEOUT_MS }));
  const transport = transports.length === 1 ? transports[0] : fallback(transports, { retryCount: 0 });
  let id = chain.chainId;
  if (id === undefined) {
    try {
      id = await createPublicClient({ transport }).getChainId();
    } catch {
      throw new ConfigError(
        `chains.${chain.name}.chainId`,
        "not in the config, and the chain's RPC node did not tell it",
      );
    }
  }
  const viemChain = defineChain({
    id,
    name: chain.name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: chain.rpcUrls } },
  });
  // The general client types: tsc need not prove the specific ones assignable (seconds of typecheck).
  const publicClient = createPublicClient<Transport, Chain | undefined, undefined, undefined, Tokens | undefined>({
    chain: viemChain,
    transport,
    pollingInterval: 1_000,
  });
  return { publicClient, viemChain };
}
