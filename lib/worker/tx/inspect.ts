/**
 * A look at a journaled slot of another signer (docs/transactions.md#the-transaction-journal): read
 * from the node, recorded through lib/worker/tx/settle.ts when it ended, nothing signed. A slot
 * that may still land has its newest transaction given to the node again when the node lost it.
 */
import type { Address, Hash, Hex, PublicClient } from 'viem';
import { broadcast, isKnown } from './broadcast.ts';
import type { JournalEntry, TransactionJournal } from './journal.ts';
import { firstMined } from './receipts.ts';
import { settle } from './settle.ts';
import { signedOf } from './slots.ts';

/** Where a journaled slot of another signer stands (`inspect`). */
export type NonceSlotState =
  | { state: 'mined'; hash: Hash; status: 'success' | 'reverted' }
  | { state: 'dropped' }
  | { state: 'open'; nonce: number; hash: Hash };

export async function inspectNonceSlot(
  publicClient: PublicClient,
  journal: TransactionJournal,
  entries: readonly JournalEntry[],
): Promise<NonceSlotState> {
  const hashes = entries.map((e) => e.hash as Hash).reverse();
  const newest = entries[entries.length - 1];
  const slot = { chainId: newest.chainId, signer: newest.signer, nonce: newest.nonce };
  const mined = await firstMined(publicClient, hashes);
  if (mined) {
    const entry = entries.find((e) => e.hash === mined.transactionHash.toLowerCase());
    const { gas, fees } = signedOf(entry ?? newest);
    const messageId = entry && entry.messageId !== entries[0].hash ? entry.messageId : undefined;
    const end = { kind: 'mined', receipt: mined, signed: { gas, maxFeePerGas: fees.maxFeePerGas } } as const;
    await settle(slot, end, { journal, messageId });
    return { state: 'mined', hash: mined.transactionHash, status: mined.status };
  }
  const used = await publicClient.getTransactionCount({ address: slot.signer as Address, blockTag: 'latest' });
  if (used > slot.nonce && !(await firstMined(publicClient, hashes))) {
    await settle(slot, { kind: 'dropped' }, { journal });
    return { state: 'dropped' };
  }
  // It may still land: its newest is given to the node again (a dropped one comes back).
  if ((await isKnown(publicClient, newest.hash as Hash)) === false)
    await broadcast(publicClient, newest.raw as Hex, newest.hash as Hash);
  return { state: 'open', nonce: slot.nonce, hash: newest.hash as Hash };
}
