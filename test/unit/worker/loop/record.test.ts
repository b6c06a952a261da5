/**
 * The recorder alone (lib/worker/loop/record.ts): what each Outcome writes to the outbox, the
 * metrics event it fires and the log line an operator reads, with an injected outbox, logger,
 * clock and jitter. The retry of a delivered record while the store fails is timed on the fake
 * clock (docs/transactions.md#the-transaction-journal); the counts, backoffs and deadlines are
 * docs/delivery.md#retries-pending-proofs-dead-letters. Every expected text is written out here,
 * not built with the module's formatAttemptState.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ClaimedMessage, MarkDeliveredOptions, MarkFailedOptions } from '../../../../lib/outbox/index.ts';
import { DeliveryError, ForeignFailure, ShortWait } from '../../../../lib/worker/errors.ts';
import { createRecorder } from '../../../../lib/worker/loop/record.ts';
import type { Outcome } from '../../../../lib/worker/loop/outcome.ts';
import type { WorkerSettings } from '../../../../lib/worker/types.ts';
import { createFakeClock, T0, type FakeClock } from '../../../helpers/fakes/clock.ts';
import { claimedMessage } from '../../../helpers/fixtures/builders.ts';

const ID = `0x${'11'.repeat(32)}`;
const HASH = `0x${'ab'.repeat(32)}`;
const LEASE = 'the-lease';
const DEST = 'anvil2';
const LOG = { message_id: ID, destination: DEST };
const HOUR = 3_600_000;

const SETTINGS: WorkerSettings = {
  leaseMs: 60_000,
  batch: 1,
  concurrency: 1,
  maxAttempts: 5,
  maxLeaseExpiries: 5,
  retryBaseMs: 5_000,
  retryMaxMs: 600_000,
  pendingBaseMs: 5_000,
  pendingMaxMs: 60_000,
  pendingDeadlineMs: 48 * HOUR,
  gasPaymentDeadlineMs: 24 * HOUR,
  pollMs: 1_000,
  stopGraceMs: 10_000,
};

const claimed = (over: Partial<ClaimedMessage> = {}) =>
  claimedMessage({ id: ID, enqueuedAt: T0 - 10_000, claimedUntil: T0 + 60_000, lease: LEASE, ...over });

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown> | undefined;
}

interface Harness {
  clock: FakeClock;
  lines: Line[];
  delivered: Array<{ at: number; id: string; opts: MarkDeliveredOptions }>;
  failed: Array<{ id: string; opts: MarkFailedOptions }>;
  events: unknown[][];
  storeFailures: number;
  record: ReturnType<typeof createRecorder>;
}

interface Script {
  settings?: Partial<WorkerSettings>;
  random?: number;
  /** markDelivered's answer for its n-th call (from 0): a value, or an Error to throw. */
  markDelivered?: (n: number) => boolean | Error;
  markFailed?: () => boolean | Error;
}

function harness(script: Script = {}): Harness {
  const clock = createFakeClock(T0);
  const h: Harness = {
    clock,
    lines: [],
    delivered: [],
    failed: [],
    events: [],
    storeFailures: 0,
    record: undefined as unknown as Harness['record'],
  };
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    h.lines.push({ level, msg, fields });
  h.record = createRecorder({
    outbox: {
      async markDelivered(id, opts) {
        const answer = script.markDelivered?.(h.delivered.length) ?? true;
        h.delivered.push({ at: clock.now(), id, opts });
        if (answer instanceof Error) throw answer;
        return answer;
      },
      async markFailed(id, opts) {
        h.failed.push({ id, opts });
        const answer = script.markFailed?.() ?? true;
        if (answer instanceof Error) throw answer;
        return answer;
      },
    },
    settings: { ...SETTINGS, ...script.settings },
    clock,
    random: () => script.random ?? 0.5,
    logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    events: {
      delivered: (...args) => h.events.push(['delivered', ...args]),
      failed: (...args) => h.events.push(['failed', ...args]),
      retried: (...args) => h.events.push(['retried', ...args]),
    },
    storeFailed: () => {
      h.storeFailures++;
    },
  });
  return h;
}

/** `promise`'s value once settled, failing at once (never hanging) when it is still pending. */
async function settled<T>(promise: Promise<T>, clock: FakeClock, why: string): Promise<T> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await clock.flush();
  assert.ok(done, why);
  return promise;
}

const iso = (ms: number) => new Date(ms).toISOString();
const down = () => new Error('database is locked\n    at a stack line that never reaches the log');

