/**
 * The journal's open slots as an operator reads them (lib/worker/tx/slots.ts,
 * docs/transactions.md#gaps): grouped by chain, signer and nonce, lowest first, each with its message,
 * every hash oldest first, the newest transaction's fees decoded from its signed bytes (signed here
 * by viem, an independent implementation), and its age.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keccak256 } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { openNonceSlots } from '../../../../lib/worker/tx/slots.ts';
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
