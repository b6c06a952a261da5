/**
 * The delivery loop itself (lib/worker/loop/worker.ts's createDeliveryWorker) on the memory outbox
 * and a fake clock, with a logger, a change feed and metrics events the test reads: the size of
 * each claim (worker.batch, bounded by worker.concurrency), the `claimed` event, what
 * storeReachable() says, the loop's own log lines, the change feed waking it, and what stop()
 * does with what it holds (docs/delivery.md#the-delivery-loop, docs/delivery.md#stopping,
 * docs/delivery.md#metrics-and-readiness). test/unit/worker/loop/worker.test.ts checks what the
 * attempts record through the same loop. The store counts its claims and stops answering after
 * MAX_CLAIMS, so a loop that never idles fails its test instead of hanging it.
 */
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import { type Hex, hexToBytes } from 'viem';
import type { ChangeFeed, ChangeListener } from '../../../../lib/outbox/change-feed.ts';
import { createMemoryOutbox, type OutboxRecord } from '../../../../lib/outbox/index.ts';
import { sleep } from '../../../../lib/clock.ts';
import {
  createDeliveryWorker,
  type DeliveryWorker,
  type DeliveryWorkerOptions,
} from '../../../../lib/worker/loop/worker.ts';
import type { DeliveryOutbox, Destination } from '../../../../lib/worker/types.ts';
import { createFakeClock, T0, type FakeClock } from '../../../helpers/fakes/clock.ts';
import { hyperlaneMessage } from '../../../helpers/fixtures/builders.ts';
import { scriptedDestination, TX, type Script as DestinationScript } from '../../../helpers/fixtures/destination.ts';

const DEST = 'anvil2';
const POLL_MS = 1_000;
/** More claims than any test makes: past it the store never answers (a loop that never idles). */
const MAX_CLAIMS = 40;
const STACK = '\n    at a stack line that never reaches the log';

const idOf = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

const ZERO = `0x${'00'.repeat(32)}` as const;
/** A raw Hyperlane message (version 3) from domain 1 to `destination`, distinct by nonce. */
const rawMessage = (nonce: number, destination: number): Uint8Array =>
  hexToBytes(hyperlaneMessage({ nonce, origin: 1, destination, sender: ZERO, recipient: ZERO, body: '0x00000000' }));

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown> | undefined;
}

/** A change feed the test publishes into and whose start it scripts. */
interface TestFeed extends ChangeFeed {
  publish(): void;
  listeners: Set<ChangeListener>;
}

function testFeed(ready: () => Promise<void> = async () => {}): TestFeed {
  const listeners = new Set<ChangeListener>();
  return {
    ready,
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    publish() {
      for (const l of [...listeners]) l({ ids: [idOf(999)], txs: [] });
    },
    listeners,
  };
}

interface Script {
  /** Messages enqueued before the worker starts, by their enqueue time and destination domain (default 2). */
  messages?: Array<{ enqueuedAt: number; destination?: number }>;
  destination?: DestinationScript;
  /** The destinations by domain (default one scripted destination, domain 2). */
  destinations?: Destination[];
  /** Before the n-th claim (from 0) reaches the outbox: an Error to throw instead, or a promise to wait for. */
  claim?: (n: number) => Error | Promise<void> | undefined;
  /** extend's answer instead of the outbox's (false: another worker holds the message). */
  extend?: () => boolean;
  /** markFailed throws this while set. */
  markFailedError?: () => Error | undefined;
  options?: Partial<DeliveryWorkerOptions>;
}

interface Harness {
  clock: FakeClock;
  lines: Line[];
  events: unknown[][];
  /** Each claim: when (ms after T0) and its limit. */
  claims: Array<{ at: number; limit: number }>;
  worker: DeliveryWorker;
  destination: ReturnType<typeof scriptedDestination>;
  enqueue(n: number, enqueuedAt: number, destination?: number): void;
  row(n: number): OutboxRecord;
}

