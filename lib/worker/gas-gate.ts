/**
 * Gas payment enforcement and the gas limit in the delivery loop
 * (docs/delivery.md#gas-payment-enforcement): the pure policy of lib/gas-policy.ts applied to the
 * payments stored with a message, and to the ones made later (top-ups) that the origin chain's
 * InterchainGasPaymaster logged, found with `eth_getLogs` (topic1 = the message id) and stored.
 *
 * - Before metadata: the policy's cheap check (a payment exists; under `minimum`, enough wei). An
 *   unpaid message costs no gateway request and no estimate.
 * - Once `process` is estimated: `onChainFeeQuoting`'s gas check, and the gas limit to sign
 *   (processGasLimit: the estimate plus the margin, or the gas paid for, never above
 *   `transactionGasLimit`; an estimate above it is not sent).
 * The stored payments are read first; the origin chain is asked only when they fall short.
 */
import { DeliveryError } from '../errors.ts';
import {
  gasPaymentLogFilter,
  gasPaymentsIn,
  sumGasPayments,
  type GasPayment,
  type GasPaymentStore,
} from '../gas-payment.ts';
import {
  checkGasPayment,
  checkGasPaymentForEstimate,
  createGasPolicySelector,
  processGasLimit,
  type GasPaid,
} from '../gas-policy.ts';
import { hexToBytes } from '../hex.ts';
import { parseHyperlaneMessage } from '../message.ts';
import type { ClaimedMessage } from '../outbox/index.ts';
import type { GasPaymentEnforcement } from '../types.ts';
import { describe } from './errors.ts';
import type { DeliveryPolicy } from './types.ts';

/** One log as `eth_getLogs` gives it (viem's getLogs shape, the fields read here). */
export interface OriginLog {
  address: string;
  topics: readonly string[];
  data: string;
  logIndex: number | null;
  transactionHash: string | null;
}

/** An origin chain's paymaster and how to read it. */
export interface PaymentOrigin {
  /** The InterchainGasPaymaster, 20 bytes. */
  paymaster: string;
  /** eth_getLogs with the filter of gasPaymentLogFilter. */
  getLogs(filter: ReturnType<typeof gasPaymentLogFilter>): Promise<readonly OriginLog[]>;
  /** The block of the message's origin transaction (where to start looking); undefined: from the start. */
  blockOf?(txHash: string): Promise<bigint | undefined>;
}

export interface GasGateOptions {
  enforcement: readonly GasPaymentEnforcement[];
  /** No `process` above this much gas; null: no limit. */
  transactionGasLimit: bigint | null;
  /** The gas limit's margin over the estimate, in percent (worker.gasMarginPercent). */
  gasMarginPercent: number;
  /** Where payments are stored (the outbox). */
  store: GasPaymentStore;
  /** By origin domain. */
  origins: ReadonlyMap<number, PaymentOrigin>;
}

function shortfall(message: string): DeliveryError {
  return new DeliveryError('gas_payment', message);
}

export function createGasGate(o: GasGateOptions): DeliveryPolicy {
  const select = createGasPolicySelector(o.enforcement);
  const none: GasPaymentEnforcement = { type: 'none', matchingList: [] };
  const policyOf = (m: ClaimedMessage) => (o.enforcement.length === 0 ? none : select(parseHyperlaneMessage(m.raw)));

  /** The block of each waiting message's origin transaction, read once. */
  const fromBlocks = new Map<string, bigint>();

  async function stored(m: ClaimedMessage): Promise<GasPaid> {
    return sumGasPayments(await o.store.gasPayments([m.id]), m);
  }

  /** Payments the origin's paymaster logged for `m` that are not stored yet: stored, then summed with the rest. */
  async function refreshed(m: ClaimedMessage): Promise<{ paid: GasPaid; note: string }> {
    const origin = o.origins.get(m.origin);
    if (!origin) return { paid: await stored(m), note: '' };
    try {
      let from = fromBlocks.get(m.id);
      if (from === undefined) {
        from = await origin.blockOf?.(m.txHash).catch(() => undefined);
        if (from !== undefined) {
          // Bounded: the oldest is forgotten (read again if it is still waiting).
          if (fromBlocks.size >= 10_000) fromBlocks.delete(fromBlocks.keys().next().value as string);
          fromBlocks.set(m.id, from);
        }
      }
      const logs = await origin.getLogs(gasPaymentLogFilter(origin.paymaster, m, from ?? 'earliest'));
      const byTx = new Map<string, OriginLog[]>();
      for (const l of logs) {
        if (!l.transactionHash) continue;
        byTx.set(l.transactionHash, [...(byTx.get(l.transactionHash) ?? []), l]);
      }
      const found: GasPayment[] = [];
      for (const [tx, txLogs] of byTx) {
        const parsed = txLogs.map((l) => {
          const data = hexToBytes(l.data);
          if (!data) throw new DeliveryError('rpc', 'eth_getLogs answered a log with malformed data');
          return {
            address: l.address.toLowerCase(),
            topics: l.topics.map((t) => t.toLowerCase()),
            data,
            ...(l.logIndex === null ? {} : { logIndex: l.logIndex }),
          };
        });
        found.push(...gasPaymentsIn(parsed, tx, origin.paymaster, [m]));
      }
      if (found.length > 0) await o.store.addGasPayments(found);
      return { paid: await stored(m), note: '' };
    } catch (error) {
      // The origin's node failed: judged on what is stored, and said so.
      return { paid: await stored(m), note: ` (payments made after intake not checked: ${describe(error)})` };
    }
  }

  return {
    async beforeMetadata(m) {
      const policy = policyOf(m);
      if (policy?.type === 'none') return;
      if (checkGasPayment(policy, await stored(m)).ok) return;
      const { paid, note } = await refreshed(m);
      const check = checkGasPayment(policy, paid);
      if (!check.ok) throw shortfall(check.message + note);
    },

    async gasLimit(m, simulated) {
      const policy = policyOf(m);
      let policyGasLimit = simulated.estimate;
      if (policy?.type !== 'none') {
        let check = checkGasPaymentForEstimate(policy, await stored(m), simulated.estimate);
        let note = '';
        if (!check.ok) {
          const again = await refreshed(m);
          note = again.note;
          check = checkGasPaymentForEstimate(policy, again.paid, simulated.estimate);
        }
        if (!check.ok) throw shortfall(check.message + note);
        policyGasLimit = check.gasLimit;
      }
      const limit = processGasLimit({
        estimate: simulated.estimate,
        policyGasLimit,
        marginPercent: o.gasMarginPercent,
        transactionGasLimit: o.transactionGasLimit,
      });
      if (!limit.ok) throw new DeliveryError('gas', limit.message);
      return { estimate: simulated.estimate, gas: limit.gasLimit };
    },
  };
}
