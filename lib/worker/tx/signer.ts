/**
 * One signer on one chain, as the transaction sender uses it (docs/transactions.md#nonces): its nonce
 * book (read once from the node's counts and the journal, then shared by every sender built on the
 * same client in this process), its signing, its journal records, and the slots being followed
 * (a second follower of a nonce joins the first).
 */
import {
  keccak256,
  type Abi,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import type { Clock } from '../../clock.ts';
import { broadcast, type BroadcastOutcome } from './broadcast.ts';
import type { Broadcast, BroadcastFence, TransactionJournal } from './journal.ts';
import { TransactionError } from '../errors.ts';
import { type Classified, classify, transactionError } from './node-errors.ts';
import { createNonceBook, type NonceBook } from './nonces.ts';
import { perClient } from './per-client.ts';
import type { HeadView } from './gaps.ts';
import type { Fees, TransactionRequest, TxEvent } from './types.ts';

/** A transaction of a slot as its signer knows it: enough to sign it again with other fees. */
export interface Signed {
  nonce: number;
  req: TransactionRequest;
  gas: bigint;
  fees: Fees;
}

interface Shared {
  book: Promise<NonceBook> | undefined;
  following: Map<number, Promise<unknown>>;
  /** When each followed nonce was first sent (ms): the age of the lowest is a metric. */
  openSince: Map<number, number>;
  /** Nonces whose transactions the node lost, being healed (docs/transactions.md#gaps). */
  missing: Set<number>;
  /** The node's state at the last head asked for, shared by every slot of the signer. */
  view: { head: bigint; promise: Promise<HeadView> } | undefined;
}
const registry = perClient<string, Shared>();

function sharedState(client: object, key: string): Shared {
  return registry(client, key, () => ({
    book: undefined,
    following: new Map(),
    openSince: new Map(),
    missing: new Set(),
    view: undefined,
  }));
}

export interface SignerContext {
  publicClient: PublicClient;
  account: LocalAccount;
  /** Lower-case. */
  address: Address;
  chain: Chain | undefined;
  journal: TransactionJournal;
  clock: Clock;
  errorAbi: Abi | undefined;
  chainId(): Promise<number>;
  /** The node's count of the signer's transactions (`latest`: mined). */
  count(blockTag: 'latest' | 'pending'): Promise<number>;
  book(): Promise<NonceBook>;
  sign(t: Signed): Promise<{ raw: Hex; hash: Hash }>;
  /** The journal entry of `signed` (`t` signed) for `messageId`. */
  entry(t: Signed, messageId: string, signed: { raw: Hex; hash: Hash }): Promise<Broadcast>;
  /**
   * One broadcast as the journal wants it: `t` signed, recorded for `messageId` (a send without a
   * message: under its own hash; under `fence` for
   * the first broadcast of a nonce), sent, and removed from the journal again when the node
   * certainly refused it. `unrecorded`: the journal said no (a lost lease), nothing sent. A
   * journal that fails throws, nothing sent.
   */
  journaled(
    t: Signed,
    messageId: string | undefined,
    fence?: BroadcastFence,
  ): Promise<{ hash: Hash; raw: Hex; outcome: BroadcastOutcome | 'unrecorded' }>;
  /** `t` signed and broadcast without a journal record (a self-transfer filling a gap delivers no message). */
  unjournaled(t: Signed): Promise<{ hash: Hash; raw: Hex; outcome: BroadcastOutcome }>;
  /** The node's state for this signer at `head` (asked once per head, whatever the number of slots). */
  headView(head: bigint): Promise<HeadView>;
  /** This signer's state shared by its slots in this process. */
  shared(): Promise<Shared>;
  /**
   * The TransactionError for a first broadcast of `t` the node refused; `insufficient_funds` says
   * the signer, its balance (asked now) and what the transaction needs at most.
   */
  refusedError(outcome: Classified & { cause: unknown }, t: Signed, hash: Hash): Promise<TransactionError>;
  /** Tells the embedder (logs, metrics) what was done. */
  emit(e: Omit<TxEvent, 'chainId' | 'signer'>): Promise<void>;
  /** Joins the follower of `nonce` in this process, or starts it with `start`. */
  followOnce<T>(nonce: number, start: () => Promise<T>): Promise<T>;
}

export function signerContext(o: {
  publicClient: PublicClient;
  account: LocalAccount;
  chain: Chain | undefined;
  journal: TransactionJournal;
  clock: Clock;
  errorAbi: Abi | undefined;
  onEvent?: (e: TxEvent) => void;
}): SignerContext {
  const { publicClient, account, journal, errorAbi, onEvent } = o;
  const address = account.address.toLowerCase() as Address;
  let id: Promise<number> | undefined;
  const chainId = () => {
    id ??= o.chain ? Promise.resolve(o.chain.id) : publicClient.getChainId();
    return id;
  };
  let state: Shared | undefined;
  const shared = async () => {
    state ??= sharedState(publicClient, `${address}:${await chainId()}`);
    return state;
  };

  async function count(blockTag: 'latest' | 'pending'): Promise<number> {
    try {
      return await publicClient.getTransactionCount({ address, blockTag });
    } catch (err) {
      throw transactionError(classify(err), 'reading the nonce', errorAbi, err);
    }
  }

  async function book(): Promise<NonceBook> {
    const s = await shared();
    s.book ??= (async () => {
      const [mined, pending, open] = await Promise.all([
        count('latest'),
        count('pending'),
        journal.openBroadcasts({ chainId: await chainId(), signer: address }),
      ]);
      return createNonceBook({ mined, pending, held: open.map((e) => e.nonce) });
    })().catch((err) => {
      s.book = undefined;
      throw err;
    });
    return s.book;
  }

  async function sign(t: Signed): Promise<{ raw: Hex; hash: Hash }> {
    const raw = await account.signTransaction({
      chainId: await chainId(),
      type: 'eip1559',
      to: t.req.to,
      data: t.req.data,
      value: t.req.value,
      gas: t.gas,
      nonce: t.nonce,
      maxFeePerGas: t.fees.maxFeePerGas,
      maxPriorityFeePerGas: t.fees.maxPriorityFeePerGas,
    });
    return { raw, hash: keccak256(raw) };
  }

  const entry = async (t: Signed, messageId: string, signed: { raw: Hex; hash: Hash }): Promise<Broadcast> => ({
    messageId,
    chainId: await chainId(),
    signer: address,
    nonce: t.nonce,
    hash: signed.hash,
    raw: signed.raw.toLowerCase(),
  });

  return {
    ...o,
    address,
    chainId,
    count,
    book,
    sign,
    entry,
    async journaled(t, messageId, fence) {
      const signed = await sign(t);
      if (!(await journal.recordBroadcast(await entry(t, messageId ?? signed.hash, signed), fence)))
        return { ...signed, outcome: 'unrecorded' };
      const outcome = await broadcast(publicClient, signed.raw, signed.hash);
      if (outcome !== 'sent' && outcome !== 'unknown') await journal.forgetBroadcast(signed.hash);
      return { ...signed, outcome };
    },
    async unjournaled(t) {
      const signed = await sign(t);
      return { ...signed, outcome: await broadcast(publicClient, signed.raw, signed.hash) };
    },
    async headView(head) {
      const s = await shared();
      if (s.view?.head === head) return s.view.promise;
      const promise = Promise.all([
        count('latest'),
        count('pending'),
        publicClient.getBlock({ blockNumber: head }).then((b) => b.baseFeePerGas ?? undefined),
      ]).then(([mined, pending, baseFee]) => ({ head, mined, pending, baseFee }));
      s.view = { head, promise };
      promise.catch(() => {
        if (s.view?.promise === promise) s.view = undefined;
      });
      return promise;
    },
    shared,
    async refusedError(outcome, t, hash) {
      if (outcome.kind !== 'insufficient_funds')
        return transactionError(outcome, 'sending', errorAbi, outcome.cause, hash);
      const balance = await publicClient.getBalance({ address }).then(
        (wei) => `${wei} wei`,
        () => 'unknown',
      );
      const needs = t.gas * t.fees.maxFeePerGas + (t.req.value ?? 0n);
      return new TransactionError(
        'insufficient_funds',
        `sending: the signer ${address} cannot pay for gas: balance ${balance}, the transaction needs up to ${needs} wei (gas limit × maxFeePerGas + value); nothing sent, top the signer up`,
        { cause: outcome.cause, hash },
      );
    },
    async emit(e) {
      onEvent?.({ ...e, chainId: await chainId(), signer: address });
    },
    async followOnce<T>(nonce: number, start: () => Promise<T>): Promise<T> {
      const s = await shared();
      const running = s.following.get(nonce) as Promise<T> | undefined;
      if (running) return running;
      const promise = start().finally(() => s.following.delete(nonce));
      s.following.set(nonce, promise);
      return promise;
    },
  };
}
