/**
 * lib/worker/tx/heads.ts on a fake clock (docs/delivery.md#throughput): sends that wait for their
 * receipt wait for the next block, read once per interval for all of them, and only while one waits.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { watchHeads } from '../../../../lib/worker/tx/heads.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';

function node(start: bigint) {
  const n = { head: start, reads: 0, fail: false };
  const read = async () => {
    n.reads++;
    if (n.fail) throw new Error('node down');
    return n.head;
  };
  return { n, read };
}

describe('head watcher (lib/worker/tx/heads.ts)', () => {
  test('a wait ends at the first read of a newer head, within one interval of the block, not at its bound', async () => {
    const clock = createFakeClock();
    const { n, read } = node(10n);
    const heads = watchHeads(read, clock, 250);
    let ended: number | undefined;
    void heads.after(10n, 1_000).then(() => (ended = clock.now()));
    await clock.flush();
    assert.equal(n.reads, 1, 'read at once when nothing was being read');
    await clock.advance(250);
    assert.equal(ended, undefined, 'same head: still waiting');
    n.head = 11n;
    const start = clock.now();
    await clock.advance(250);
    assert.equal(ended, start + 250, 'ended at the read that saw block 11');
    assert.equal(heads.latest(), 11n);
  });

  test('one read per interval however many sends wait; none once nobody waits (no timer left)', async () => {
    const clock = createFakeClock();
    const { n, read } = node(5n);
    const heads = watchHeads(read, clock, 250);
    const waits = Array.from({ length: 20 }, () => heads.after(5n, 10_000));
    await clock.flush();
    await clock.advance(1_000);
    assert.equal(n.reads, 5, 'the first read and one per 250 ms, for 20 waiting sends');
    n.head = 6n;
    await clock.advance(250);
    await Promise.all(waits);
    const reads = n.reads;
    assert.equal(clock.pending(), 0, 'no poll timer and no bound left');
    await clock.advance(5_000);
    assert.equal(n.reads, reads, 'nothing read while nobody waits');
  });

  test('a head newer than the one a send saw, already read by another wait, ends the wait at once', async () => {
    const clock = createFakeClock();
    const { n, read } = node(7n);
    const heads = watchHeads(read, clock, 250);
    await heads.after(undefined, 1_000);
    assert.equal(heads.latest(), 7n);
    let done = false;
    void heads.after(6n, 1_000).then(() => (done = true));
    await clock.flush();
    assert.equal(done, true);
    assert.equal(n.reads, 1);
  });

  test('a node that fails: the wait ends at its bound', async () => {
    const clock = createFakeClock();
    const { n, read } = node(1n);
    n.fail = true;
    const heads = watchHeads(read, clock, 250);
    let ended: number | undefined;
    const start = clock.now();
    void heads.after(1n, 1_000).then(() => (ended = clock.now()));
    await clock.advance(999);
    assert.equal(ended, undefined);
    await clock.advance(1);
    assert.equal(ended, start + 1_000);
    assert.equal(clock.pending(), 0);
  });
});
