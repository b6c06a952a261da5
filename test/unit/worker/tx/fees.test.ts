/**
 * The fees of first sends (lib/worker/tx/fees.ts, docs/delivery.md#throughput): the node's
 * suggestion is read once for the sends that start together on one node client, and reused for
 * FEES_FRESH_MS while the head is the same, not read twice per message (the latest block, then
 * eth_maxPriorityFeePerGas, one after the other before every broadcast). The node is a stand-in
 * counting its reads; the clock is injected.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPublicClient, custom, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { anvil } from 'viem/chains';
import { basisPoints, bump, cappedFees, FEES_FRESH_MS, sharedFees } from '../../../../lib/worker/tx/fees.ts';
import { DeliveryError, TransactionError } from '../../../../lib/worker/errors.ts';
import { headsOf } from '../../../../lib/worker/tx/heads.ts';
import { createTransactionSender } from '../../../../lib/worker/tx/sender.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';

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
  let read = false;
  void headsOf(client, clock)
    .after(seen, 1_000)
    .then(() => (read = true));
  await clock.advance(250);
  // Failing here, not hanging: nothing would move the fake clock to the wait's bound.
  assert.ok(read, 'the head watcher read a head');
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

describe('requests before a broadcast (docs/delivery.md#throughput)', () => {
  test("simulate asks eth_estimateGas alone, and the send's fee read runs beside it, not after it", async () => {
    const clock = createFakeClock(0);
    const asked: string[] = [];
    let estimated: ((gas: string) => void) | undefined;
    const publicClient = createPublicClient({
      transport: custom({
        async request({ method }: { method: string }) {
          if (method !== 'eth_blockNumber') asked.push(method);
          switch (method) {
            case 'eth_blockNumber':
              return '0xa';
            case 'eth_estimateGas':
              return new Promise<string>((resolve) => (estimated = resolve));
            case 'eth_getBlockByNumber':
              return { number: '0xa', hash: `0x${'0b'.repeat(32)}`, baseFeePerGas: '0x10', transactions: [] };
            case 'eth_maxPriorityFeePerGas':
              return '0x1';
            default:
              throw new Error(`unexpected ${method}`);
          }
        },
      }),
    });
    await readHead(publicClient, clock);
    const account = privateKeyToAccount(`0x${'ad'.repeat(32)}`);
    const sender = createTransactionSender({ publicClient, account, clock });
    const simulating = sender.simulate({ to: `0x${'66'.repeat(20)}`, data: '0x' });
    for (let i = 0; i < 50 && (estimated === undefined || asked.length < 3); i++)
      await new Promise((resolve) => setImmediate(resolve));
    assert.ok(estimated, 'the estimate was asked');
    assert.deepEqual(
      [...asked].sort(),
      ['eth_estimateGas', 'eth_getBlockByNumber', 'eth_maxPriorityFeePerGas'],
      'while the estimate is out, the fees are read beside it; nothing fills the request in (eth_fillTransaction, nonce)',
    );
    estimated('0x5208');
    assert.deepEqual(await simulating, { estimate: 21_000n, gas: 25_200n });
    // The send that follows takes those fees: no second read at the same head.
    const fees = await cappedFees(publicClient, undefined, 10n ** 9n, undefined, clock);
    assert.equal(fees.maxPriorityFeePerGas, 1n);
    assert.equal(asked.length, 3, `no more requests: ${asked.join(', ')}`);
  });
});

describe('the gas margin and bumps (lib/worker/tx/fees.ts)', () => {
  test('basisPoints of a percentage; bump rounds up only what is not whole', () => {
    assert.equal(basisPoints(20), 2_000n);
    assert.equal(basisPoints(12.5), 1_250n);
    assert.equal(basisPoints(0.015), 2n, 'to the nearest basis point');
    // The default 20 % margin on a plain transfer's estimate.
    assert.equal(bump(21_000n, basisPoints(20)), 25_200n);
    assert.equal(bump(100n, 1_000n), 110n, 'exact: not one wei more');
    assert.equal(bump(100n, 1_250n), 113n, '112.5 rounded up: a bump never lost to rounding');
    assert.equal(bump(1n, 1n), 2n);
    assert.equal(bump(0n, 1_000n), 0n);
  });
});

/** A node suggesting `suggested` with a latest block at `baseFee` (undefined: a block without one; 'fail': the read fails). */
function cappedNode(
  suggested: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
  baseFee: bigint | undefined | 'fail',
) {
  const n = { blocks: 0, asked: [] as unknown[], client: undefined as unknown as PublicClient };
  n.client = {
    async estimateFeesPerGas(args: unknown) {
      n.asked.push(args);
      return suggested;
    },
    async getBlock(args: { blockTag: string }) {
      assert.equal(args.blockTag, 'latest');
      n.blocks++;
      if (baseFee === 'fail') throw new Error('socket hang up');
      return { baseFeePerGas: baseFee ?? null };
    },
  } as unknown as PublicClient;
  return n;
}

