/**
 * The loop's hold on one claimed message (lib/worker/loop/lease.ts) alone, on a fake clock: when
 * the lease is renewed, what makes it lost (a renewal refused, none within the lease's time), what
 * check(), stop() and keepAlive() then do, and the log lines an operator reads
 * (docs/delivery.md#the-delivery-loop). test/unit/worker/loop/worker.test.ts checks the same hold
 * inside the loop, against a real store.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ClaimedMessage } from '../../../../lib/outbox/index.ts';
import { DeliveryError } from '../../../../lib/worker/errors.ts';
import { holdLease } from '../../../../lib/worker/loop/lease.ts';
import { createFakeClock, T0, type FakeClock } from '../../../helpers/fakes/clock.ts';

const ID = `0x${'11'.repeat(32)}`;
const LOG = { message_id: ID, destination: 'anvil2' };
const LEASE_MS = 30_000;

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown> | undefined;
}

/** One extend() call: when it came and how the test answers it. */
interface Extend {
  at: number;
  args: unknown[];
  resolve(ok: boolean): void;
  reject(error: Error): void;
}

function harness(
  opts: {
    ended?: AbortSignal;
    /** The n-th extend's answer (from 0): a value, an Error to throw, undefined to leave it waiting. */
    answer?: (n: number) => boolean | Error | undefined;
  } = {},
) {
  const clock: FakeClock = createFakeClock(T0);
  const lines: Line[] = [];
  const extends_: Extend[] = [];
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) => lines.push({ level, msg, fields });
  const hold = holdLease({
    outbox: {
      extend: (...args) =>
        new Promise<boolean>((resolve, reject) => {
          const call = { at: clock.now() - T0, args, resolve, reject };
          extends_.push(call);
          const answer = opts.answer?.(extends_.length - 1);
          if (answer instanceof Error) reject(answer);
          else if (answer !== undefined) resolve(answer);
        }),
    },
    message: { id: ID, lease: 'the-lease' } as ClaimedMessage,
    clock,
    leaseMs: LEASE_MS,
    logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    log: LOG,
    ended: opts.ended,
  });
  return { clock, lines, extends: extends_, hold };
}

/** The DeliveryError check() throws, or undefined. */
function checked(hold: { check(): void }): DeliveryError | undefined {
  try {
    hold.check();
    return undefined;
  } catch (error) {
    assert.ok(error instanceof DeliveryError, 'check() throws DeliveryError');
    return error;
  }
}

