/**
 * One signer on one chain as the transaction sender uses it (lib/worker/tx/signer.ts,
 * docs/transactions.md#nonces): the chain id and the nonce counts read from the node, the nonce
 * book started from them and the journal and shared by every sender on the same client, the
 * signed bytes (read back by viem, an independent parser), the journal record made before each
 * broadcast (and removed when the node certainly refused it), the node's state read once per head,
 * the refusal of a signer that cannot pay (its balance and what the transaction needs), the events,
 * and one follower per nonce. The node is a scripted JSON-RPC transport.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createPublicClient,
  custom,
  keccak256,
  parseTransaction,
  recoverTransactionAddress,
  RpcRequestError,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { anvil } from 'viem/chains';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';
import { TransactionError } from '../../../../lib/worker/errors.ts';
import type { Broadcast, BroadcastFence, TransactionJournal } from '../../../../lib/worker/tx/journal.ts';
import { createNonceBook } from '../../../../lib/worker/tx/nonces.ts';
import { type Signed, signerContext } from '../../../../lib/worker/tx/signer.ts';
import type { TxEvent } from '../../../../lib/worker/tx/types.ts';

const account = privateKeyToAccount(`0x${'a7'.repeat(32)}`);
const ADDRESS = account.address.toLowerCase();

interface Script {
  mined?: number;
  pending?: number;
  /** eth_getTransactionCount fails this many more times. */
  countFails?: number;
  /** eth_sendRawTransaction: accepted, or refused with these words, or no answer (the connection cut). */
  refuse?: string;
  lost?: boolean;
  balance?: bigint | 'fail';
  baseFee?: Record<string, bigint | undefined>;
  blockFails?: boolean;
  /** eth_getBlockByNumber waits until the test answers or fails it (`held`). */
  holdBlocks?: boolean;
}

/** A node answering from `s`; `asked` lists each request as method and first parameter. */
function node(s: Script) {
  const asked: Array<[string, unknown]> = [];
  const sent: Hex[] = [];
  const held: Array<{ tag: string; answer(): void; fail(): void }> = [];
  const client = createPublicClient({
    transport: custom(
      {
        async request({ method, params }: { method: string; params: unknown[] }) {
          asked.push([method, params?.[0]]);
          switch (method) {
            case 'eth_chainId':
              return '0x7a69';
            case 'eth_getTransactionCount': {
              assert.equal(params[0], ADDRESS);
              if (s.countFails) {
                s.countFails--;
                throw { code: -32603, message: 'backend down' };
              }
              if (params[1] === 'latest') return `0x${(s.mined ?? 0).toString(16)}`;
              if (params[1] === 'pending') return `0x${(s.pending ?? 0).toString(16)}`;
              throw new Error(`unexpected block tag ${params[1]}`);
            }
            case 'eth_sendRawTransaction':
              // The node's answer refusing it, as viem's HTTP transport reports one.
              if (s.lost) throw new Error('socket hang up');
              if (s.refuse)
                throw new RpcRequestError({ body: {}, error: { code: -32000, message: s.refuse }, url: 'http://node' });
              sent.push(params[0] as Hex);
              return keccak256(params[0] as Hex);
            case 'eth_getTransactionByHash':
              return null;
            case 'eth_getBalance':
              assert.equal(params[0], ADDRESS, "the signer's balance");
              if (s.balance === 'fail') throw { code: -32603, message: 'backend down' };
              return `0x${(s.balance ?? 0n).toString(16)}`;
            case 'eth_getBlockByNumber': {
              if (s.blockFails) throw { code: -32603, message: 'backend down' };
              const fee = s.baseFee?.[params[0] as string];
              const block = {
                number: params[0],
                hash: `0x${'0b'.repeat(32)}`,
                ...(fee !== undefined && { baseFeePerGas: `0x${fee.toString(16)}` }),
                transactions: [],
              };
              if (!s.holdBlocks) return block;
              return new Promise((resolve, reject) =>
                held.push({
                  tag: params[0] as string,
                  answer: () => resolve(block),
                  fail: () => reject({ code: -32603, message: 'backend down' }),
                }),
              );
            }
            default:
              throw new Error(`unexpected ${method}`);
          }
        },
      },
      { retryCount: 0 },
    ),
  }) as PublicClient;
  return { client, asked, sent, s, held };
}

