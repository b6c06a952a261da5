/**
 * Landing a transaction on a destination chain (docs/transactions.md#transactions): simulate it first
 * (`eth_estimateGas`: a call that would revert is never signed), sign it here with a gas limit of
 * the estimate plus a margin and EIP-1559 fees from the node (lib/worker/tx/fees.ts) under a nonce
 * of the signer's book (lib/worker/tx/nonces.ts), record it in the journal before it goes out
 * (lib/worker/tx/journal.ts), broadcast it and decide from what the node holds whether it went
 * out (lib/worker/tx/broadcast.ts), replace it at the same nonce with bumped fees while it is not
 * mined, and wait for N confirmations of whichever of its transactions was mined
 * (lib/worker/tx/receipts.ts), calling `onWait` meanwhile (the delivery loop extends its lease).
 *
 * Errors are TransactionError with a `kind` (lib/worker/errors.ts); their messages never quote the
 * node's URL, the request body or the key (lib/worker/tx/node-errors.ts).
 */
import type { Abi, Address, Chain, Hash, Hex, LocalAccount, PublicClient } from 'viem';
import { systemClock, type Clock } from '../../clock.ts';
import { OutOfRangeError } from '../../errors/classes.ts';
import { DeliveryError, TransactionError } from '../errors.ts';
import { basisPoints, bump, cappedFees, sharedFees } from './fees.ts';
import { followTransaction, type FollowedTransaction, type FollowSettings } from './follow.ts';
import { DEFAULT_REPLACE_AFTER_BLOCKS } from './gaps.ts';
import { HEAD_POLL_MS, headsOf } from './heads.ts';
import { createProcessJournal, type BroadcastFence, type JournalEntry, type TransactionJournal } from './journal.ts';
import { classify, transactionError } from './node-errors.ts';
import { inspectNonceSlot, type NonceSlotState } from './inspect.ts';
import { endResult, settle } from './settle.ts';
import { signerContext, type Signed, type SignerContext } from './signer.ts';
import { byNonceSlot, signedOf } from './slots.ts';
import type { Fees, SendResult, SimulateResult, TransactionRequest, TxEvent } from './types.ts';

export { TransactionError, type TransactionFailureCode } from '../errors.ts';
export type { SendResult, SimulateResult, TransactionRequest, TxEvent } from './types.ts';
export type { NonceSlotState } from './inspect.ts';
export { DEFAULT_REPLACE_AFTER_BLOCKS } from './gaps.ts';

export interface TransactionSenderOptions {
  publicClient: PublicClient;
  /** The key that signs, here (a local account: the hash is known before the broadcast, for the journal). */
  account: LocalAccount;
  /** The chain (its id signs every transaction); default the client's, else asked from the node once. */
  chain?: Chain;
  /** Where broadcasts are recorded before they go out (the outbox); default in this process only. */
  journal?: TransactionJournal;
  clock?: Clock;
  /** Gas limit = estimate * (100 + margin) / 100. Default 20. */
  gasMarginPercent?: number;
  /** A transaction not mined this many heads after it was sent is replaced (docs/transactions.md#gaps). Default 3. */
  replaceAfterBlocks?: number;
  /** A transaction not mined this long after it was sent is replaced too (whichever comes first). Default 60 000. */
  replaceAfterMs?: number;
  /** Each replacement raises both fees by this much (nodes require at least 10). Default 12.5. */
  feeBumpPercent?: number;
  /**
   * No transaction is signed with maxFeePerGas above this (wei; chains.NAME.transactionOverrides.gasPriceCap):
   * while the base fee is above it a send throws DeliveryError `fee` before signing anything.
   */
  gasPriceCap?: bigint;
  /** No transaction is signed with a gas limit above this (transactionGasLimit): DeliveryError `gas`. */
  maxGas?: bigint;
  /** Blocks including the transaction's own. Default 1 (mined). */
  confirmations?: number;
  /** The longest wait between two looks at a send's receipts (a new block ends it sooner). Default 1 000. */
  pollMs?: number;
  /** Between two head reads while sends wait (one per client and clock, as the first sender built sets it). Default 250. */
  headPollMs?: number;
  /** Overall wait for one send, from the first broadcast. Default 600 000. */
  timeoutMs?: number;
  /** Custom errors to decode revert reasons with (e.g. the ISM's and recipient's ABIs). */
  errorAbi?: Abi;
  /** Told of every broadcast, replacement, re-broadcast and gap (docs/transactions.md#gaps), for logs and metrics. */
  onEvent?: (e: TxEvent) => void;
  /** Told what happened to a transaction the sender follows on its own (one found in the journal). */
  onRecovered?: (nonce: number, outcome: 'mined' | 'dropped' | 'failed', detail: string) => void;
}

export interface SendOptions {
  /** Called on every poll while waiting; an error it throws ends the wait (the transaction may still land). */
  onWait?: () => Promise<void>;
  /** The simulation of this same request the caller has just run (`simulate`): its gas limit is signed. */
  simulated?: SimulateResult;
  /**
   * The message the transaction delivers and the lease its first broadcast is recorded under
   * (the record renews it; refused, nothing is sent: DeliveryError `stopped`).
   */
  owner?: { messageId: string; fence: BroadcastFence };
  /**
   * The caller records a mined transaction with the outbox's markDelivered, which settles its
   * journal slot in the same write; the sender then does not settle it separately.
   */
  settledByRecord?: boolean;
}

