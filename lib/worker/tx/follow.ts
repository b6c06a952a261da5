/**
 * Following one slot (a nonce of the signer) until one of its transactions is mined with its
 * confirmations (docs/delivery.md#transactions): the newest is replaced with bumped fees every
 * `replaceAfterMs` none is mined (a dropped one too: the replacement takes its place); a
 * replacement the node refuses leaves the others to land.
 *
 * It returns how the slot ended (`SlotEnd`) and writes nothing about that end: the sender records
 * it once (lib/worker/tx/settle.ts). What it writes is what every broadcast writes, before it
 * goes out (lib/worker/tx/signer.ts `journaled`).
 */
import type { Hash, TransactionReceipt } from 'viem';
import { replacementFees } from '../../fee-ceiling.ts';
import { nodeFees } from './fees.ts';
import { headsOf } from './heads.ts';
import { classify, transactionError } from './node-errors.ts';
import { confirmedReceipt, firstMined } from './receipts.ts';
import type { Signed, SignerContext } from './signer.ts';
import type { Fees } from './types.ts';

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

/** A slot being followed: the newest transaction as signed, and every hash it was broadcast under. */
export interface FollowedSlot {
  t: Signed;
  /** The slot's hashes, newest first. */
  hashes: Hash[];
  messageId: string;
  /** When the newest was sent (the replacement clock starts there). */
  sentAt: number;
}

/**
 * How a slot ended, as the follower saw it (recorded by lib/worker/tx/settle.ts):
 * - `mined`: one of its transactions is in a block (with its confirmations when it succeeded; at
 *   once when it reverted), signed with at most `gas` and `maxFeePerGas`, which bound what the
 *   gas book counts;
 * - `dropped`: the nonce went to a transaction that is none of the slot's: nothing of it can land;
 * - `timeout`: the wait ended (`timeoutMs`) with the slot open: the next holder follows it.
 */
export type SlotEnd =
  | { kind: 'mined'; receipt: TransactionReceipt; signed: { gas: bigint; maxFeePerGas: bigint } }
  | { kind: 'dropped' }
  | { kind: 'timeout'; message: string };

export async function trackSlot(
  c: SignerContext,
  s: FollowSettings,
  slot: FollowedSlot,
  onWait: (() => Promise<void>) | undefined,
): Promise<SlotEnd> {
  const { t, hashes, messageId } = slot;
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
        seenMined = true;
        const signed = { gas: t.gas, maxFeePerGas: t.fees.maxFeePerGas };
        if (mined.status !== 'success') return { kind: 'mined', receipt: mined, signed };
        const receipt = await confirmedReceipt(c.publicClient, mined, s.confirmations);
        if (receipt) return { kind: 'mined', receipt, signed };
      }
    } catch (err) {
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
      return {
        kind: 'timeout',
        message: `not ${seenMined ? 'confirmed' : 'mined'} within ${s.timeoutMs} ms (nonce ${t.nonce})${node}`,
      };
    }
    if (!mined && now - sentAt >= s.replaceAfterMs) {
      sentAt = now;
      const replaced = await replace(c, s, t, messageId).catch(() => undefined);
      // The nonce went to a transaction that is none of this slot's: nothing of it can land.
      if (replaced === 'used' && !(await firstMined(c.publicClient, hashes).catch(() => undefined)))
        return { kind: 'dropped' };
      if (replaced && replaced !== 'used') {
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
  const sent = await c.journaled({ ...t, fees }, messageId);
  if (sent.outcome === 'sent' || sent.outcome === 'unknown') return { hash: sent.hash, fees };
  if (sent.outcome !== 'unrecorded' && sent.outcome.kind === 'underpriced') t.fees = fees;
  return undefined;
}