describe('createRecorder: a delivered outcome', () => {
  test('docs/delivery.md#metrics-and-readiness: recorded, the delivered event and the log line with the seconds since enqueue', async () => {
    const h = harness();
    // 1234.5678 ms from enqueue: the event gets the exact seconds, the log line rounds them to the millisecond.
    const m = claimed({ enqueuedAt: T0 - 1234.5678 });
    const result = await h.record(m, DEST, { kind: 'delivered', hash: HASH, already: false }, LOG);
    assert.deepEqual(result, { id: ID, outcome: 'delivered', txHash: HASH, already: false, recorded: true });
    assert.deepEqual(h.delivered, [{ at: T0, id: ID, opts: { lease: LEASE, destinationTxHash: HASH } }]);
    assert.deepEqual(h.events, [['delivered', DEST, false, (T0 - m.enqueuedAt) / 1000]]);
    assert.deepEqual(h.lines, [
      { level: 'info', msg: 'delivered', fields: { ...LOG, tx_hash: HASH, recorded: true, seconds: 1.235 } },
    ]);
    assert.equal(h.storeFailures, 0);
  });

  test('docs/delivery.md#metrics-and-readiness: a delivery by another transaction is logged already delivered, its event says so', async () => {
    const h = harness();
    // Enqueued "after" now (clocks of two machines): never a negative duration.
    const result = await h.record(
      claimed({ enqueuedAt: T0 + 5_000 }),
      DEST,
      { kind: 'delivered', hash: HASH, already: true },
      LOG,
    );
    assert.deepEqual(result, { id: ID, outcome: 'delivered', txHash: HASH, already: true, recorded: true });
    assert.deepEqual(h.events, [['delivered', DEST, true, 0]]);
    assert.deepEqual(h.lines, [
      { level: 'info', msg: 'already delivered', fields: { ...LOG, tx_hash: HASH, recorded: true, seconds: 0 } },
    ]);
  });

  test('docs/transactions.md#the-transaction-journal: a lease lost meanwhile is not recorded, fires no event, is not retried', async () => {
    const h = harness({ markDelivered: () => false });
    const result = await h.record(claimed(), DEST, { kind: 'delivered', hash: HASH, already: false }, LOG);
    assert.deepEqual(result, { id: ID, outcome: 'delivered', txHash: HASH, already: false, recorded: false });
    assert.equal(h.delivered.length, 1, 'false is an answer, not a store failure: asked once');
    assert.deepEqual(h.events, [], 'the new holder of the lease records it and counts it');
    assert.equal(h.storeFailures, 0);
    assert.deepEqual(h.lines, [
      { level: 'info', msg: 'delivered', fields: { ...LOG, tx_hash: HASH, recorded: false, seconds: 10 } },
    ]);
  });

  test('docs/transactions.md#the-transaction-journal: a store that fails twice is asked again after 0.25 s, then 0.5 s', async () => {
    const h = harness({ markDelivered: (n) => (n < 2 ? down() : true) });
    const done = h.record(claimed(), DEST, { kind: 'delivered', hash: HASH, already: false }, LOG);
    await h.clock.flush();
    assert.equal(h.delivered.length, 1);
    await h.clock.advance(249);
    assert.equal(h.delivered.length, 1, 'not asked again before 250 ms');
    await h.clock.advance(1);
    assert.equal(h.delivered.length, 2, 'asked again at 250 ms');
    await h.clock.advance(499);
    assert.equal(h.delivered.length, 2, 'not asked again before 500 ms more');
    await h.clock.advance(1);
    const result = await settled(done, h.clock, 'recorded by the third call');
    assert.deepEqual(
      h.delivered.map((d) => d.at - T0),
      [0, 250, 750],
    );
    assert.deepEqual(result, { id: ID, outcome: 'delivered', txHash: HASH, already: false, recorded: true });
    assert.equal(h.storeFailures, 2, 'each failure is told to the loop (the store is unreachable)');
    assert.deepEqual(h.events, [['delivered', DEST, false, 10]], 'recorded in the end: the delivery is counted');
    const trying = { ...LOG, error: 'database is locked' };
    assert.deepEqual(h.lines, [
      { level: 'warn', msg: 'recording the delivery failed; trying again', fields: { ...trying, delay_ms: 250 } },
      { level: 'warn', msg: 'recording the delivery failed; trying again', fields: { ...trying, delay_ms: 500 } },
      { level: 'info', msg: 'delivered', fields: { ...LOG, tx_hash: HASH, recorded: true, seconds: 10 } },
    ]);
  });

  test('docs/transactions.md#the-transaction-journal: a store down for a lease doubles its wait up to 5 s, then gives up', async () => {
    // A lease of 17.75 s: the call at 12.75 s fails and its next wait (5 s) would end exactly at the
    // lease's end, which is giving up (one more call would land when the lease lapses).
    // Down for 7 calls as the rule makes them; from the 20th it answers, so a loop that never gives up
    // ends (and fails the test) instead of hanging the fake clock.
    const h = harness({ markDelivered: (n) => (n < 20 ? down() : true), settings: { leaseMs: 17_750 } });
    const done = h.record(claimed(), DEST, { kind: 'delivered', hash: HASH, already: false }, LOG);
    await h.clock.advance(60_000);
    const result = await settled(done, h.clock, 'given up within the lease');
    assert.deepEqual(
      h.delivered.map((d) => d.at - T0),
      [0, 250, 750, 1_750, 3_750, 7_750, 12_750],
    );
    assert.deepEqual(result, { id: ID, outcome: 'delivered', txHash: HASH, already: false, recorded: false });
    assert.equal(h.storeFailures, 7);
    assert.deepEqual(h.events, [], 'not recorded: the next claim records and counts it');
    const trying = { ...LOG, error: 'database is locked' };
    assert.deepEqual(h.lines, [
      ...[250, 500, 1_000, 2_000, 4_000, 5_000].map((delay_ms) => ({
        level: 'warn',
        msg: 'recording the delivery failed; trying again',
        fields: { ...trying, delay_ms },
      })),
      { level: 'warn', msg: 'recording the outcome failed; the lease will lapse', fields: trying },
      // The duration is the one at the attempt's end, before the retries.
      { level: 'info', msg: 'delivered', fields: { ...LOG, tx_hash: HASH, recorded: false, seconds: 10 } },
    ]);
  });
});

