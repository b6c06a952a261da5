/**
 * A Clock whose time moves only when a test says so. Timers fire in time order (ties in the order
 * they were scheduled), `now()` reads each timer's own time while it runs, and promise jobs are
 * flushed between firings so async code awaiting `sleep()` or a fetch progresses before the next
 * timer is considered. Exported by `relayer-api/testing` (docs/embedding.md#test-tooling); it uses
 * Node's setImmediate, which the core may not.
 */
import type { Clock } from '../clock.ts';
import { createSharedTime, writeSharedTime } from '../sqlite/shared-time.ts';

export interface FakeClock extends Clock {
  /** Moves time forward by `ms`, firing every timer due on the way. */
  advance(ms: number): Promise<void>;
  /** Moves time forward to the absolute time `at` (no-op when `at` is in the past). */
  advanceTo(at: number): Promise<void>;
  /** Lets pending promise jobs and I/O callbacks run without moving time. */
  flush(): Promise<void>;
  /** Number of scheduled timers not yet fired or cleared. */
  pending(): number;
  /**
   * Number of those that would keep a real process alive (not `background`): what is pending once
   * a caller's work is done must be background only.
   */
  keepingAlive(): number;
  /**
   * Also writes this clock's time into `buffer` (another clock's sharedTime), now and at every
   * move until the returned function is called: a SQLite store opened once on `buffer` and shared
   * by the tests of a file (test/helpers/harness/shared-sqlite.ts) then reads each test's own clock.
   */
  shareTimeWith(buffer: SharedArrayBuffer): () => void;
}

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  background: boolean;
}

/** Enough macrotask turns for chains of awaits (fetch → Response body → JSON → next call). */
const FLUSH_TURNS = 10;

export async function flushJobs(turns = FLUSH_TURNS): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export function createFakeClock(start = 1_700_000_000_000): FakeClock {
  let now = start;
  // The SQLite store's worker thread reads the time here when its transaction runs (lib/clock.ts).
  const sharedTime = createSharedTime(start);
  const mirrors = new Set<SharedArrayBuffer>();
  const moveTo = (at: number) => {
    now = at;
    writeSharedTime(sharedTime, at);
    for (const buffer of mirrors) writeSharedTime(buffer, at);
  };
  let nextId = 1;
  const timers = new Map<number, Timer>();

  function earliestDue(limit: number): [number, Timer] | undefined {
    let best: [number, Timer] | undefined;
    for (const entry of timers) {
      const t = entry[1];
      if (t.at > limit) continue;
      if (!best || t.at < best[1].at || (t.at === best[1].at && t.seq < best[1].seq)) best = entry;
    }
    return best;
  }

  async function advanceTo(target: number): Promise<void> {
    await flushJobs();
    for (;;) {
      const due = earliestDue(target);
      if (!due) break;
      timers.delete(due[0]);
      // Never move time backwards: a timer scheduled "in the past" fires at the current time.
      if (due[1].at > now) moveTo(due[1].at);
      due[1].fn();
      await flushJobs();
    }
    if (target > now) moveTo(target);
    await flushJobs();
  }

  return {
    now: () => now,
    sharedTime,
    setTimeout(fn, ms, options) {
      const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
      const id = nextId++;
      timers.set(id, { at: now + delay, seq: id, fn, background: options?.background === true });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    advance: (ms) => advanceTo(now + ms),
    advanceTo,
    flush: () => flushJobs(),
    pending: () => timers.size,
    keepingAlive: () => [...timers.values()].filter((t) => !t.background).length,
    shareTimeWith(buffer) {
      writeSharedTime(buffer, now);
      mirrors.add(buffer);
      return () => mirrors.delete(buffer);
    },
  };
}
