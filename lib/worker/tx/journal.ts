/**
 * Where the transaction sender records a broadcast before making it (docs/transactions.md#the-transaction-journal):
 * the outbox's journal, the same methods on every engine (lib/outbox.ts). A sender built without
 * one (a test, an embedder sending its own transactions) keeps an in-process journal: nothing
 * survives its process, and no lease fences its first broadcasts.
 */
import type { GasSpend } from '../../gas/payment.ts';
import type { Broadcast, BroadcastFence, JournalEntry, NonceSlot, NonceSlotOutcome } from '../../outbox/index.ts';

export type { Broadcast, BroadcastFence, JournalEntry, NonceSlot, NonceSlotOutcome };

/** What the sender needs of the outbox's journal. */
export interface TransactionJournal {
  recordBroadcast(b: Broadcast, fence?: BroadcastFence): boolean | Promise<boolean>;
  forgetBroadcast(hash: string): boolean | Promise<boolean>;
  closeNonceSlot(slot: NonceSlot, outcome: NonceSlotOutcome): number | Promise<number>;
  openBroadcasts(of: { chainId: number; signer: string }): JournalEntry[] | Promise<JournalEntry[]>;
  /**
   * The gas book (docs/gas.md#gas-already-spent), when the journal is an outbox: what a
   * message's mined transaction spent without delivering it, each hash counted once.
   */
  addGasSpent?(spends: readonly GasSpend[]): number | Promise<number>;
}

/** The in-process journal: every broadcast recorded, fenced or not. */
export function createProcessJournal(now: () => number): TransactionJournal {
  const open = new Map<string, JournalEntry>();
  const sameNonceSlot = (a: NonceSlot, b: NonceSlot) =>
    a.chainId === b.chainId && a.signer === b.signer && a.nonce === b.nonce;
  return {
    recordBroadcast(b) {
      if (!open.has(b.hash)) open.set(b.hash, { ...b, sentAt: now() });
      return true;
    },
    forgetBroadcast: (hash) => open.delete(hash),
    closeNonceSlot(slot) {
      let closed = 0;
      for (const [hash, e] of open) if (sameNonceSlot(e, slot) && open.delete(hash)) closed++;
      return closed;
    },
    openBroadcasts: ({ chainId, signer }) =>
      [...open.values()].filter((e) => e.chainId === chainId && e.signer === signer),
  };
}
