/**
 * What a mined transaction of a message spent without delivering it, as the transaction sender
 * records it in the gas book (lib/worker/tx/receipts.ts recordSpent; docs/gas.md#gas-already-spent):
 * the receipt's amounts bounded by what was signed, nothing for a success or a journal without a
 * gas book; and the sender's look at another signer's journaled slot (inspect) records a revert
 * before it closes the slot. The node is a scripted JSON-RPC transport; transactions are signed by
 * viem.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createPublicClient,
  custom,
  encodeErrorResult,
  keccak256,
  type Hash,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { GasSpend } from '../../../../lib/gas/payment.ts';
import { createMemoryOutbox, type JournalEntry } from '../../../../lib/outbox/index.ts';
import type { TransactionJournal } from '../../../../lib/worker/tx/journal.ts';
import { TransactionError } from '../../../../lib/worker/errors.ts';
import {
  confirmedReceipt,
  firstMined,
  minedFailure,
  receiptOf,
  recordSpent,
} from '../../../../lib/worker/tx/receipts.ts';
import { createTransactionSender } from '../../../../lib/worker/tx/sender.ts';
import { hyperlaneMessage, messageId, rpcReceipt } from '../../../helpers/fixtures/builders.ts';

const ID = `0x${'11'.repeat(32)}`;
const GWEI = 1_000_000_000n;
const SIGNED = { gas: 100_000n, maxFeePerGas: 5n * GWEI };

function receipt(over: Partial<TransactionReceipt>): TransactionReceipt {
  return {
    transactionHash: `0x${'AB'.repeat(32)}` as Hash,
    status: 'reverted',
    gasUsed: 60_000n,
    effectiveGasPrice: 3n * GWEI,
    ...over,
  } as TransactionReceipt;
}

/** A journal that keeps what it is told, in order. */
function journal(withBook = true) {
  const calls: string[] = [];
  const spends: GasSpend[] = [];
  const j: TransactionJournal = {
    recordBroadcast: () => true,
    forgetBroadcast: () => true,
    closeNonceSlot: () => (calls.push('closeNonceSlot'), 1),
    openBroadcasts: () => [],
    ...(withBook && {
      addGasSpent: (list: readonly GasSpend[]) => (calls.push('addGasSpent'), spends.push(...list), list.length),
    }),
  };
  return { j, calls, spends };
}