describe('holdLease: renewals (docs/delivery.md#the-delivery-loop)', () => {
  test('renewed every third of the lease from the last renewal; close() stops the renewals', async () => {
    const h = harness({ answer: () => true });
    await h.clock.advance(9_999);
    assert.equal(h.extends.length, 0, 'nothing before a third of the lease');
    await h.clock.advance(20_001);
    assert.deepEqual(
      h.extends.map((e) => [e.at, ...e.args]),
      [
        [10_000, ID, 'the-lease', LEASE_MS],
        [20_000, ID, 'the-lease', LEASE_MS],
        [30_000, ID, 'the-lease', LEASE_MS],
      ],
    );
    assert.equal(checked(h.hold), undefined, 'renewed: the attempt goes on past the first lease');
    h.hold.close();
    assert.equal(h.clock.pending(), 0, 'no timer left');
    await h.clock.advance(100_000);
    assert.equal(h.extends.length, 3);
    assert.deepEqual(h.lines, []);
  });

  test('a renewal in flight when the hold is closed schedules no further renewal', async () => {
    const h = harness();
    await h.clock.advance(10_000);
    assert.equal(h.extends.length, 1, 'the renewal at a third is waiting for the store');
    h.hold.close();
    h.extends[0].resolve(true);
    await h.clock.flush();
    assert.equal(h.clock.pending(), 0, 'closed: the finished renewal does not schedule the next');
  });

  test('a renewal refused loses the lease once: aborted, logged, no renewal after', async () => {
    // The timer's renewal and a keepAlive() both wait for the store, which refuses both: one loss.
    // Any later call is refused at once (a hold that renewed a lost lease fails, not hangs).
    const h = harness({ answer: (n) => (n < 2 ? undefined : false) });
    await h.clock.advance(10_000);
    const alive = h.hold.keepAlive();
    assert.equal(h.extends.length, 2, 'keepAlive() past a third renews too');
    for (const e of h.extends) e.resolve(false);
    await alive;
    await h.clock.flush();
    assert.equal(h.hold.signal.aborted, true);
    assert.deepEqual(h.lines, [
      { level: 'warn', msg: 'lease lost', fields: { ...LOG, reason: 'another worker holds it' } },
    ]);
    const error = checked(h.hold);
    assert.equal(error?.code, 'stopped');
    assert.equal(error?.message, 'lease lost: another worker holds it');
    await h.clock.advance(100_000);
    await h.hold.keepAlive();
    assert.equal(h.extends.length, 2, 'a lost lease is not renewed again');
    assert.equal(h.lines.length, 1, 'nor reported again');
    h.hold.close();
  });

  test('a store that fails every renewal loses the lease when a whole lease has passed, not before', async () => {
    const h = harness({ answer: () => new Error('database is locked\n    at a stack line') });
    await h.clock.advance(29_999);
    const failed = { level: 'warn', msg: 'lease extension failed', fields: { ...LOG, error: 'database is locked' } };
    assert.deepEqual(h.lines, [failed, failed], 'the renewals at 10 s and 20 s failed, the lease still ours');
    assert.equal(h.hold.signal.aborted, false);
    assert.equal(checked(h.hold), undefined);
    await h.clock.advance(1);
    assert.deepEqual(h.lines, [
      failed,
      failed,
      failed,
      { level: 'warn', msg: 'lease lost', fields: { ...LOG, reason: 'not renewed within 30000 ms' } },
    ]);
    assert.equal(h.hold.signal.aborted, true);
    assert.equal(checked(h.hold)?.message, 'lease lost: not renewed within 30000 ms');
    h.hold.close();
  });

  test('check() loses the lease itself when a renewal hangs for a whole lease', async () => {
    // The store never answers the renewal at 10 s: no later renewal runs, check() sees the time.
    const h = harness();
    await h.clock.advance(29_999);
    assert.equal(h.extends.length, 1);
    assert.equal(checked(h.hold), undefined, 'within the lease: go on');
    await h.clock.advance(1);
    assert.equal(h.hold.signal.aborted, false, 'nothing but check() looks now');
    const error = checked(h.hold);
    assert.equal(error?.code, 'stopped');
    assert.equal(error?.message, 'lease lost: not renewed within 30000 ms');
    assert.equal(h.hold.signal.aborted, true);
    assert.deepEqual(h.lines, [
      { level: 'warn', msg: 'lease lost', fields: { ...LOG, reason: 'not renewed within 30000 ms' } },
    ]);
    h.hold.close();
  });
});

describe('holdLease: stopping (docs/delivery.md#stopping)', () => {
  test('stop() releases a message not sent yet: aborted, check() says the worker is stopping', async () => {
    const h = harness({ answer: () => true });
    h.hold.stop();
    assert.equal(h.hold.signal.aborted, true);
    const error = checked(h.hold);
    assert.equal(error?.code, 'stopped');
    assert.equal(error?.message, 'the worker is stopping');
    assert.deepEqual(h.lines, [], 'a stop is no lost lease');
    h.hold.close();
  });

  test('stop() leaves a message whose transaction may be out to be followed', async () => {
    const h = harness({ answer: () => true });
    h.hold.sent = true;
    h.hold.stop();
    assert.equal(h.hold.signal.aborted, false);
    assert.equal(checked(h.hold), undefined);
    h.hold.close();
  });

  test('keepAlive() throws stopped once the worker has ended, and renews without an ended signal', async () => {
    const ended = new AbortController();
    const h = harness({ ended: ended.signal, answer: () => true });
    await h.hold.keepAlive();
    ended.abort();
    await assert.rejects(h.hold.keepAlive(), (error: unknown) => {
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.code, 'stopped');
      assert.equal(error.message, 'the worker stopped; its transaction is left to the journal');
      return true;
    });
    h.hold.close();

    const plain = harness({ answer: () => true });
    await plain.clock.advance(10_000);
    await plain.hold.keepAlive();
    assert.equal(plain.extends.length, 1, 'renewed by the timer; keepAlive() so soon after renews nothing');
    plain.hold.close();
  });
});
