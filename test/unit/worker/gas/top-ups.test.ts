/**
 * The worker's search for gas payment top-ups (lib/worker/gas/top-ups.ts, docs/gas.md#top-ups):
 * bounded block ranges, new blocks first and then back toward the origin transaction, at most
 * `maxRequests` requests per check, nothing read twice and nothing skipped, a failure half-way
 * resumed where it stopped. Against a scripted origin node; the real node: test/e2e/worker-hostile.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { DeliveryError } from '../../../../lib/errors/worker.ts';
import type { ClaimedMessage } from '../../../../lib/outbox/index.ts';
import { createTopUpSearch, DEFAULT_LOG_CHUNK, type PaymentOrigin } from '../../../../lib/worker/gas/top-ups.ts';
import { BOUNDED } from '../../../helpers/fixtures/properties.ts';

const M = {
  id: `0x${'11'.repeat(32)}`,
  destination: 2,
  origin: 1,
  txHash: `0x${'ab'.repeat(32)}`,
} as ClaimedMessage;

/** A scripted origin node: where the transfer is, the head, and every eth_getLogs range asked. */
function node(o: { origin: bigint | undefined; head: bigint; chunk?: number }) {
  const asked: Array<[bigint, bigint]> = [];
  const state = { head: o.head, failAt: -1 };
  const origin: PaymentOrigin = {
    paymaster: `0x${'19'.repeat(20)}`,
    getLogs: async (filter) => {
      assert.match(filter.fromBlock, /^0x[0-9a-f]+$/, 'a block number, never a tag');
      assert.match(filter.toBlock, /^0x[0-9a-f]+$/);
      if (asked.length === state.failAt) throw new Error('query returned more than 10000 results');
      asked.push([BigInt(filter.fromBlock), BigInt(filter.toBlock)]);
      return [];
    },
    blockOf: async () => o.origin,
    head: async () => state.head,
    ...(o.chunk === undefined ? {} : { chunk: o.chunk }),
  };
  return { origin, asked, state };
}

const keep = async () => {};

describe('top-up search (docs/gas.md#top-ups)', () => {
  test('newest range first, then back toward the origin block, at most maxRequests per check', async () => {
    const n = node({ origin: 5_000n, head: 10_000n, chunk: 1_000 });
    const search = createTopUpSearch({ maxRequests: 3 });
    await search(n.origin, M, keep);
    assert.deepEqual(n.asked, [
      [9_001n, 10_000n],
      [8_001n, 9_000n],
      [7_001n, 8_000n],
    ]);
    n.asked.length = 0;
    n.state.head = 10_500n;
    await search(n.origin, M, keep);
    assert.deepEqual(
      n.asked,
      [
        [10_001n, 10_500n],
        [6_001n, 7_000n],
        [5_001n, 6_000n],
      ],
      'the blocks mined since the last check come first',
    );
    n.asked.length = 0;
    await search(n.origin, M, keep);
    assert.deepEqual(n.asked, [[5_000n, 5_000n]], 'down to the origin block, not below');
    n.asked.length = 0;
    await search(n.origin, M, keep);
    assert.deepEqual(n.asked, [], 'all searched and no new block: no request');
  });

  test('the default chunk is Hyperlane’s 1,999 blocks', async () => {
    const n = node({ origin: 0n, head: 5_000n });
    await createTopUpSearch({ maxRequests: 1 })(n.origin, M, keep);
    assert.equal(DEFAULT_LOG_CHUNK, 1_999);
    assert.deepEqual(n.asked, [[3_002n, 5_000n]]);
  });

  test('a failed request or store loses nothing: the next check reads that range again, not the ones before', async () => {
    const n = node({ origin: 0n, head: 3_000n, chunk: 1_000 });
    const search = createTopUpSearch();
    n.state.failAt = 1;
    await assert.rejects(search(n.origin, M, keep), /more than 10000 results/);
    assert.deepEqual(n.asked, [[2_001n, 3_000n]]);
    n.state.failAt = -1;
    let stores = 0;
    await assert.rejects(
      search(n.origin, M, async () => {
        if (++stores === 1) throw new Error('database is locked');
      }),
      /database is locked/,
    );
    await search(n.origin, M, keep);
    assert.deepEqual(n.asked, [
      [2_001n, 3_000n],
      [1_001n, 2_000n],
      [1_001n, 2_000n],
      [1n, 1_000n],
      [0n, 0n],
    ]);
  });

  test('a transfer the origin node has no receipt for: a DeliveryError rpc, and no eth_getLogs', async () => {
    const n = node({ origin: undefined, head: 100n });
    const error = await createTopUpSearch()(n.origin, M, keep).catch((e: unknown) => e);
    assert.ok(error instanceof DeliveryError);
    assert.equal(error.code, 'rpc');
    assert.match(error.message, /no receipt for the message's transaction 0xabab/);
    assert.deepEqual(n.asked, []);
  });

  test('a node whose head is behind the transfer block reads nothing until it catches up', async () => {
    const n = node({ origin: 200n, head: 150n, chunk: 10 });
    const search = createTopUpSearch();
    await search(n.origin, M, keep);
    assert.deepEqual(n.asked, []);
    n.state.head = 205n;
    await search(n.origin, M, keep);
    assert.deepEqual(n.asked, [[200n, 205n]]);
  });

  test('property: the ranges asked never overlap, never exceed the chunk, and cover origin..head once caught up', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 0n, max: 10_000n }),
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.bigInt({ min: 0n, max: 2_000n }), { minLength: 1, maxLength: 8 }),
        async (originBlock, chunk, maxRequests, steps) => {
          const n = node({ origin: originBlock, head: originBlock, chunk });
          const search = createTopUpSearch({ maxRequests });
          for (const step of steps) {
            n.state.head += step;
            await search(n.origin, M, keep);
          }
          // Enough checks to catch up: each reads at least one range while any is left.
          const left = Number((n.state.head - originBlock) / BigInt(chunk)) + 2;
          for (let i = 0; i < left; i++) await search(n.origin, M, keep);
          const sorted = [...n.asked].sort((a, b) => (a[0] < b[0] ? -1 : 1));
          for (const [from, to] of sorted) assert.ok(from <= to && to - from < BigInt(chunk));
          assert.equal(sorted[0][0], originBlock);
          assert.equal(sorted.at(-1)![1], n.state.head);
          for (let i = 1; i < sorted.length; i++) assert.equal(sorted[i][0], sorted[i - 1][1] + 1n, 'contiguous');
        },
      ),
      { ...BOUNDED, numRuns: 200 },
    );
  });
});