/** A journal that keeps what it is told; `accept: false` refuses records (a lost lease). */
function journal(open: Array<{ chainId: number; signer: string; nonce: number }> = [], accept = true) {
  const calls: unknown[] = [];
  const j: TransactionJournal = {
    recordBroadcast: (b: Broadcast, fence?: BroadcastFence) => (calls.push(['record', b, fence]), accept),
    forgetBroadcast: (hash: string) => (calls.push(['forget', hash]), true),
    closeNonceSlot: () => assert.fail('the signer closes no slot'),
    openBroadcasts: (of) => (
      calls.push(['open', of]),
      open
        .filter((e) => e.chainId === of.chainId && e.signer === of.signer)
        .map((e) => ({ ...e, messageId: 'm', hash: 'h', raw: '0x', sentAt: 0 }))
    ),
  };
  return { j, calls };
}

function context(
  client: PublicClient,
  j: TransactionJournal,
  o: { chain?: typeof anvil; onEvent?: (e: TxEvent) => void; who?: typeof account } = {},
) {
  return signerContext({
    publicClient: client,
    account: o.who ?? account,
    chain: o.chain,
    journal: j,
    clock: createFakeClock(),
    errorAbi: undefined,
    onEvent: o.onEvent,
  });
}

const T: Signed = {
  nonce: 4,
  req: { to: `0x${'c0'.repeat(20)}`, data: '0xabcdef', value: 9n },
  gas: 60_000n,
  fees: { maxFeePerGas: 30n, maxPriorityFeePerGas: 2n },
};

const caught = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof TransactionError, String(err));
    return { code: err.code, message: err.message };
  }
  return assert.fail('did not throw');
};

describe('signerContext: the node, the nonce book and the journal of one signer (docs/transactions.md#nonces)', () => {
  test('the chain id: read once from the node without a chain, never with one; the address lower-cased', async () => {
    const n = node({});
    const c = context(n.client, journal().j);
    assert.equal(c.address, ADDRESS);
    assert.deepEqual([await c.chainId(), await c.chainId()], [31337, 31337]);
    assert.equal(n.asked.filter(([m]) => m === 'eth_chainId').length, 1);
    const withChain = node({});
    assert.equal(await context(withChain.client, journal().j, { chain: anvil }).chainId(), anvil.id);
    assert.deepEqual(withChain.asked, []);
  });

  test("the node's counts, mined and pending; a failing node is a TransactionError while reading the nonce", async () => {
    const c = context(node({ mined: 3, pending: 5 }).client, journal().j, { chain: anvil });
    assert.deepEqual([await c.count('latest'), await c.count('pending')], [3, 5]);
    const failing = context(node({ countFails: 1 }).client, journal().j, { chain: anvil });
    assert.deepEqual(await caught(failing.count('latest')), {
      code: 'rpc',
      message: 'reading the nonce: node unreachable or failing',
    });
  });

  test('the nonce book starts from both counts and the journal’s open nonces of this signer on this chain', async () => {
    const open = [
      { chainId: 31337, signer: ADDRESS, nonce: 9 },
      { chainId: 31337, signer: ADDRESS, nonce: 6 },
      { chainId: 10, signer: ADDRESS, nonce: 20 },
      { chainId: 31337, signer: `0x${'99'.repeat(20)}`, nonce: 30 },
    ];
    const n = node({ mined: 5, pending: 7 });
    const { j, calls } = journal(open);
    const book = await context(n.client, j).book();
    assert.deepEqual(calls, [['open', { chainId: 31337, signer: ADDRESS }]]);
    assert.deepEqual(book.state(), createNonceBook({ mined: 5, pending: 7, held: [9, 6] }).state());
    assert.deepEqual(book.state(), { mined: 5, next: 10, held: [6, 9], freed: [7, 8] });
  });

  test('one book per client, signer and chain, shared by every context on them; a failed read is not kept', async () => {
    const n = node({ mined: 2, pending: 2, countFails: 1 });
    const a = context(n.client, journal().j, { chain: anvil });
    await assert.rejects(a.book(), TransactionError);
    const book = await a.book();
    assert.equal(await context(n.client, journal().j, { chain: anvil }).book(), book, 'the same book');
    const other = privateKeyToAccount(`0x${'a8'.repeat(32)}`);
    const n2 = node({ mined: 2, pending: 2 });
    assert.notEqual(await context(n2.client, journal().j, { chain: anvil }).book(), book, 'another client');
    assert.equal(book.take(), 2);
    assert.equal((await context(n.client, journal().j, { chain: anvil }).book()).take(), 3, 'nonces shared');
    // Another signer on the same client has its own (the scripted node only knows ours: its count fails).
    await assert.rejects(context(n.client, journal().j, { chain: anvil, who: other }).book());
  });

  test('sign: the bytes carry the chain, call, gas, nonce and fees, signed by the signer, hashed by keccak256', async () => {
    const c = context(node({}).client, journal().j, { chain: anvil });
    const { raw, hash } = await c.sign(T);
    assert.equal(hash, keccak256(raw));
    const tx = parseTransaction(raw);
    assert.deepEqual(
      [tx.type, tx.chainId, tx.to, tx.data, tx.value, tx.gas, tx.nonce, tx.maxFeePerGas, tx.maxPriorityFeePerGas],
      ['eip1559', 31337, T.req.to, '0xabcdef', 9n, 60_000n, 4, 30n, 2n],
    );
    assert.equal((await recoverTransactionAddress({ serializedTransaction: raw as never })).toLowerCase(), ADDRESS);
    const entry = await c.entry(T, 'msg', { raw: raw.toUpperCase().replace('0X', '0x') as Hex, hash });
    assert.deepEqual(entry, { messageId: 'msg', chainId: 31337, signer: ADDRESS, nonce: 4, hash, raw });
  });
});