function harness(script: Script = {}): Harness {
  const clock = createFakeClock(T0);
  const outbox = createMemoryOutbox({ clock });
  const lines: Line[] = [];
  const events: unknown[][] = [];
  const claims: Harness['claims'] = [];
  const enqueue = (n: number, enqueuedAt: number, destination = 2) =>
    outbox.enqueue([
      {
        id: idOf(n),
        originChain: 'anvil1',
        txHash: idOf(1000 + n),
        origin: 1,
        destination,
        nonce: n,
        raw: rawMessage(n, destination),
        enqueuedAt,
      },
    ]);
  for (const [i, m] of (script.messages ?? []).entries()) enqueue(i + 1, m.enqueuedAt, m.destination);
  const consumer: DeliveryOutbox = {
    async claim(limit, leaseMs, opts) {
      claims.push({ at: clock.now() - T0, limit });
      if (claims.length > MAX_CLAIMS) return new Promise(() => {});
      const before = script.claim?.(claims.length - 1);
      if (before instanceof Error) throw before;
      await before;
      return outbox.claim(limit, leaseMs, opts);
    },
    extend: (id, lease, leaseMs) => script.extend?.() ?? outbox.extend(id, lease, leaseMs),
    markDelivered: (id, opts) => outbox.markDelivered(id, opts),
    markFailed(id, opts) {
      const error = script.markFailedError?.();
      if (error) throw error;
      return outbox.markFailed(id, opts);
    },
    recordBroadcast: (b, fence) => outbox.recordBroadcast(b, fence),
    forgetBroadcast: (hash) => outbox.forgetBroadcast(hash),
    closeNonceSlot: (slot, outcome) => outbox.closeNonceSlot(slot, outcome),
    openBroadcasts: (of) => outbox.openBroadcasts(of),
  };
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) => lines.push({ level, msg, fields });
  const destination = scriptedDestination(script.destination);
  const destinations = script.destinations ?? [destination];
  const worker = createDeliveryWorker({
    outbox: consumer,
    destinations: new Map(destinations.map((d) => [d.domain, d])),
    clock,
    random: () => 0.5,
    pollMs: POLL_MS,
    changes: null,
    logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    events: {
      claimed: (...args) => events.push(['claimed', ...args]),
      delivered: (...args) => events.push(['delivered', ...args]),
      failed: (...args) => events.push(['failed', ...args]),
      retried: (...args) => events.push(['retried', ...args]),
    },
    ...script.options,
  });
  const row = (n: number) => {
    const found = outbox.get(idOf(n)) as OutboxRecord | undefined;
    assert.ok(found, `no message ${n}`);
    return found;
  };
  return { clock, lines, events, claims, worker, destination, enqueue, row };
}

/** `promise`'s value once settled, failing at once (never hanging) when it is still pending. */
async function settled<T>(promise: Promise<T>, clock: FakeClock, why: string): Promise<T> {
  assert.ok(await isSettled(promise, clock), why);
  return promise;
}

const once = (h: Harness) => settled(h.worker.runOnce(), h.clock, 'runOnce() settles');

/** stop(), then the end of run(), each failing at once if it does not settle (the clock not moved). */
async function stopNow(h: Harness, running: Promise<void>): Promise<void> {
  await settled(h.worker.stop(), h.clock, 'stop() settles');
  await settled(running, h.clock, 'run() settles');
}

/** Whether `promise` has settled once pending jobs ran (the clock not moved). */
async function isSettled(promise: Promise<unknown>, clock: FakeClock): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await clock.flush();
  return done;
}

/** A `process` that never sees its transaction mined: it looks once a second (its wait hook), as the sender does. */
const neverMined = (clock: FakeClock) => async (onWait: () => Promise<void>) => {
  for (;;) {
    await onWait();
    await sleep(clock, 1_000);
  }
};

const only = (events: unknown[][], name: string) => events.filter((e) => e[0] === name);
const warnings = (lines: Line[]) => lines.filter((l) => l.level === 'warn');

