/**
 * Following one slot (a nonce of the signer) until one of its transactions is mined with its
 * confirmations (docs/transactions.md#transactions): at every new head the node's state decides
 * (lib/worker/tx/gaps.ts, docs/transactions.md#gaps) whether the newest is given to the node again
 * (the chain waits on this nonce and the node lost it), replaced with bumped fees (below the base
 * fee, or not mined for `replaceAfterBlocks` heads or `replaceAfterMs`), left waiting (behind a
 * gap), or whether a free nonce below it is filled with a zero-value self-transfer. A replacement
 * the node refuses leaves the others to land.
 *
 * It returns how the slot ended (`FollowedEnd`) and writes nothing about that end: the sender records
 * it once (lib/worker/tx/settle.ts). What it writes is what every broadcast writes, before it
 * goes out (lib/worker/tx/signer.ts `journaled`).
 */
import type { Hash, Hex, TransactionReceipt } from 'viem';
import { replacementFees } from '../../gas/fee-ceiling.ts';
import { broadcast, isKnown } from './broadcast.ts';
import { cappedFees, nodeFees } from './fees.ts';
import { nextMove, type Move } from './gaps.ts';
import { headsOf } from './heads.ts';
import { classify, transactionError } from './node-errors.ts';
import { confirmedReceipt, firstMined } from './receipts.ts';
import type { Signed, SignerContext } from './signer.ts';
import type { Fees } from './types.ts';

