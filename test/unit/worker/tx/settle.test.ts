/**
 * The end of a slot, recorded once (lib/worker/tx/settle.ts, docs/transactions.md#the-transaction-journal):
 * a mined slot writes what a failed transaction spent to the gas book before the slot is closed
 * (docs/gas.md#gas-already-spent), then closes it with the mined hash and marks the nonce used; a
 * dropped one closes as dropped; a timeout writes nothing. And what a send returns or throws for
 * each end (`endResult`). The journal and the nonce book are recorders; the receipts are viem's
 * shape.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Hash, LocalAccount, PublicClient, TransactionReceipt } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { TransactionError } from '../../../../lib/worker/errors.ts';
import type { NonceSlot } from '../../../../lib/worker/tx/journal.ts';
import type { NonceBook } from '../../../../lib/worker/tx/nonces.ts';
import { endResult, settle } from '../../../../lib/worker/tx/settle.ts';
import type { Signed } from '../../../../lib/worker/tx/signer.ts';
import { settlingJournal } from '../../../helpers/fakes/journal.ts';

const ID = `0x${'1d'.repeat(32)}`;
const HASH = `0x${'AB'.repeat(32)}` as Hash;
const SLOT: NonceSlot = { chainId: 10, signer: `0x${'5a'.repeat(20)}`, nonce: 12 };
const SIGNED = { gas: 100_000n, maxFeePerGas: 50n };

const receipt = (status: 'success' | 'reverted', gasUsed = 40_000n): TransactionReceipt =>
  ({ transactionHash: HASH, status, gasUsed, effectiveGasPrice: 30n, blockNumber: 99n }) as TransactionReceipt;

/** Everything written, in order: the journal's calls and the nonce book's. */
function recorder(withGasBook = true) {
  const { journal, writes } = settlingJournal('settle', withGasBook);
  const book = { consumed: (n: number) => writes.push(['consumed', n]) } as unknown as NonceBook;
  return { journal, book, writes };
}

const closedMined = ['close', SLOT, { outcome: 'mined', hash: HASH.toLowerCase() }];

describe('settle: how a slot ended, written once (docs/transactions.md#the-transaction-journal)', () => {
  test('mined and reverted: the gas spent, then the slot closed with its hash, then the nonce used', async () => {
    const r = recorder();
    await settle(SLOT, { kind: 'mined', receipt: receipt('reverted'), signed: SIGNED }, { ...r, messageId: ID });
    assert.deepEqual(r.writes, [
      ['spent', { messageId: ID, txHash: HASH.toLowerCase(), gasUsed: 40_000n, cost: 40_000n * 30n }],
      closedMined,
      ['consumed', 12],
    ]);
  });

  test('mined reverted but settled by the record: the slot is still closed here (the record only settles a delivery)', async () => {
    const r = recorder();
    await settle(
      SLOT,
      { kind: 'mined', receipt: receipt('reverted'), signed: SIGNED },
      { ...r, messageId: ID, settledByRecord: true },
    );
    assert.deepEqual(r.writes.slice(1), [closedMined, ['consumed', 12]]);
  });

  test('mined and delivered: closed here unless the record settles it; no gas book entry either way', async () => {
    const r = recorder();
    await settle(SLOT, { kind: 'mined', receipt: receipt('success'), signed: SIGNED }, { ...r, messageId: ID });
    assert.deepEqual(r.writes, [closedMined, ['consumed', 12]]);
    const byRecord = recorder();
    await settle(
      SLOT,
      { kind: 'mined', receipt: receipt('success'), signed: SIGNED },
      { ...byRecord, messageId: ID, settledByRecord: true },
    );
    assert.deepEqual(byRecord.writes, [['consumed', 12]], 'one write fewer: markDelivered closes the slot');
  });

  test('a send without a message, or another signer’s slot (no nonce book): no gas book entry, no nonce', async () => {
    const r = recorder();
    await settle(SLOT, { kind: 'mined', receipt: receipt('reverted'), signed: SIGNED }, { journal: r.journal });
    assert.deepEqual(r.writes, [closedMined]);
  });

  test('dropped: closed as dropped, the nonce used; a timeout writes nothing (the slot stays open)', async () => {
    const r = recorder();
    await settle(SLOT, { kind: 'dropped' }, { ...r, messageId: ID });
    assert.deepEqual(r.writes, [
      ['close', SLOT, { outcome: 'dropped' }],
      ['consumed', 12],
    ]);
    const t = recorder();
    await settle(SLOT, { kind: 'timeout', message: 'not mined within 600 s' }, { ...t, messageId: ID });
    assert.deepEqual(t.writes, []);
  });
});

describe('endResult: what a send returns or throws for each end', () => {
  const t: Signed = {
    nonce: 12,
    req: { to: `0x${'66'.repeat(20)}`, data: '0x' },
    gas: 40_000n,
    fees: { maxFeePerGas: 50n, maxPriorityFeePerGas: 1n },
  };
  const first = `0x${'f1'.repeat(32)}` as Hash;
  const node = {
    publicClient: {} as PublicClient,
    account: privateKeyToAccount(`0x${'ac'.repeat(32)}`) as LocalAccount,
    errorAbi: undefined,
  };
  const thrown = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      assert.ok(err instanceof TransactionError);
      return { code: err.code, message: err.message, hash: err.hash };
    }
    assert.fail('did not throw');
  };

  test('mined and delivered: its hash, receipt and nonce', async () => {
    const r = receipt('success');
    assert.deepEqual(await endResult({ kind: 'mined', receipt: r, signed: SIGNED }, t, first, node), {
      hash: HASH,
      receipt: r,
      nonce: 12,
    });
  });

  test('mined and failed: why (all its gas used: out of gas), naming the mined hash', async () => {
    assert.deepEqual(
      await thrown(endResult({ kind: 'mined', receipt: receipt('reverted', 40_000n), signed: SIGNED }, t, first, node)),
      {
        code: 'out_of_gas',
        message: 'the transaction ran out of gas',
        hash: HASH,
      },
    );
  });

  test('dropped: a nonce error naming the nonce and the first hash; a timeout: its message', async () => {
    assert.deepEqual(await thrown(endResult({ kind: 'dropped' }, t, first, node)), {
      code: 'nonce',
      message: "nonce 12 was used by another transaction; none of this send's was mined",
      hash: first,
    });
    assert.deepEqual(await thrown(endResult({ kind: 'timeout', message: 'not mined within 600 s' }, t, first, node)), {
      code: 'timeout',
      message: 'not mined within 600 s',
      hash: first,
    });
  });
});
