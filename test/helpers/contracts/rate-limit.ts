/**
 * The RateLimiter contract (lib/relay/rate-limit.ts, docs/design.md#rate-limit, docs/replicas.md#how-replicas-agree), one suite
 * run against every engine (test/unit/store/contracts.test.ts): the per-process bucket and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { TakeResult } from '../../../lib/relay/rate-limit.ts';
import type { FakeClock } from '../fakes/clock.ts';

export interface RateLimiterHarness {
  limiter: { take(): TakeResult | Promise<TakeResult> };
  clock: FakeClock;
  close(): void | Promise<void>;
}

export type MakeLimiter = (burst: number, perMinute: number) => Promise<RateLimiterHarness>;

async function takeN(h: RateLimiterHarness, n: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < n; i++) if ((await h.limiter.take()).ok) ok++;
  return ok;
}

export function rateLimitContract(name: string, make: MakeLimiter): void {
  describe(`RateLimiter contract: ${name}`, () => {
    const open: RateLimiterHarness[] = [];
    const setup = async (burst: number, perMinute: number) => {
      const h = await make(burst, perMinute);
      open.push(h);
      return h;
    };
    afterEach(async () => {
      for (const h of open.splice(0)) await h.close();
    });

    test('docs/design.md#rate-limit: starts full with burst tokens; the next is refused with Retry-After', async () => {
      const h = await setup(10, 100);
      assert.equal(await takeN(h, 10), 10);
      assert.deepEqual(await h.limiter.take(), { ok: false, retryAfterSeconds: 1 }); // one token per 600 ms
    });

    test('refills continuously: 100 per minute is one token every 600 ms', async () => {
      const h = await setup(100, 100);
      await takeN(h, 100);
      await h.clock.advance(599);
      assert.equal((await h.limiter.take()).ok, false);
      await h.clock.advance(1);
      assert.equal((await h.limiter.take()).ok, true);
      assert.equal((await h.limiter.take()).ok, false);
      await h.clock.advance(6_000);
      assert.equal(await takeN(h, 20), 10);
    });

    test('a refusal costs nothing: partial refill carries over', async () => {
      const h = await setup(1, 60);
      await h.limiter.take();
      for (let i = 0; i < 4; i++) {
        await h.clock.advance(250);
        assert.equal((await h.limiter.take()).ok, i === 3, `after ${(i + 1) * 250} ms`);
      }
    });

    test('never holds more than burst tokens however long it rests', async () => {
      const h = await setup(5, 600);
      await h.clock.advance(3_600_000);
      assert.equal(await takeN(h, 10), 5);
    });

    test('Retry-After is whole seconds until one token is back', async () => {
      const h = await setup(1, 1);
      await h.limiter.take();
      assert.deepEqual(await h.limiter.take(), { ok: false, retryAfterSeconds: 60 });
      await h.clock.advance(30_200);
      assert.deepEqual(await h.limiter.take(), { ok: false, retryAfterSeconds: 30 });
    });

    test('docs/replicas.md#how-replicas-agree: concurrent takes never pass more than the tokens there are', async () => {
      const h = await setup(7, 1);
      const results = await Promise.all(Array.from({ length: 20 }, async () => h.limiter.take()));
      assert.equal(results.filter((r) => r.ok).length, 7);
    });
  });
}
