/**
 * The fees of first sends (lib/worker/tx/fees.ts, docs/delivery.md#throughput): the node's
 * suggestion is read once for the sends that start within FEES_FRESH_MS on one node client, not
 * twice per message (the latest block, then eth_maxPriorityFeePerGas, one after the other before
 * every broadcast). The node is a stand-in counting its reads; the clock is injected.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PublicClient } from 'viem';
import { cappedFees, FEES_FRESH_MS, sharedFees } from '../../lib/worker/tx/fees.ts';
import { createFakeClock } from '../helpers/fake-clock.ts';

/** A node whose fee suggestion rises by 1 wei at each read; `fail` makes the next read fail. */
function node() {
  const n = { reads: 0, fail: false, client: undefined as unknown as PublicClient };
  n.client = {
    async estimateFeesPerGas() {
      n.reads++;
      if (n.fail) {
        n.fail = false;
        throw new Error('socket hang up');
      }
      return { maxFeePerGas: 2_000n + BigInt(n.reads), maxPriorityFeePerGas: 1_000n };
    },
  } as unknown as PublicClient;
  return n;
}

describe('fees of first sends (docs/delivery.md#throughput)', () => {
  test('sends starting within FEES_FRESH_MS on one client share one read of the node; later ones read again', async () => {
    const clock = createFakeClock(0);
    const n = node();
    const together = await Promise.all(
      Array.from({ length: 5 }, () => cappedFees(n.client, undefined, 10_000n, undefined, clock)),
    );
    assert.equal(n.reads, 1, 'five concurrent sends, one read');
    assert.deepEqual(new Set(together.map((f) => f.maxFeePerGas)), new Set([2_001n]));
    await clock.advance(FEES_FRESH_MS - 1);
    assert.equal((await sharedFees(n.client, undefined, clock)).maxFeePerGas, 2_001n, 'still fresh');
    await clock.advance(1);
    assert.equal((await sharedFees(n.client, undefined, clock)).maxFeePerGas, 2_002n, 'read again once stale');
    assert.equal(n.reads, 2);
    // Another node client has its own suggestion.
    const other = node();
    await sharedFees(other.client, undefined, clock);
    assert.equal(other.reads, 1);
  });

  test('a failed read is not kept: the next send reads the node again; without a clock every send reads', async () => {
    const clock = createFakeClock(0);
    const n = node();
    n.fail = true;
    await assert.rejects(sharedFees(n.client, undefined, clock));
    assert.equal((await sharedFees(n.client, undefined, clock)).maxFeePerGas, 2_002n);
    await cappedFees(n.client, undefined, 10_000n);
    await cappedFees(n.client, undefined, 10_000n);
    assert.equal(n.reads, 4);
  });
});