export interface TransactionSender {
  /** The signer's address, lower-case. */
  readonly signer: Address;
  simulate(req: TransactionRequest): Promise<SimulateResult>;
  send(req: TransactionRequest, opts?: SendOptions): Promise<SendResult>;
  /**
   * Follows one journaled slot of this signer (its broadcasts, oldest first) to its end, as `send`
   * follows its own: mined → the result; still pending or dropped → replaced at the same nonce.
   * Throws TransactionError `nonce` when the nonce was used by another transaction (none of its own
   * can land any more: the slot is settled `dropped`).
   */
  follow(entries: readonly JournalEntry[], opts?: Pick<SendOptions, 'onWait' | 'settledByRecord'>): Promise<SendResult>;
  /** Where a journaled slot of another signer stands: read from the node, nothing sent. */
  inspect(entries: readonly JournalEntry[]): Promise<NonceSlotState>;
  /**
   * Follows every open slot of this signer the journal holds, in the background; resolves with how
   * many. With `signal`: each follow ends at its next look after the abort (the worker stops),
   * reporting nothing; the slots stay open in the journal for the next start.
   */
  recover(signal?: AbortSignal): Promise<number>;
  /** The lowest nonce this process follows and how long since it was first sent (a metric); undefined: none. */
  lowestOpen(): { nonce: number; ageMs: number } | undefined;
}