describe('what a reverted transaction spent (docs/gas.md#gas-already-spent)', () => {
  test("recordSpent keeps the receipt's gasUsed and gasUsed × effectiveGasPrice, ids lower-cased", async () => {
    const { j, spends } = journal();
    await recordSpent(j, ID.toUpperCase().replace('0X', '0x'), receipt({}), SIGNED);
    assert.deepEqual(spends, [
      { messageId: ID, txHash: `0x${'ab'.repeat(32)}`, gasUsed: 60_000n, cost: 180_000n * GWEI },
    ]);
  });

  test('a lying node cannot inflate it: gasUsed at most the gas limit, the price at most maxFeePerGas', async () => {
    const { j, spends } = journal();
    await recordSpent(j, ID, receipt({ gasUsed: 10n ** 30n, effectiveGasPrice: 10n ** 30n }), SIGNED);
    assert.deepEqual(
      spends.map((s) => [s.gasUsed, s.cost]),
      [[100_000n, 100_000n * 5n * GWEI]],
    );
    // A receipt without effectiveGasPrice: priced at what was signed.
    await recordSpent(j, ID, receipt({ effectiveGasPrice: undefined as unknown as bigint }), SIGNED);
    assert.equal(spends[1].cost, 60_000n * 5n * GWEI);
  });

  test('a success, or a journal without a gas book, records nothing', async () => {
    const { j, calls } = journal();
    await recordSpent(j, ID, receipt({ status: 'success' }), SIGNED);
    assert.deepEqual(calls, []);
    await recordSpent(journal(false).j, ID, receipt({}), SIGNED);
  });

  test("inspect: another signer's slot found mined reverted is recorded before the slot is closed", async () => {
    const other = privateKeyToAccount(`0x${'59'.repeat(32)}`);
    const signTx = async (nonce: number, maxFeePerGas: bigint) => {
      const raw = await other.signTransaction({
        chainId: 31337,
        type: 'eip1559',
        to: `0x${'66'.repeat(20)}`,
        data: '0x1234',
        gas: 90_000n,
        maxFeePerGas,
        maxPriorityFeePerGas: GWEI,
        nonce,
      });
      return { raw, hash: keccak256(raw) };
    };
    const first = await signTx(7, 2n * GWEI);
    const replacement = await signTx(7, 4n * GWEI);
    const entry = (t: { raw: Hex; hash: Hash }, messageId: string): JournalEntry => ({
      messageId,
      chainId: 31337,
      signer: other.address.toLowerCase(),
      nonce: 7,
      hash: t.hash,
      raw: t.raw,
      sentAt: 0,
    });
    const mined = { ...rpcReceipt(replacement.hash, [], '0x0'), gasUsed: '0x30d40', effectiveGasPrice: '0x3b9aca00' };
    const publicClient = createPublicClient({
      transport: custom({
        async request({ method, params }: { method: string; params: unknown[] }) {
          if (method === 'eth_chainId') return '0x7a69';
          if (method === 'eth_getTransactionReceipt') return params[0] === replacement.hash ? mined : null;
          throw new Error(`unexpected ${method}`);
        },
      }),
    });
    const { j, calls, spends } = journal();
    const sender = createTransactionSender({
      publicClient,
      account: privateKeyToAccount(`0x${'ac'.repeat(32)}`),
      journal: j,
    });
    const state = await sender.inspect([entry(first, ID), entry(replacement, ID)]);
    assert.deepEqual(state, { state: 'mined', hash: replacement.hash, status: 'reverted' });
    assert.deepEqual(calls, ['addGasSpent', 'closeNonceSlot'], 'recorded before the slot is closed');
    // 200 000 used by the node's word, bounded by the 90 000 signed; 1 gwei each.
    assert.deepEqual(spends, [{ messageId: ID, txHash: replacement.hash, gasUsed: 90_000n, cost: 90_000n * GWEI }]);

    // A send of no message (its id is its first hash): no gas book entry.
    const ownerless = journal();
    const bare = createTransactionSender({
      publicClient,
      account: privateKeyToAccount(`0x${'ac'.repeat(32)}`),
      journal: ownerless.j,
    });
    await bare.inspect([entry(first, first.hash), entry(replacement, first.hash)]);
    assert.deepEqual(ownerless.calls, ['closeNonceSlot']);
  });

  test('following our own slot: a revert is recorded before the slot closes; a stop in between and a second look count once', async () => {
    const key = `0x${'ac'.repeat(32)}` as const;
    const ours = privateKeyToAccount(key);
    const raw = await ours.signTransaction({
      chainId: 31337,
      type: 'eip1559',
      to: `0x${'66'.repeat(20)}`,
      data: '0x1234',
      gas: 80_000n,
      maxFeePerGas: 2n * GWEI,
      maxPriorityFeePerGas: GWEI,
      nonce: 3,
    });
    const hash = keccak256(raw);
    // The message is in the outbox, whose gas book the sender writes.
    const outbox = createMemoryOutbox();
    const bytes = hyperlaneMessage({ nonce: 5, origin: 1, destination: 2 });
    const id = messageId(bytes);
    outbox.enqueue([
      {
        id,
        originChain: 'anvil1',
        txHash: `0x${'01'.repeat(32)}`,
        origin: 1,
        destination: 2,
        nonce: 5,
        raw: Buffer.from(bytes.slice(2), 'hex'),
        enqueuedAt: 0,
      },
    ]);
    const entry: JournalEntry = {
      messageId: id,
      chainId: 31337,
      signer: ours.address.toLowerCase(),
      nonce: 3,
      hash,
      raw,
      sentAt: 0,
    };
    const mined = { ...rpcReceipt(hash, [], '0x0'), gasUsed: '0xea60', effectiveGasPrice: '0x77359400' };
    const publicClient = createPublicClient({
      transport: custom({
        async request({ method, params }: { method: string; params: unknown[] }) {
          if (method === 'eth_chainId') return '0x7a69';
          if (method === 'eth_getTransactionCount') return '0x4';
          if (method === 'eth_blockNumber') return (mined as Record<string, unknown>).blockNumber;
          if (method === 'eth_getTransactionReceipt') return params[0] === hash ? mined : null;
          if (method === 'eth_call') throw Object.assign(new Error('execution reverted: no'), { code: 3, data: '0x' });
          throw new Error(`unexpected ${method}`);
        },
      }),
    });
    const calls: string[] = [];
    let stops = 1;
    const j: TransactionJournal = {
      recordBroadcast: () => true,
      forgetBroadcast: () => true,
      closeNonceSlot: () => {
        calls.push('closeNonceSlot');
        // The worker stops right after the spend is recorded, before the slot is closed.
        if (stops-- > 0) throw new Error('stopped');
        return 1;
      },
      openBroadcasts: () => [],
      addGasSpent: (list) => (calls.push('addGasSpent'), outbox.addGasSpent(list)),
    };
    for (let look = 0; look < 2; look++) {
      // A new sender each time: the process that looks again after a stop.
      const sender = createTransactionSender({ publicClient, account: ours, journal: j, pollMs: 1, headPollMs: 1 });
      await assert.rejects(sender.follow([entry]));
    }
    assert.deepEqual(calls, ['addGasSpent', 'closeNonceSlot', 'addGasSpent', 'closeNonceSlot']);
    const r = outbox.get(id)!;
    // 60 000 gas at 2 gwei, counted once.
    assert.deepEqual([r.gasSpent, r.gasSpentWei], [60_000n, 120_000n * GWEI]);
  });
});

