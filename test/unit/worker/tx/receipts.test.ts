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
import { createPublicClient, custom, keccak256, type Hash, type Hex, type TransactionReceipt } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { GasSpend } from '../../../../lib/gas/payment.ts';
import { createMemoryOutbox, type JournalEntry } from '../../../../lib/outbox/index.ts';
import type { TransactionJournal } from '../../../../lib/worker/tx/journal.ts';
import { recordSpent } from '../../../../lib/worker/tx/receipts.ts';
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
