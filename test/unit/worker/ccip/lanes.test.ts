/**
 * Slow gateways off the delivery loop's slots (docs/hostile-recipients.md#slow-gateways): a lookup holds its
 * message's slot for at most holdMs, then goes on in the background and the message is given back
 * (busy); its next claim takes the outcome; a message known to be slow starts in the background at
 * once. Driven with an injected clock and scripted readers: no gateway, no real waiting.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { laneLookups, type LaneOptions } from '../../../../lib/worker/ccip/lanes.ts';
import { CcipReadError, DeliveryError } from '../../../../lib/worker/errors.ts';
import type { OffchainReader } from '../../../../lib/worker/ism/metadata.ts';
import { createFakeClock, type FakeClock } from '../../../helpers/fakes/clock.ts';

type Hex = `0x${string}`;
const ISM = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const revertOf = (n: number): Hex => `0x556f1830${n.toString(16).padStart(64, '0')}`;

interface Call {
  revert: Hex;
  signal?: AbortSignal;
  answer(data: Hex): void;
  fail(error: unknown): void;
}

/** A reader whose every call waits until the test settles it (or its signal aborts). */
function scriptedReader(): { read: OffchainReader; calls: Call[] } {
  const calls: Call[] = [];
  const read: OffchainReader = (revert, _ism, signal) =>
    new Promise<Hex>((resolve, reject) => {
      calls.push({ revert, signal, answer: resolve, fail: reject });
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  return { read, calls };
}

function rig(options: Partial<LaneOptions> = {}) {
  const clock = createFakeClock();
  const reader = scriptedReader();
  const lanes = laneLookups(reader.read, { clock, holdMs: 2_000, background: 4, keepMs: 600_000, ...options });
  return { clock, ...reader, lanes };
}

/** Starts a read and records how it ended, without awaiting it. */
function start(lanes: ReturnType<typeof rig>['lanes'], n: number, signal?: AbortSignal) {
  const state: { value?: Hex; error?: unknown; done: boolean } = { done: false };
  const promise = lanes.read(revertOf(n), ISM, signal).then(
    (value) => Object.assign(state, { value, done: true }),
    (error: unknown) => Object.assign(state, { error, done: true }),
  );
  return { state, promise };
}

function assertBusy(error: unknown, pattern: RegExp): void {
  assert.ok(error instanceof DeliveryError, `a DeliveryError, got ${String(error)}`);
  assert.equal(error.code, 'busy');
  assert.match(error.message, pattern);
}

async function settleWithin(clock: FakeClock, ms: number, read: { state: { done: boolean } }): Promise<void> {
  await clock.advance(ms);
  assert.ok(read.state.done, `settled within ${ms} ms`);
}

describe('CCIP-read lanes: slow lookups leave the slot (docs/hostile-recipients.md#slow-gateways)', () => {
  test('a lookup that answers within holdMs is answered in the slot, nothing left in the background', async () => {
    const r = rig();
    const a = start(r.lanes, 1);
    await r.clock.advance(1_500);
    r.calls[0].answer('0xc0ffee');
    await settleWithin(r.clock, 0, a);
    assert.equal(a.state.value, '0xc0ffee');
    assert.equal(r.lanes.running(), 0);
    assert.equal(r.clock.pending(), 0, 'the hold timer is cleared');
  });

  test('a lookup past holdMs gives the slot back (busy); the next claim takes its answer, asked once', async () => {
    const r = rig();
    const a = start(r.lanes, 1);
    await r.clock.advance(1_999);
    assert.equal(a.state.done, false, 'held in the slot until holdMs');
    await settleWithin(r.clock, 1, a);
    assertBusy(a.state.error, /did not answer within 2 s: the lookup goes on in the background; asked again later/);
    assert.equal(r.calls[0].signal?.aborted, false, 'not aborted: it goes on');
    assert.equal(r.lanes.running(), 1);

    // Claimed again while it runs: given back at once, no second request.
    const b = start(r.lanes, 1);
    await settleWithin(r.clock, 0, b);
    assertBusy(b.state.error, /still running in the background/);
    assert.equal(r.calls.length, 1);

    r.calls[0].answer('0xbeef');
    await r.clock.flush();
    assert.equal(r.lanes.running(), 0);
    const c = start(r.lanes, 1);
    await settleWithin(r.clock, 0, c);
    assert.equal(c.state.value, '0xbeef', 'the background answer, in the slot at once');
    assert.equal(r.calls.length, 1, 'the gateways were asked once');
  });

  test('a background failure (the budget ran out) reaches the next claim as is, so it counts as before', async () => {
    const r = rig();
    const a = start(r.lanes, 1);
    await settleWithin(r.clock, 2_000, a);
    const ranOut = new CcipReadError('unavailable', 'CCIP-read unavailable (the 30 s time budget ran out): …');
    r.calls[0].fail(ranOut);
    await r.clock.flush();
    const b = start(r.lanes, 1);
    await settleWithin(r.clock, 0, b);
    assert.equal(b.state.error, ranOut);
  });

  test('a known-slow message starts its next lookup in the background: no time in the slot at all', async () => {
    const r = rig();
    const a = start(r.lanes, 1);
    await settleWithin(r.clock, 2_000, a);
    r.calls[0].fail(new CcipReadError('unavailable', 'budget ran out'));
    await r.clock.flush();
    await start(r.lanes, 1).promise; // takes the failure
    const again = start(r.lanes, 1);
    await settleWithin(r.clock, 0, again);
    assertBusy(again.state.error, /slow before: its lookup runs in the background/);
    assert.equal(r.calls.length, 2, 'asked again, in the background');
    assert.equal(r.lanes.running(), 1);
    r.calls[1].answer('0xfeed');
    await r.clock.flush();
    const next = start(r.lanes, 1);
    await settleWithin(r.clock, 0, next);
    assert.equal(next.state.value, '0xfeed');
  });

  test('other messages are answered in their slots while slow lookups run in the background', async () => {
    const r = rig();
    const slow = [start(r.lanes, 1), start(r.lanes, 2)];
    await r.clock.advance(2_000);
    for (const s of slow) assertBusy(s.state.error, /within 2 s/);
    const fast = start(r.lanes, 3);
    await r.clock.advance(300);
    r.calls[2].answer('0x01');
    await settleWithin(r.clock, 0, fast);
    assert.equal(fast.state.value, '0x01');
    assert.equal(r.lanes.running(), 2);
  });

  test('with every background lookup in use, a slow lookup is given up at holdMs and a known-slow one waits', async () => {
    const r = rig({ background: 1 });
    const a = start(r.lanes, 1);
    await settleWithin(r.clock, 2_000, a);
    const b = start(r.lanes, 2);
    await settleWithin(r.clock, 2_000, b);
    assertBusy(b.state.error, /within 2 s, and all 1 background lookups are in use/);
    assert.equal(r.calls[1].signal?.aborted, true, 'its request is aborted: nothing runs past the bound');
    assert.equal(r.lanes.running(), 1);
    // Message 2 is now known slow: while the one background lookup is taken it waits, unasked.
    const c = start(r.lanes, 2);
    await settleWithin(r.clock, 0, c);
    assertBusy(c.state.error, /slow before, and all 1 background lookups are in use/);
    assert.equal(r.calls.length, 2);
  });

  test("the attempt's abort ends a lookup still in the slot, not one that went on in the background", async () => {
    const r = rig();
    const stop = new AbortController();
    const a = start(r.lanes, 1, stop.signal);
    await r.clock.advance(500);
    stop.abort(new DeliveryError('stopped', 'the worker stops'));
    await settleWithin(r.clock, 0, a);
    assert.equal((a.state.error as DeliveryError).code, 'stopped');
    assert.equal(r.calls[0].signal?.aborted, true);

    const lease = new AbortController();
    const b = start(r.lanes, 2, lease.signal);
    await settleWithin(r.clock, 2_000, b);
    lease.abort(new DeliveryError('stopped', 'lease lost'));
    await r.clock.flush();
    assert.equal(r.calls[1].signal?.aborted, false, 'the background lookup is no longer the attempt’s');
  });

  test('close() aborts the background lookups and forgets what it knew', async () => {
    const r = rig();
    const a = start(r.lanes, 1);
    await settleWithin(r.clock, 2_000, a);
    r.lanes.close();
    assert.equal(r.calls[0].signal?.aborted, true);
    await r.clock.flush();
    assert.equal(r.lanes.running(), 0);
    const b = start(r.lanes, 1);
    await r.clock.flush();
    assert.equal(b.state.done, false, 'asked again in the slot, as a message not known to be slow');
    assert.equal(r.calls.length, 2);
  });

  test('an outcome not taken within keepMs is dropped, and at most `background` outcomes are kept', async () => {
    const r = rig({ background: 2, keepMs: 60_000 });
    const reads = [start(r.lanes, 1), start(r.lanes, 2)];
    await r.clock.advance(2_000);
    for (const s of reads) assert.ok(s.state.done);
    r.calls[0].answer('0x01');
    r.calls[1].answer('0x02');
    await r.clock.advance(60_000);
    // Message 1's answer is too old: dropped; message 1 is known slow, so it is asked again in the background.
    const late = start(r.lanes, 1);
    await settleWithin(r.clock, 0, late);
    assertBusy(late.state.error, /slow before/);
    assert.equal(r.calls.length, 3);

    const r2 = rig({ background: 2 });
    const many = [1, 2, 3].map((n) => start(r2.lanes, n));
    await r2.clock.advance(2_000);
    assertBusy(many[2].state.error, /all 2 background lookups are in use/);
    r2.calls[0].answer('0x01');
    r2.calls[1].answer('0x02');
    await r2.clock.flush();
    const four = start(r2.lanes, 4);
    await r2.clock.advance(2_000);
    r2.calls[3].answer('0x04');
    await r2.clock.flush();
    // Three outcomes finished, two kept: the oldest (message 1) is dropped at the next read.
    const first = start(r2.lanes, 1);
    await settleWithin(r2.clock, 0, first);
    assertBusy(first.state.error, /slow before/);
    assert.ok(four.state.done);
  });

  test('a known-slow message whose background lookup answers within holdMs is slow no more', async () => {
    const r = rig();
    const a = start(r.lanes, 1);
    await settleWithin(r.clock, 2_000, a);
    r.calls[0].fail(new CcipReadError('pending', 'gateway 1 of 1 answered HTTP 404 (not ready)'));
    await r.clock.flush();
    await start(r.lanes, 1).promise; // takes the pending outcome
    const b = start(r.lanes, 1);
    await settleWithin(r.clock, 0, b); // in the background: the gateway now answers fast
    r.calls[1].fail(new CcipReadError('pending', 'gateway 1 of 1 answered HTTP 404 (not ready)'));
    await r.clock.flush();
    await start(r.lanes, 1).promise;
    const c = start(r.lanes, 1);
    await r.clock.flush();
    assert.equal(c.state.done, false, 'in the slot again, as a message not known to be slow');
    r.calls[2].answer('0xaa');
    await settleWithin(r.clock, 0, c);
    assert.equal(c.state.value, '0xaa');
  });

  test('lookups are told apart by message: an ISM reverting with other data at each claim still finds its lookup', async () => {
    const r = rig();
    const message: Hex = '0x03000000010000000100';
    const read = (revert: Hex, m: Hex) => {
      const state: { value?: Hex; error?: unknown; done: boolean } = { done: false };
      r.lanes.read(revert, ISM, undefined, m).then(
        (value) => Object.assign(state, { value, done: true }),
        (error: unknown) => Object.assign(state, { error, done: true }),
      );
      return { state };
    };
    const a = read(revertOf(1), message);
    await settleWithin(r.clock, 2_000, a);
    assertBusy(a.state.error, /goes on in the background/);
    const b = read(revertOf(2), message);
    await settleWithin(r.clock, 0, b);
    assertBusy(b.state.error, /still running in the background/);
    assert.equal(r.calls.length, 1, 'not asked a second time under another revert');
    // Another message with the same revert is another lookup.
    const other = read(revertOf(1), '0x0300000002');
    await r.clock.flush();
    assert.equal(r.calls.length, 2);
    r.calls[1].answer('0x02');
    await settleWithin(r.clock, 0, other);
    assert.equal(other.state.value, '0x02');
  });

  test('a known-slow message that takes a not-ready outcome starts its next lookup at once, for its next poll', async () => {
    const r = rig();
    const a = start(r.lanes, 1);
    await settleWithin(r.clock, 2_000, a);
    await r.clock.advance(3_000);
    r.calls[0].fail(new CcipReadError('pending', 'gateway 1 of 1 answered HTTP 404 (not ready)'));
    await r.clock.flush();
    const poll = start(r.lanes, 1);
    await settleWithin(r.clock, 0, poll);
    assert.equal((poll.state.error as CcipReadError).code, 'pending', 'the outcome, as it would be in the slot');
    assert.equal(r.calls.length, 2, 'the next lookup already asked');
    assert.equal(r.lanes.running(), 1);
    await r.clock.advance(3_000);
    r.calls[1].answer('0xa77e57');
    await r.clock.flush();
    const next = start(r.lanes, 1);
    await settleWithin(r.clock, 0, next);
    assert.equal(next.state.value, '0xa77e57', 'the next poll takes it: no round of busy in between');
    assert.equal(r.calls.length, 2);
  });
});
