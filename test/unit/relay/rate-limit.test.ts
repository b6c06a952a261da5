import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTokenBucket, type TokenBucket } from '../../../lib/relay/rate-limit.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { OutOfRangeError } from '../../../lib/errors/classes.ts';

function takeN(limiter: TokenBucket, n: number): number {
  let ok = 0;
  for (let i = 0; i < n; i++) if (limiter.take().ok) ok++;
  return ok;
}

describe('global rate limit: token bucket (docs/design.md#rate-limit)', () => {
  it('docs/design.md#rate-limit default: starts full with a burst of 100, the 101st is refused', () => {
    const clock = createFakeClock();
    const bucket = createTokenBucket({ clock, burst: 100, perMinute: 100 });
    assert.equal(takeN(bucket, 100), 100);
    const refused = bucket.take();
    assert.deepEqual(refused, { ok: false, retryAfterSeconds: 1 }); // 100/min: one token per 600 ms
  });

  it('refills continuously: 100 per minute is one token every 600 ms', async () => {
    const clock = createFakeClock();
    const bucket = createTokenBucket({ clock, burst: 100, perMinute: 100 });
    takeN(bucket, 100);
    await clock.advance(599);
    assert.equal(bucket.take().ok, false);
    await clock.advance(1);
    assert.equal(bucket.take().ok, true);
    assert.equal(bucket.take().ok, false);
    await clock.advance(6_000);
    assert.equal(takeN(bucket, 20), 10);
  });

  it('partial refill carries over between refused takes (a refusal costs nothing)', async () => {
    const clock = createFakeClock();
    const bucket = createTokenBucket({ clock, burst: 1, perMinute: 60 }); // one per second
    bucket.take();
    for (let i = 0; i < 4; i++) {
      await clock.advance(250);
      assert.equal(bucket.take().ok, i === 3, `after ${(i + 1) * 250} ms`);
    }
  });

  it('never holds more than burst tokens however long it rests', async () => {
    const clock = createFakeClock();
    const bucket = createTokenBucket({ clock, burst: 5, perMinute: 600 });
    await clock.advance(3_600_000);
    assert.equal(takeN(bucket, 10), 5);
  });

  const retryTable: [string, number, number, number][] = [
    // [name, perMinute, ms elapsed since empty, expected Retry-After]
    ['1 per minute, just emptied → 60 s', 1, 0, 60],
    ['1 per minute, 59.5 s later → 1 s (rounded up)', 1, 59_500, 1],
    ['1 per minute, 30.2 s later → 30 s', 1, 30_200, 30],
    ['6 per minute → 10 s', 6, 0, 10],
    ['7 per minute → ceil(8.57) = 9 s', 7, 0, 9],
    ['6000 per minute (10 ms/token) → at least 1 s', 6_000, 0, 1],
  ];
  for (const [name, perMinute, elapsed, expected] of retryTable) {
    it(`Retry-After: ${name}`, async () => {
      const clock = createFakeClock();
      const bucket = createTokenBucket({ clock, burst: 1, perMinute });
      assert.equal(bucket.take().ok, true);
      await clock.advance(elapsed);
      assert.deepEqual(bucket.take(), { ok: false, retryAfterSeconds: expected });
    });
  }

  it('Retry-After is honest: waiting that long is enough', async () => {
    const clock = createFakeClock();
    const bucket = createTokenBucket({ clock, burst: 3, perMinute: 7 });
    takeN(bucket, 3);
    const refused = bucket.take();
    assert.equal(refused.ok, false);
    await clock.advance((refused as { retryAfterSeconds: number }).retryAfterSeconds * 1000);
    assert.equal(bucket.take().ok, true);
  });

  it('a clock stepping backwards neither adds nor removes tokens', () => {
    let now = 1_000_000;
    const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
    const bucket = createTokenBucket({ clock, burst: 2, perMinute: 60 });
    bucket.take();
    now -= 500_000;
    assert.equal(bucket.take().ok, true);
    assert.equal(bucket.take().ok, false);
    now += 1_000; // one second after the step: one token
    assert.equal(bucket.take().ok, true);
  });

  it('rejects a nonsensical configuration', () => {
    const clock = createFakeClock();
    assert.throws(() => createTokenBucket({ clock, burst: 0, perMinute: 1 }), OutOfRangeError);
    assert.throws(() => createTokenBucket({ clock, burst: 1, perMinute: 0 }), OutOfRangeError);
    assert.throws(() => createTokenBucket({ clock, burst: Number.NaN, perMinute: 1 }), OutOfRangeError);
  });

  it('uses no timers', () => {
    const clock = createFakeClock();
    const bucket = createTokenBucket({ clock, burst: 1, perMinute: 1 });
    takeN(bucket, 3);
    assert.equal(clock.pending(), 0);
  });
});
