/**
 * The one place the end of a slot is recorded (docs/transactions.md#the-transaction-journal), as the
 * delivery loop records an attempt's outcome one level up (lib/worker/loop/record.ts): the
 * follower (lib/worker/tx/follow.ts) or a look at another signer's slot returns how it ended, and
 * `settle` writes it to the journal (the slot closed `mined` or `dropped`), the gas book (what a
 * mined transaction spent without delivering: docs/gas.md#gas-already-spent) and the nonce
 * book (the nonce used). A slot that timed out stays open: nothing is written.
 *
 * `endResult` turns the end into what `send` and `follow` return or throw.
 */
import type { Abi, Hash, LocalAccount, PublicClient } from 'viem';
import { TransactionError } from '../errors.ts';
import type { FollowedEnd } from './follow.ts';
import type { NonceSlot, TransactionJournal } from './journal.ts';
import type { NonceBook } from './nonces.ts';
import { minedFailure, recordSpent } from './receipts.ts';
import type { Signed } from './signer.ts';
import type { SendResult } from './types.ts';

export interface SettleOptions {
  journal: TransactionJournal;
  /** This signer's nonce book; none for a slot of another signer. */
  book?: NonceBook;
  /** The message the slot delivers; undefined for a send without one (nothing in the gas book). */
  messageId?: string;
  /**
   * The caller records a successful delivery with the outbox's markDelivered, which settles the
   * slot in the same write: no separate closeNonceSlot then (one write fewer per delivery).
   */
  settledByRecord?: boolean;
}

export async function settle(slot: NonceSlot, end: FollowedEnd, o: SettleOptions): Promise<void> {
  switch (end.kind) {
    case 'mined': {
      const { receipt } = end;
      // Before the slot is closed: a worker that stops in between finds the receipt again.
      if (o.messageId !== undefined) await recordSpent(o.journal, o.messageId, receipt, end.signed);
      if (!o.settledByRecord || receipt.status !== 'success')
        await o.journal.closeNonceSlot(slot, { outcome: 'mined', hash: receipt.transactionHash.toLowerCase() });
      o.book?.consumed(slot.nonce);
      return;
    }
    case 'dropped':
      await o.journal.closeNonceSlot(slot, { outcome: 'dropped' });
      o.book?.consumed(slot.nonce);
      return;
    case 'timeout':
      return;
  }
}

/** What a send (or a follow) of `t` returns for `end`, or the TransactionError it throws. */
export async function endResult(
  end: FollowedEnd,
  t: Signed,
  firstHash: Hash,
  node: { publicClient: PublicClient; account: LocalAccount; errorAbi: Abi | undefined },
): Promise<SendResult> {
  switch (end.kind) {
    case 'mined':
      if (end.receipt.status !== 'success')
        throw await minedFailure(node.publicClient, node.account, t.req, end.receipt, t.gas, node.errorAbi);
      return { hash: end.receipt.transactionHash, receipt: end.receipt, nonce: t.nonce };
    case 'dropped':
      throw new TransactionError(
        'nonce',
        `nonce ${t.nonce} was used by another transaction; none of this send's was mined`,
        { hash: firstHash },
      );
    case 'timeout':
      throw new TransactionError('timeout', end.message, { hash: firstHash });
  }
}
