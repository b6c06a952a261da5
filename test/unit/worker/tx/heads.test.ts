/**
 * lib/worker/tx/heads.ts on a fake clock (docs/delivery.md#throughput): sends that wait for their
 * receipt wait for the next block, read once per interval for all of them, and only while one waits.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPublicClient, custom } from 'viem';
import { HEAD_POLL_MS, headsOf, watchHeads } from '../../../../lib/worker/tx/heads.ts';
import { createFakeClock, type FakeClock } from '../../../helpers/fakes/clock.ts';

function node(start: bigint) {
  const n = { head: start, reads: 0, fail: false };
  const read = async () => {
    n.reads++;
    if (n.fail) throw new Error('node down');
    return n.head;
  };
  return { n, read };
}

/** A node whose head reads stay out until the test answers the last one (`held.answer`). */
function heldNode() {
  const held: { reads: number; answer?: (h: bigint) => void } = { reads: 0 };
  const read = () => {
    held.reads++;
    return new Promise<bigint>((resolve) => (held.answer = resolve));
  };
  return { held, read };
}

/**
 * What `p` gives once the fake clock has run `ms` (0: pending jobs only): a wait still open then
 * fails the test at once, where a bare await would hang it (nothing moves the fake clock).
 */
async function within<T>(clock: FakeClock, p: Promise<T>, ms = 0): Promise<T> {
  let out: { v: T } | undefined;
  void p.then((v) => (out = { v }));
  await (ms > 0 ? clock.advance(ms) : clock.flush());
  assert.ok(out, `still waiting after ${ms} ms of the fake clock`);
  return out.v;
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
    await within(clock, Promise.all(waits));
    const reads = n.reads;
    assert.equal(clock.pending(), 0, 'no poll timer and no bound left');
    await clock.advance(5_000);
    assert.equal(n.reads, reads, 'nothing read while nobody waits');
  });

  test('a head newer than the one a send saw, already read by another wait, ends the wait at once', async () => {
    const clock = createFakeClock();
    const { n, read } = node(7n);
    const heads = watchHeads(read, clock, 250);
    await within(clock, heads.after(undefined, 1_000));
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

describe('head watcher: what a node behind, slow or cached does to it (lib/worker/tx/heads.ts)', () => {
  test('a lower head read later (a node behind its peers) does not move the head back', async () => {
    const clock = createFakeClock();
    const { n, read } = node(10n);
    const heads = watchHeads(read, clock, 250);
    await within(clock, heads.after(undefined, 1_000));
    n.head = 9n;
    let ended = false;
    void heads.after(10n, 1_000).then(() => (ended = true));
    await clock.advance(500);
    assert.equal(heads.latest(), 10n);
    assert.equal(ended, false, 'block 9 is not news to a send that saw 10');
    n.head = 11n;
    await clock.advance(250);
    assert.equal(ended, true);
  });

  test('a wait that comes while a read is out joins it: one read, no second poll beside it', async () => {
    const clock = createFakeClock();
    const { held, read } = heldNode();
    const heads = watchHeads(read, clock, 250);
    const first = heads.after(undefined, 10_000);
    await clock.flush();
    assert.equal(held.reads, 1);
    const second = heads.after(undefined, 10_000);
    await clock.advance(1_000);
    assert.equal(held.reads, 1, 'nothing read beside the read that is out, however long it takes');
    held.answer?.(4n);
    await within(clock, Promise.all([first, second]));
    assert.equal(heads.latest(), 4n);
    assert.equal(clock.pending(), 0);
  });

  test('a read that failed is followed by one per interval until a head comes', async () => {
    const clock = createFakeClock();
    const { n, read } = node(3n);
    n.fail = true;
    const heads = watchHeads(read, clock, 250);
    let ended: number | undefined;
    const start = clock.now();
    void heads.after(undefined, 10_000).then(() => (ended = clock.now()));
    await clock.advance(500);
    assert.equal(n.reads, 3, 'at once, then at 250 and 500');
    n.fail = false;
    await clock.advance(250);
    assert.equal(ended, start + 750);
    assert.equal(heads.latest(), 3n);
  });

  test('a wait ended by its bound leaves the poll running for the others; the last to leave stops it', async () => {
    const clock = createFakeClock();
    const { n, read } = node(5n);
    const heads = watchHeads(read, clock, 250);
    let long: number | undefined;
    void heads.after(5n, 10_000).then(() => (long = clock.now()));
    const start = clock.now();
    await within(clock, heads.after(5n, 100), 100);
    n.head = 6n;
    await clock.advance(150);
    assert.equal(long, start + 250, 'the other wait still saw block 6 at the next poll');
    // One wait, bound shorter than the interval: once it ends no poll is left, nothing is read.
    const reads = n.reads;
    await within(clock, heads.after(6n, 100), 100);
    assert.equal(clock.pending(), 0, 'no poll timer left');
    await clock.advance(1_000);
    assert.equal(n.reads, reads + 1, 'the read at once only');
  });

  test('a wait that comes while the last read is out (its wait gone at its bound) joins that read', async () => {
    const clock = createFakeClock();
    const { held, read } = heldNode();
    const heads = watchHeads(read, clock, 250);
    await within(clock, heads.after(undefined, 100), 100);
    assert.equal(held.reads, 1);
    const second = heads.after(undefined, 10_000);
    await clock.advance(1_000);
    assert.equal(held.reads, 1, 'not read again beside the read still out');
    held.answer?.(8n);
    await within(clock, second);
  });

  test('a wait that comes between two polls waits for the next one: no extra read', async () => {
    const clock = createFakeClock();
    const { n, read } = node(5n);
    const heads = watchHeads(read, clock, 250);
    void heads.after(5n, 10_000);
    await clock.advance(100);
    assert.equal(n.reads, 1);
    void heads.after(5n, 10_000);
    await clock.advance(100);
    assert.equal(n.reads, 1, 'the second wait started no read of its own');
    await clock.advance(50);
    assert.equal(n.reads, 2, 'the poll at 250 ms');
  });

  test("headsOf: one watcher per node client and clock, reading the node's head past viem's cache", async () => {
    const clock = createFakeClock();
    let head = 10;
    let reads = 0;
    const publicClient = createPublicClient({
      transport: custom({
        async request({ method }: { method: string }) {
          assert.equal(method, 'eth_blockNumber');
          reads++;
          return `0x${head.toString(16)}`;
        },
      }),
    });
    const heads = headsOf(publicClient, clock);
    assert.equal(headsOf(publicClient, clock), heads, 'the same watcher for the same client and clock');
    assert.notEqual(headsOf(publicClient, createFakeClock()), heads);
    await within(clock, heads.after(undefined, 1_000));
    assert.equal(heads.latest(), 10n);
    head = 11;
    const start = clock.now();
    let ended: number | undefined;
    void heads.after(10n, 10_000).then(() => (ended = clock.now()));
    await clock.advance(HEAD_POLL_MS);
    assert.equal(ended, start, 'block 11 seen at the read made at once (nobody was waiting), not a cached 10');
    assert.equal(reads, 2);
  });
});