export interface FollowSettings {
  /** A transaction not mined this long after it was sent is replaced (whichever of this and replaceAfterBlocks comes first). */
  replaceAfterMs: number;
  /** A transaction not mined this many heads after it was sent is replaced. */
  replaceAfterBlocks: number;
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
export interface FollowedTransaction {
  t: Signed;
  /** The slot's hashes, newest first. */
  hashes: Hash[];
  /** The newest's signed bytes (what a re-broadcast sends again). */
  raw: Hex;
  messageId: string;
  /** When the newest was sent (the replacement clock starts there). */
  sentAt: number;
  /** A self-transfer filling a gap: not in the journal (it delivers no message), nor its replacements. */
  filler?: boolean;
  /** Broadcast just now: no block read before it can hold it, so the first look waits for the next head. */
  fresh?: boolean;
}

/**
 * How a slot ended, as the follower saw it (recorded by lib/worker/tx/settle.ts):
 * - `mined`: one of its transactions is in a block (with its confirmations when it succeeded; at
 *   once when it reverted), signed with at most `gas` and `maxFeePerGas`, which bound what the
 *   gas book counts;
 * - `dropped`: the nonce went to a transaction that is none of the slot's: nothing of it can land;
 * - `timeout`: the wait ended (`timeoutMs`) with the slot open: the next holder follows it.
 */
export type FollowedEnd =
  | { kind: 'mined'; receipt: TransactionReceipt; signed: { gas: bigint; maxFeePerGas: bigint } }
  | { kind: 'dropped' }
  | { kind: 'timeout'; message: string };

export async function followTransaction(
  c: SignerContext,
  s: FollowSettings,
  slot: FollowedTransaction,
  onWait: (() => Promise<void>) | undefined,
): Promise<FollowedEnd> {
  const { t, hashes } = slot;
  const startedAt = c.clock.now();
  let rpcFailures = 0;
  let seenMined = false;
  /** A receipt found by a look after the one at the top of the loop (not read again). */
  let found: TransactionReceipt | undefined;
  const heads = headsOf(c.publicClient, c.clock, s.headPollMs);
  let sentHead = heads.latest();
  // One receipt request fewer per send (docs/delivery.md#throughput).
  if (slot.fresh) await heads.after(sentHead, s.pollMs).then(onWait);
  else sentHead = undefined;
  for (;;) {
    // The head before the receipts are read: the wait below ends at the first block after it.
    const seen = heads.latest();
    let mined: TransactionReceipt | undefined;
    try {
      mined = found ?? (await firstMined(c.publicClient, hashes));
      found = undefined;
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
    if (!mined) {
      sentHead ??= seen;
      const move = await look(c, s, slot, seen, sentHead, now);
      if (move.do === 'used') {
        // Mined since the receipts were read, or the nonce went to a transaction that is none of this slot's.
        found = await firstMined(c.publicClient, hashes).catch(() => undefined);
        if (!found) return { kind: 'dropped' };
        continue;
      }
      if (move.do === 'fill') void fillGap(c, s, move.nonce, onWait);
      let replaceWhy: string | undefined = move.do === 'replace' ? move.why : undefined;
      const gap = (move.do === 'rebroadcast' && move.why === 'gap') || replaceWhy === 'gap';
      if (gap) await lost(c, slot);
      // Lost bytes above the gap that the node refuses wait for the next head: nothing is replaced there.
      if (move.do === 'rebroadcast' && !(await heal(c, slot, move.why)) && gap) replaceWhy = 'gap';
      if (replaceWhy) {
        slot.sentAt = now;
        sentHead = seen;
        const replaced = await replace(c, s, slot, replaceWhy).catch(() => undefined);
        // The nonce went to a transaction that is none of this slot's: nothing of it can land.
        if (replaced === 'used' && !(await firstMined(c.publicClient, hashes).catch(() => undefined)))
          return { kind: 'dropped' };
      }
    }
    await heads.after(seen, s.pollMs);
  }
}

/**
 * The move at head `seen` (docs/transactions.md#gaps). Without a head yet (or a node that does not
 * answer), only the wall-time rule: replaced `replaceAfterMs` after it was sent.
 */
async function look(
  c: SignerContext,
  s: FollowSettings,
  slot: FollowedTransaction,
  seen: bigint | undefined,
  sentHead: bigint | undefined,
  now: number,
): Promise<Move> {
  const msSince = now - slot.sentAt;
  const byTime: Move = msSince >= s.replaceAfterMs ? { do: 'replace', why: 'time' } : { do: 'wait' };
  if (seen === undefined) return byTime;
  const view = await c.headView(seen).catch(() => undefined);
  if (!view) return byTime;
  const { t } = slot;
  const [book, shared] = await Promise.all([c.book(), c.shared()]);
  book.observe(view.mined);
  // The caller sets the head it was sent at to the first head seen: defined from here on.
  const sent = sentHead ?? seen;
  // Asked where the chain waits, and for a transaction that missed a block: the node may have lost
  // it with the one the chain waits on (a transaction mined at the next block is never asked about).
  const known = view.mined === t.nonce || seen > sent ? await holdsAny(c, slot.hashes) : undefined;
  let missingBelow = false;
  for (const n of shared.missing) {
    if (n < view.mined) shared.missing.delete(n);
    else if (n < t.nonce) missingBelow = true;
  }
  return nextMove(
    {
      nonce: t.nonce,
      maxFeePerGas: t.fees.maxFeePerGas,
      known,
      blocksSince: seen - sent,
      msSince,
      freedBelow: book.freedBelow(t.nonce),
      missingBelow,
    },
    view,
    { replaceAfterBlocks: s.replaceAfterBlocks, replaceAfterMs: s.replaceAfterMs, gasPriceCap: s.gasPriceCap },
  );
}

/** Whether the node holds one of `hashes` (a node that cannot say is taken to hold it: no gap). */
async function holdsAny(c: SignerContext, hashes: readonly Hash[]): Promise<boolean> {
  for (const hash of hashes) if ((await isKnown(c.publicClient, hash)) !== false) return true;
  return false;
}

/**
 * The chain waits on this slot's nonce and the node holds none of its transactions: a gap, said
 * once when found (not again at every head while it lasts).
 */
async function lost(c: SignerContext, slot: FollowedTransaction): Promise<void> {
  const { missing } = await c.shared();
  if (missing.has(slot.t.nonce)) return;
  missing.add(slot.t.nonce);
  const messageId = slot.filler ? undefined : slot.messageId;
  await c.emit({ kind: 'gap', nonce: slot.t.nonce, messageId, reason: 'the node holds none of its transactions' });
}

/**
 * The newest of a lost slot given to the node again, the same bytes (no new signature, nothing new
 * in the journal); `why`: `gap` (the chain waits on its nonce) or `lost` (a later nonce the node
 * lost too). false: the node refused them (their fees no longer do, say): at the gap the caller
 * replaces it.
 */
async function heal(c: SignerContext, slot: FollowedTransaction, why: 'gap' | 'lost'): Promise<boolean> {
  const { t } = slot;
  const outcome = await broadcast(c.publicClient, slot.raw, slot.hashes[0]);
  if (outcome !== 'sent' && outcome !== 'unknown') return false;
  (await c.shared()).missing.delete(t.nonce);
  const messageId = slot.filler ? undefined : slot.messageId;
  await c.emit({ kind: 'rebroadcast', nonce: t.nonce, messageId, hash: slot.hashes[0], ...t.fees, reason: why });
  return true;
}

/**
 * One replacement of the slot's newest (same nonce, both fees bumped, at least what the node asks
 * now, at most min(3 × that, gasPriceCap); none when the bump does not fit under that bound),
 * recorded in the journal first. 'used' when the node's mined count is past the nonce (nothing
 * sent). A replacement the node refuses leaves the slot as it was, but after "underpriced" the fees
 * are raised anyway, so the next one bumps from there.
 */
async function replace(
  c: SignerContext,
  s: FollowSettings,
  slot: FollowedTransaction,
  why: string,
): Promise<'used' | undefined> {
  const { t } = slot;
  if ((await c.count('latest')) > t.nonce) return 'used';
  const current = await nodeFees(c.publicClient, c.chain, c.errorAbi).catch(() => t.fees);
  // Bounded by min(3 × the fresh suggestion, cap): when the bump does not fit, the one sent waits.
  const decision = replacementFees(t.fees, current, { bumpPercent: s.bumpPercent, cap: s.gasPriceCap });
  if (!decision.ok) return;
  const { fees } = decision;
  const next = { ...t, fees };
  const sent = slot.filler ? await c.unjournaled(next) : await c.journaled(next, slot.messageId);
  if (sent.outcome === 'sent' || sent.outcome === 'unknown') {
    slot.hashes.unshift(sent.hash);
    slot.raw = sent.raw;
    t.fees = fees;
    (await c.shared()).missing.delete(t.nonce);
    const messageId = slot.filler ? undefined : slot.messageId;
    await c.emit({ kind: 'replacement', nonce: t.nonce, hash: sent.hash, ...fees, messageId, reason: why });
  } else if (sent.outcome !== 'unrecorded' && sent.outcome.kind === 'underpriced') t.fees = fees;
}

/** Gas of a zero-value transfer to an account without code. */
const TRANSFER_GAS = 21_000n;

/**
 * Fills free nonce `nonce` (its broadcasts certainly failed; later ones wait behind it) with a
 * zero-value self-transfer at the node's fees within the cap, followed like any slot, unless
 * something took the nonce meanwhile (the next message does, when one is sent first). A fee wait,
 * a refusal or a filler not mined within `timeoutMs` gives the nonce back: the next head tries
 * again. Followed with the `onWait` of the slot that found the gap (a worker that stops ends it).
 */
async function fillGap(
  c: SignerContext,
  s: FollowSettings,
  nonce: number,
  onWait: (() => Promise<void>) | undefined,
): Promise<void> {
  const book = await c.book();
  if (!book.claim(nonce)) return;
  await c
    .followOnce(nonce, async () => {
      let fees: Fees;
      try {
        fees = await cappedFees(c.publicClient, c.chain, s.gasPriceCap, c.errorAbi, c.clock);
      } catch {
        book.free(nonce);
        return;
      }
      const t: Signed = { nonce, req: { to: c.address, data: '0x', value: 0n }, gas: TRANSFER_GAS, fees };
      await c.emit({ kind: 'gap', nonce, reason: 'no transaction may land at it: filled with a self-transfer' });
      const sent = await c.unjournaled(t);
      if (sent.outcome !== 'sent' && sent.outcome !== 'unknown') {
        book.free(nonce);
        return;
      }
      await c.emit({ kind: 'fill', nonce, hash: sent.hash, ...fees });
      const slot = { t, hashes: [sent.hash], raw: sent.raw, messageId: sent.hash, sentAt: c.clock.now(), filler: true };
      const end = await followTransaction(c, s, slot, onWait);
      // In no journal, a filler timed out has no next holder: freed, the next head fills it again.
      if (end.kind === 'timeout') book.free(nonce);
      else book.consumed(nonce);
    })
    .catch(() => undefined);
}
