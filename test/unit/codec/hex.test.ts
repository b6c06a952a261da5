/**
 * lib/codec/hex.ts's hexToBytes, the core's public parser (docs/design.md#package): bytes for 0x-hex of
 * whole bytes in either case (checked against viem), InvalidArgumentError for anything else.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hexToBytes as viemHexToBytes } from 'viem/utils';
import { InvalidArgumentError } from '../../../lib/errors/classes.ts';
import { hexToBytes, parseHex } from '../../../lib/codec/hex.ts';

test('docs/design.md#package: hexToBytes parses 0x-hex of whole bytes in either case, as viem does', () => {
  for (const hex of ['0x', '0x00', '0xdeadBEEF', '0X0a', `0x${'ab'.repeat(300)}`]) {
    assert.deepEqual(hexToBytes(hex), viemHexToBytes(hex.replace(/^0X/, '0x') as `0x${string}`), hex);
  }
});

test('docs/design.md#package: hexToBytes throws InvalidArgumentError for anything else; parseHex gives undefined', () => {
  for (const bad of ['0xabc', 'abcd', '0xzz', '', '0', '0x0g', '0x\u00e9\u00e9', 7 as unknown as string]) {
    assert.throws(() => hexToBytes(bad), InvalidArgumentError, String(bad));
    assert.throws(
      () => hexToBytes(bad),
      (e: InvalidArgumentError) => e.code === 'invalid_argument',
    );
    assert.equal(parseHex(bad), undefined, String(bad));
  }
});
