/**
 * Group commit for the relay hot path on PostgreSQL (docs/design.md, "Coalesced statements"):
 * calls that arrive while enough statements of their kind are in flight wait in a queue, and the
 * next statement carries every call waiting (up to a bound) instead of one each. Idle, a call goes
 * out alone at once, in the statement it always had; under concurrency N relays share one
 * statement, one round trip and one commit.
 *
 * Each call keeps its own answer:
 * - the statement succeeded: every member resolves (nothing of theirs is acknowledged before);
 * - it failed for unavailability (a lost connection, a timeout, RelayError `store_unavailable`):
 *   every member gets that error, which is what each would have got alone;
 * - it failed otherwise (a constraint, a bug: one member's rows may be the cause): nothing was
 *   written (one statement, one transaction), and each member is sent again alone, so an innocent
 *   member is answered for itself, not for another's fault.
 *
 * A call waits in the queue at most `queueTimeoutMs` (on the store's clock), then fails with
 * `store_unavailable`, as a request waiting too long for a pooled connection does; it is taken out
 * of the queue first, so no later statement writes it (its caller releases its reservation).
 */
import type { Clock } from '../clock.ts';
import type { RelayError } from '../errors.ts';
import { StoreUnavailableError, toStoreError } from '../store.ts';

/** How long a call may wait for a statement before it fails (as pg's default connection timeout). */
export const DEFAULT_QUEUE_TIMEOUT_MS = 5_000;

export interface CoalesceOptions<T> {
  /** Statements in flight before further calls wait to be carried together. */
  inFlight: number;
  /** At most this many calls in one statement… */
  maxCalls: number;
  /** …and at most this much `weight` (rows, say); a call heavier than that still goes alone. */
  maxWeight: number;
  weight(item: T): number;
  clock: Clock;
  queueTimeoutMs: number;
  /** One call's statement: the form an idle store sends. */
  one(item: T): Promise<unknown>;
  /** The statement of several calls (two or more), all or nothing. */
  many(items: T[]): Promise<unknown>;
}

interface Waiting<T> {
  item: T;
  resolve(): void;
  reject(error: unknown): void;
  timer: unknown;
}

/** A function that runs `item` through the coalesced statements and resolves once it is stored. */
export function coalesce<T>(options: CoalesceOptions<T>): (item: T) => Promise<void> {
  const { clock, inFlight, maxCalls, maxWeight, weight } = options;
  const queue: Waiting<T>[] = [];
  let running = 0;

  const one = async (item: T): Promise<void> => {
    await options.one(item);
  };

  /** Sends what waits, as long as statements may start. */
  function drain(): void {
    while (running < inFlight && queue.length > 0) {
      let total = weight(queue[0].item);
      let n = 1;
      while (n < queue.length && n < maxCalls && total + weight(queue[n].item) <= maxWeight) {
        total += weight(queue[n].item);
        n++;
      }
      const members = queue.splice(0, n);
      for (const member of members) clock.clearTimeout(member.timer);
      void send(members);
    }
  }

  async function send(members: Waiting<T>[]): Promise<void> {
    running++;
    try {
      if (members.length === 1) {
        await one(members[0].item).then(members[0].resolve, members[0].reject);
        return;
      }
      let failure: unknown;
      try {
        await options.many(members.map((m) => m.item));
        for (const m of members) m.resolve();
        return;
      } catch (error) {
        failure = toStoreError(error);
      }
      if ((failure as RelayError).reason === 'store_unavailable') {
        for (const m of members) m.reject(failure);
        return;
      }
      // Rolled back whole: each member again on its own, for its own answer.
      await Promise.all(members.map((m) => one(m.item).then(m.resolve, m.reject)));
    } finally {
      running--;
      drain();
    }
  }

  return (item) => {
    if (running < inFlight && queue.length === 0) {
      running++;
      return one(item).finally(() => {
        running--;
        drain();
      });
    }
    return new Promise<void>((resolve, reject) => {
      const waiting: Waiting<T> = { item, resolve, reject, timer: undefined };
      waiting.timer = clock.setTimeout(() => {
        const at = queue.indexOf(waiting);
        if (at < 0) return;
        queue.splice(at, 1);
        reject(toStoreError(new StoreUnavailableError(`waited over ${options.queueTimeoutMs} ms for a statement`)));
      }, options.queueTimeoutMs);
      queue.push(waiting);
    });
  };
}
