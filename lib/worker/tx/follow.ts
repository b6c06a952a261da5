/**
 * Following one slot (a nonce of the signer) until one of its transactions is mined with its
 * confirmations (docs/delivery.md#transactions): the newest is replaced with bumped fees every
 * `replaceAfterMs` none is mined (a dropped one too: the replacement takes its place); a
 * replacement the node refuses leaves the others to land. When the wait ends otherwise (timeout,
 * `onWait` throwing) the slot stays open in the journal: the next holder follows it.
 */
import type { Hash, TransactionReceipt } from 'viem';
import { TransactionError } from '../errors.ts';
import { broadcast } from './broadcast.ts';
import { replacementFees } from '../../fee-ceiling.ts';
import { nodeFees } from './fees.ts';
import { headsOf } from './heads.ts';
import { classify, transactionError } from './node-errors.ts';
import { confirmedReceipt, firstMined, minedFailure, recordSpent } from './receipts.ts';
import type { Signed, SignerContext } from './signer.ts';
import type { Fees, SendResult } from './types.ts';

export interface FollowSettings {
  replaceAfterMs: number;
  /** Each replacement raises both fees by this much (percent). */
  bumpPercent: number;
  /** chains.NAME.transactionOverrides.gasPriceCap: no maxFeePerGas above it. */
  gasPriceCap?: bigint;
  confirmations: bigint;
  /** The longest wait between two looks at the slot's receipts (the next block usually ends it sooner). */
  pollMs: number;
  /** Between two reads of the chain's head while sends wait for a block (lib/worker/tx/heads.ts). */
  headPollMs: number;
  timeoutMs: number;
}

export interface Slot {
  t: Signed;
  /** The slot's hashes, newest first. */
  hashes: Hash[];
  messageId: string;
  /** When the newest was sent (the replacement clock starts there). */
  sentAt: number;
  /**
   * The caller records a successful one with the outbox's markDelivered, which settles the slot
   * in the same write: no separate closeSlot then (one write fewer per delivery).
   */
  settledByRecord?: boolean;
}

export async function trackSlot(
  c: SignerContext,
  s: FollowSettings,
  slot: Slot,
  onWait: (() => Promise<void>) | undefined,
): Promise<SendResult> {
  const { t, hashes, messageId } = slot;
  const nonces = await c.book();
  const where = { chainId: await c.chainId(), signer: c.address, nonce: t.nonce };
  const startedAt = c.clock.now();
  let sentAt = slot.sentAt;
  let rpcFailures = 0;
  let seenMined = false;
  const heads = headsOf(c.publicClient, c.clock, s.headPollMs);
  for (;;) {
    // The head before the receipts are read: the wait below ends at the first block after it.
    const seen = heads.latest();
    let mined: TransactionReceipt | undefined;
    try {
      mined = await firstMined(c.publicClient, hashes);
      if (mined) {
        if (!seenMined) {
          // A send without a message (its id is its first hash) has no gas book to write.
          if (!hashes.includes(messageId as Hash))
            await recordSpent(c.journal, messageId, mined, { gas: t.gas, maxFeePerGas: t.fees.maxFeePerGas });
          seenMined = true;
          if (!slot.settledByRecord || mined.status !== 'success')
            await c.journal.closeSlot(where, { outcome: 'mined', hash: mined.transactionHash.toLowerCase() });
          nonces.consumed(t.nonce);
        }
        if (mined.status !== 'success')
          throw await minedFailure(c.publicClient, c.account, t.req, mined, t.gas, c.errorAbi);
        const receipt = await confirmedReceipt(c.publicClient, mined, s.confirmations);
        if (receipt) return { hash: mined.transactionHash, receipt, nonce: t.nonce };
      }
    } catch (err) {
      if (err instanceof TransactionError) throw err;
      const k = classify(err);
      // The transaction is out there: a node that fails for a while (restart, rate limit) is
      // waited out until `timeoutMs`, not taken for a failed send.
      if (k.kind !== 'rpc') throw transactionError(k, 'waiting for the receipt', c.errorAbi, err, hashes[0]);
      rpcFailures += 1;
    }
    if (onWait) await onWait();
    const now = c.clock.now();
    if (now - startedAt >= s.timeoutMs) {
      const node = rpcFailures > 0 ? `; the node failed ${rpcFailures} poll${rpcFailures === 1 ? '' : 's'}` : '';
      throw new TransactionError(
        'timeout',
        `not ${seenMined ? 'confirmed' : 'mined'} within ${s.timeoutMs} ms (nonce ${t.nonce})${node}`,
        { hash: hashes[0] },
      );
    }
    if (!mined && now - sentAt >= s.replaceAfterMs) {
      sentAt = now;
      const replaced = await replace(c, s, t, messageId).catch(() => undefined);
      if (replaced === 'used') {
        // The nonce went to a transaction that is none of this slot's: nothing of it can land.
        if (!(await firstMined(c.publicClient, hashes).catch(() => undefined))) {
          await c.journal.closeSlot(where, { outcome: 'dropped' });
          nonces.consumed(t.nonce);
          throw new TransactionError(
            'nonce',
            `nonce ${t.nonce} was used by another transaction; none of this send's was mined`,
            {
              hash: hashes[0],
            },
          );
        }
      } else if (replaced) {
        hashes.unshift(replaced.hash);
        t.fees = replaced.fees;
      }
    }
    await heads.after(seen, s.pollMs);
  }
}

/**
 * One replacement of `t` (same nonce, both fees bumped, at least what the node asks now, at most
 * min(3 × that, gasPriceCap); none when the bump does not fit under that bound), recorded in the
 * journal first: its hash once the node holds it; 'used' when the node's mined
 * count is past the nonce; undefined when the node refused it (after "underpriced" the fees are
 * raised anyway, so the next one bumps from there).
 */
async function replace(
  c: SignerContext,
  s: FollowSettings,
  t: Signed,
  messageId: string,
): Promise<{ hash: Hash; fees: Fees } | 'used' | undefined> {
  if ((await c.count('latest')) > t.nonce) return 'used';
  const current = await nodeFees(c.publicClient, c.chain, c.errorAbi).catch(() => t.fees);
  // Bounded by min(3 × the fresh suggestion, cap): when the bump does not fit, the one sent waits.
  const decision = replacementFees(t.fees, current, { bumpPercent: s.bumpPercent, cap: s.gasPriceCap });
  if (!decision.ok) return undefined;
  const { fees } = decision;
  const next: Signed = { ...t, fees };
  const signed = await c.sign(next);
  if (!(await c.journal.recordBroadcast(await c.entry(next, messageId, signed)))) return undefined;
  const outcome = await broadcast(c.publicClient, signed.raw, signed.hash);
  if (outcome === 'sent' || outcome === 'unknown') return { hash: signed.hash, fees };
  await c.journal.forgetBroadcast(signed.hash);
  if (outcome.kind === 'underpriced') t.fees = fees;
  return undefined;
}
