/**
 * The DedupStore contract (lib/relay/dedup.ts, docs/design.md#deduplication, docs/replicas.md#how-replicas-agree), one suite run
 * against every engine (test/unit/store/contracts.test.ts): the per-process cache and PostgreSQL. Time
 * is a fake clock the engine was given, so windows and expiries are crossed without waiting.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { RelayError } from '../../../lib/errors/classes.ts';
import type { FakeClock } from '../fakes/clock.ts';

export interface DedupLike {
  reserve(key: string): { commit(): unknown; release(): unknown } | Promise<{ commit(): unknown; release(): unknown }>;
  size(): number | Promise<number>;
}

export interface DedupHarness {
  dedup: DedupLike;
  clock: FakeClock;
  close(): void | Promise<void>;
}

export interface DedupContractSettings {
  windowMs: number;
  /** How long an uncommitted reservation lives (the memory cache: one window). */
  pendingMs: number;
  capacity: number;
}

const KEY = 'ethereum\n0x' + 'ab'.repeat(32);
const key = (n: number) => `ethereum\n0x${n.toString(16).padStart(64, '0')}`;

async function refusal(dedup: DedupLike, k: string): Promise<RelayError> {
  try {
    await dedup.reserve(k);
  } catch (e) {
    assert.ok(e instanceof RelayError, `expected a RelayError, got ${e}`);
    return e;
  }
  assert.fail(`reserve(${JSON.stringify(k)}) was accepted`);
}

export function dedupContract(name: string, settings: DedupContractSettings, make: () => Promise<DedupHarness>): void {
  const { windowMs, pendingMs, capacity } = settings;

  describe(`DedupStore contract: ${name}`, () => {
    let h: DedupHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.close();
    });

    test('docs/design.md#deduplication: a committed key is duplicate_tx (429) for the whole window, Retry-After until its end', async () => {
      await (await h.dedup.reserve(KEY)).commit();
      await h.clock.advance(1_000);
      const err = await refusal(h.dedup, KEY);
      assert.equal(err.code, 'duplicate_tx');
      assert.equal(err.status, 429);
      assert.equal(err.retryAfterSeconds, Math.ceil((windowMs - 1_000) / 1000));
      await h.clock.advance(windowMs - 1_001);
      assert.equal((await refusal(h.dedup, KEY)).code, 'duplicate_tx');
    });

    test('docs/design.md#deduplication: after the window the same key may be reserved again', async () => {
      await (await h.dedup.reserve(KEY)).commit();
      await h.clock.advance(windowMs);
      await h.dedup.reserve(KEY);
    });

    test('the window runs from the commit, not from the reservation', async () => {
      const r = await h.dedup.reserve(KEY);
      await h.clock.advance(Math.min(pendingMs, windowMs) - 1_000);
      await r.commit();
      await h.clock.advance(windowMs - 1);
      assert.equal((await refusal(h.dedup, KEY)).code, 'duplicate_tx');
      await h.clock.advance(1);
      await h.dedup.reserve(KEY);
    });

    test('docs/replicas.md#how-replicas-agree: a pending key is duplicate_tx, and expires pendingMs after the reservation', async () => {
      // So a dead request cannot hold it.
      await h.dedup.reserve(KEY); // never settled, like a replica killed mid-request
      await h.clock.advance(pendingMs - 1);
      assert.equal((await refusal(h.dedup, KEY)).code, 'duplicate_tx');
      await h.clock.advance(1);
      await h.dedup.reserve(KEY);
    });

    test('docs/design.md#deduplication: a released reservation frees the key at once', async () => {
      await (await h.dedup.reserve(KEY)).release();
      await (await h.dedup.reserve(KEY)).commit();
      assert.equal((await refusal(h.dedup, KEY)).code, 'duplicate_tx');
    });

    test('commit and release are idempotent; release after commit and commit after release do nothing', async () => {
      const a = await h.dedup.reserve(KEY);
      await a.commit();
      await a.commit();
      await a.release();
      assert.equal((await refusal(h.dedup, KEY)).code, 'duplicate_tx');
      const b = await h.dedup.reserve(key(2));
      await b.release();
      await b.commit();
      await b.release();
      await (await h.dedup.reserve(key(2))).commit();
    });

    test('a stale reservation cannot release or commit the key reserved again after it expired', async () => {
      const stale = await h.dedup.reserve(KEY);
      await h.clock.advance(pendingMs);
      const fresh = await h.dedup.reserve(KEY);
      await stale.release();
      assert.equal((await refusal(h.dedup, KEY)).code, 'duplicate_tx', 'the stale release freed the new reservation');
      await stale.commit();
      await fresh.release();
      await h.dedup.reserve(KEY); // the stale commit did not keep the key
    });

    test('keys are distinct: another tx or another chain is not a duplicate', async () => {
      await (await h.dedup.reserve(KEY)).commit();
      await h.dedup.reserve(key(1));
      await h.dedup.reserve('base\n0x' + 'ab'.repeat(32));
      assert.equal(await h.dedup.size(), 3);
    });

    test('size counts live entries, pending and committed, not expired or released ones', async () => {
      assert.equal(await h.dedup.size(), 0);
      await (await h.dedup.reserve(key(1))).commit();
      await h.dedup.reserve(key(2));
      await (await h.dedup.reserve(key(3))).release();
      assert.equal(await h.dedup.size(), 2);
      await h.clock.advance(Math.max(pendingMs, windowMs));
      assert.equal(await h.dedup.size(), 0);
    });

    test('docs/replicas.md#how-replicas-agree: of concurrent reservations of a key exactly one succeeds, the rest are duplicate_tx', async () => {
      const results = await Promise.allSettled(Array.from({ length: 12 }, async () => h.dedup.reserve(KEY)));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      for (const r of results) {
        if (r.status === 'rejected') assert.equal((r.reason as RelayError).code, 'duplicate_tx');
      }
    });

    test('docs/design.md#deduplication: full of live entries, a new key is cache_full (503) with Retry-After', async () => {
      // The Retry-After holds until the oldest entry expires.
      for (let i = 0; i < capacity; i++) {
        await (await h.dedup.reserve(key(i))).commit();
        if (i === 0) await h.clock.advance(10_000);
      }
      const err = await refusal(h.dedup, key(capacity));
      assert.equal(err.code, 'cache_full');
      assert.equal(err.status, 503);
      assert.equal(err.retryAfterSeconds, Math.ceil((windowMs - 10_000) / 1000));
      // A duplicate of a live key is still duplicate_tx when full.
      assert.equal((await refusal(h.dedup, key(1))).code, 'duplicate_tx');
      // Expired entries make room.
      await h.clock.advance(windowMs - 10_000);
      await h.dedup.reserve(key(capacity));
    });

    test('docs/design.md#deduplication: releasing makes room at once when full', async () => {
      const held = [];
      for (let i = 0; i < capacity; i++) held.push(await h.dedup.reserve(key(i)));
      assert.equal((await refusal(h.dedup, key(capacity))).code, 'cache_full');
      await held[0].release();
      await h.dedup.reserve(key(capacity));
    });
  });
}
