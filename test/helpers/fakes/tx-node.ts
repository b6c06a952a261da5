/**
 * A model node and a harness for the transaction sender's unit tests (lib/worker/tx/sender.ts, follow.ts): one
 * signer's transactions on one chain, held in a pool and mined by the test (`mine()`), served
 * through a viem custom transport as a JSON-RPC node serves them. What it models, as geth does:
 * the mined and pending counts (pending stops at the first gap in the pool), a replacement at the
 * same nonce taken only with both fees at least 10 % higher ("replacement transaction
 * underpriced" otherwise), a nonce below the mined count refused ("nonce too low"), a block that
 * mines the pool's best transaction at each next nonce paying the base fee. A test scripts the
 * rest: refusals (`refuse`), methods that fail (`failing`), another transaction taking a nonce
 * (`useNonce`), a transaction the node loses (`drop`), an answer lost on the way back (`lose`). Every signed transaction it receives is
 * decoded with viem (`sent`), so tests assert the nonce, fees and gas that went out.
 *
 * `senderHarness` builds a sender on such a node with a fake clock, a journal that records what it
 * is told, and the sender's events; `drive` moves the clock until a send ends, running the test's
 * script at each step, and fails instead of hanging when it does not end.
 */
import assert from 'node:assert/strict';
import {
  createPublicClient,
  custom,
  keccak256,
  parseTransaction,
  RpcRequestError,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { GasSpend } from '../../../lib/gas/payment.ts';
import { createProcessJournal, type TransactionJournal } from '../../../lib/worker/tx/journal.ts';
import {
  createTransactionSender,
  type SendOptions,
  type TransactionSenderOptions,
  type TxEvent,
} from '../../../lib/worker/tx/sender.ts';
import { createFakeClock } from './clock.ts';

export const CHAIN_ID = 31337;

/** A transaction as the node received it (decoded from its signed bytes). */
export interface NodeTx {
  hash: Hash;
  raw: Hex;
  /** The chain id it was signed for. */
  chainId: number;
  nonce: number;
  to: Address;
  value: bigint;
  data: Hex;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

export interface Mined {
  hash: Hash;
  nonce: number;
  block: number;
  status: 'success' | 'reverted';
  /** Receipt fields the test overrides (a lying node's gasUsed, say). */
  over?: Record<string, unknown>;
}

export interface TxNode {
  client: PublicClient;
  /**
   * A new client of this node (another process's: nothing shared with `client`'s senders), with
   * `chain` as its configured chain if given.
   */
  connect(chain?: Chain): PublicClient;
  /** The chain's head (block number). */
  head: number;
  /** The base fee of every block from now on. */
  baseFee: bigint;
  /** eth_maxPriorityFeePerGas. */
  tip: bigint;
  /** The signer's mined count (the nonce the chain expects next). */
  mined: number;
  /** What the node holds, by hash. */
  pool: Map<Hash, NodeTx>;
  /** What was mined, by hash. */
  receipts: Map<Hash, Mined>;
  /** Every eth_sendRawTransaction, in order (refused ones included). */
  sent: NodeTx[];
  /** Every request's method, in order. */
  asked: string[];
  /** Every hash asked for with eth_getTransactionByHash, in order. */
  lookedUp: Hash[];
  /** A refusal for this send (a JSON-RPC error: code and words), or undefined to model the pool's answer. */
  refuse?: (tx: NodeTx) => { code: number; message: string } | undefined;
  /** Sends whose connection is cut before the node takes them (no answer: the sender cannot tell). */
  cut?: (tx: NodeTx) => boolean;
  /** Sends whose answer is lost after the node dealt with them (taken or refused: the sender cannot tell). */
  lose?: (tx: NodeTx) => boolean;
  /**
   * The pending count as another backend behind the same load balancer answers it (it still holds
   * what this one lost): while set, it replaces the model's.
   */
  pendingOver?: number;
  /** Methods that fail (a JSON-RPC internal error) while listed. */
  failing: Set<string>;
  /** Called with each request's method before it is answered (a test's script: mine now, say). */
  before?: (method: string) => void;
  /** Nonces whose transaction reverts when mined. */
  reverts: Set<number>;
  /** eth_estimateGas's answer: gas, or a JSON-RPC error (a revert). */
  estimate: bigint | { code: number; message: string; data?: Hex };
  /** Every eth_estimateGas call's first parameter. */
  estimated: unknown[];
  /** A JSON-RPC error eth_getTransactionReceipt answers instead of the receipt. */
  receiptError?: { code: number; message: string };
  /** Receipt fields for every receipt served (gasUsed, effectiveGasPrice). */
  receiptOver?: Record<string, unknown>;
  /** Mines one block: at each next nonce the pool's transaction with the highest fee that pays the base fee. */
  mine(): Mined[];
  /** Another transaction of the signer (not the sender's) takes the next nonce in a new block. */
  useNonce(): void;
  /** The node forgets `hash` (pool eviction, a restart). */
  drop(hash: Hash): void;
}

const hex = (n: number | bigint) => `0x${n.toString(16)}`;
/** Requests the model node answers in one turn of the event loop before it stops answering (a spinning sender). */
const SPIN_LIMIT = 5_000;
const blockHash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hash;

function decode(raw: Hex): NodeTx {
  const t = parseTransaction(raw);
  return {
    hash: keccak256(raw),
    raw,
    chainId: t.chainId ?? 0,
    nonce: t.nonce ?? 0,
    to: t.to as Address,
    value: t.value ?? 0n,
    data: (t.data ?? '0x') as Hex,
    gas: t.gas ?? 0n,
    maxFeePerGas: t.maxFeePerGas ?? 0n,
    maxPriorityFeePerGas: t.maxPriorityFeePerGas ?? 0n,
  };
}

/** A JSON-RPC error as a node answers it (viem's http transport raises the same class). */
const rpcError = (error: { code: number; message: string }) => new RpcRequestError({ body: {}, error, url: 'node' });

export function createTxNode(o: { head?: number; baseFee?: bigint; tip?: bigint; mined?: number } = {}): TxNode {
  const n: TxNode = {
    client: undefined as unknown as PublicClient,
    connect: (chain) => connect(chain),
    head: o.head ?? 10,
    baseFee: o.baseFee ?? 1_000n,
    tip: o.tip ?? 100n,
    mined: o.mined ?? 0,
    pool: new Map(),
    receipts: new Map(),
    sent: [],
    asked: [],
    lookedUp: [],
    failing: new Set(),
    reverts: new Set(),
    estimate: 100_000n,
    estimated: [],
    mine() {
      const block = ++n.head;
      const done: Mined[] = [];
      for (;;) {
        const best = [...n.pool.values()]
          .filter((t) => t.nonce === n.mined && t.maxFeePerGas >= n.baseFee)
          .sort((a, b) => Number(b.maxFeePerGas - a.maxFeePerGas))[0];
        if (!best) break;
        const m: Mined = {
          hash: best.hash,
          nonce: best.nonce,
          block,
          status: n.reverts.has(best.nonce) ? 'reverted' : 'success',
        };
        n.receipts.set(best.hash, m);
        done.push(m);
        for (const [h, t] of n.pool) if (t.nonce === best.nonce) n.pool.delete(h);
        n.mined++;
      }
      return done;
    },
    useNonce() {
      for (const [h, t] of n.pool) if (t.nonce === n.mined) n.pool.delete(h);
      n.mined++;
      n.head++;
    },
    drop(hash) {
      n.pool.delete(hash);
    },
  };

  const pending = () => {
    let p = n.mined;
    while ([...n.pool.values()].some((t) => t.nonce === p)) p++;
    return p;
  };

  function send(raw: Hex): Hash {
    const tx = decode(raw);
    n.sent.push(tx);
    if (n.cut?.(tx)) throw new Error('socket hang up');
    let answer: Hash | Error;
    try {
      answer = take(tx);
    } catch (err) {
      answer = err as Error;
    }
    if (n.lose?.(tx)) throw new Error('socket hang up');
    if (answer instanceof Error) throw answer;
    return answer;
  }

  function take(tx: NodeTx): Hash {
    const scripted = n.refuse?.(tx);
    if (scripted) throw rpcError(scripted);
    if (n.pool.has(tx.hash) || n.receipts.has(tx.hash)) throw rpcError({ code: -32000, message: 'already known' });
    if (tx.nonce < n.mined) throw rpcError({ code: -32000, message: 'nonce too low' });
    const held = [...n.pool.values()].find((t) => t.nonce === tx.nonce);
    if (held) {
      const enough = (mine: bigint, theirs: bigint) => mine * 100n >= theirs * 110n;
      if (!enough(tx.maxFeePerGas, held.maxFeePerGas) || !enough(tx.maxPriorityFeePerGas, held.maxPriorityFeePerGas))
        throw rpcError({ code: -32000, message: 'replacement transaction underpriced' });
      n.pool.delete(held.hash);
    }
    n.pool.set(tx.hash, tx);
    return tx.hash;
  }

  function transaction(hash: Hash) {
    n.lookedUp.push(hash);
    const t = n.pool.get(hash);
    const m = n.receipts.get(hash);
    if (!t && !m) return null;
    return {
      hash,
      nonce: hex(t?.nonce ?? m?.nonce ?? 0),
      from: `0x${'00'.repeat(20)}`,
      to: t?.to ?? `0x${'00'.repeat(20)}`,
      value: '0x0',
      gas: '0x5208',
      maxFeePerGas: '0x1',
      maxPriorityFeePerGas: '0x1',
      input: '0x',
      type: '0x2',
      chainId: hex(CHAIN_ID),
      blockHash: m ? blockHash(m.block) : null,
      blockNumber: m ? hex(m.block) : null,
      transactionIndex: m ? '0x0' : null,
      v: '0x0',
      r: '0x1',
      s: '0x1',
      yParity: '0x0',
    };
  }

  function receipt(hash: Hash) {
    const m = n.receipts.get(hash);
    if (!m) return null;
    return {
      transactionHash: hash,
      transactionIndex: '0x0',
      blockHash: blockHash(m.block),
      blockNumber: hex(m.block),
      from: `0x${'00'.repeat(20)}`,
      to: `0x${'66'.repeat(20)}`,
      cumulativeGasUsed: '0x5208',
      gasUsed: '0x5208',
      contractAddress: null,
      logs: [],
      logsBloom: `0x${'0'.repeat(512)}`,
      status: m.status === 'success' ? '0x1' : '0x0',
      type: '0x2',
      effectiveGasPrice: hex(n.baseFee),
      ...n.receiptOver,
      ...m.over,
    };
  }

  function block(tag: unknown) {
    const number = tag === 'latest' || tag === 'pending' ? n.head : Number(BigInt(tag as string));
    return {
      number: hex(number),
      hash: blockHash(number),
      parentHash: blockHash(number - 1),
      timestamp: hex(number * 12),
      baseFeePerGas: hex(n.baseFee),
      gasLimit: hex(30_000_000),
      gasUsed: '0x0',
      transactions: [],
    };
  }

  // This node answers on the same turn of the event loop (promise jobs only), where a node over
  // the network answers on a later one. A sender that calls it in a loop without ever waiting
  // would spin on promise jobs, and no timer (the test's bound, node:test's timeout) could fire:
  // past SPIN_LIMIT requests in one turn the node stops answering, so the loop stops and the
  // test's bound fails it.
  let burst = 0;
  const connect = (chain?: Chain) =>
    createPublicClient({
      chain,
      transport: custom(
        {
          async request({ method, params }: { method: string; params: unknown[] }) {
            if (burst++ === 0) setImmediate(() => (burst = 0));
            if (burst > SPIN_LIMIT) return new Promise(() => {});
            n.asked.push(method);
            n.before?.(method);
            if (n.failing.has(method)) throw rpcError({ code: -32603, message: 'internal error' });
            switch (method) {
              case 'eth_chainId':
                return hex(CHAIN_ID);
              case 'eth_blockNumber':
                return hex(n.head);
              case 'eth_getBlockByNumber':
                return block(params[0]);
              case 'eth_maxPriorityFeePerGas':
                return hex(n.tip);
              case 'eth_getTransactionCount':
                // A node answers the tags it knows and refuses others (geth: "invalid block number").
                if (params[1] === 'pending') return hex(n.pendingOver ?? pending());
                if (params[1] === 'latest') return hex(n.mined);
                throw rpcError({ code: -32602, message: `invalid block tag ${JSON.stringify(params[1])}` });
              case 'eth_sendRawTransaction':
                return send(params[0] as Hex);
              case 'eth_getTransactionReceipt':
                if (n.receiptError) throw rpcError(n.receiptError);
                return receipt(params[0] as Hash);
              case 'eth_getTransactionByHash':
                return transaction(params[0] as Hash);
              case 'eth_estimateGas':
                n.estimated.push(params[0]);
                if (typeof n.estimate !== 'bigint') throw rpcError(n.estimate);
                return hex(n.estimate);
              case 'eth_call':
                throw rpcError({ code: 3, message: 'execution reverted' });
              case 'eth_getBalance':
                return hex(10n ** 18n);
              default:
                throw new Error(`unexpected ${method}`);
            }
          },
        },
        { retryCount: 0 },
      ),
    }) as PublicClient;
  n.client = connect();
  return n;
}

export const ACCOUNT = privateKeyToAccount(`0x${'a7'.repeat(32)}`);
/** The signer's address, lower-case (as events and the journal write it). */
export const SELF = ACCOUNT.address.toLowerCase();
export const TO = `0x${'66'.repeat(20)}` as const;
/** The message the harness's sends deliver. */
export const ID = `0x${'11'.repeat(32)}`;
export const SIMULATED = { estimate: 40_000n, gas: 50_000n };
/** The node's first fees with its base fee 1 000 and tip 100: viem's 1.2 × base fee + tip. */
export const FIRST = { maxFeePerGas: 1_300n, maxPriorityFeePerGas: 100n };
/** FIRST raised by 12.5 %, rounded up. */
export const BUMPED = { maxFeePerGas: 1_463n, maxPriorityFeePerGas: 113n };

/** A journal that keeps what it is told (the process journal underneath), in order. */
export function recordingJournal(now: () => number = () => 0) {
  const inner = createProcessJournal(now);
  const calls: Array<[string, ...unknown[]]> = [];
  const spends: GasSpend[] = [];
  const journal: TransactionJournal = {
    recordBroadcast: (b, fence) => (
      calls.push(['record', b.messageId, b.nonce, b.hash]), inner.recordBroadcast(b, fence)
    ),
    forgetBroadcast: (hash) => (calls.push(['forget', hash]), inner.forgetBroadcast(hash)),
    closeNonceSlot: (slot, outcome) => (
      calls.push(['close', slot.nonce, outcome]), inner.closeNonceSlot(slot, outcome)
    ),
    openBroadcasts: (of) => inner.openBroadcasts(of),
    addGasSpent: (list) => (spends.push(...list), list.length),
  };
  return { journal, calls, spends };
}

/**
 * A sender on `node` (a new one by default) as a process of its own (its own client of the node),
 * with a fake clock at 0, a recording journal and its events.
 */
export function senderHarness(over: Partial<TransactionSenderOptions> = {}, node: TxNode = createTxNode()) {
  const clock = createFakeClock(0);
  const events: TxEvent[] = [];
  const j = recordingJournal(() => clock.now());
  const sender = createTransactionSender({
    publicClient: node.connect(),
    account: ACCOUNT,
    clock,
    journal: j.journal,
    onEvent: (e) => events.push(e),
    ...over,
  });
  /** Sends one transaction for message ID (its simulation SIMULATED: gas limit 50 000). */
  const send = (extra: Partial<SendOptions> = {}) =>
    sender.send(
      { to: TO, data: '0x1234' },
      { simulated: SIMULATED, owner: { messageId: ID, fence: { lease: 'l', leaseMs: 1 } }, ...extra },
    );
  /**
   * Moves the clock `stepMs` at a time until `p` settles, calling `at(ms)` before each step (the
   * test's script: blocks mined, transactions dropped); fails after `limitMs` instead of hanging.
   */
  async function drive<T>(
    p: Promise<T>,
    at: (ms: number) => void = () => {},
    { limitMs = 120_000, stepMs = 250 } = {},
  ): Promise<T> {
    let done = false;
    p.then(
      () => (done = true),
      () => (done = true),
    );
    for (let ms = 0; !done; ms += stepMs) {
      if (ms > limitMs) assert.fail(`still following after ${limitMs} ms`);
      at(ms);
      await clock.advance(stepMs);
    }
    return p;
  }
  /** The events as [kind, nonce, reason]. */
  const kinds = () => events.map((e) => [e.kind, e.nonce, e.reason]);
  return { node, clock, events, kinds, sender, send, drive, ...j };
}
