/**
 * The journal's open slots as an operator reads them (lib/worker/tx/slots.ts,
 * docs/transactions.md#gaps): grouped by chain, signer and nonce, lowest first, each with its message,
 * every hash oldest first, the newest transaction's fees decoded from its signed bytes (signed here
 * by viem, an independent implementation), and its age.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { keccak256 } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { byNonceSlot, openNonceSlots, signedOf } from '../../../../lib/worker/tx/slots.ts';
import { TransactionError } from '../../../../lib/errors/worker.ts';
import type { JournalEntry } from '../../../../lib/outbox/index.ts';

const account = privateKeyToAccount(`0x${'11'.repeat(32)}`);
const signer = account.address.toLowerCase();

async function entry(nonce: number, messageId: string, maxFeePerGas: bigint, sentAt: number): Promise<JournalEntry> {
  const raw = await account.signTransaction({
    chainId: 31337,
    type: 'eip1559',
    to: `0x${'22'.repeat(20)}`,
    data: '0x',
    gas: 21_000n,
    nonce,
    maxFeePerGas,
    maxPriorityFeePerGas: 1n,
  });
  return { messageId, chainId: 31337, signer, nonce, hash: keccak256(raw), raw, sentAt };
}

test('docs/transactions.md#gaps: openNonceSlots lists each open nonce once, lowest first, with its hashes, newest fees and age', async () => {
  const a = `0x${'aa'.repeat(32)}`;
  const b = `0x${'bb'.repeat(32)}`;
  const entries = [await entry(8, b, 30n, 2_000), await entry(7, a, 10n, 1_000), await entry(7, a, 12n, 1_500)];
  const slots = openNonceSlots(entries, 5_000);
  assert.deepEqual(
    slots.map((s) => [s.nonce, s.messageId, s.hashes, s.maxFeePerGas, s.maxPriorityFeePerGas, s.ageMs, s.lastSentAt]),
    [
      [7, a, [entries[1].hash, entries[2].hash], 12n, 1n, 4_000, 1_500],
      [8, b, [entries[0].hash], 30n, 1n, 3_000, 2_000],
    ],
  );
  assert.deepEqual(openNonceSlots([], 5_000), []);
});

const other = privateKeyToAccount(`0x${'33'.repeat(32)}`);

/** A journal entry of `tx` signed by `by` (viem signs and hashes it). */
async function signedEntry(
  by: typeof account,
  tx: Parameters<typeof account.signTransaction>[0],
  at: { messageId: string; sentAt: number },
): Promise<JournalEntry> {
  const raw = await by.signTransaction(tx);
  return {
    messageId: at.messageId,
    chainId: tx.chainId ?? 0,
    signer: by.address.toLowerCase(),
    nonce: tx.nonce ?? 0,
    hash: keccak256(raw),
    raw,
    sentAt: at.sentAt,
  };
}

const call = {
  type: 'eip1559',
  to: `0x${'22'.repeat(20)}`,
  data: '0xabcdef',
  value: 7n,
  gas: 90_000n,
  maxFeePerGas: 50n,
  maxPriorityFeePerGas: 2n,
} as const;