describe('cappedFees: a first send within gasPriceCap (docs/transactions.md)', () => {
  const suggested = { maxFeePerGas: 2_000n, maxPriorityFeePerGas: 1_500n };

  test('at or under the cap: the suggestion as it is, no block read', async () => {
    for (const cap of [undefined, 2_000n, 5_000n]) {
      const n = cappedNode(suggested, 10n);
      assert.deepEqual(await cappedFees(n.client, undefined, cap), suggested);
      assert.equal(n.blocks, 0);
    }
  });

  test('above the cap: maxFeePerGas at the cap and the tip at most that, while the base fee is under it', async () => {
    const n = cappedNode(suggested, 900n);
    assert.deepEqual(await cappedFees(n.client, undefined, 1_200n), {
      maxFeePerGas: 1_200n,
      maxPriorityFeePerGas: 1_200n,
    });
    assert.equal(n.blocks, 1);
    assert.deepEqual(await cappedFees(cappedNode(suggested, 1_200n).client, undefined, 1_999n), {
      maxFeePerGas: 1_999n,
      maxPriorityFeePerGas: 1_500n,
    });
    // A block without a base fee (before EIP-1559) is read as 0.
    assert.deepEqual(await cappedFees(cappedNode(suggested, undefined).client, undefined, 1_000n), {
      maxFeePerGas: 1_000n,
      maxPriorityFeePerGas: 1_000n,
    });
  });

  test('the base fee above the cap: nothing signed, a fee wait naming both', async () => {
    await assert.rejects(
      cappedFees(cappedNode(suggested, 1_201n).client, undefined, 1_200n),
      (err: unknown) =>
        err instanceof DeliveryError &&
        err.code === 'fee' &&
        err.message === 'base fee 1201 wei is above gasPriceCap 1200 wei; waiting for it to fall',
    );
  });

  test('a failed read of the fees or of the block: a TransactionError `rpc` while reading fees, with its cause', async () => {
    await assert.rejects(
      cappedFees(cappedNode(suggested, 'fail').client, undefined, 1_200n),
      (err: unknown) =>
        err instanceof TransactionError &&
        err.code === 'rpc' &&
        err.message === 'reading fees: node unreachable or failing' &&
        (err.cause as Error).message === 'socket hang up',
    );
    const n = node();
    n.fail = true;
    await assert.rejects(
      cappedFees(n.client, undefined, 10_000n),
      (err: unknown) =>
        err instanceof TransactionError &&
        err.code === 'rpc' &&
        err.message === 'reading fees: node unreachable or failing' &&
        (err.cause as Error).message === 'socket hang up',
    );
  });

  test("the node is asked for EIP-1559 fees on the sender's chain (its own fee rules)", async () => {
    const n = cappedNode(suggested, 10n);
    await cappedFees(n.client, anvil, undefined);
    assert.deepEqual(n.asked, [{ chain: anvil, type: 'eip1559' }]);
  });
});