/** A node that answers receipts from `receipts`, the head `head`, and eth_call with `call`; `asked` lists the requests. */
function node(o: { receipts?: Record<string, unknown>; head?: number; call?: () => unknown }) {
  const asked: Array<[string, unknown]> = [];
  const client = createPublicClient({
    transport: custom(
      {
        async request({ method, params }: { method: string; params: unknown[] }) {
          asked.push([method, method === 'eth_call' ? params : params?.[0]]);
          if (method === 'eth_getTransactionReceipt') {
            const r = o.receipts?.[params[0] as string];
            if (r instanceof Error) throw { code: -32603, message: r.message };
            return r ?? null;
          }
          if (method === 'eth_blockNumber') return `0x${(o.head ?? 0).toString(16)}`;
          if (method === 'eth_call') return o.call?.() ?? '0x';
          throw new Error(`unexpected ${method}`);
        },
      },
      { retryCount: 0 },
    ),
  }) as PublicClient;
  return { client, asked };
}

const H = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hash;
/** A receipt as a node answers it: mined in block `block` (its hash derived from the block unless given). */
const rpc = (hash: Hash, block: number, over: Record<string, unknown> = {}) => ({
  ...rpcReceipt(hash, []),
  blockNumber: `0x${block.toString(16)}`,
  blockHash: H(0xb000 + block),
  ...over,
});