describe('signedOf: the call, gas and fees a replacement of a journaled transaction starts from', () => {
  test('read back from the signed bytes: recipient, data, value, gas and both fees', async () => {
    const e = await signedEntry(account, { ...call, chainId: 31337, nonce: 9 }, { messageId: 'm', sentAt: 0 });
    assert.deepEqual(signedOf(e), {
      nonce: 9,
      req: { to: call.to, data: '0xabcdef', value: 7n },
      gas: 90_000n,
      fees: { maxFeePerGas: 50n, maxPriorityFeePerGas: 2n },
    });
    const empty = await signedEntry(
      account,
      { ...call, data: '0x', value: 0n, chainId: 31337, nonce: 0 },
      { messageId: 'm', sentAt: 0 },
    );
    assert.deepEqual(signedOf(empty).req, { to: call.to, data: '0x', value: undefined });
    assert.equal(signedOf(empty).nonce, 0);
  });

  test('a tip of 0 (a node that suggests none, as on Arbitrum) is still an EIP-1559 call, replaced from 0', async () => {
    const e = await signedEntry(
      account,
      { ...call, maxPriorityFeePerGas: 0n, chainId: 42161, nonce: 3 },
      { messageId: 'm', sentAt: 0 },
    );
    assert.deepEqual(signedOf(e).fees, { maxFeePerGas: 50n, maxPriorityFeePerGas: 0n });
    const free = await signedEntry(
      account,
      { ...call, maxFeePerGas: 0n, maxPriorityFeePerGas: 0n, chainId: 42161, nonce: 3 },
      { messageId: 'm', sentAt: 0 },
    );
    assert.deepEqual(signedOf(free).fees, { maxFeePerGas: 0n, maxPriorityFeePerGas: 0n });
    assert.deepEqual(openNonceSlots([e], 0)[0].maxPriorityFeePerGas, 0n);
  });

  test('bytes that are not an EIP-1559 call (legacy, EIP-2930, a contract creation): refused, naming the hash', async () => {
    const legacy = await signedEntry(
      account,
      { type: 'legacy', to: call.to, gas: 21_000n, gasPrice: 5n, chainId: 31337, nonce: 1 },
      { messageId: 'm', sentAt: 0 },
    );
    const accessList = await signedEntry(
      account,
      { type: 'eip2930', to: call.to, gas: 21_000n, gasPrice: 5n, accessList: [], chainId: 31337, nonce: 1 },
      { messageId: 'm', sentAt: 0 },
    );
    const creation = await signedEntry(
      account,
      { ...call, to: undefined, chainId: 31337, nonce: 1 },
      { messageId: 'm', sentAt: 0 },
    );
    for (const e of [legacy, accessList, creation])
      assert.throws(
        () => signedOf(e),
        (err: unknown) =>
          err instanceof TransactionError &&
          err.code === 'rpc' &&
          err.message === `the journal's transaction ${e.hash} is not an EIP-1559 call`,
      );
    // An operator still sees the slot, without fees.
    const [slot] = openNonceSlots([legacy], 10);
    assert.deepEqual(
      [slot.nonce, slot.hashes, slot.maxFeePerGas, slot.maxPriorityFeePerGas],
      [1, [legacy.hash], undefined, undefined],
    );
  });
});

describe('byNonceSlot and openNonceSlots: one slot per chain, signer and nonce', () => {
  test('the same nonce on two chains or of two signers is two slots; ordered by chain, signer, nonce', async () => {
    const at = (messageId: string, sentAt: number) => ({ messageId, sentAt });
    const entries = [
      await signedEntry(other, { ...call, chainId: 10, nonce: 4 }, at('o10', 3_000)),
      await signedEntry(account, { ...call, chainId: 10, nonce: 4 }, at('a10', 2_000)),
      await signedEntry(account, { ...call, chainId: 1, nonce: 5 }, at('a1-5', 1_000)),
      await signedEntry(account, { ...call, chainId: 1, nonce: 4 }, at('a1-4', 4_000)),
      await signedEntry(account, { ...call, chainId: 1, nonce: 4, maxFeePerGas: 60n }, at('a1-4', 4_500)),
    ];
    const groups = byNonceSlot(entries);
    assert.deepEqual(
      groups.map((g) => g.map((e) => e.hash)),
      [[entries[3].hash, entries[4].hash], [entries[2].hash], [entries[0].hash], [entries[1].hash]],
      'by chain then nonce, each slot oldest first (the order the journal gave)',
    );
    const mine = account.address.toLowerCase();
    // On chain 10 both signers use nonce 4: ordered by the signer's address.
    const chain10 = [
      [10, mine, 4, 'a10', 2_000, 2_000, 3_000],
      [10, other.address.toLowerCase(), 4, 'o10', 3_000, 3_000, 2_000],
    ].sort((x, y) => String(x[1]).localeCompare(String(y[1])));
    assert.equal(
      chain10[0][1],
      mine,
      'the signer the journal gave second sorts first: not the journal order kept by chance',
    );
    const slots = openNonceSlots(entries, 5_000);
    assert.deepEqual(
      slots.map((s) => [s.chainId, s.signer, s.nonce, s.messageId, s.firstSentAt, s.lastSentAt, s.ageMs]),
      [[1, mine, 4, 'a1-4', 4_000, 4_500, 1_000], [1, mine, 5, 'a1-5', 1_000, 1_000, 4_000], ...chain10],
    );
    assert.equal(slots[0].maxFeePerGas, 60n, "the newest transaction's fees");
  });

  test("an entry recorded after `now` (another process's clock ahead) is aged 0, not negative", async () => {
    const e = await signedEntry(account, { ...call, chainId: 1, nonce: 1 }, { messageId: 'm', sentAt: 9_000 });
    assert.equal(openNonceSlots([e], 5_000)[0].ageMs, 0);
  });
});
