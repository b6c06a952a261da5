/**
 * The fees of first sends (lib/worker/tx/fees.ts, docs/delivery.md#throughput): the node's
 * suggestion is read once for the sends that start together on one node client, and reused for
 * FEES_FRESH_MS while the head is the same, not read twice per message (the latest block, then
 * eth_maxPriorityFeePerGas, one after the other before every broadcast). The node is a stand-in
 * counting its reads; the clock is injected.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PublicClient } from 'viem';
import { cappedFees, FEES_FRESH_MS, sharedFees } from '../../lib/worker/tx/fees.ts';
import { headsOf } from '../../lib/worker/tx/heads.ts';
import { createFakeClock } from '../helpers/fake-clock.ts';

/** A node whose fee suggestion rises by 1 wei at each read; `fail` makes the next read fail. */
function node() {
  const n = { reads: 0, fail: false, head: 10n, client: undefined as unknown as PublicClient };
  n.client = {
    getBlockNumber: async () => n.head,
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

/** The sender's head watcher for `client` reads the node's head (as it does while sends wait). */
async function readHead(client: PublicClient, clock: ReturnType<typeof createFakeClock>): Promise<void> {
  const seen = headsOf(client, clock).latest();
  const read = headsOf(client, clock).after(seen, 1_000);
  await clock.advance(250);
  await read;
}

describe('fees of first sends (docs/delivery.md#throughput)', () => {
  test('sends at one head within FEES_FRESH_MS share one read of the node; later ones, or at a new head, read again', async () => {
    const clock = createFakeClock(0);
    const n = node();
    await readHead(n.client, clock);
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
    // A new block: read again at once.
    n.head = 11n;
    await readHead(n.client, clock);
    assert.equal((await sharedFees(n.client, undefined, clock)).maxFeePerGas, 2_003n, 'read again at a new head');
    // Another node client has its own suggestion.
    const other = node();
    await sharedFees(other.client, undefined, clock);
    assert.equal(other.reads, 1);
  });

  test('a failed read is not kept; with no head known only concurrent sends share; without a clock none', async () => {
    const clock = createFakeClock(0);
    const n = node();
    n.fail = true;
    await assert.rejects(sharedFees(n.client, undefined, clock));
    // No head read yet (nobody waits for a block): a read that ended is not reused.
    assert.equal((await sharedFees(n.client, undefined, clock)).maxFeePerGas, 2_002n);
    assert.equal((await sharedFees(n.client, undefined, clock)).maxFeePerGas, 2_003n);
    await Promise.all([sharedFees(n.client, undefined, clock), sharedFees(n.client, undefined, clock)]);
    assert.equal(n.reads, 4, 'two concurrent sends, one read');
    await cappedFees(n.client, undefined, 10_000n);
    await cappedFees(n.client, undefined, 10_000n);
    assert.equal(n.reads, 6);
  });
});