describe('createDeliveryWorker: claims and the claimed event (docs/delivery.md#metrics-and-readiness)', () => {
  test('a claim reports its size and its oldest message age in seconds; an empty one 0 and 0, a future one 0', async () => {
    const h = harness({
      messages: [{ enqueuedAt: T0 - 4_000 }, { enqueuedAt: T0 - 12_500 }, { enqueuedAt: T0 - 7_000 }],
      options: { batch: 3, concurrency: 3 },
    });
    const results = await once(h);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['delivered', 'delivered', 'delivered'],
    );
    assert.deepEqual(only(h.events, 'claimed'), [['claimed', 3, 12.5]], 'the oldest of the three: 12.5 s');
    assert.deepEqual(await once(h), []);
    assert.deepEqual(only(h.events, 'claimed')[1], ['claimed', 0, 0], 'nothing claimed: age 0');
    // Enqueued "after" now (two machines' clocks): never a negative age.
    h.enqueue(9, T0 + 5_000);
    await once(h);
    assert.deepEqual(only(h.events, 'claimed')[2], ['claimed', 1, 0]);
    assert.deepEqual(
      h.claims.map((c) => c.limit),
      [3, 3, 3],
    );
  });

  test('run() claims worker.batch at most and never holds more than worker.concurrency: the limits of each claim', async () => {
    // Concurrency 3, batch 2, five messages whose transactions wait until the test confirms them.
    const confirms: Array<() => void> = [];
    const h = harness({
      messages: Array.from({ length: 5 }, () => ({ enqueuedAt: T0 - 1_000 })),
      destination: {
        process: () => new Promise((resolve) => confirms.push(() => resolve({ hash: TX, status: 'success' }))),
      },
      options: { batch: 2, concurrency: 3 },
    });
    const running = h.worker.run();
    await h.clock.flush();
    assert.deepEqual(
      h.claims.map((c) => c.limit),
      [2, 1],
      'a batch of 2, then the room left (1); then none while 3 are held',
    );
    assert.equal(h.worker.inFlight(), 3);
    assert.equal(h.destination.calls.process, 3);
    confirms.shift()!();
    await h.clock.flush();
    assert.deepEqual(
      h.claims.map((c) => c.limit),
      [2, 1, 1],
      'one delivered: room for one',
    );
    assert.equal(h.worker.inFlight(), 3);
    for (const confirm of confirms.splice(0)) confirm();
    await h.clock.flush();
    assert.deepEqual(
      h.claims.map((c) => c.limit),
      [2, 1, 1, 2, 2],
      'all delivered: a batch, which finds the last message; another, which finds none',
    );
    for (const confirm of confirms.splice(0)) confirm();
    await h.clock.flush();
    assert.equal(h.worker.inFlight(), 0);
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((n) => h.row(n).status),
      ['delivered', 'delivered', 'delivered', 'delivered', 'delivered'],
    );
    await stopNow(h, running);
  });

  test('runOnce() claims worker.batch bounded by the room left under worker.concurrency, 0 when it is full', async () => {
    const confirms: Array<() => void> = [];
    const h = harness({
      messages: Array.from({ length: 4 }, () => ({ enqueuedAt: T0 - 1_000 })),
      destination: {
        process: () => new Promise((resolve) => confirms.push(() => resolve({ hash: TX, status: 'success' }))),
      },
      options: { batch: 5, concurrency: 2 },
    });
    const first = h.worker.runOnce();
    await h.clock.flush();
    assert.equal(h.worker.inFlight(), 2);
    assert.deepEqual(await once(h), [], 'full: nothing claimed');
    confirms.shift()!();
    await h.clock.flush();
    const second = h.worker.runOnce();
    await h.clock.flush();
    for (const confirm of confirms.splice(0)) confirm();
    await settled(first, h.clock, 'the first runOnce() settles');
    await settled(second, h.clock, 'the second runOnce() settles');
    assert.deepEqual(
      h.claims.map((c) => c.limit),
      [2, 0, 1],
    );
    assert.deepEqual(
      only(h.events, 'claimed').map((e) => e[1]),
      [2, 0, 1],
    );
  });
});

