/**
 * The retention loop (lib/outbox/retention.ts, docs/configuration.md#retention) on the in-memory
 * outbox and a fake clock: when it looks, how it cuts the work into batches, and how it stops.
 * What prune() itself deletes is the outbox contract's (lib/testing/outbox-contract/retention.ts),
 * run on every engine.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMemoryOutbox, type Pruned, type PruneOptions } from '../../../lib/outbox/index.ts';
import { PRUNE_PAUSE_MS, startRetention } from '../../../lib/outbox/retention.ts';
import { outboxMessage } from '../../../lib/testing/index.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';

const DAY = 86_400_000;

/** A memory outbox with `n` messages delivered at the clock's time, and the clock. */
function delivered(n: number) {
  const clock = createFakeClock();
  const outbox = createMemoryOutbox({ clock });
  outbox.enqueue(Array.from({ length: n }, (_, i) => outboxMessage(i + 1, clock.now() - 1_000)));
  for (const m of outbox.claim(n, 60_000))
    outbox.markDelivered(m.id, { destinationTxHash: `0x${'ab'.repeat(32)}`, lease: m.lease });
  return { clock, outbox };
}

test('docs/configuration.md#retention: the loop prunes rows older than the retention in batches, at once and every minute', async () => {
  const { clock, outbox } = delivered(5);
  const calls: PruneOptions[] = [];
  const looks: Pruned[] = [];
  const retention = startRetention({
    prune: (opts) => {
      calls.push(opts);
      return outbox.prune(opts);
    },
    clock,
    retentionMs: DAY,
    batch: 2,
    onPruned: (p) => looks.push(p),
  });
  await clock.flush();
  assert.equal(calls.length, 1, 'a first look at once: nothing old yet, one batch');
  assert.deepEqual(looks, []);
  assert.equal(outbox.list({ status: 'delivered' }).length, 5);

  await clock.advance(DAY); // the looks on the way find nothing yet: the last one's cut is the delivery time
  assert.equal(outbox.list({ status: 'delivered' }).length, 5);
  calls.length = 0;
  await clock.advance(60_000); // the next look: its cut is a minute after the delivery
  assert.equal(calls.length, 1, 'a full batch, then a pause');
  assert.equal(calls[0].before, clock.now() - DAY, 'the cut is the retention before now');
  await clock.advance(PRUNE_PAUSE_MS - 1);
  assert.equal(calls.length, 1, 'the next batch waits the whole pause');
  await clock.advance(1 + PRUNE_PAUSE_MS);
  assert.deepEqual(
    calls.map((c) => c.limit),
    [2, 2, 2],
    'batches of 2 until one is not full: 2, 2, then 1',
  );
  assert.deepEqual(looks, [{ messages: 5, journal: 0 }], 'one report per look, with its totals');
  assert.deepEqual(outbox.list({ status: 'delivered' }), []);
  assert.equal(clock.keepingAlive(), 0, 'its timer keeps no process alive');
  await retention.stop();
  assert.equal(clock.pending(), 0, 'stopped: nothing scheduled');
});

test('docs/configuration.md#retention: a failing batch is reported and the loop looks again a minute later', async () => {
  const { clock, outbox } = delivered(1);
  await clock.advance(2 * DAY);
  const errors: unknown[] = [];
  let fail = true;
  const retention = startRetention({
    prune: (opts) => {
      if (fail) throw new Error('store unavailable');
      return outbox.prune(opts);
    },
    clock,
    retentionMs: DAY,
    onError: (e) => errors.push(e),
  });
  await clock.flush();
  assert.equal(errors.length, 1);
  assert.equal(outbox.list({ status: 'delivered' }).length, 1);
  fail = false;
  await clock.advance(60_000);
  assert.equal(errors.length, 1);
  assert.deepEqual(outbox.list({ status: 'delivered' }), [], 'pruned at the next look');
  await retention.stop();
});

test('docs/configuration.md#retention: stop() waits for the batch in flight and no batch starts after it', async () => {
  const { clock } = delivered(0);
  let release = () => {};
  let calls = 0;
  const retention = startRetention({
    prune: () => {
      calls++;
      return new Promise<Pruned>((resolve) => (release = () => resolve({ messages: 1_000, journal: 0 })));
    },
    clock,
    retentionMs: DAY,
  });
  await clock.flush();
  assert.equal(calls, 1);
  let stopped = false;
  const stopping = retention.stop().then(() => (stopped = true));
  await clock.flush();
  assert.equal(stopped, false, 'the batch in flight is waited for');
  release(); // a full batch: without stop() the loop would go on after its pause
  await stopping;
  await clock.advance(10 * 60_000);
  assert.equal(calls, 1, 'no batch after stop()');
});