describe('receipts: mined, confirmed, and why a mined one failed (docs/transactions.md#transactions)', () => {
  test('receiptOf: undefined while not mined; a failing node is an error, not "not mined"', async () => {
    const { client } = node({ receipts: { [H(1)]: rpc(H(1), 10), [H(2)]: new Error('internal') } });
    assert.equal((await receiptOf(client, H(1)))?.transactionHash, H(1));
    assert.equal(await receiptOf(client, H(3)), undefined);
    await assert.rejects(receiptOf(client, H(2)));
  });

  test('firstMined: the hashes asked in order, the first mined one returned, none asked after it', async () => {
    const { client, asked } = node({ receipts: { [H(2)]: rpc(H(2), 10), [H(3)]: rpc(H(3), 11) } });
    assert.equal((await firstMined(client, [H(1), H(2), H(3)]))?.transactionHash, H(2));
    assert.deepEqual(asked, [
      ['eth_getTransactionReceipt', H(1)],
      ['eth_getTransactionReceipt', H(2)],
    ]);
    const none = node({});
    assert.equal(await firstMined(none.client, [H(1), H(4)]), undefined);
    assert.equal(none.asked.length, 2);
  });

  test('confirmedReceipt: with N confirmations at head >= block + N - 1, read again and still in its block', async () => {
    const mined = (await receiptOf(node({ receipts: { [H(1)]: rpc(H(1), 10) } }).client, H(1)))!;
    // One confirmation is the block that mined it: nothing asked.
    const one = node({});
    assert.equal(await confirmedReceipt(one.client, mined, 1n), mined);
    assert.deepEqual(one.asked, []);
    // Three: head 11 is two blocks (10 and 11), not enough, and the receipt is not read.
    const early = node({ head: 11, receipts: { [H(1)]: rpc(H(1), 10) } });
    assert.equal(await confirmedReceipt(early.client, mined, 3n), undefined);
    assert.deepEqual(
      early.asked.map(([m]) => m),
      ['eth_blockNumber'],
    );
    // Head 12: three blocks; the receipt read again, in the same block.
    const ready = node({ head: 12, receipts: { [H(1)]: rpc(H(1), 10) } });
    assert.equal((await confirmedReceipt(ready.client, mined, 3n))?.blockHash, mined.blockHash);
    assert.deepEqual(
      ready.asked.map(([m]) => m),
      ['eth_blockNumber', 'eth_getTransactionReceipt'],
    );
    // The head is read fresh each time (viem caches it per client otherwise): the next block confirms it.
    const o = { head: 11, receipts: { [H(1)]: rpc(H(1), 10) } };
    const moving = node(o);
    assert.equal(await confirmedReceipt(moving.client, mined, 3n), undefined);
    o.head = 12;
    assert.equal((await confirmedReceipt(moving.client, mined, 3n))?.blockHash, mined.blockHash);
    // Two confirmations are waited for too.
    assert.equal(await confirmedReceipt(node({ head: 10 }).client, mined, 2n), undefined);
    // Reorganised away (gone, or mined in another block): not confirmed.
    assert.equal(await confirmedReceipt(node({ head: 12 }).client, mined, 3n), undefined);
    const moved = node({ head: 12, receipts: { [H(1)]: rpc(H(1), 10, { blockHash: H(0xdead) }) } });
    assert.equal(await confirmedReceipt(moved.client, mined, 3n), undefined);
  });

  test('minedFailure: out of gas when it used its whole gas limit, nothing asked', async () => {
    const mined = receipt({ transactionHash: H(1), gasUsed: 100_000n, blockNumber: 10n });
    const { client, asked } = node({});
    const error = await minedFailure(
      client,
      `0x${'aa'.repeat(20)}`,
      { to: `0x${'bb'.repeat(20)}`, data: '0x12' },
      mined,
      100_000n,
      undefined,
    );
    assert.ok(error instanceof TransactionError);
    assert.deepEqual([error.code, error.message, error.hash], ['out_of_gas', 'the transaction ran out of gas', H(1)]);
    assert.deepEqual(asked, []);
  });

  test("minedFailure: otherwise the call replayed at the transaction's block gives the revert reason", async () => {
    const ABI = [{ type: 'error', name: 'Error', inputs: [{ name: 'm', type: 'string' }] }] as const;
    const data = encodeErrorResult({ abi: ABI, errorName: 'Error', args: ['not the owner'] });
    const mined = receipt({ transactionHash: H(1), gasUsed: 99_999n, blockNumber: 10n });
    const account = `0x${'aa'.repeat(20)}` as const;
    const req = { to: `0x${'bb'.repeat(20)}` as const, data: '0x1234' as Hex, value: 5n };
    const reverting = node({
      call: () => {
        throw { code: 3, message: 'execution reverted: not the owner', data };
      },
    });
    const error = await minedFailure(reverting.client, account, req, mined, 100_000n, undefined);
    assert.deepEqual(
      [error.code, error.message, error.reason, error.hash],
      ['revert', 'the transaction reverted: not the owner', 'not the owner', H(1)],
    );
    assert.deepEqual(
      reverting.asked,
      [['eth_call', [{ from: account, to: req.to, data: req.data, value: '0x5' }, '0xa']]],
      'at block 10',
    );
    // No reason in the replay, a replay that no longer reverts, a node that fails: reverted, no reason.
    const silent = node({
      call: () => {
        throw { code: 3, message: 'execution reverted' };
      },
    });
    const failing = node({
      call: () => {
        throw { code: -32603, message: 'internal' };
      },
    });
    for (const n of [silent, node({}), failing]) {
      const e = await minedFailure(n.client, account, req, mined, 100_000n, undefined);
      assert.deepEqual([e.code, e.message, e.reason, e.hash], ['revert', 'the transaction reverted', undefined, H(1)]);
    }
  });
});