export function createTransactionSender(opts: TransactionSenderOptions): TransactionSender {
  const { publicClient, account, errorAbi } = opts;
  const clock = opts.clock ?? systemClock;
  const journal = opts.journal ?? createProcessJournal(() => clock.now());
  const margin = basisPoints(opts.gasMarginPercent ?? 20);
  const bumpPercent = opts.feeBumpPercent ?? 12.5;
  if (!(bumpPercent >= 10))
    throw new OutOfRangeError('feeBumpPercent must be at least 10 (nodes refuse smaller replacements)');
  const settings: FollowSettings = {
    bumpPercent,
    gasPriceCap: opts.gasPriceCap,
    replaceAfterMs: opts.replaceAfterMs ?? 60_000,
    replaceAfterBlocks: opts.replaceAfterBlocks ?? DEFAULT_REPLACE_AFTER_BLOCKS,
    confirmations: BigInt(Math.max(1, opts.confirmations ?? 1)),
    pollMs: opts.pollMs ?? 1_000,
    headPollMs: opts.headPollMs ?? HEAD_POLL_MS,
    timeoutMs: opts.timeoutMs ?? 600_000,
  };
  const c = signerContext({
    publicClient,
    account,
    chain: opts.chain ?? publicClient.chain,
    journal,
    clock,
    errorAbi,
    onEvent: opts.onEvent,
  });
  // Made now at this interval: the fee reads (lib/worker/tx/fees.ts) would make it with the default one.
  headsOf(publicClient, clock, settings.headPollMs);
  /** When each nonce the signer's senders follow was first sent (known from the first follow on). */
  let open: Map<number, number> | undefined;

  async function simulate(req: TransactionRequest): Promise<SimulateResult> {
    // The send's fee read starts beside the estimate, shared (docs/delivery.md#throughput).
    sharedFees(publicClient, c.chain, clock, errorAbi).catch(() => {});
    let estimate: bigint;
    try {
      // `prepare: false`: eth_estimateGas alone (viem fills a local account's request first otherwise).
      const { to, data, value } = req;
      estimate = await publicClient.estimateGas({ account, to, data, value, prepare: false });
    } catch (err) {
      throw transactionError(classify(err), 'simulation', errorAbi, err);
    }
    return { estimate, gas: bump(estimate, margin) };
  }

  /**
   * The first broadcast of a send: a nonce from the book, recorded (under the owner's lease), then
   * sent. A nonce the node says is used (by a transaction the journal does not know) is left and
   * the next one tried, a few times; a broadcast that certainly failed frees its nonce.
   */
  async function first(
    req: TransactionRequest,
    gas: bigint,
    fees: Fees,
    owner: SendOptions['owner'],
  ): Promise<{ t: Signed; hash: Hash; raw: Hex }> {
    const nonces = await c.book();
    for (let attempt = 0; ; attempt++) {
      const t: Signed = { nonce: nonces.take(), req, gas, fees };
      let sent: Awaited<ReturnType<SignerContext['journaled']>>;
      try {
        try {
          sent = await c.journaled(t, owner?.messageId, owner?.fence);
        } catch (err) {
          if (err instanceof TransactionError) throw err;
          throw new DeliveryError('stopped', 'the journal could not record the transaction: nothing sent', {
            cause: err,
          });
        }
        if (sent.outcome === 'unrecorded')
          throw new DeliveryError('stopped', 'lease lost before the broadcast: nothing sent');
        if (sent.outcome === 'sent' || sent.outcome === 'unknown') {
          await c.emit({ kind: 'broadcast', nonce: t.nonce, hash: sent.hash, ...fees, messageId: owner?.messageId });
          return { t, hash: sent.hash, raw: sent.raw };
        }
      } catch (err) {
        // Nothing went out under this nonce: the next send takes it.
        nonces.free(t.nonce);
        throw err;
      }
      const { outcome } = sent;
      if (outcome.kind === 'nonce_low') {
        // The node says the nonce is used: only what it has mined is believed. A nonce below its
        // mined count was used behind our back (the book moves past it); otherwise the reply was
        // wrong (a stale node) and the nonce is free again.
        const mined = await c.count('latest').catch(() => t.nonce);
        if (mined > t.nonce && attempt < 3) {
          nonces.consumed(t.nonce);
          nonces.observe(mined);
          continue;
        }
      }
      nonces.free(t.nonce);
      throw await c.refusedError(outcome, t, sent.hash);
    }
  }

  /** Follows `slot` to its end and records that end once (however many join the follow). */
  async function followed(slot: FollowedTransaction, o: FollowOptions): Promise<SendResult> {
    const where = { chainId: await c.chainId(), signer: c.address, nonce: slot.t.nonce };
    const since = (await c.shared()).openSince;
    open = since;
    const end = await c.followOnce(slot.t.nonce, async () => {
      since.set(slot.t.nonce, o.firstSentAt ?? slot.sentAt);
      const ended = await followTransaction(c, settings, slot, o.onWait).finally(() => since.delete(slot.t.nonce));
      await settle(where, ended, {
        journal,
        book: await c.book(),
        messageId: o.messageId,
        settledByRecord: o.settledByRecord,
      });
      return ended;
    });
    return endResult(end, slot.t, slot.hashes[0], c);
  }

  async function send(req: TransactionRequest, sendOpts: SendOptions = {}): Promise<SendResult> {
    const { gas } = sendOpts.simulated ?? (await simulate(req));
    if (opts.maxGas !== undefined && gas > opts.maxGas)
      throw new DeliveryError('gas', `gas limit ${gas} exceeds transactionGasLimit ${opts.maxGas}: nothing sent`);
    const fees = await cappedFees(publicClient, c.chain, opts.gasPriceCap, errorAbi, clock);
    const { t, hash, raw } = await first(req, gas, fees, sendOpts.owner);
    const messageId = sendOpts.owner?.messageId;
    return followed(
      { t, hashes: [hash], raw, messageId: messageId ?? hash, sentAt: clock.now(), fresh: true },
      { onWait: sendOpts.onWait, messageId, settledByRecord: sendOpts.settledByRecord },
    );
  }

  async function follow(
    entries: readonly JournalEntry[],
    followOpts: Pick<SendOptions, 'onWait' | 'settledByRecord'> = {},
  ) {
    if (entries.length === 0) throw new TransactionError('rpc', 'no journaled transaction to follow');
    const newest = entries[entries.length - 1];
    const t = signedOf(newest);
    (await c.book()).hold(t.nonce);
    const hashes = entries.map((e) => e.hash as Hash).reverse();
    // A send without a message was journaled under its first hash: it has no gas book.
    const messageId = newest.messageId === entries[0].hash ? undefined : newest.messageId;
    return followed(
      { t, hashes, raw: newest.raw as Hex, messageId: newest.messageId, sentAt: Math.min(clock.now(), newest.sentAt) },
      { ...followOpts, messageId, firstSentAt: Math.min(clock.now(), entries[0].sentAt) },
    );
  }

  const inspect = (entries: readonly JournalEntry[]) => inspectNonceSlot(publicClient, journal, entries);

  async function recover(signal?: AbortSignal): Promise<number> {
    const open = await journal.openBroadcasts({ chainId: await c.chainId(), signer: c.address });
    const onWait = signal && (async () => signal.throwIfAborted());
    const slots = byNonceSlot(open);
    for (const entries of slots) {
      const { nonce } = entries[0];
      follow(entries, onWait ? { onWait } : {}).then(
        (r) => opts.onRecovered?.(nonce, 'mined', r.hash),
        (err: unknown) =>
          signal?.aborted ||
          opts.onRecovered?.(
            nonce,
            err instanceof TransactionError && err.code === 'nonce' ? 'dropped' : 'failed',
            err instanceof Error ? err.message : String(err),
          ),
      );
    }
    return slots.length;
  }

  function lowestOpen(): { nonce: number; ageMs: number } | undefined {
    if (!open?.size) return undefined;
    const nonce = Math.min(...open.keys());
    return { nonce, ageMs: Math.max(0, clock.now() - (open.get(nonce) as number)) };
  }

  return { signer: c.address, simulate, send, follow, inspect, recover, lowestOpen };
}

interface FollowOptions extends Pick<SendOptions, 'onWait' | 'settledByRecord'> {
  /** The message whose gas book a mined failure is written to; undefined for a send without one. */
  messageId?: string;
  /** When the slot's first transaction was sent (its age), if before the newest. */
  firstSentAt?: number;
}
