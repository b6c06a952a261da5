/**
 * Time is passed in, so tests drive it. The library never reads the wall clock or schedules a
 * timer except through a Clock.
 */
export interface TimerOptions {
  /**
   * A background timer (a periodic sweep) must not keep the process alive. Every other timer
   * does: work in flight (a receipt poll, a deadline) must finish before an embedding script
   * can exit, or a top-level await would never settle.
   */
  background?: boolean;
}

export interface Clock {
  /** Milliseconds, monotonic enough for windows and deadlines. */
  now(): number;
  /** Schedules `fn` after `ms`. */
  setTimeout(fn: () => void, ms: number, options?: TimerOptions): unknown;
  clearTimeout(handle: unknown): void;
  /**
   * Optional: this clock's current time kept in shared memory (lib/sqlite/shared-time.ts), so
   * another thread reads the clock's time at the moment it needs it: the SQLite store's worker
   * thread reads it when its transaction holds the lock. A test's fake clock has one; without it
   * the worker adds the wall time elapsed since the call was sent to the caller's reading.
   */
  readonly sharedTime?: SharedArrayBuffer;
}

export const systemClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout(fn, ms, options) {
    const handle = setTimeout(fn, ms) as unknown as { unref?: () => void };
    // Web APIs return a number; Node returns an object that can be unref'd.
    if (options?.background && typeof handle === 'object' && handle !== null && typeof handle.unref === 'function')
      handle.unref();
    return handle;
  },
  clearTimeout(handle) {
    clearTimeout(handle as Parameters<typeof clearTimeout>[0]);
  },
};

/** Resolves after `ms` on `clock`, or rejects with the signal's reason when it aborts first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal!.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
