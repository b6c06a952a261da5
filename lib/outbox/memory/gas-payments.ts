/**
 * Gas payments and the gas book in the in-memory outbox (docs/gas.md#gas-payment-enforcement,
 * #gas-already-spent): payments by `txHash:logIndex` and spends by `txHash`, so each is kept once;
 * a spend and the required gas are written on the message's row. Copies in and out, like the
 * engine's rows.
 */
import type { GasPayment } from '../../gas/payment.ts';
import { checkGasPayments, checkGasSpent, checkRequiredGas } from '../gas-checks.ts';
import type { Outbox, OutboxRecord, Synchronous } from '../types.ts';

type GasMethods = 'addGasPayments' | 'gasPayments' | 'addGasSpent' | 'setRequiredGas';

/**
 * `rowOf`: the engine's row of a (lower-case) id, written in place. `touched`: the messages whose
 * `gas_payment` changed (a new payment for their destination, a spend, the required gas), after
 * each call that changed some (docs/outbox.md#change-feed).
 */
export function createMemoryGasPayments(
  rowOf: (id: string) => OutboxRecord | undefined,
  touched: (ids: string[]) => void = () => {},
): Pick<Synchronous<Outbox>, GasMethods> & {
  /** Stores `list` (already checked, as part of an enqueue); returns how many were new. */
  add(list: readonly GasPayment[]): number;
  /** Retention: drops the payments and counted spends of messages `ids` (pruned). */
  forget(ids: ReadonlySet<string>): void;
} {
  const payments = new Map<string, GasPayment>();
  /** The transactions whose spend is counted, and their message. */
  const spent = new Map<string, string>();
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
    forget(ids) {
      for (const [key, p] of payments) if (ids.has(p.messageId)) payments.delete(key);
      for (const [hash, id] of spent) if (ids.has(id)) spent.delete(hash);
    },
    addGasPayments(list) {
      checkGasPayments(list);
      const fresh = list.filter((p) => !payments.has(`${p.txHash}:${p.logIndex}`));
      const added = add(list);
      touched([
        ...new Set(fresh.filter((p) => rowOf(p.messageId)?.destination === p.destination).map((p) => p.messageId)),
      ]);
      return added;
    },
    gasPayments(ids) {
      const wanted = new Set(ids.map((id) => String(id).toLowerCase()));
      return [...payments.values()].filter((p) => wanted.has(p.messageId)).map((p) => ({ ...p }));
    },
    addGasSpent(spends) {
      checkGasSpent(spends);
      let added = 0;
      const ids = new Set<string>();
      for (const s of spends) {
        const row = rowOf(s.messageId);
        if (row === undefined || spent.has(s.txHash)) continue;
        spent.set(s.txHash, row.id);
        row.gasSpent += s.gasUsed;
        row.gasSpentWei += s.cost;
        added++;
        ids.add(s.messageId);
      }
      touched([...ids]);
      return added;
    },
    setRequiredGas(id, gas) {
      const row = rowOf(checkRequiredGas(id, gas));
      if (row === undefined || row.requiredGas === gas) return false;
      row.requiredGas = gas;
      touched([row.id]);
      return true;
    },
  };
}
