/**
 * relayer-api/testing's message builders (lib/testing/messages.ts) encode with the package's own
 * code; here they are checked against the viem-based builders of test/helpers/fixtures/builders.ts, an
 * independent implementation of Message.sol's packing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError, OutOfRangeError } from '../../../lib/errors/classes.ts';
import { hyperlaneMessage, messageId, txHash } from '../../../lib/testing/messages.ts';
import * as viemBuilt from '../../helpers/fixtures/builders.ts';

test('docs/embedding.md#test-tooling: hyperlaneMessage packs as Message.sol formatMessage (checked with viem)', () => {
  const cases = [
    {},
    { nonce: 7, origin: 1, destination: 8453 },
    {
      version: 3,
      nonce: 0xffff_ffff,
      origin: 42161,
      sender: '0x' + 'ab'.repeat(32),
      destination: 10,
      recipient: '0x00000000000000000000000000000000000000ff',
      body: '0x',
    },
    { body: '0x' + '00ff'.repeat(300), sender: '0x0000000000000000000000000000000000000001' },
  ] as const;
  for (const fields of cases) {
    const ours = hyperlaneMessage(fields);
    assert.equal(ours, viemBuilt.hyperlaneMessage(fields as viemBuilt.MessageFields), JSON.stringify(fields));
    assert.equal(messageId(ours), viemBuilt.messageId(ours as `0x${string}`));
  }
  assert.equal(txHash(0x1234), viemBuilt.txHash(0x1234));
});

test('docs/embedding.md#test-tooling: the builders refuse what does not fit a field', () => {
  assert.throws(() => hyperlaneMessage({ nonce: 2 ** 32 }), OutOfRangeError);
  assert.throws(() => hyperlaneMessage({ version: -1 }), OutOfRangeError);
  assert.throws(() => hyperlaneMessage({ sender: '0x' + '11'.repeat(33) }), OutOfRangeError);
  assert.throws(() => hyperlaneMessage({ body: '0x123' }), InvalidArgumentError);
  assert.throws(() => messageId('nope'), InvalidArgumentError);
});
