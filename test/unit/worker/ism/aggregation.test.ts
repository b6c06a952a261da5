/**
 * The aggregation metadata layout (lib/worker/ism/aggregation.ts, docs/isms.md#aggregation)
 * against the Hyperlane relayer's own encoder tests, bytes copied from hyperlane-xyz/hyperlane-monorepo
 * rust/main/agents/relayer/src/msg/metadata/aggregation.rs (commit 74663b04):
 * test_format_n_of_n_metadata_works_correctly, test_format_n_of_m_metadata_works_correctly,
 * test_format_empty_metadata_works_correctly. On anvil the real StaticAggregationIsm judges the
 * layout too (test/e2e/isms.e2e.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Hex } from 'viem';
import { encodeAggregationMetadata } from '../../../../lib/worker/ism/aggregation.ts';

const m0: Hex = '0x290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e563';
const m1: Hex = '0x510e4e770828ddbf7f7b00ab00a9f6adaf81c0dc9cc85f1f8249c256942d61d9';
const m2: Hex = '0x356e5a2cc1eba076e650ac7473fccc37952b46bc2e419a200cec0c451dce2336';
const m4: Hex = '0xf2e59013a0a379837166b59f871b20a8a0d101d1c355ea85d35329360e69c000';

test('docs/isms.md#aggregation: 3 of 3 modules encode as the Hyperlane relayer encodes them', () => {
  const expected =
    '0x000000180000003800000038000000580000005800000078' +
    '290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e563' +
    '510e4e770828ddbf7f7b00ab00a9f6adaf81c0dc9cc85f1f8249c256942d61d9' +
    '356e5a2cc1eba076e650ac7473fccc37952b46bc2e419a200cec0c451dce2336';
  const chosen = new Map([
    [0, m0],
    [1, m1],
    [2, m2],
  ]);
  assert.equal(encodeAggregationMetadata(3, chosen), expected);
});

test('docs/isms.md#aggregation: modules 0, 1, 2 and 4 of 5 leave module 3 a zero range, as the Hyperlane relayer does', () => {
  const expected =
    '0x000000280000004800000048000000680000006800000088000000000000000000000088000000a8' +
    '290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e563' +
    '510e4e770828ddbf7f7b00ab00a9f6adaf81c0dc9cc85f1f8249c256942d61d9' +
    '356e5a2cc1eba076e650ac7473fccc37952b46bc2e419a200cec0c451dce2336' +
    'f2e59013a0a379837166b59f871b20a8a0d101d1c355ea85d35329360e69c000';
  const chosen = new Map([
    [0, m0],
    [1, m1],
    [2, m2],
    [4, m4],
  ]);
  assert.equal(encodeAggregationMetadata(5, chosen), expected);
});

test('docs/isms.md#aggregation: a chosen module with empty metadata gets the non-zero range [8, 8]', () => {
  assert.equal(encodeAggregationMetadata(1, new Map([[0, '0x' as Hex]])), '0x0000000800000008');
});
