/**
 * The chain's head as the transaction sender waits on it (docs/delivery.md#throughput): one
 * `eth_blockNumber` every `intervalMs` per node client (and clock), however many sends wait, and
 * only while one does. A send that did not find its receipt waits for the next block instead of a
 * fixed poll interval, so it sees its transaction mined within about `intervalMs` of the block,
 * and asks for its receipt once per block rather than once per poll.
 */
import type { PublicClient } from 'viem';
import type { Clock } from '../../clock.ts';
import { perClient } from './per-client.ts';

export interface Heads {
  /** The highest head read so far (undefined before the first read). */
  latest(): bigint | undefined;
  /**
   * Resolves once a head above `seen` is read (any head when `seen` is undefined), or after
   * `maxWaitMs` whatever the node says (a node that fails is waited out by the caller's bound).
   */
  after(seen: bigint | undefined, maxWaitMs: number): Promise<void>;
}

/** Default interval between head reads: a quarter of a 1 s block. */
export const HEAD_POLL_MS = 250;

const watchers = perClient<Clock, Heads>();

/** The head watcher of `publicClient` on `clock` (one per pair, shared by every sender on them). */
export function headsOf(publicClient: PublicClient, clock: Clock, intervalMs = HEAD_POLL_MS): Heads {
  return watchers(publicClient, clock, () =>
    watchHeads(() => publicClient.getBlockNumber({ cacheTime: 0 }), clock, intervalMs),
  );
}

interface Waiter {
  seen: bigint | undefined;
  done(): void;
}

export function watchHeads(read: () => Promise<bigint>, clock: Clock, intervalMs: number): Heads {
  let head: bigint | undefined;
  const waiters = new Set<Waiter>();
  let timer: unknown;
  let reading = false;

  const satisfied = (w: Waiter) => head !== undefined && (w.seen === undefined || head > w.seen);

  function schedule(): void {
    if (timer !== undefined || reading || waiters.size === 0) return;
    timer = clock.setTimeout(() => {
      timer = undefined;
      void tick();
    }, intervalMs);
  }

  async function tick(): Promise<void> {
    reading = true;
    try {
      const h = await read();
      if (head === undefined || h > head) head = h;
    } catch {
      // The waiters' own bound (maxWaitMs) covers a node that fails.
    } finally {
      reading = false;
    }
    for (const w of [...waiters]) if (satisfied(w)) w.done();
    schedule();
  }

  return {
    latest: () => head,
    after(seen, maxWaitMs) {
      return new Promise<void>((resolve) => {
        const w: Waiter = {
          seen,
          done() {
            clock.clearTimeout(bound);
            waiters.delete(w);
            if (waiters.size === 0 && timer !== undefined) {
              clock.clearTimeout(timer);
              timer = undefined;
            }
            resolve();
          },
        };
        const bound = clock.setTimeout(() => w.done(), maxWaitMs);
        // A head above `seen` read since (by another waiter's poll): no wait.
        if (satisfied(w)) return w.done();
        const idle = waiters.size === 0 && timer === undefined && !reading;
        waiters.add(w);
        if (idle) void tick();
      });
    },
  };
}
