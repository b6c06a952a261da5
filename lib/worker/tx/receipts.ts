/**
 * Receipts for the transaction sender (docs/transactions.md, Transactions): whether one of a send's
 * transactions is mined, failed or confirmed, and why a mined one reverted.
 */
import {
  TransactionReceiptNotFoundError,
  type Abi,
  type Account,
  type Address,
  type Hash,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import { TransactionError } from '../errors.ts';
import type { TransactionJournal } from './journal.ts';
import { classify, revertReason } from './node-errors.ts';
import type { TransactionRequest } from './types.ts';

/** The receipt of `hash`, or undefined while it is not mined. */
export async function receiptOf(publicClient: PublicClient, hash: Hash): Promise<TransactionReceipt | undefined> {
  try {
    return await publicClient.getTransactionReceipt({ hash });
  } catch (err) {
    if (err instanceof TransactionReceiptNotFoundError) return undefined;
    throw err;
  }
}

/** The first of `hashes` that is mined (the newest replacement first), or undefined. */
export async function firstMined(publicClient: PublicClient, hashes: Hash[]): Promise<TransactionReceipt | undefined> {
  for (const hash of hashes) {
    const mined = await receiptOf(publicClient, hash);
    if (mined) return mined;
  }
  return undefined;
}

/**
 * The receipt once `mined` has `confirmations` blocks (its own included) and is still there after
 * the wait (a reorg would have dropped it or moved it to another block); else undefined.
 */
export async function confirmedReceipt(
  publicClient: PublicClient,
  mined: TransactionReceipt,
  confirmations: bigint,
): Promise<TransactionReceipt | undefined> {
  // One confirmation is the block that mined it: nothing to wait for, nothing to read again.
  if (confirmations <= 1n) return mined;
  const head = await publicClient.getBlockNumber({ cacheTime: 0 });
  if (head - mined.blockNumber + 1n < confirmations) return undefined;
  const again = await receiptOf(publicClient, mined.transactionHash);
  return again && again.blockHash === mined.blockHash ? again : undefined;
}

/** Why a mined transaction failed: out of gas when it used all of `gas`, else the call replayed at its block. */
export async function minedFailure(
  publicClient: PublicClient,
  account: Account | Address,
  req: TransactionRequest,
  mined: TransactionReceipt,
  gas: bigint,
  errorAbi: Abi | undefined,
): Promise<TransactionError> {
  const hash = mined.transactionHash;
  if (mined.gasUsed >= gas) return new TransactionError('out_of_gas', 'the transaction ran out of gas', { hash });
  try {
    await publicClient.call({ account, to: req.to, data: req.data, value: req.value, blockNumber: mined.blockNumber });
  } catch (err) {
    const c = classify(err);
    if (c.kind === 'revert') {
      const reason = revertReason(c, errorAbi);
      return new TransactionError(
        'revert',
        reason ? `the transaction reverted: ${reason}` : 'the transaction reverted',
        {
          reason,
          hash,
        },
      );
    }
  }
  return new TransactionError('revert', 'the transaction reverted', { hash });
}

const least = (a: bigint, b: bigint) => (a < b ? a : b);

/**
 * Records in the journal's gas book what `mined`, a transaction of message `messageId`, spent
 * without delivering it (reverted or out of gas; docs/gas.md#gas-already-spent). Called before
 * its slot is closed, so a worker that stops in between finds the receipt again; the book counts
 * each hash once. The receipt's amounts are bounded by what was signed, so a lying node cannot
 * inflate them: gasUsed by the gas limit, effectiveGasPrice by maxFeePerGas (that, when the
 * receipt has none).
 */
export async function recordSpent(
  journal: TransactionJournal,
  messageId: string,
  mined: TransactionReceipt,
  signed: { gas: bigint; maxFeePerGas: bigint },
): Promise<void> {
  if (!journal.addGasSpent || mined.status === 'success') return;
  const gasUsed = least(mined.gasUsed, signed.gas);
  const price = least(mined.effectiveGasPrice ?? signed.maxFeePerGas, signed.maxFeePerGas);
  await journal.addGasSpent([
    { messageId: messageId.toLowerCase(), txHash: mined.transactionHash.toLowerCase(), gasUsed, cost: gasUsed * price },
  ]);
}