describe('createDeliveryWorker: readiness and claim failures (docs/delivery.md#metrics-and-readiness)', () => {
  test('storeReachable(): false before the first claim, true once a claim answers, false when recording fails', async () => {
    let failRecord = false;
    const h = harness({
      messages: [{ enqueuedAt: T0, destination: 7 }],
      markFailedError: () => (failRecord ? new Error(`database is locked${STACK}`) : undefined),
    });
    assert.equal(h.worker.storeReachable(), false, 'nothing asked yet');
    failRecord = true;
    const [result] = await once(h);
    assert.deepEqual(result, {
      id: idOf(1),
      outcome: 'failed',
      error: 'no chain configured for destination domain 7',
      recorded: false,
    });
    assert.equal(h.worker.storeReachable(), false, 'the claim answered, then the record failed');
    assert.deepEqual(await once(h), []);
    assert.equal(h.worker.storeReachable(), true, 'a claim answered again');
  });

  test('a claim that fails under run() is logged on one line, the store reported unreachable, and claimed again after pollMs', async () => {
    const h = harness({
      claim: (n) => (n === 1 ? new Error(`connect ECONNREFUSED${STACK}`) : undefined),
    });
    const running = h.worker.run();
    await h.clock.flush();
    assert.equal(h.worker.storeReachable(), true, 'the first claim answered (nothing to do)');
    await h.clock.advance(POLL_MS);
    assert.equal(h.worker.storeReachable(), false, 'the second failed');
    assert.deepEqual(h.lines, [{ level: 'warn', msg: 'claim failed', fields: { error: 'connect ECONNREFUSED' } }]);
    await h.clock.advance(POLL_MS - 1);
    assert.equal(h.claims.length, 2, 'no claim again before pollMs');
    await h.clock.advance(1);
    assert.equal(h.worker.storeReachable(), true, 'the third answered');
    await stopNow(h, running);
    assert.deepEqual(
      h.claims.map((c) => c.at),
      [0, POLL_MS, 2 * POLL_MS],
    );
  });
});

