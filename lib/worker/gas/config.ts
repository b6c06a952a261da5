/**
 * The gas gate of a relayer config (docs/gas.md#gas-payment-enforcement): its
 * gasPaymentEnforcement and transactionGasLimit, the outbox's stored payments, and each origin
 * chain's InterchainGasPaymaster read over that chain's RPC URLs for top-ups.
 */
import { createPublicClient, fallback, http, TransactionReceiptNotFoundError, type Hex } from 'viem';
import { InvalidArgumentError } from '../../errors/classes.ts';
import type { GasBookStore, GasPaymentStore } from '../../gas/payment.ts';
import { effectiveTransactionGasLimit } from '../../config/stated-policy.ts';
import type { RelayerConfig } from '../../types.ts';
import { createGasGate, type OriginLog, type PaymentOrigin } from './gate.ts';
import type { DeliveryOutbox, DeliveryPolicy } from '../types.ts';

/**
 * The outbox a relayer worker is given: the delivery API and, for gas payment enforcement, its
 * payments and gas book (docs/gas.md#gas-already-spent).
 */
export type RelayerWorkerOutbox = DeliveryOutbox & Partial<GasPaymentStore> & Partial<GasBookStore>;

/** A JSON-RPC log as eth_getLogs answers it. */
interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  logIndex: string | null;
  transactionHash: string | null;
}

/** Each origin chain with an interchainGasPaymaster, read over its RPC URLs (gas payment top-ups). */
function paymentOrigins(config: RelayerConfig, timeoutMs: number): Map<number, PaymentOrigin> {
  const origins = new Map<number, PaymentOrigin>();
  for (const chain of Object.values(config.chains)) {
    if (!chain.interchainGasPaymaster) continue;
    const transports = chain.rpcUrls.map((url) => http(url, { retryCount: 0, timeout: timeoutMs }));
    const client = createPublicClient({
      transport: transports.length === 1 ? transports[0] : fallback(transports, { retryCount: 0 }),
    });
    origins.set(chain.domainId, {
      paymaster: chain.interchainGasPaymaster,
      async getLogs(filter) {
        const logs = (await client.request({ method: 'eth_getLogs', params: [filter as never] })) as RpcLog[];
        return logs.map(
          (l): OriginLog => ({
            address: l.address,
            topics: l.topics,
            data: l.data,
            logIndex: l.logIndex === null ? null : Number(l.logIndex),
            transactionHash: l.transactionHash,
          }),
        );
      },
      async blockOf(txHash) {
        const receipt = await client.getTransactionReceipt({ hash: txHash as Hex }).catch((error: unknown) => {
          if (error instanceof TransactionReceiptNotFoundError) return undefined;
          throw error;
        });
        return receipt?.blockNumber;
      },
      head: () => client.getBlockNumber({ cacheTime: 0 }),
      ...(chain.index?.chunk === undefined ? {} : { chunk: chain.index.chunk }),
    });
  }
  return origins;
}

/**
 * The loop's policy for `config`; undefined when it enforces nothing (no payment policy, and
 * `transactionGasLimit` lifted with "none"). An absent `transactionGasLimit` is the default
 * (docs/worker-configuration.md#stated-gas-policy).
 */
export function relayerGasGate(
  config: RelayerConfig,
  outbox: RelayerWorkerOutbox,
  timeoutMs: number,
): DeliveryPolicy | undefined {
  const enforcement = config.gasPaymentEnforcement ?? [];
  const transactionGasLimit = effectiveTransactionGasLimit(config);
  const { gasPayments, addGasPayments, setRequiredGas } = outbox;
  if (enforcement.length > 0 && (!gasPayments || !addGasPayments))
    throw new InvalidArgumentError('gasPaymentEnforcement needs an outbox that stores gas payments');
  return enforcement.length === 0 && transactionGasLimit === null
    ? undefined
    : createGasGate({
        enforcement,
        transactionGasLimit,
        gasMarginPercent: config.worker.gasMarginPercent,
        store: {
          gasPayments: (ids) => gasPayments?.call(outbox, ids) ?? [],
          addGasPayments: (payments) => addGasPayments?.call(outbox, payments) ?? 0,
          ...(setRequiredGas && { setRequiredGas: (id: string, gas: bigint) => setRequiredGas.call(outbox, id, gas) }),
        },
        origins: enforcement.length === 0 ? new Map() : paymentOrigins(config, timeoutMs),
      });
}
