/**
 * A worker bench whose destination chain is reached through the lying JSON-RPC proxy
 * (test/helpers/chain/lying-rpc.ts), for the e2e files that judge the worker against lost and false
 * replies: its start and stop for a file's before and after hooks, and the config its workers read.
 */
import type { Address } from 'viem';
import { startLyingRpc, type LyingRpc } from './lying-rpc.ts';
import { DESTINATION, killWorkers, ORIGIN, startWorkerBench, type WorkerBench } from './worker-chain.ts';

export interface LyingBench {
  bench: WorkerBench;
  proxy: LyingRpc;
}

/** anvil with the contracts, and the proxy in front of it. */
export async function startLyingBench(): Promise<LyingBench> {
  const bench = await startWorkerBench();
  try {
    return { bench, proxy: await startLyingRpc(bench.anvil.rpcUrl) };
  } catch (error) {
    await bench.stop();
    throw error;
  }
}

/** Ends every worker process, the proxy and the bench (what was started of them). */
export async function stopLyingBench(lying: Partial<LyingBench>): Promise<void> {
  await killWorkers();
  await lying.proxy?.close();
  await lying.bench?.stop();
}

/**
 * A config whose origin chain is anvil and whose destination chain is reached through the proxy;
 * `chain` adds keys to both chains' entries, `top` to the config's top level.
 */
export function lyingConfig(
  { bench, proxy }: LyingBench,
  db: string,
  worker: Record<string, unknown>,
  extra: { chain?: Record<string, unknown>; top?: Record<string, unknown> } = {},
): string {
  const chain = (c: { domain: number }, mailbox: Address, url: string) => ({
    domainId: c.domain,
    chainId: bench.anvil.chainId,
    mailbox,
    rpcUrls: [{ http: url }],
    ...extra.chain,
  });
  return bench.writeConfig(db, worker, {
    ...extra.top,
    chains: {
      [ORIGIN.name]: chain(ORIGIN, bench.origin.mailbox, bench.anvil.rpcUrl),
      [DESTINATION.name]: chain(DESTINATION, bench.destination.mailbox, proxy.url),
    },
  });
}