describe('createRecorder: failures, pending and waits', () => {
  test('docs/delivery.md#stopping: a release queues the message again at once, last_error and attempt state untouched', async () => {
    const h = harness();
    const m = claimed({ lastError: 'rpc: HTTP 503 (failures 1/5)', failures: 1 });
    const result = await h.record(m, DEST, { kind: 'released', reason: 'stopping' }, LOG);
    assert.deepEqual(result, { id: ID, outcome: 'released', recorded: true });
    assert.deepEqual(h.failed, [
      { id: ID, opts: { lease: LEASE, error: 'rpc: HTTP 503 (failures 1/5)', retryAt: T0 } },
    ]);
    assert.deepEqual(h.events, []);
    assert.deepEqual(h.lines, [
      { level: 'info', msg: 'released', fields: { ...LOG, reason: 'stopping', recorded: true } },
    ]);
  });

  test('docs/transactions.md#the-transaction-journal: a store that fails a release leaves the lease to lapse, said at warn', async () => {
    const h = harness({ markFailed: () => down() });
    const result = await h.record(claimed(), DEST, { kind: 'released', reason: 'stopping' }, LOG);
    assert.deepEqual(result, { id: ID, outcome: 'released', recorded: false });
    assert.equal(h.failed.length, 1, 'asked once: the next claim retries the message');
    assert.equal(h.storeFailures, 1);
    assert.deepEqual(h.lines, [
      {
        level: 'warn',
        msg: 'recording the outcome failed; the lease will lapse',
        fields: { error: 'database is locked' },
      },
      { level: 'info', msg: 'released', fields: { ...LOG, reason: 'stopping', recorded: false } },
    ]);
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: a counted failure is retried after the doubled, jittered backoff', async () => {
    // Third failure: 5 s doubled twice = 20 s, half fixed and half random (0.25 of it): 12.5 s.
    const h = harness({ random: 0.25 });
    const failure = new DeliveryError('rpc', 'HTTP 503');
    const result = await h.record(claimed({ failures: 2, polls: 4 }), DEST, { kind: 'retry', failure }, LOG);
    const error = 'rpc: HTTP 503 (failures 3/5)';
    const retryAt = T0 + 12_500;
    assert.deepEqual(result, { id: ID, outcome: 'retry', error, retryAt, recorded: true });
    assert.deepEqual(h.failed, [
      { id: ID, opts: { lease: LEASE, error, retryAt, state: { failures: 3, pendingSince: null, polls: 4 } } },
    ]);
    assert.deepEqual(h.events, [['retried', DEST, 'rpc']]);
    assert.deepEqual(h.lines, [
      { level: 'warn', msg: 'retry', fields: { ...LOG, retry_at: iso(retryAt), error, recorded: true } },
    ]);
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: the backoff stops at retryMaxSeconds, the text names its source', async () => {
    // Ninth failure of twenty: 5 s × 2^8 = 1280 s, held to 600 s; random 0 leaves the fixed half, 300 s.
    const h = harness({ random: 0, settings: { maxAttempts: 20 } });
    const failure = new ForeignFailure('revert', 'recipient', 'no thanks');
    const result = await h.record(claimed({ failures: 8 }), DEST, { kind: 'retry', failure }, LOG);
    const error = 'revert (recipient): "no thanks" (failures 9/20)';
    assert.deepEqual(result, { id: ID, outcome: 'retry', error, retryAt: T0 + 300_000, recorded: true });
    assert.deepEqual(h.events, [['retried', DEST, 'revert']]);
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: the maxAttempts-th failure is final, logged at error', async () => {
    const h = harness();
    const failure = new DeliveryError('rpc', 'HTTP 503');
    const result = await h.record(claimed({ failures: 4 }), DEST, { kind: 'retry', failure }, LOG);
    const error = 'rpc: HTTP 503 (failures 5/5, final)';
    assert.deepEqual(result, { id: ID, outcome: 'failed', error, recorded: true });
    assert.deepEqual(h.failed, [
      { id: ID, opts: { lease: LEASE, error, final: true, state: { failures: 5, pendingSince: null, polls: 0 } } },
    ]);
    assert.deepEqual(h.events, [['failed', DEST, 'rpc']]);
    assert.deepEqual(h.lines, [{ level: 'error', msg: 'failed', fields: { ...LOG, error, recorded: true } }]);
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: a final outcome is failed at once with its own text, counted', async () => {
    const h = harness({ markFailed: () => down() });
    const failure = new DeliveryError('unsupported', 'no ISM this relayer can serve');
    const result = await h.record(claimed({ failures: 1, polls: 2 }), DEST, { kind: 'final', failure }, LOG);
    const error = 'no ISM this relayer can serve';
    assert.deepEqual(result, { id: ID, outcome: 'failed', error, recorded: false });
    assert.deepEqual(h.failed, [
      { id: ID, opts: { lease: LEASE, error, final: true, state: { failures: 2, pendingSince: null, polls: 2 } } },
    ]);
    assert.deepEqual(h.events, [['failed', DEST, 'unsupported']]);
    assert.equal(h.storeFailures, 1);
    assert.deepEqual(h.lines, [
      {
        level: 'warn',
        msg: 'recording the outcome failed; the lease will lapse',
        fields: { error: 'database is locked' },
      },
      { level: 'error', msg: 'failed', fields: { ...LOG, error, recorded: false } },
    ]);
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: a pending proof is polled with the pending backoff, not counted', async () => {
    // Fourth poll: 5 s × 2^3 = 40 s (under the 60 s bound), 0.5 random: 30 s.
    const since = T0 - 600_000;
    const h = harness();
    const outcome: Outcome = {
      kind: 'pending',
      failure: new DeliveryError('pending', 'gateway 1 of 1 answered HTTP 404'),
    };
    const result = await h.record(claimed({ failures: 1, pendingSince: since, polls: 3 }), DEST, outcome, LOG);
    const error = `pending: gateway 1 of 1 answered HTTP 404 (failures 1/5; pending since ${iso(since)}, poll 4)`;
    const retryAt = T0 + 30_000;
    assert.deepEqual(result, { id: ID, outcome: 'pending', error, retryAt, recorded: true });
    assert.deepEqual(h.failed, [
      { id: ID, opts: { lease: LEASE, error, retryAt, state: { failures: 1, pendingSince: since, polls: 4 } } },
    ]);
    assert.deepEqual(h.events, [['retried', DEST, 'pending']]);
    assert.deepEqual(h.lines, [
      { level: 'info', msg: 'pending', fields: { ...LOG, retry_at: iso(retryAt), error, recorded: true } },
    ]);
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: the first pending poll starts the pending clock now', async () => {
    const h = harness({ random: 0 });
    const outcome: Outcome = { kind: 'pending', failure: new DeliveryError('pending', 'not attested') };
    const result = await h.record(claimed(), DEST, outcome, LOG);
    const error = `pending: not attested (failures 0/5; pending since ${iso(T0)}, poll 1)`;
    assert.deepEqual(result, { id: ID, outcome: 'pending', error, retryAt: T0 + 2_500, recorded: true });
    assert.deepEqual(h.failed[0].opts, {
      lease: LEASE,
      error,
      retryAt: T0 + 2_500,
      state: { failures: 0, pendingSince: T0, polls: 1 },
    });
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: pending for pendingDeadlineHours is final, kind pending', async () => {
    const since = T0 - 48 * HOUR;
    const h = harness();
    const outcome: Outcome = { kind: 'pending', failure: new DeliveryError('pending', 'not attested') };
    const result = await h.record(claimed({ pendingSince: since, polls: 99 }), DEST, outcome, LOG);
    const error = `pending: deadline passed, proof still not ready: not attested (failures 0/5; pending since ${iso(since)}, poll 100, final)`;
    assert.deepEqual(result, { id: ID, outcome: 'failed', error, recorded: true });
    assert.deepEqual(h.failed, [
      { id: ID, opts: { lease: LEASE, error, final: true, state: { failures: 0, pendingSince: since, polls: 100 } } },
    ]);
    assert.deepEqual(h.events, [['failed', DEST, 'pending']]);
    assert.deepEqual(h.lines, [{ level: 'error', msg: 'failed', fields: { ...LOG, error, recorded: true } }]);
    // One millisecond less: polled again.
    const before = harness();
    const again = await before.record(claimed({ pendingSince: since + 1, polls: 99 }), DEST, outcome, LOG);
    assert.equal(again.outcome, 'pending');
  });

  test('docs/delivery.md#retries-pending-proofs-dead-letters: an unpaid message waits with the pending backoff, logged waiting', async () => {
    // Second poll: 5 s × 2 = 10 s, 0.5 random: 7.5 s.
    const h = harness();
    const outcome: Outcome = { kind: 'wait', failure: new DeliveryError('gas_payment', 'paid 0 of 5 wei') };
    const result = await h.record(claimed({ polls: 1 }), DEST, outcome, LOG);
    const error = 'gas_payment: paid 0 of 5 wei (failures 0/5)';
    const retryAt = T0 + 7_500;
    assert.deepEqual(result, { id: ID, outcome: 'pending', error, retryAt, recorded: true });
    assert.deepEqual(h.failed, [
      { id: ID, opts: { lease: LEASE, error, retryAt, state: { failures: 0, pendingSince: null, polls: 2 } } },
    ]);
    assert.deepEqual(h.events, [['retried', DEST, 'gas_payment']]);
    assert.deepEqual(h.lines, [
      { level: 'info', msg: 'waiting', fields: { ...LOG, retry_at: iso(retryAt), error, recorded: true } },
    ]);
  });

  test('docs/gas.md#gas-payment-enforcement: unpaid gasPaymentDeadlineHours after enqueue is final; a fee wait that old is not', async () => {
    const m = claimed({ enqueuedAt: T0 - 24 * HOUR, polls: 7 });
    const h = harness();
    const unpaid: Outcome = { kind: 'wait', failure: new DeliveryError('gas_payment', 'paid 0 of 5 wei') };
    const result = await h.record(m, DEST, unpaid, LOG);
    const error =
      'gas_payment: deadline passed (24 h from enqueue), still not paid for: paid 0 of 5 wei (failures 0/5, final)';
    assert.deepEqual(result, { id: ID, outcome: 'failed', error, recorded: true });
    assert.deepEqual(h.failed, [
      { id: ID, opts: { lease: LEASE, error, final: true, state: { failures: 0, pendingSince: null, polls: 8 } } },
    ]);
    assert.deepEqual(h.events, [['failed', DEST, 'gas_payment']]);
    assert.deepEqual(h.lines, [{ level: 'error', msg: 'failed', fields: { ...LOG, error, recorded: true } }]);

    const early = harness();
    const waiting = await early.record(claimed({ enqueuedAt: T0 - 24 * HOUR + 1 }), DEST, unpaid, LOG);
    assert.equal(waiting.outcome, 'pending', 'one millisecond before the deadline it still waits');

    // The deadline is the gas payment's: a base fee above the cap waits however old the message is.
    const fee = harness();
    const capped: Outcome = { kind: 'wait', failure: new DeliveryError('fee', 'base fee above the cap') };
    const held = await fee.record(claimed({ enqueuedAt: T0 - 100 * HOUR }), DEST, capped, LOG);
    assert.equal(held.outcome, 'pending');
    assert.deepEqual(fee.events, [['retried', DEST, 'fee']]);
  });

  test('docs/hostile-recipients.md#slow-gateways: a short wait is asked again after about its own delay, not the pending backoff', async () => {
    // retryAfterMs 2 s: half fixed, half random (0.5): 1.5 s, whatever the poll count.
    const h = harness();
    const outcome: Outcome = { kind: 'wait', failure: new ShortWait('every lookup permit is taken', 2_000) };
    const result = await h.record(claimed({ polls: 9 }), DEST, outcome, LOG);
    const error = 'busy: every lookup permit is taken (failures 0/5)';
    assert.deepEqual(result, { id: ID, outcome: 'pending', error, retryAt: T0 + 1_500, recorded: true });
    assert.deepEqual(h.events, [['retried', DEST, 'busy']]);
  });
});