describe('createDeliveryWorker: log lines (docs/delivery.md#metrics-and-readiness)', () => {
  test('claimed (debug) names the message, its destination chain and its attempt; an unconfigured domain by number', async () => {
    const h = harness({
      messages: [{ enqueuedAt: T0 }, { enqueuedAt: T0, destination: 7 }],
      destination: { simulate: async () => Promise.reject(new Error('fetch failed')) },
      options: { batch: 2, concurrency: 2 },
    });
    await once(h);
    assert.deepEqual(
      h.lines.filter((l) => l.msg === 'claimed'),
      [
        { level: 'debug', msg: 'claimed', fields: { message_id: idOf(1), destination: DEST, attempt: 1 } },
        { level: 'debug', msg: 'claimed', fields: { message_id: idOf(2), destination: '7', attempt: 1 } },
      ],
    );
    assert.deepEqual(only(h.events, 'failed'), [['failed', '7', 'config']], "the unconfigured domain's metric label");
    await h.clock.advanceTo(h.row(1).retryAt!);
    await once(h);
    assert.deepEqual(h.lines.filter((l) => l.msg === 'claimed').at(-1), {
      level: 'debug',
      msg: 'claimed',
      fields: { message_id: idOf(1), destination: DEST, attempt: 2 },
    });
  });

  test("a lease lost while a gateway is asked is logged with the message's id and why; the message is not sent", async () => {
    const h = harness({
      messages: [{ enqueuedAt: T0 }],
      destination: {
        metadata: (signal) =>
          new Promise<Hex>((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
      },
      extend: () => false,
      options: { leaseSeconds: 30 },
    });
    const attempt = h.worker.runOnce();
    await h.clock.advance(10_000);
    const [result] = await settled(attempt, h.clock, 'runOnce() settles once the lease is lost');
    assert.equal(result.outcome, 'released');
    assert.deepEqual(
      h.lines.filter((l) => l.msg === 'lease lost'),
      [{ level: 'warn', msg: 'lease lost', fields: { message_id: idOf(1), reason: 'another worker holds it' } }],
    );
    assert.equal(h.destination.calls.process, 0);
  });

  test('a recovery that fails is logged with its chain; the recovery is handed a signal that stop() aborts', async () => {
    const signals: Array<AbortSignal | undefined> = [];
    const recovering: Destination = {
      ...scriptedDestination(),
      async recover(signal) {
        signals.push(signal);
        throw new Error(`eth_getTransactionByHash failed${STACK}`);
      },
    };
    // A second chain without recover(): nothing to follow there.
    const plain = { ...scriptedDestination(), name: 'anvil3', domain: 3 };
    const h = harness({ destinations: [recovering, plain] });
    const running = h.worker.run();
    await h.clock.flush();
    assert.deepEqual(h.lines, [
      {
        level: 'warn',
        msg: 'recovery failed',
        fields: { destination: DEST, error: 'eth_getTransactionByHash failed' },
      },
    ]);
    assert.equal(signals.length, 1);
    assert.equal(signals[0]?.aborted, false);
    assert.equal(h.claims.length > 0, true, 'claims go on after a failed recovery');
    await stopNow(h, running);
    assert.equal(signals[0]?.aborted, true, 'recovery ends with the worker');
  });

  test('nothing is claimed until the recovery has read the journal; a stop while it reads ends the loop unclaimed', async () => {
    for (const stopFirst of [false, true]) {
      let read: () => void = () => {};
      const recovering: Destination = {
        ...scriptedDestination(),
        recover: () => new Promise<void>((resolve) => (read = resolve)),
      };
      const h = harness({ destinations: [recovering], messages: [{ enqueuedAt: T0 }] });
      const running = h.worker.run();
      await h.clock.advance(3 * POLL_MS);
      assert.equal(h.claims.length, 0, 'no claim while the journal is read');
      if (stopFirst) {
        await stopNow(h, running);
        assert.equal(h.claims.length, 0, 'stopped unclaimed');
        assert.equal(h.row(1).status, 'queued');
        continue;
      }
      read();
      await h.clock.flush();
      assert.equal(h.claims[0]?.at, 3 * POLL_MS, 'the first claim once it is read');
      assert.equal(h.row(1).attempts, 1, 'the message claimed then');
      await stopNow(h, running);
    }
  });

  test('a change feed that cannot start is logged, and the loop polls every pollMs meanwhile', async () => {
    const feed = testFeed(() => Promise.reject(new Error(`LISTEN: connection refused${STACK}`)));
    const h = harness({ options: { changes: feed } });
    const running = h.worker.run();
    await h.clock.flush();
    assert.deepEqual(h.lines, [
      { level: 'warn', msg: 'change feed not started; polling', fields: { error: 'LISTEN: connection refused' } },
    ]);
    h.enqueue(1, T0);
    await h.clock.advance(POLL_MS);
    assert.equal(h.row(1).status, 'delivered', 'found by the poll');
    await stopNow(h, running);
    assert.equal(feed.listeners.size, 0, 'unsubscribed once stopped');
  });
});

describe('createDeliveryWorker: the change feed wakes the loop (docs/delivery.md#the-delivery-loop)', () => {
  test('a change while idle ends the wait at once; without one the next claim is pollMs later', async () => {
    const feed = testFeed();
    const h = harness({ options: { changes: feed, pollMs: 60_000 } });
    const running = h.worker.run();
    await h.clock.flush();
    assert.equal(feed.listeners.size, 1);
    assert.equal(h.clock.pending(), 1, 'idle: the poll timer');
    feed.publish();
    await h.clock.flush();
    assert.deepEqual(
      h.claims.map((c) => c.at),
      [0, 0],
      'claimed again, the clock not moved',
    );
    assert.equal(h.clock.pending(), 1, "the first wait's timer cleared, the second's set");
    await h.clock.advance(60_000);
    assert.deepEqual(
      h.claims.map((c) => c.at),
      [0, 0, 60_000],
    );
    await stopNow(h, running);
    assert.equal(h.clock.pending(), 0, 'no timer left');
  });

  test('a change seen while a claim runs makes the next claim follow at once, and only that one', async () => {
    const feed = testFeed();
    let answer!: () => void;
    const h = harness({
      options: { changes: feed },
      claim: (n) => (n === 0 ? new Promise<void>((resolve) => (answer = resolve)) : undefined),
    });
    const running = h.worker.run();
    await h.clock.flush();
    assert.equal(h.claims.length, 1, 'the first claim waits');
    feed.publish();
    answer();
    await h.clock.flush();
    assert.deepEqual(
      h.claims.map((c) => c.at),
      [0, 0],
      'the claim that ran when the change came found nothing: another at once',
    );
    await h.clock.advance(POLL_MS);
    assert.deepEqual(
      h.claims.map((c) => c.at),
      [0, 0, POLL_MS],
      'then pollMs',
    );
    await stopNow(h, running);
  });

  test('each wait lets go of the stop signal when it ends: its listeners do not grow with the polls', async () => {
    // The recovery is handed the stop signal (the one each wait listens on): a listener left
    // behind by every poll is one more a day per second of pollMs, and Node warns of a leak at 11.
    let signal: AbortSignal | undefined;
    const feed = testFeed();
    const h = harness({
      options: { changes: feed },
      destinations: [{ ...scriptedDestination(), recover: async (s) => void (signal = s) }],
    });
    const running = h.worker.run();
    await h.clock.flush();
    assert.ok(signal);
    const waiting = getEventListeners(signal, 'abort').length;
    for (let i = 0; i < 5; i++) await h.clock.advance(POLL_MS);
    feed.publish();
    await h.clock.flush();
    assert.equal(h.claims.length, 7, 'five polls and a change');
    assert.equal(getEventListeners(signal, 'abort').length, waiting);
    await stopNow(h, running);
  });

  test('run() twice is one loop: one subscription, one claim at a time', async () => {
    const feed = testFeed();
    const h = harness({ options: { changes: feed } });
    const a = h.worker.run();
    const b = h.worker.run();
    assert.equal(a, b);
    await h.clock.flush();
    assert.equal(feed.listeners.size, 1);
    assert.equal(h.claims.length, 1);
    await stopNow(h, a);
  });
});

describe('createDeliveryWorker: stop() (docs/delivery.md#stopping)', () => {
  test('stop() while idle: resolves at once, no timer left, no warning, unsubscribed', async () => {
    const feed = testFeed();
    const h = harness({ options: { changes: feed } });
    const running = h.worker.run();
    await h.clock.flush();
    const stopped = h.worker.stop();
    assert.ok(await isSettled(stopped, h.clock), 'stopped without the clock moving');
    await settled(running, h.clock, 'run() settles');
    assert.equal(h.clock.pending(), 0, 'the poll and the grace timers cleared');
    assert.deepEqual(h.lines, []);
    assert.equal(feed.listeners.size, 0);
    assert.equal(h.worker.stop(), stopped, 'idempotent');
  });

  test('stop() releases each held message not yet sent at once, without waiting for the grace', async () => {
    const h = harness({
      messages: [{ enqueuedAt: T0 }, { enqueuedAt: T0 }],
      // A gateway request that ends only when its signal aborts, as the CCIP-read client does.
      destination: {
        metadata: (signal) =>
          new Promise<Hex>((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
      },
      options: { batch: 2, concurrency: 2 },
    });
    const running = h.worker.run();
    await h.clock.flush();
    assert.equal(h.worker.inFlight(), 2);
    const stopped = h.worker.stop();
    assert.ok(await isSettled(stopped, h.clock), 'stopped without the clock moving');
    await settled(running, h.clock, 'run() settles');
    assert.deepEqual([h.row(1).status, h.row(2).status], ['queued', 'queued']);
    assert.deepEqual(h.lines.filter((l) => l.msg === 'released').length, 2);
    assert.deepEqual(warnings(h.lines), []);
    assert.equal(h.worker.inFlight(), 0);
    assert.equal(h.clock.pending(), 0);
  });

  test('a message a claim returns after stop() began is released unsent', async () => {
    let answer!: () => void;
    const h = harness({
      messages: [{ enqueuedAt: T0 }],
      claim: () => new Promise<void>((resolve) => (answer = resolve)),
    });
    const running = h.worker.run();
    await h.clock.flush();
    const stopped = h.worker.stop();
    answer();
    await settled(stopped, h.clock, 'stop() settles');
    await settled(running, h.clock, 'run() settles');
    assert.equal(h.row(1).status, 'queued');
    const { metadata, simulate, process } = h.destination.calls;
    assert.deepEqual(
      { metadata, simulate, process },
      { metadata: 0, simulate: 0, process: 0 },
      'nothing built or sent',
    );
  });

  test('with every slot held by a sent transaction, stop() still ends the loop and the grace runs from the stop', async () => {
    const h = harness({
      messages: [{ enqueuedAt: T0 }],
      destination: { process: (onWait) => neverMined(h.clock)(onWait) },
      options: { concurrency: 1, stopGraceSeconds: 3 },
    });
    const running = h.worker.run();
    await h.clock.flush();
    assert.equal(h.destination.calls.process, 1);
    const stopped = h.worker.stop();
    let at: number | undefined;
    void stopped.then(() => (at = h.clock.now() - T0));
    for (let i = 0; i < 20 && at === undefined; i++) await h.clock.advance(1_000);
    assert.equal(await isSettled(running, h.clock), true, 'the loop ended with the stop');
    assert.equal(at, 3_000, "the grace's 3 s from the stop; the follow's look at that instant ends it");
    assert.equal(h.claims.length, 1);
  });

  test('a transaction still unconfirmed after the grace: one warning with the count, its message released', async () => {
    const h = harness({
      messages: [{ enqueuedAt: T0 }],
      destination: { process: (onWait) => neverMined(h.clock)(onWait) },
      options: { stopGraceSeconds: 3 },
    });
    const running = h.worker.run();
    await h.clock.advance(500);
    const stopped = h.worker.stop();
    let at: number | undefined;
    void stopped.then(() => (at = h.clock.now() - T0));
    for (let i = 0; i < 20 && at === undefined; i++) await h.clock.advance(500);
    await settled(running, h.clock, 'run() settles');
    assert.deepEqual(warnings(h.lines), [
      {
        level: 'warn',
        msg: 'stopped with transactions still unconfirmed; left to the journal',
        fields: { in_flight: 1 },
      },
    ]);
    assert.equal(at, 4_000, 'after the grace (3.5 s), at the next look (4 s)');
    assert.equal(h.row(1).status, 'queued', 'released: the journal has its transaction');
    assert.equal(h.worker.inFlight(), 0);
    assert.equal(h.clock.pending(), 0, 'the end timer cleared');
  });

  test('a follow that never looks again: stop() resolves 5 s after the grace, not before', async () => {
    const h = harness({
      messages: [{ enqueuedAt: T0 }],
      destination: {
        process: async (onWait) => {
          await onWait();
          return new Promise(() => {});
        },
      },
      options: { stopGraceSeconds: 3 },
    });
    const running = h.worker.run();
    await h.clock.flush();
    const stopped = h.worker.stop();
    await h.clock.advance(3_000 + 5_000 - 1);
    assert.equal(await isSettled(stopped, h.clock), false, 'still waiting 1 ms before');
    await h.clock.advance(1);
    assert.equal(await isSettled(stopped, h.clock), true);
    await settled(running, h.clock, 'run() settles');
    assert.deepEqual(
      warnings(h.lines).map((l) => l.fields),
      [{ in_flight: 1 }],
    );
    assert.equal(h.worker.inFlight(), 1, 'still held: its lease lapses');
  });
});
