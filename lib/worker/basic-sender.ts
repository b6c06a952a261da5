/**
 * A plain transaction sender for the delivery loop: gas estimated plus a margin, fees and nonce
 * left to the node through viem, the receipt awaited with its confirmations. It does not replace
 * a stuck transaction; lib/worker/transactions.ts supersedes it.
 */
import { BaseError, ContractFunctionRevertedError, decodeErrorResult, parseAbi, type Account, type Chain, type PublicClient, type WalletClient } from 'viem';
import type { TransactionSender } from './destination.ts';
import { revertData } from './metadata.ts';

export class BasicTransactionError extends Error {
  override name = 'TransactionError';
  readonly kind: 'revert' | 'rpc' | 'timeout';
  readonly reason?: string;
  constructor(kind: 'revert' | 'rpc' | 'timeout', message: string, reason?: string) {
    super(message);
    this.kind = kind;
    this.reason = reason;
  }
}

const ERROR_ABI = parseAbi(['error Error(string)']);

function reasonOf(error: unknown): string | undefined {
  const data = revertData(error);
  if (data && data.startsWith('0x08c379a0')) {
    try {
      return decodeErrorResult({ abi: ERROR_ABI, data }).args[0];
    } catch {
      // not an Error(string)
    }
  }
  if (error instanceof BaseError) {
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
    if (reverted?.reason) return reverted.reason;
    const details = (error.walk() as { details?: string }).details;
    const m = details?.match(/execution reverted:?\s*(.*)$/i);
    if (m) return m[1] || 'execution reverted';
  }
  const text = String((error as Error)?.message ?? '');
  const m = text.match(/execution reverted:?\s*([^\n]*)/i);
  return m ? m[1] || 'execution reverted' : undefined;
}

export function createBasicSender(options: {
  publicClient: PublicClient;
  walletClient: WalletClient;
  account: Account;
  chain: Chain;
  confirmations?: number;
  gasMarginPercent?: number;
  pollMs?: number;
}): TransactionSender {
  const { publicClient, walletClient, account, chain } = options;
  const confirmations = options.confirmations ?? 1;
  const margin = BigInt(options.gasMarginPercent ?? 20);

  async function estimate(request: { to: `0x${string}`; data: `0x${string}`; value?: bigint }): Promise<bigint> {
    try {
      return await publicClient.estimateGas({ account, to: request.to, data: request.data, value: request.value });
    } catch (error) {
      const reason = reasonOf(error);
      if (reason !== undefined) throw new BasicTransactionError('revert', `reverted: ${reason}`, reason);
      throw new BasicTransactionError('rpc', 'the node did not estimate the transaction');
    }
  }

  return {
    simulate: estimate,
    async send(request, sendOptions) {
      const gas = ((await estimate(request)) * (100n + margin)) / 100n;
      let hash;
      try {
        hash = await walletClient.sendTransaction({ account, chain, to: request.to, data: request.data, value: request.value, gas });
      } catch {
        throw new BasicTransactionError('rpc', 'the node refused the transaction');
      }
      for (;;) {
        await sendOptions?.onWait?.();
        const receipt = await publicClient.getTransactionReceipt({ hash }).catch(() => null);
        if (receipt) {
          const head = await publicClient.getBlockNumber({ cacheTime: 0 });
          if (head - receipt.blockNumber + 1n >= BigInt(confirmations)) return { hash, receipt };
        }
        await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
      }
    },
  };
}
