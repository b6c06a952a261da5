/**
 * Gas payment enforcement and the gas limit in the delivery loop
 * (docs/gas.md#gas-payment-enforcement): the pure policy of lib/gas/policy.ts applied to the
 * payments stored with a message, and to the ones made later (top-ups) that the origin chain's
 * InterchainGasPaymaster logged, found with `eth_getLogs` (topic1 = the message id) and stored.
 *
 * - Before metadata: the policy's cheap check (a payment exists; under `minimum`, enough wei once
 *   what our reverted transactions cost is taken off; under
 *   `onChainFeeQuoting`, some gas left after what was spent). An unpaid message costs no gateway
 *   request and no estimate.
 * - Once `process` is estimated: `onChainFeeQuoting`'s gas check (the gas paid for, less what the
 *   relayer's own reverted transactions already spent, docs/gas.md#gas-already-spent), the
 *   required gas kept with the message, and the gas limit to sign (processGasLimit: the estimate
 *   plus the margin, or the gas paid for and not spent, never above `transactionGasLimit`; an
 *   estimate above it is not sent).
 * The stored payments are read first; the origin chain is asked only when they fall short.
 */
import { DeliveryError } from '../../errors/worker.ts';
import {
  gasPaymentsIn,
  sumGasPayments,
  type GasBookStore,
  type GasPayment,
  type GasPaymentStore,
} from '../../gas/payment.ts';
import {
  checkGasPayment,
  checkGasPaymentForEstimate,
  createGasPolicySelector,
  processGasLimit,
  type GasPaid,
} from '../../gas/policy.ts';
import { parseHex } from '../../codec/hex.ts';
import { parseHyperlaneMessage } from '../../codec/message.ts';
import type { ClaimedMessage } from '../../outbox/index.ts';
import type { GasPaymentEnforcement } from '../../types.ts';
import { describe } from '../errors.ts';
import { createTopUpSearch, type OriginLog, type PaymentOrigin, type TopUpSearchOptions } from './top-ups.ts';
import type { DeliveryPolicy } from '../types.ts';

export type { OriginLog, PaymentOrigin } from './top-ups.ts';

export interface GasGateOptions {
  enforcement: readonly GasPaymentEnforcement[];
  /** No `process` above this much gas; null: no limit. */
  transactionGasLimit: bigint | null;
  /** The gas limit's margin over the estimate, in percent (worker.gasMarginPercent). */
  gasMarginPercent: number;
  /** Where payments are stored (the outbox), and the required gas when it keeps it. */
  store: GasPaymentStore & Partial<Pick<GasBookStore, 'setRequiredGas'>>;
  /** By origin domain. */
  origins: ReadonlyMap<number, PaymentOrigin>;
  /** How far one check searches for top-ups (lib/worker/gas/top-ups.ts). */
  topUps?: TopUpSearchOptions;
}

function shortfall(message: string): DeliveryError {
  return new DeliveryError('gas_payment', message);
}

export function createGasGate(o: GasGateOptions): DeliveryPolicy {
  const select = createGasPolicySelector(o.enforcement);
  const none: GasPaymentEnforcement = { type: 'none', matchingList: [] };
  const policyOf = (m: ClaimedMessage) => (o.enforcement.length === 0 ? none : select(parseHyperlaneMessage(m.raw)));

  const search = createTopUpSearch(o.topUps);
  /**
   * What beforeMetadata found paid for the message of an attempt, for its gasLimit: one read of the
   * stored payments per attempt, not two (a shortfall there reads them again, with the top-ups).
   */
  const paidThisAttempt = new WeakMap<ClaimedMessage, GasPaid>();

  async function stored(m: ClaimedMessage): Promise<GasPaid> {
    return sumGasPayments(await o.store.gasPayments([m.id]), m);
  }

  /** The payments of `m` in these logs of its origin's paymaster, as stored rows. */
  function paymentsIn(origin: PaymentOrigin, m: ClaimedMessage, logs: readonly OriginLog[]): GasPayment[] {
    const byTx = new Map<string, OriginLog[]>();
    for (const l of logs) {
      if (!l.transactionHash) continue;
      byTx.set(l.transactionHash, [...(byTx.get(l.transactionHash) ?? []), l]);
    }
    const found: GasPayment[] = [];
    for (const [tx, txLogs] of byTx) {
      const parsed = txLogs.map((l) => {
        const data = parseHex(l.data);
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
    return found;
  }

  /** Payments the origin's paymaster logged for `m` that are not stored yet: stored, then summed with the rest. */
  async function refreshed(m: ClaimedMessage): Promise<{ paid: GasPaid; note: string }> {
    const origin = o.origins.get(m.origin);
    if (!origin) return { paid: await stored(m), note: '' };
    try {
      await search(origin, m, async (logs) => {
        const found = paymentsIn(origin, m, logs);
        if (found.length > 0) await o.store.addGasPayments(found);
      });
      return { paid: await stored(m), note: '' };
    } catch (error) {
      // The origin's node failed: judged on what is stored, and said so.
      return { paid: await stored(m), note: ` (payments made after intake not checked: ${describe(error)})` };
    }
  }

  /**
   * The required gas of onChainFeeQuoting, kept with the message for GET /relay/{id}: written only
   * when it differs from what the claim read (one write per message while the estimate holds). It
   * is shown, never decided on, so a store that fails here does not fail the attempt (never rejects).
   */
  async function keepRequired(m: ClaimedMessage, required: bigint | undefined): Promise<void> {
    if (required === undefined || required === m.requiredGas || !o.store.setRequiredGas) return;
    try {
      await o.store.setRequiredGas(m.id, required);
    } catch {
      // The next estimate writes it again.
    }
  }

  return {
    async beforeMetadata(m) {
      const policy = policyOf(m);
      if (policy?.type === 'none') return;
      const spent = m.gasSpent ?? 0n;
      const spentWei = m.gasSpentWei ?? 0n;
      let paid = await stored(m);
      if (!checkGasPayment(policy, paid, spent, spentWei).ok) {
        const again = await refreshed(m);
        const check = checkGasPayment(policy, again.paid, spent, spentWei);
        if (!check.ok) throw shortfall(check.message + again.note);
        paid = again.paid;
      }
      paidThisAttempt.set(m, paid);
    },

    async gasLimit(m, simulated) {
      const policy = policyOf(m);
      let policyGasLimit = simulated.estimate;
      if (policy?.type !== 'none') {
        // What the relayer's own reverted transactions already used comes off the gas paid for.
        const spent = m.gasSpent ?? 0n;
        const spentWei = m.gasSpentWei ?? 0n;
        const paid = paidThisAttempt.get(m) ?? (await stored(m));
        let check = checkGasPaymentForEstimate(policy, paid, simulated.estimate, spent, spentWei);
        let note = '';
        if (!check.ok) {
          const again = await refreshed(m);
          note = again.note;
          check = checkGasPaymentForEstimate(policy, again.paid, simulated.estimate, spent, spentWei);
        }
        // Not awaited: it needs no answer, and on SQLite it shares the group commit of the
        // broadcast's journal record that follows.
        void keepRequired(m, check.requiredGas);
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
