/**
 * The journal's open slots of a signer (docs/transactions.md#gaps), as the sender follows them and an
 * operator reads them: the journal's entries grouped by nonce, and each slot's transactions
 * decoded from their signed bytes (the call, gas and fees a replacement starts from).
 */
import { parseTransaction, type Hash, type Hex } from 'viem';
import { TransactionError } from '../errors.ts';
import type { JournalEntry } from './journal.ts';
import type { Signed } from './signer.ts';

/** The call and fees of a journaled transaction (its signed bytes), to sign a replacement of it. */
export function signedOf(entry: JournalEntry): Signed {
  const tx = parseTransaction(entry.raw as Hex);
  if (tx.type !== 'eip1559' || tx.to == null)
    throw new TransactionError('rpc', `the journal's transaction ${entry.hash} is not an EIP-1559 call`);
  // viem leaves a zero out of what it parses: a tip of 0 (a node that suggests none) is 0n, not missing.
  return {
    nonce: entry.nonce,
    req: { to: tx.to, data: tx.data ?? '0x', value: tx.value },
    gas: tx.gas ?? 0n,
    fees: { maxFeePerGas: tx.maxFeePerGas ?? 0n, maxPriorityFeePerGas: tx.maxPriorityFeePerGas ?? 0n },
  };
}

/** Open entries grouped by slot (chain, signer, nonce), each group oldest first, groups by lowest nonce. */
export function byNonceSlot(entries: readonly JournalEntry[]): JournalEntry[][] {
  const groups = new Map<string, JournalEntry[]>();
  for (const e of entries) {
    const key = `${e.chainId}:${e.signer}:${e.nonce}`;
    const group = groups.get(key);
    if (group) group.push(e);
    else groups.set(key, [e]);
  }
  return [...groups.values()].sort((a, b) => a[0].chainId - b[0].chainId || a[0].nonce - b[0].nonce);
}

/** One open slot of a signer on a chain, for an operator (`relayer-worker signers`) and logs. */
export interface OpenNonceSlot {
  chainId: number;
  /** Lower-case. */
  signer: string;
  nonce: number;
  /** The message its transactions deliver (a send without a message: its first hash). */
  messageId: string;
  /** Every hash broadcast at this nonce, oldest first. */
  hashes: Hash[];
  /** The newest transaction's fees (wei per gas); undefined when its bytes are not EIP-1559. */
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  /** When its first transaction was recorded (ms). */
  firstSentAt: number;
  /** When its newest was recorded (ms). */
  lastSentAt: number;
  /** now - firstSentAt (ms). */
  ageMs: number;
}

/**
 * The open slots in `entries` (a signer's, from the journal's `openBroadcasts({ chainId, signer })`,
 * or several signers'), lowest nonce first per chain and signer, aged at `now`.
 */
export function openNonceSlots(entries: readonly JournalEntry[], now: number): OpenNonceSlot[] {
  return byNonceSlot(entries)
    .map((group) => {
      const first = group[0];
      const newest = group[group.length - 1];
      let fees: Partial<Signed['fees']> = {};
      try {
        fees = signedOf(newest).fees;
      } catch {
        // Shown without fees: the bytes are not an EIP-1559 call.
      }
      return {
        chainId: first.chainId,
        signer: first.signer,
        nonce: first.nonce,
        messageId: newest.messageId,
        hashes: group.map((e) => e.hash as Hash),
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        firstSentAt: first.sentAt,
        lastSentAt: newest.sentAt,
        ageMs: Math.max(0, now - first.sentAt),
      };
    })
    .sort((a, b) => a.chainId - b.chainId || a.signer.localeCompare(b.signer) || a.nonce - b.nonce);
}
