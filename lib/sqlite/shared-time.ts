/**
 * A clock's time in shared memory (Clock.sharedTime, lib/clock.ts): the thread that owns the
 * clock writes it, the SQLite store's worker thread reads it when its transaction holds the lock,
 * so a test's fake clock drives the worker's time as it moves, not as it was when a call was sent.
 */

const bits = new BigInt64Array(1);
const asFloat = new Float64Array(bits.buffer);

/** A SharedArrayBuffer for Clock.sharedTime, holding `ms`. */
export function createSharedTime(ms: number): SharedArrayBuffer {
  const buffer = new SharedArrayBuffer(8);
  writeSharedTime(buffer, ms);
  return buffer;
}

/** Stores `ms` atomically: the float's 64 bits in one Atomics.store, so a reader never sees half. */
export function writeSharedTime(buffer: SharedArrayBuffer, ms: number): void {
  asFloat[0] = ms;
  Atomics.store(new BigInt64Array(buffer), 0, bits[0]);
}

export function readSharedTime(buffer: SharedArrayBuffer): number {
  bits[0] = Atomics.load(new BigInt64Array(buffer), 0);
  return asFloat[0];
}

/** Wall time in ms, comparable between the threads of this program. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}
