import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createMemoryDedupStore, type DedupStore, type Reservation } from '../../../lib/relay/dedup.ts';
import { OutOfRangeError, RelayError } from '../../../lib/errors/classes.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';

// A real gc() for the memory measurement, without requiring --expose-gc on the command line.
setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

const WINDOW = 300_000; // docs/design.md#deduplication: 5 minutes
const KEY = 'ethereum:0x' + 'ab'.repeat(32);

function setup(capacity = 10_000) {
  const clock = createFakeClock();
  const cache = createMemoryDedupStore({ clock, windowMs: WINDOW, capacity });
  return { clock, cache };
}

async function reserve(cache: DedupStore, key: string): Promise<Reservation> {
  return await cache.reserve(key);
}

async function refusal(cache: DedupStore, key: string): Promise<RelayError> {
  try {
    await cache.reserve(key);
  } catch (e) {
    assert.ok(e instanceof RelayError);
    return e;
  }
  assert.fail(`reserve(${key}) was accepted`);
}

describe('dedup window (docs/design.md#deduplication)', () => {
  it('docs/design.md#deduplication: a second submission within the window is duplicate_tx (429)', async () => {
    const { clock, cache } = setup();
    (await reserve(cache, KEY)).commit();
    await clock.advance(WINDOW - 1);
    const err = await refusal(cache, KEY);
    assert.equal(err.code, 'duplicate_tx');
    assert.equal(err.status, 429);
  });

  it('docs/design.md#deduplication: after 5 minutes the same pair may be submitted again', async () => {
    const { clock, cache } = setup();
    (await reserve(cache, KEY)).commit();
    await clock.advance(WINDOW);
    await reserve(cache, KEY);
  });

  it('docs/design.md#errors: duplicate_tx Retry-After counts whole seconds until the window ends', async () => {
    const { clock, cache } = setup();
    (await reserve(cache, KEY)).commit();
    const cases: [number, number][] = [
      [0, 300],
      [500, 300], // 299.5 s left → 300
      [1_000, 299],
      [299_000, 1],
      [299_999, 1], // 1 ms left → at least 1
    ];
    const start = clock.now();
    for (const [at, seconds] of cases) {
      await clock.advanceTo(start + at);
      assert.equal((await refusal(cache, KEY)).retryAfterSeconds, seconds, `at +${at} ms`);
    }
  });

  it('the window runs from the commit, not from the reservation', async () => {
    const { clock, cache } = setup();
    const r = await reserve(cache, KEY);
    await clock.advance(8_000); // receipt wait
    r.commit();
    await clock.advance(WINDOW - 1);
    assert.equal((await refusal(cache, KEY)).code, 'duplicate_tx');
    await clock.advance(1);
    await reserve(cache, KEY);
  });

  it('a pending (in-flight) key is duplicate_tx', async () => {
    const { cache } = setup();
    await reserve(cache, KEY);
    const err = await refusal(cache, KEY);
    assert.equal(err.code, 'duplicate_tx');
    assert.equal(err.retryAfterSeconds, 300);
  });

  it('a pending key expires one window after reservation at the latest (a lost request cannot hold it)', async () => {
    const { clock, cache } = setup();
    await reserve(cache, KEY); // never settled
    await clock.advance(WINDOW);
    await reserve(cache, KEY);
  });

  it('keys are distinct: another tx or another chain is not a duplicate', async () => {
    const { cache } = setup();
    (await reserve(cache, KEY)).commit();
    await reserve(cache, 'ethereum:0x' + 'ac'.repeat(32));
    await reserve(cache, 'base:0x' + 'ab'.repeat(32));
    assert.equal(cache.size(), 3);
  });
});

describe('reservation release and commit (docs/design.md#deduplication)', () => {
  it('docs/design.md#deduplication: a released reservation frees the key at once', async () => {
    const { cache } = setup();
    (await reserve(cache, KEY)).release();
    assert.equal(cache.size(), 0);
    (await reserve(cache, KEY)).commit();
  });

  it('commit and release are idempotent; release after commit is a no-op', async () => {
    const { cache } = setup();
    const r = await reserve(cache, KEY);
    r.commit();
    r.commit();
    r.release();
    r.release();
    assert.equal((await refusal(cache, KEY)).code, 'duplicate_tx');
  });

  it('commit after release is a no-op', async () => {
    const { cache } = setup();
    const r = await reserve(cache, KEY);
    r.release();
    r.commit();
    assert.equal(cache.size(), 0);
    await reserve(cache, KEY);
  });

  it('a stale reservation cannot release or commit the key reserved again after it expired', async () => {
    const { clock, cache } = setup();
    const stale = await reserve(cache, KEY);
    await clock.advance(WINDOW);
    const fresh = await reserve(cache, KEY);
    stale.release();
    assert.equal((await refusal(cache, KEY)).code, 'duplicate_tx', 'fresh reservation still held');
    stale.commit();
    fresh.release();
    assert.equal(cache.size(), 0, 'stale commit did not resurrect the key');
  });
});

