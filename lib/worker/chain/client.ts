/**
 * The viem client of one configured chain (docs/transactions.md#transactions): its RPC URLs in order,
 * each request bounded, the chain id from the config or, when the config has none, from the node,
 * and `eth_sendRawTransaction` refused unless `mayBroadcast` says this worker holds the signer's
 * lease there (docs/transactions.md#one-worker-per-key).
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
import { ConfigError } from '../../errors/classes.ts';
import type { RelayerConfig } from '../../types.ts';
import { sendGuard } from './signer-lease.ts';

/** Per JSON-RPC request to a chain's node. */
export const RPC_TIMEOUT_MS = 10_000;

/** The viem client for one configured chain, over its RPC URLs in order. */
export async function chainClient(
  chain: RelayerConfig['chains'][string],
  mayBroadcast: (chainId: number) => boolean = () => true,
): Promise<{ publicClient: PublicClient; viemChain: Chain }> {
  const transports = chain.rpcUrls.map((url) => http(url, { retryCount: 0, timeout: RPC_TIMEOUT_MS }));
  const any = transports.length === 1 ? transports[0] : fallback(transports, { retryCount: 0 });
  let known: number | undefined;
  const transport = sendGuard(any, () => known !== undefined && mayBroadcast(known));
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
  known = id;
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