describe('signerContext: a broadcast as the journal wants it (docs/transactions.md#the-transaction-journal)', () => {
  const fence = { lease: 'lease-1', leaseMs: 30_000 };

  test('recorded (under the fence, for its message) before it is sent; kept when the node took it', async () => {
    const n = node({});
    const { j, calls } = journal();
    const c = context(n.client, j, { chain: anvil });
    const r = await c.journaled(T, 'msg', fence);
    assert.equal(r.outcome, 'sent');
    assert.deepEqual(n.sent, [r.raw]);
    assert.deepEqual(calls, [['record', await c.entry(T, 'msg', r), fence]]);
    // A send without a message is recorded under its own hash.
    const bare = journal();
    const r2 = await context(n.client, bare.j, { chain: anvil }).journaled(T, undefined);
    assert.deepEqual(bare.calls, [['record', await c.entry(T, r2.hash, r2), undefined]]);
  });

  test('the journal refusing the record (a lost lease): nothing sent', async () => {
    const n = node({});
    const r = await context(n.client, journal([], false).j, { chain: anvil }).journaled(T, 'msg', fence);
    assert.equal(r.outcome, 'unrecorded');
    assert.equal(r.hash, keccak256(r.raw));
    assert.deepEqual(n.sent, []);
    assert.deepEqual(
      n.asked.filter(([m]) => m === 'eth_sendRawTransaction'),
      [],
    );
  });

  test('certainly refused by the node: the record removed again; without a journal record when unjournaled', async () => {
    const n = node({ refuse: 'nonce too low' });
    const { j, calls } = journal();
    const r = await context(n.client, j, { chain: anvil }).journaled(T, 'msg');
    assert.equal(typeof r.outcome === 'object' && r.outcome.kind, 'nonce_low');
    assert.deepEqual(calls.slice(1), [['forget', r.hash]]);
    // No answer and a hash the node does not have: it may have gone out, the record stays.
    const lost = node({ lost: true });
    const kept = journal();
    const r3 = await context(lost.client, kept.j, { chain: anvil }).journaled(T, 'msg');
    assert.equal(r3.outcome, 'unknown');
    assert.deepEqual(
      kept.calls.map((c) => (c as unknown[])[0]),
      ['record'],
    );
    const u = journal();
    const ok = node({});
    const sent = await context(ok.client, u.j, { chain: anvil }).unjournaled(T);
    assert.equal(sent.outcome, 'sent');
    assert.deepEqual(ok.sent, [sent.raw]);
    assert.deepEqual(u.calls, []);
  });
});