describe('capacity (docs/design.md#deduplication: full of live entries → 503 cache_full)', () => {
  it('refuses a new key when full of live entries, with Retry-After until the oldest expires', async () => {
    const { clock, cache } = setup(3);
    (await reserve(cache, 'a')).commit();
    await clock.advance(10_000);
    (await reserve(cache, 'b')).commit();
    await reserve(cache, 'c'); // pending entries count too
    await clock.advance(500);
    const err = await refusal(cache, 'd');
    assert.equal(err.code, 'cache_full');
    assert.equal(err.status, 503);
    assert.equal(err.retryAfterSeconds, 290); // 'a' expires 289.5 s from now
  });

  it('a duplicate of a live key is duplicate_tx even when full', async () => {
    const { cache } = setup(1);
    (await reserve(cache, 'a')).commit();
    assert.equal((await refusal(cache, 'a')).code, 'duplicate_tx');
  });

  it('drops expired entries before refusing', async () => {
    const { clock, cache } = setup(2);
    (await reserve(cache, 'a')).commit();
    (await reserve(cache, 'b')).commit();
    assert.equal((await refusal(cache, 'c')).code, 'cache_full');
    await clock.advance(WINDOW);
    await reserve(cache, 'c');
    await reserve(cache, 'd');
    assert.equal(cache.size(), 2);
  });

  it('releasing makes room at once', async () => {
    const { cache } = setup(1);
    const r = await reserve(cache, 'a');
    assert.equal((await refusal(cache, 'b')).code, 'cache_full');
    r.release();
    await reserve(cache, 'b');
  });

  it('cache_full Retry-After is at least 1 second', async () => {
    const { clock, cache } = setup(1);
    (await reserve(cache, 'a')).commit();
    await clock.advance(WINDOW - 1);
    assert.equal((await refusal(cache, 'b')).retryAfterSeconds, 1);
  });

  it('rejects a nonsensical configuration', () => {
    const clock = createFakeClock();
    assert.throws(() => createMemoryDedupStore({ clock, windowMs: 0, capacity: 1 }), OutOfRangeError);
    assert.throws(() => createMemoryDedupStore({ clock, windowMs: 1, capacity: 0 }), OutOfRangeError);
    assert.throws(() => createMemoryDedupStore({ clock, windowMs: 1, capacity: 1.5 }), OutOfRangeError);
  });
});

describe('expiry without per-entry timers', () => {
  it('holds at most one timer however many entries, and none once empty', async () => {
    const { clock, cache } = setup();
    for (let i = 0; i < 1_000; i++) (await reserve(cache, `k${i}`)).commit();
    assert.equal(clock.pending(), 1);
    assert.equal(
      clock.keepingAlive(),
      0,
      'docs/embedding.md#embedding-the-library: the sweep is a background timer: it never keeps a process alive',
    );
    await clock.advance(WINDOW + 1_000);
    assert.equal(cache.size(), 0);
    assert.equal(clock.pending(), 0);
  });

  it('the sweep reclaims expired entries without any further call', async () => {
    const clock = createFakeClock();
    const cache = createMemoryDedupStore({ clock, windowMs: WINDOW, capacity: 10 });
    (await reserve(cache, 'a')).commit();
    await clock.advance(60_000);
    (await reserve(cache, 'b')).commit();
    await clock.advance(WINDOW - 60_000 + 1_000);
    // 'a' is gone, 'b' still live: one sweep timer left, for 'b'.
    assert.equal(clock.pending(), 1);
    assert.equal(cache.size(), 1);
    await clock.advance(60_000);
    assert.equal(clock.pending(), 0);
  });

  it('expiry does not depend on the sweep timer firing (lazy expiry on every read)', async () => {
    const clock = createFakeClock();
    // A clock whose timers never fire: only now() moves.
    const frozenTimers = { now: () => clock.now(), setTimeout: () => 0, clearTimeout: () => {} };
    const cache = createMemoryDedupStore({ clock: frozenTimers, windowMs: WINDOW, capacity: 3 });
    (await reserve(cache, 'a')).commit();
    (await reserve(cache, 'b')).commit();
    await clock.advance(WINDOW);
    (await reserve(cache, 'a')).commit(); // an expired key is reusable (cache not full)
    await reserve(cache, 'c');
    await reserve(cache, 'd'); // full, but 'b' has expired: dropped, not counted
    assert.equal(cache.size(), 3);
  });

  it('a commit moves the entry behind later reservations (the oldest to expire is found first)', async () => {
    const { clock, cache } = setup(2);
    const a = await reserve(cache, 'a'); // t0
    await clock.advance(10_000);
    await reserve(cache, 'b'); // t10 s, pending: expires t310 s
    await clock.advance(20_000);
    a.commit(); // t30 s: expires t330 s
    const err = await refusal(cache, 'c');
    assert.equal(err.code, 'cache_full');
    assert.equal(err.retryAfterSeconds, 280, "'b' is the next to expire, at t310 s");
    await clock.advance(280_000);
    await reserve(cache, 'c');
    assert.equal((await refusal(cache, 'a')).code, 'duplicate_tx');
  });

  it('docs/design.md#deduplication capacity: 10 000 live committed entries take under 5 MiB of heap, keys included', async () => {
    const { cache } = setup(10_000);
    gc();
    const before = process.memoryUsage().heapUsed;
    // Realistic keys (chain name + ':' + 0x + 64 hex), built inside the measurement: the cache keeps them.
    for (let i = 0; i < 10_000; i++) (await reserve(cache, `ethereum:0x${i.toString(16).padStart(64, '0')}`)).commit();
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.equal(cache.size(), 10_000);
    assert.equal((await refusal(cache, 'one more')).code, 'cache_full');
    assert.ok(grown < 5 * 1024 * 1024, `heap grew ${grown} bytes`);
  });
});
