/**
 * Group commit for the relay hot path on PostgreSQL (docs/replicas.md, "Coalesced statements"):
 * calls that arrive while enough statements of their kind are in flight wait in a queue, and the
 * next statement carries every call waiting (up to a bound) instead of one each. Idle, a call goes
 * out alone at once, in the statement it always had; under concurrency N relays share one
 * statement, one round trip and one commit.
 *
 * Each call keeps its own answer:
 * - the statement succeeded: every member resolves (nothing of theirs is acknowledged before);
 * - it failed for unavailability (a lost connection, a timeout, RelayError `store_unavailable`):
 *   every member gets that error, which is what each would have got alone;
 * - it failed otherwise (a constraint, a bug: one member's rows may be the cause), or in a
 *   deadlock: nothing was written (one statement, one transaction), and each member is sent again
 *   alone, so an innocent member is answered for itself, not for another's fault.
 *
 * A call waits in the queue at most `queueTimeoutMs` (on the store's clock), then fails with
 * `store_unavailable`, as a request waiting too long for a pooled connection does; it is taken out
 * of the queue first, so no later statement writes it (its caller releases its reservation).
 */
import type { Clock } from '../clock.ts';
import type { RelayError } from '../errors/classes.ts';
import { StoreUnavailableError, toStoreError } from '../store/bundle.ts';

/** How long a call may wait for a statement before it fails (as pg's default connection timeout). */
export const DEFAULT_QUEUE_TIMEOUT_MS = 5_000;

export interface CoalesceOptions<T, R> {
  /** Statements in flight before further calls wait to be carried together. */
  inFlight: number;
  /** At most this many calls in one statement… */
  maxCalls: number;
  /** …and at most this much `weight` (rows, say); a call heavier than that still goes alone. */
  maxWeight: number;
  weight(item: T): number;
  /** Calls with the same key never share a statement: the later one waits for the next. */
  key?(item: T): string;
  clock: Clock;
  queueTimeoutMs: number;
  /** One call's statement: the form an idle store sends. */
  one(item: T): Promise<R>;
  /** The statement of several calls (two or more), all or nothing: one result per item, in order. */
  many(items: T[]): Promise<R[]>;
}

interface Waiting<T, R> {
  item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
  timer: unknown;
}

/**
 * A deadlock or a serialization failure is unavailability (a retry succeeds), but one that the
 * statement's other members may have caused: each member is sent again alone, as for a fault.
 */
function othersMayHaveCaused(failure: RelayError): boolean {
  const code = (failure.cause as { code?: unknown } | undefined)?.code;
  return failure.code !== 'store_unavailable' || code === '40P01' || code === '40001';
}

/** A function that runs `item` through the coalesced statements and resolves with its own result. */
export function coalesce<T, R>(options: CoalesceOptions<T, R>): (item: T) => Promise<R> {
  const { clock, inFlight, maxCalls, maxWeight, weight, key } = options;
  const queue: Waiting<T, R>[] = [];
  let running = 0;

  /** The next statement's members: the oldest calls, one per key, within the bounds. */
  function take(): Waiting<T, R>[] {
    const members: Waiting<T, R>[] = [];
    const keys = new Set<string>();
    let total = 0;
    for (let i = 0; i < queue.length && members.length < maxCalls; ) {
      const w = weight(queue[i].item);
      if (members.length > 0 && total + w > maxWeight) break;
      const k = key?.(queue[i].item);
      if (k !== undefined && keys.has(k)) {
        i++;
        continue;
      }
      if (k !== undefined) keys.add(k);
      total += w;
      members.push(...queue.splice(i, 1));
    }
    return members;
  }

  /** Sends what waits, as long as statements may start. */
  function drain(): void {
    while (running < inFlight && queue.length > 0) {
      const members = take();
      for (const member of members) clock.clearTimeout(member.timer);
      void send(members);
    }
  }

  async function send(members: Waiting<T, R>[]): Promise<void> {
    running++;
    try {
      if (members.length === 1) {
        await options.one(members[0].item).then(members[0].resolve, members[0].reject);
        return;
      }
      let failure: RelayError;
      try {
        const results = await options.many(members.map((m) => m.item));
        for (const [i, m] of members.entries()) m.resolve(results[i]);
        return;
      } catch (error) {
        failure = toStoreError(error);
      }
      if (!othersMayHaveCaused(failure)) {
        for (const m of members) m.reject(failure);
        return;
      }
      // Rolled back whole: each member again on its own, for its own answer.
      await Promise.all(members.map((m) => options.one(m.item).then(m.resolve, m.reject)));
    } finally {
      running--;
      drain();
    }
  }

  return (item) => {
    if (running < inFlight && queue.length === 0) {
      running++;
      return options.one(item).finally(() => {
        running--;
        drain();
      });
    }
    return new Promise<R>((resolve, reject) => {
      const waiting: Waiting<T, R> = { item, resolve, reject, timer: undefined };
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