describe('signerContext: the head view, a signer that cannot pay, events and followers', () => {
  test("the node's state at a head, read once per head for every slot; a failed read is not kept", async () => {
    const n = node({ mined: 4, pending: 6, baseFee: { '0xa': 7n } });
    const c = context(n.client, journal().j, { chain: anvil });
    const [v1, v2] = await Promise.all([c.headView(10n), c.headView(10n)]);
    assert.deepEqual(v1, { head: 10n, mined: 4, pending: 6, baseFee: 7n });
    assert.equal(v2, v1);
    assert.equal(await context(n.client, journal().j, { chain: anvil }).headView(10n), v1, 'shared by the signer');
    assert.equal(n.asked.length, 3, 'two counts and the block, once');
    assert.deepEqual((await c.headView(11n)).baseFee, undefined, 'a block without a base fee');
    assert.equal(n.asked.length, 6);
    n.s.blockFails = true;
    await assert.rejects(c.headView(12n));
    n.s.blockFails = false;
    n.s.baseFee = { '0xc': 8n };
    assert.equal((await c.headView(12n)).baseFee, 8n, 'read again after a failure');
  });

  test('head views out at once: a failed one forgets only itself, whichever order they end in', async () => {
    const unhandled: unknown[] = [];
    const keep = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', keep);
    try {
      for (const laterEnds of ['fails first', 'answers first'] as const) {
        const n = node({ mined: 4, pending: 6, holdBlocks: true });
        const c = context(n.client, journal().j, { chain: anvil });
        const older = c.headView(10n);
        const newer = c.headView(11n);
        for (let turn = 0; n.held.length < 2; turn++) {
          assert.ok(turn < 100, 'both blocks asked for');
          await new Promise((resolve) => setImmediate(resolve));
        }
        if (laterEnds === 'fails first') n.held[1].fail();
        else n.held[1].answer();
        await newer.catch(() => {});
        n.held[0].fail();
        await assert.rejects(older);
        await new Promise((resolve) => setImmediate(resolve));
        const before = n.asked.length;
        n.s.holdBlocks = false;
        if (laterEnds === 'answers first') {
          assert.equal(await c.headView(11n), await newer, "head 11's view kept: the failure of 10 is not 11's");
          assert.equal(n.asked.length, before, 'head 11 not read again');
        } else {
          assert.equal((await c.headView(11n)).head, 11n);
          assert.equal(n.asked.length, before + 3, 'head 11 read again after its failure');
        }
      }
      assert.deepEqual(unhandled, [], 'no failure left unhandled');
    } finally {
      process.off('unhandledRejection', keep);
    }
  });

  test('a signer that cannot pay: its balance and what the transaction needs at most; other refusals as they are', async () => {
    const cause = new Error('insufficient funds for gas * price + value');
    const c = context(node({ balance: 1_000n }).client, journal().j, { chain: anvil });
    const err = await c.refusedError(
      { kind: 'insufficient_funds', said: '', answered: true, cause },
      T,
      `0x${'ab'.repeat(32)}`,
    );
    assert.deepEqual(
      [err.code, err.message, err.hash, err.cause],
      [
        'insufficient_funds',
        `sending: the signer ${ADDRESS} cannot pay for gas: balance 1000 wei, the transaction needs up to 1800009 wei (gas limit × maxFeePerGas + value); nothing sent, top the signer up`,
        `0x${'ab'.repeat(32)}`,
        cause,
      ],
    );
    const unknown = context(node({ balance: 'fail' }).client, journal().j, { chain: anvil });
    const noValue = { ...T, req: { ...T.req, value: undefined } };
    const e2 = await unknown.refusedError(
      { kind: 'insufficient_funds', said: '', answered: true, cause },
      noValue,
      `0x${'ab'.repeat(32)}`,
    );
    assert.match(e2.message, /: balance unknown, the transaction needs up to 1800000 wei /);
    const e3 = await c.refusedError(
      { kind: 'nonce_low', said: 'nonce too low', answered: true, cause },
      T,
      `0x${'ab'.repeat(32)}`,
    );
    assert.deepEqual(
      [e3.code, e3.message, e3.hash],
      ['nonce', 'sending: nonce refused by the node', `0x${'ab'.repeat(32)}`],
    );
  });

  test("events carry the signer's chain and address; a second follower of a nonce joins the first", async () => {
    const events: TxEvent[] = [];
    const c = context(node({}).client, journal().j, { onEvent: (e) => events.push(e) });
    await c.emit({ kind: 'broadcast', nonce: 4, hash: `0x${'ab'.repeat(32)}` });
    assert.deepEqual(events, [
      { kind: 'broadcast', nonce: 4, hash: `0x${'ab'.repeat(32)}`, chainId: 31337, signer: ADDRESS },
    ]);
    await context(node({}).client, journal().j).emit({ kind: 'gap', nonce: 1 });

    let starts = 0;
    let finish: ((v: string) => void) | undefined;
    const start = () => {
      starts++;
      return new Promise<string>((resolve) => (finish = resolve));
    };
    const first = c.followOnce(4, start);
    const second = c.followOnce(4, start);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(starts, 1, 'joined, not started twice');
    finish?.('mined');
    assert.deepEqual(await Promise.all([first, second]), ['mined', 'mined']);
    await c.followOnce(5, async () => 'other');
    assert.equal(await c.followOnce(4, async () => 'again'), 'again', 'a new follower once the first ended');
    assert.equal(starts, 1);
  });
});
