/**
 * Gas payments in the in-memory outbox (docs/delivery.md#gas-payment-enforcement): by
 * `txHash:logIndex`, so each log is kept once; copies in and out, like the engine's rows.
 */
import type { GasPayment } from '../gas-payment.ts';
import { checkGasPayments } from './checks.ts';
import type { Outbox, Synchronous } from './types.ts';

export function createMemoryGasPayments(): Pick<Synchronous<Outbox>, 'addGasPayments' | 'gasPayments'> & {
  /** Stores `list` (already checked, as part of an enqueue); returns how many were new. */
  add(list: readonly GasPayment[]): number;
} {
  const payments = new Map<string, GasPayment>();
  const add = (list: readonly GasPayment[]): number => {
    let added = 0;
    for (const p of list) {
      const key = `${p.txHash}:${p.logIndex}`;
      if (payments.has(key)) continue;
      payments.set(key, { ...p });
      added++;
    }
    return added;
  };
  return {
    add,
    addGasPayments(list) {
      checkGasPayments(list);
      return add(list);
    },
    gasPayments(ids) {
      const wanted = new Set(ids.map((id) => String(id).toLowerCase()));
      return [...payments.values()].filter((p) => wanted.has(p.messageId)).map((p) => ({ ...p }));
    },
  };
}
