/**
 * A transaction journal that only settles slots (docs/transactions.md#the-transaction-journal):
 * closeNonceSlot and addGasSpent are recorded in order in `writes`; a broadcast recorded, forgotten
 * or listed fails the test, naming `who` (the module under test writes none).
 */
import assert from 'node:assert/strict';
import type { GasSpend } from '../../../lib/gas/payment.ts';
import type { NonceSlot, NonceSlotOutcome, TransactionJournal } from '../../../lib/worker/tx/journal.ts';

export function settlingJournal(who: string, withGasBook = true): { journal: TransactionJournal; writes: unknown[] } {
  const writes: unknown[] = [];
  const journal: TransactionJournal = {
    recordBroadcast: () => assert.fail(`${who} records no broadcast`),
    forgetBroadcast: () => assert.fail(`${who} forgets no broadcast`),
    openBroadcasts: () => assert.fail(`${who} reads no journal`),
    closeNonceSlot: (slot: NonceSlot, outcome: NonceSlotOutcome) => (writes.push(['close', slot, outcome]), 1),
    ...(withGasBook && { addGasSpent: (s: readonly GasSpend[]) => (writes.push(['spent', ...s]), s.length) }),
  };
  return { journal, writes };
}
