/**
 * The delivery loop (lib/worker/loop/) on the in-memory outbox with an injected clock and
 * random source, against a scripted destination chain: what it records for each outcome (backoff
 * with jitter, pending polls not counted, maxAttempts final, the pending deadline), that it renews
 * its lease while it waits, and what stop() does with what it holds. The real chain, contracts and
 * gateways are exercised by test/e2e/worker*.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Hash, Hex } from 'viem';
import {
  createMemoryOutbox,
  type ClaimedMessage,
  type Outbox,
  type OutboxRecord,
} from '../../../../lib/outbox/index.ts';
import { createDeliveryWorker, type DeliveryWorkerOptions } from '../../../../lib/worker/loop/worker.ts';
import type { DeliveryOutbox, Destination, Resumed } from '../../../../lib/worker/types.ts';
import { CcipReadError, DeliveryError, TransactionError } from '../../../../lib/worker/errors.ts';
import type { SimulateResult } from '../../../../lib/worker/tx/sender.ts';
import { limitLookups } from '../../../../lib/worker/ccip/slots.ts';
import { offDeliverySlots } from '../../../../lib/worker/ccip/lookups.ts';
import { createFakeClock, type FakeClock, T0 } from '../../../helpers/fakes/clock.ts';
import { sleep } from '../../../../lib/clock.ts';
import { SIMULATED, scriptedDestination, TX } from '../../../helpers/fixtures/destination.ts';
import type { ChangeFeed, ChangeHub } from '../../../../lib/outbox/change-feed.ts';

const PRIOR = `0x${'cd'.repeat(32)}` as Hash;

/** A raw Hyperlane message (version 3) to domain 2, distinct by nonce. */
function rawMessage(nonce: number): Uint8Array {
  const raw = new Uint8Array(77 + 4);
  raw[0] = 3;
  new DataView(raw.buffer).setUint32(1, nonce);
  new DataView(raw.buffer).setUint32(5, 1);
  new DataView(raw.buffer).setUint32(41, 2);
  return raw;
}

function idOf(n: number): string {
  return `0x${n.toString(16).padStart(64, '0')}`;
}

interface Rig {
  clock: FakeClock;
  outbox: Outbox;
  extends: Array<{ id: string; at: number }>;
  consumer: DeliveryOutbox;
}

function rig(messages = 1): Rig {
  const clock = createFakeClock(T0);
  const outbox = createMemoryOutbox({ clock });
  outbox.enqueue(
    Array.from({ length: messages }, (_, i) => ({
      id: idOf(i + 1),
      originChain: 'anvil1',
      txHash: idOf(1000 + i),
      origin: 1,
      destination: 2,
      nonce: i,
      raw: rawMessage(i),
      enqueuedAt: T0 - 10_000,
    })),
  );
  const calls: Rig['extends'] = [];
  // A loop that claims again and again without the clock moving (one that never idles) meets a
  // store that stops answering: its test then fails at its next check instead of hanging.
  let instant = Number.NaN;
  let claimsThisInstant = 0;
  const consumer: DeliveryOutbox = {
    claim(limit, leaseMs, opts) {
      if (clock.now() !== instant) [instant, claimsThisInstant] = [clock.now(), 0];
      if (++claimsThisInstant > CLAIMS_PER_INSTANT) return new Promise<never>(() => {});
      return outbox.claim(limit, leaseMs, opts);
    },
    extend: (id, lease, leaseMs) => {
      calls.push({ id, at: clock.now() });
      return outbox.extend(id, lease, leaseMs);
    },
    markDelivered: (id, opts) => outbox.markDelivered(id, opts),
    markFailed: (id, opts) => outbox.markFailed(id, opts),
    recordBroadcast: (b, fence) => outbox.recordBroadcast(b, fence),
    forgetBroadcast: (hash) => outbox.forgetBroadcast(hash),
    closeNonceSlot: (slot, outcome) => outbox.closeNonceSlot(slot, outcome),
    openBroadcasts: (of) => outbox.openBroadcasts(of),
  };
  return { clock, outbox, extends: calls, consumer };
}

/** More claims at one instant than any test makes (the loop at full concurrency claims a few). */
const CLAIMS_PER_INSTANT = 50;

/** `promise`, the fake clock moved 250 ms at a time until it settles (at most two leases); fails if it does not. */
async function settled<T>(clock: FakeClock, promise: Promise<T>): Promise<T> {
  let done = false;
  void promise.finally(() => (done = true)).catch(() => {});
  for (let ms = 0; !done && ms <= 120_000; ms += 250) await clock.advance(250);
  assert.ok(done, 'settled within two leases of fake time');
  return promise;
}

/** `promise` once pending jobs ran, the clock not moved; fails at once (never hangs) if it is still pending. */
async function now<T>(clock: FakeClock, promise: Promise<T>, what: string): Promise<T> {
  let done = false;
  void promise.finally(() => (done = true)).catch(() => {});
  await clock.flush();
  assert.ok(done, `${what} settles without the clock moving`);
  return promise;
}

/** stop(), then the end of run(): each settles once pending jobs ran (nothing left to wait for). */
async function stopNow(clock: FakeClock, w: { stop(): Promise<void> }, running: Promise<void>): Promise<void> {
  await now(clock, w.stop(), 'stop()');
  await now(clock, running, 'run()');
}

/** The memory outbox answers synchronously. */
function row(r: Rig, id: string): OutboxRecord {
  const found = r.outbox.get(id) as OutboxRecord | undefined;
  assert.ok(found, `no message ${id}`);
  return found;
}

function worker(r: Rig, destination: Destination, options: Partial<DeliveryWorkerOptions> = {}) {
  return createDeliveryWorker({
    outbox: r.consumer,
    destinations: new Map([[2, destination]]),
    clock: r.clock,
    random: () => 0.5,
    pollMs: 100,
    ...options,
  });
}

describe('delivery loop', () => {
  test('a NULL-ISM message is simulated beside delivered(id); other ISMs build after it; with a gas policy nothing before', async () => {
    const policy = { beforeMetadata: async () => {}, gasLimit: async (_m: unknown, s: SimulateResult) => s };
    for (const [isNull, withPolicy, expected] of [
      [true, false, ['prefetch', 'deliveredBy', 'simulate', 'answered']],
      [false, false, ['prefetch', 'deliveredBy', 'answered', 'metadata', 'simulate']],
      [true, true, ['deliveredBy', 'answered', 'metadata', 'simulate']],
    ] as const) {
      const r = rig();
      const order: string[] = [];
      const d = scriptedDestination({
        metadata: async () => (order.push('metadata'), '0x'),
        simulate: async () => (order.push('simulate'), SIMULATED),
      });
      // delivered(id) answers after a few turns of the event loop, as a node does.
      d.deliveredBy = async () => {
        order.push('deliveredBy');
        for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
        order.push('answered');
        return null;
      };
      d.prefetch = async () => (order.push('prefetch'), isNull ? '0x' : undefined);
      const [result] = await worker(r, d, withPolicy ? { policy } : {}).runOnce();
      assert.equal(result.outcome, 'delivered');
      // docs/delivery.md#throughput: the ISM reads, and a NULL ISM's simulation, run beside delivered(id).
      assert.deepEqual(order, expected, `NULL ISM ${isNull}, policy ${withPolicy}`);
      assert.equal(d.calls.process, 1);
    }
  });

  test('a message delivered already: its early simulation reverting is no failure, and nothing is sent', async () => {
    const ELSEWHERE = `0x${'cd'.repeat(32)}` as Hash;
    const r = rig();
    const d = scriptedDestination({
      deliveredBy: () => ELSEWHERE,
      simulate: async () => {
        throw new TransactionError('revert', 'simulation reverted: Mailbox: already delivered');
      },
    });
    d.prefetch = async () => '0x';
    const [result] = await worker(r, d).runOnce();
    assert.deepEqual(result, { id: idOf(1), outcome: 'delivered', txHash: ELSEWHERE, already: true, recorded: true });
    assert.deepEqual(d.calls, { deliveredBy: 1, metadata: 0, simulate: 1, process: 0 });
    // The revert nobody awaited is handled: an unhandled rejection would fail this test (and crash a worker).
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  });

  test('delivers: simulate, then process; recorded with its transaction; the delivered event carries enqueue→delivered seconds', async () => {
    const r = rig();
    const d = scriptedDestination({});
    const seen: number[] = [];
    const w = worker(r, d, { events: { delivered: (_name, already, seconds) => seen.push(already ? -1 : seconds) } });
    const [result] = await w.runOnce();
    assert.deepEqual(result, { id: idOf(1), outcome: 'delivered', txHash: TX, already: false, recorded: true });
    assert.deepEqual(d.calls, { deliveredBy: 1, metadata: 1, simulate: 1, process: 1 });
    const record = row(r, idOf(1));
    assert.equal(record.status, 'delivered');
    assert.equal(record.destinationTxHash, TX);
    assert.deepEqual(seen, [10]);
  });

  test('process is handed the simulation of its call (the sender signs that gas limit instead of estimating again)', async () => {
    const r = rig();
    const simulation: SimulateResult = { estimate: 100_000n, gas: 120_000n };
    const d = scriptedDestination({ simulate: async () => simulation });
    const [result] = await worker(r, d).runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.deepEqual(d.calls, { deliveredBy: 1, metadata: 1, simulate: 1, process: 1 });
    assert.equal(d.simulations[0], simulation);
  });

  test('already delivered on chain: recorded with the transaction that delivered it, nothing sent', async () => {
    const r = rig();
    const d = scriptedDestination({ deliveredBy: () => PRIOR });
    const [result] = await worker(r, d).runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.equal(row(r, idOf(1)).destinationTxHash, PRIOR);
    assert.deepEqual(d.calls, { deliveredBy: 1, metadata: 0, simulate: 0, process: 0 });
  });

  test('a simulation that reverts "already delivered" is a delivery (a racing worker landed first): no transaction', async () => {
    const r = rig();
    // The sender's own error class (the loop matches classes, not names).
    const revert = new TransactionError('revert', 'reverted', { reason: 'Mailbox: already delivered' });
    const d = scriptedDestination({
      deliveredBy: (_id, call) => (call === 1 ? null : PRIOR),
      simulate: async () => Promise.reject(revert),
    });
    const [result] = await worker(r, d).runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.equal(row(r, idOf(1)).destinationTxHash, PRIOR);
    assert.equal(d.calls.process, 0);
  });

  test('a mined revert of our process is checked against delivered(id): delivered by another relayer first', async () => {
    // The sender throws for a mined revert; the Mailbox says another transaction delivered it.
    const r = rig();
    const mined = new TransactionError('revert', 'reverted when mined', { reason: 'Mailbox: already delivered' });
    const d = scriptedDestination({
      deliveredBy: (_id, call) => (call === 1 ? null : PRIOR),
      process: async () => Promise.reject(mined),
    });
    const [result] = await worker(r, d).runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.equal(row(r, idOf(1)).status, 'delivered');
    assert.equal(row(r, idOf(1)).destinationTxHash, PRIOR, "recorded with the other relayer's transaction");
    // Not delivered by anyone: a counted failure.
    const alone = rig();
    const [failed] = await worker(alone, scriptedDestination({ process: async () => Promise.reject(mined) })).runOnce();
    assert.equal(failed.outcome, 'retry');
  });

  test('a reverted receipt returned by process is checked against delivered(id): delivered by another relayer first', async () => {
    // The sender returns the mined receipt (status reverted) rather than throwing; the Mailbox
    // says, on the second look, that another transaction delivered the message.
    const r = rig();
    const d = scriptedDestination({
      deliveredBy: (_id, call) => (call === 1 ? null : PRIOR),
      process: async () => ({ hash: TX, status: 'reverted' }),
    });
    const [result] = await worker(r, d).runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.equal(d.calls.deliveredBy, 2, 'delivered(id) asked again after the revert');
    assert.equal(row(r, idOf(1)).destinationTxHash, PRIOR, "recorded with the other relayer's transaction");
    // Nobody delivered it: a counted failure naming our reverted transaction.
    const alone = rig();
    const [failed] = await worker(
      alone,
      scriptedDestination({ process: async () => ({ hash: TX, status: 'reverted' }) }),
    ).runOnce();
    assert.equal(failed.outcome, 'retry');
    assert.equal(row(alone, idOf(1)).failures, 1);
    assert.match(row(alone, idOf(1)).lastError ?? '', new RegExp(`process reverted in ${TX}`));
  });

  test('a journaled transaction found mined reverted is checked against delivered(id) before it counts as a failure', async () => {
    const r = rig();
    const [m] = r.outbox.claim(1, 60_000) as ClaimedMessage[];
    r.outbox.recordBroadcast(
      { messageId: m.id, chainId: 31337, signer: `0x${'70'.repeat(20)}`, nonce: 0, hash: TX, raw: '0x02f0' },
      { lease: m.lease, leaseMs: 60_000 },
    );
    r.outbox.markFailed(m.id, { lease: m.lease, error: 'released', retryAt: T0 });
    const d = scriptedDestination({
      deliveredBy: () => PRIOR,
      resume: async () => ({ hash: TX, status: 'reverted' }),
    });
    const [result] = await worker(r, d).runOnce();
    assert.equal(result.outcome, 'delivered');
    assert.equal(row(r, idOf(1)).destinationTxHash, PRIOR);
    assert.equal(d.calls.process, 0, 'nothing sent');
  });

  test('a database error recording a successful send is recorded again in the same attempt: no failure, no lapse', async () => {
    const r = rig();
    let refusals = 1;
    const markDelivered = r.consumer.markDelivered;
    r.consumer.markDelivered = (id, opts) => {
      if (refusals-- > 0) throw new Error('SQLITE_BUSY: database is locked');
      return markDelivered(id, opts);
    };
    const d = scriptedDestination({});
    const [first] = await settled(r.clock, worker(r, d).runOnce());
    assert.deepEqual(first, { id: idOf(1), outcome: 'delivered', txHash: TX, already: false, recorded: true });
    const record = row(r, idOf(1));
    assert.deepEqual(
      [record.status, record.destinationTxHash, record.failures, record.attempts, record.leaseExpiries],
      ['delivered', TX, 0, 1, 0],
      'recorded by the attempt that sent it: no failure, no second claim, no lease expiry',
    );
    assert.equal(d.calls.process, 1, 'sent once');
  });

  test('a store down for a whole lease after a successful send: the next claim records it delivered, sent once', async () => {
    const r = rig();
    let refuse = true;
    const markDelivered = r.consumer.markDelivered;
    r.consumer.markDelivered = (id, opts) => {
      if (refuse) throw new Error('SQLITE_BUSY: database is locked');
      return markDelivered(id, opts);
    };
    // The Mailbox says delivered by our transaction once it is mined.
    const d = scriptedDestination({ deliveredBy: (_id, call) => (call === 1 ? null : TX) });
    const w = worker(r, d);
    const [first] = await settled(r.clock, w.runOnce());
    assert.deepEqual(first, { id: idOf(1), outcome: 'delivered', txHash: TX, already: false, recorded: false });
    refuse = false;
    await r.clock.advance(60_000);
    const [second] = await w.runOnce();
    assert.equal(second.outcome, 'delivered');
    const record = row(r, idOf(1));
    assert.equal(record.status, 'delivered');
    assert.equal(record.destinationTxHash, TX);
    assert.equal(record.failures, 0, 'not counted as a failure');
    assert.equal(d.calls.process, 1, 'sent once');
  });

  test('a base fee above the gasPriceCap (fee) waits: polled again, not counted', async () => {
    const r = rig();
    const d = scriptedDestination({
      process: async () => Promise.reject(new DeliveryError('fee', 'base fee 9 wei is above gasPriceCap 5 wei')),
    });
    const kinds: string[] = [];
    const counted = worker(r, d, { maxAttempts: 1, random: () => 1, events: { retried: (_d, k) => kinds.push(k) } });
    const [result] = await counted.runOnce();
    assert.equal(result.outcome, 'pending');
    const record = row(r, idOf(1));
    assert.equal(record.status, 'queued');
    assert.equal(record.failures, 0);
    assert.equal(record.lastError, 'fee: base fee 9 wei is above gasPriceCap 5 wei (failures 0/1)');
    assert.equal(record.retryAt, T0 + 5_000);
    assert.deepEqual(kinds, ['fee']);
  });

  test('a failure retries with exponential backoff and jitter, named in last_error; final after maxAttempts', async () => {
    // Jitter: half fixed, half random.
    const r = rig();
    const d = scriptedDestination({
      simulate: async () => Promise.reject(new TransactionError('revert', 'x', { reason: 'ISM: bad signature' })),
    });
    const randoms = [0, 1];
    const w = worker(r, d, { maxAttempts: 3, retryBaseSeconds: 5, random: () => randoms.shift() ?? 0.5 });
    const [first] = await w.runOnce();
    assert.equal(first.outcome, 'retry');
    let record = row(r, idOf(1));
    // failure 1: delay 5 s, random 0 → 2.5 s
    assert.equal(record.retryAt, T0 + 2_500);
    assert.equal(record.lastError, 'revert (recipient): "ISM: bad signature" (failures 1/3)');
    assert.deepEqual(await w.runOnce(), [], 'not claimable before retryAt');
    await r.clock.advanceTo(T0 + 2_500);
    await w.runOnce();
    record = row(r, idOf(1));
    // failure 2: delay 10 s, random 1 → 10 s
    assert.equal(record.retryAt, T0 + 2_500 + 10_000);
    assert.equal(record.failures, 2);
    await r.clock.advanceTo(record.retryAt!);
    const [last] = await w.runOnce();
    assert.equal(last.outcome, 'failed');
    record = row(r, idOf(1));
    assert.equal(record.status, 'failed');
    assert.equal(record.lastError, 'revert (recipient): "ISM: bad signature" (failures 3/3, final)');
    assert.equal(d.calls.process, 0, 'a message that would revert never costs gas');
  });

  test("a recipient's revert reason in last_error: marked as its, quoted, without control characters, bounded", async () => {
    // docs/delivery.md#retries-pending-proofs-dead-letters: GET /relay/{id} shows it to anyone.
    const reason = `\u001b[2Jdelivered\r\n(failures 0/3)\u202e\u0000 ${'x'.repeat(1_000)}`;
    const r = rig();
    const d = scriptedDestination({
      simulate: async () => Promise.reject(new TransactionError('revert', 'x', { reason })),
    });
    await worker(r, d, { maxAttempts: 3, random: () => 0 }).runOnce();
    const { lastError } = row(r, idOf(1));
    const shown = `"[2Jdelivered  (failures 0/3) ${'x'.repeat(170)}…"`;
    assert.equal(lastError, `revert (recipient): ${shown} (failures 1/3)`);
    assert.doesNotMatch(lastError!, /[\p{Cc}\p{Cf}]/u, 'no control character');
  });

  test('pending is polled backing off without counting toward maxAttempts; final at the pending deadline', async () => {
    // Pending (proof not ready) is polled at 5 s backing off to 60 s; a real failure still counts.
    const r = rig();
    let mode: 'pending' | 'rpc' = 'pending';
    const d = scriptedDestination({
      metadata: async () => {
        if (mode === 'rpc') throw new Error('fetch failed');
        throw new CcipReadError('pending', 'gateway 1 of 1 answered HTTP 404');
      },
    });
    const w = worker(r, d, { maxAttempts: 2, random: () => 1, pendingDeadlineHours: 1 });
    const delays: number[] = [];
    for (let i = 0; i < 8; i++) {
      const before = r.clock.now();
      const [result] = await w.runOnce();
      assert.equal(result.outcome, 'pending');
      const record = row(r, idOf(1));
      assert.equal(record.status, 'queued');
      assert.match(
        record.lastError!,
        /^pending: gateway 1 of 1 answered HTTP 404 \(failures 0\/2; pending since 2026-11-25T12:00:00.000Z, poll \d+\)$/,
      );
      delays.push(record.retryAt! - before);
      await r.clock.advanceTo(record.retryAt!);
    }
    assert.deepEqual(delays, [5_000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000, 60_000]);
    mode = 'rpc';
    const [failure] = await w.runOnce();
    assert.equal(failure.outcome, 'retry', 'one failure of two allowed: pending polls did not use them up');
    const { failures, pendingSince, polls } = row(r, idOf(1));
    assert.deepEqual({ failures, pendingSince, polls }, { failures: 1, pendingSince: T0, polls: 8 });
    mode = 'pending';
    await r.clock.advanceTo(T0 + 3_600_000);
    const [final] = await w.runOnce();
    assert.equal(final.outcome, 'failed');
    const record = row(r, idOf(1));
    assert.equal(record.status, 'failed');
    assert.match(record.lastError!, /^pending: deadline passed, proof still not ready/);
  });

  test('an unsupported ISM type or an unconfigured destination is final at once', async () => {
    const r = rig(2);
    const d = scriptedDestination({
      metadata: async () => Promise.reject(new DeliveryError('unsupported', 'unsupported ISM type 3')),
    });
    const w = createDeliveryWorker({ outbox: r.consumer, destinations: new Map([[2, d]]), clock: r.clock });
    await w.runOnce();
    assert.equal(row(r, idOf(1)).status, 'failed');
    assert.equal(row(r, idOf(1)).lastError, 'unsupported ISM type 3');
    const none = createDeliveryWorker({ outbox: r.consumer, destinations: new Map(), clock: r.clock });
    r.outbox.enqueue([
      {
        id: idOf(9),
        originChain: 'anvil1',
        txHash: idOf(9),
        origin: 1,
        destination: 7,
        nonce: 9,
        raw: rawMessage(9),
        enqueuedAt: T0,
      },
    ]);
    await none.runOnce();
    assert.equal(row(r, idOf(9)).lastError, 'no chain configured for destination domain 7');
  });

  test('the lease is renewed a third of the way through while a transaction waits for confirmations', async () => {
    const r = rig();
    let confirm!: () => void;
    const d = scriptedDestination({
      process: async (onWait) => {
        await onWait();
        await new Promise<void>((resolve) => (confirm = resolve));
        return { hash: TX, status: 'success' };
      },
    });
    const w = worker(r, d, { leaseSeconds: 30 });
    const done = w.runOnce();
    await r.clock.flush();
    assert.equal(d.calls.process, 1);
    assert.equal(r.extends.length, 0, 'not renewed before a third of the lease');
    await r.clock.advance(10_000);
    await r.clock.advance(10_000);
    await r.clock.advance(10_000);
    await r.clock.advance(10_000);
    assert.deepEqual(
      r.extends.map((e) => e.at - T0),
      [10_000, 20_000, 30_000, 40_000],
    );
    confirm();
    const [result] = await done;
    assert.equal(result.outcome, 'delivered');
    assert.equal(
      result.outcome === 'delivered' && result.recorded,
      true,
      'recorded: the lease was kept past its first 30 s',
    );
  });

  test('stop(): a message not yet sent is released; one already sent is followed to its receipt', async () => {
    // Released: queued, claimable now, last_error kept.
    const r = rig(2);
    let releaseMetadata!: () => void;
    let confirm!: () => void;
    let n = 0;
    const d = scriptedDestination({
      metadata: async () => {
        if (++n === 1) return '0x';
        await new Promise<void>((resolve) => (releaseMetadata = resolve));
        return '0x';
      },
      process: async () => {
        await new Promise<void>((resolve) => (confirm = resolve));
        return { hash: TX, status: 'success' };
      },
    });
    const w = worker(r, d, { concurrency: 2 });
    const running = w.run();
    await r.clock.flush();
    assert.equal(w.inFlight(), 2);
    const stopped = w.stop();
    await r.clock.flush();
    releaseMetadata();
    await r.clock.flush();
    const released = row(r, idOf(2));
    assert.equal(released.status, 'queued');
    assert.equal(released.retryAt, T0);
    assert.equal(released.lastError, null, 'no earlier error to keep: a release is no failure, it writes none');
    assert.equal(row(r, idOf(1)).status, 'delivering', 'the sent one is still followed');
    confirm();
    await now(r.clock, stopped, 'stop()');
    await now(r.clock, running, 'run()');
    assert.equal(row(r, idOf(1)).status, 'delivered');
    assert.equal(d.calls.process, 1);
    assert.equal(w.inFlight(), 0);
  });

  test('stop(): a follow started by a delivered send (a gap filler) ends with stop(), not at its own timeout', async () => {
    const r = rig(1);
    let filling = false;
    let looks = 0;
    const d = scriptedDestination({
      // The send's follow found a free nonce below it and started a self-transfer with its wait hook.
      process: async (onWait) => {
        filling = true;
        void (async () => {
          try {
            for (;;) {
              await onWait();
              looks++;
              await sleep(r.clock, 1_000);
            }
          } catch {
            filling = false;
          }
        })();
        return { hash: TX, status: 'success' };
      },
    });
    const w = worker(r, d);
    const running = w.run();
    await r.clock.advance(1_500);
    assert.equal(row(r, idOf(1)).status, 'delivered');
    assert.ok(filling, 'the filler is followed after the delivery');
    await settled(r.clock, w.stop());
    await now(r.clock, running, 'run()');
    await r.clock.advance(2_000);
    assert.equal(filling, false, 'the filler stopped being followed');
    const before = looks;
    await r.clock.advance(60_000);
    assert.equal(looks, before, 'no look after stop()');
  });

  test('stop(): a transaction still unconfirmed after stopGraceSeconds stops being followed; its message is released', async () => {
    const r = rig(1);
    let looks = 0;
    let following = false;
    const d = scriptedDestination({
      // A send following a transaction that is never mined: a look a second, as the sender does.
      process: async (onWait) => {
        following = true;
        try {
          for (;;) {
            await onWait();
            looks++;
            await sleep(r.clock, 1_000);
          }
        } finally {
          following = false;
        }
      },
    });
    const w = worker(r, d, { stopGraceSeconds: 3 });
    const running = w.run();
    await r.clock.advance(1_500);
    assert.ok(following, 'the transaction is followed');
    await settled(r.clock, w.stop());
    await now(r.clock, running, 'run()');
    assert.equal(following, false, 'the follow ended with stop()');
    const before = looks;
    await r.clock.advance(60_000);
    assert.equal(looks, before, 'nothing looks at the transaction after stop()');
    assert.equal(w.inFlight(), 0);
    const released = row(r, idOf(1));
    assert.equal(released.status, 'queued', 'released: the next holder finds the transaction in the journal');
    assert.ok((released.retryAt ?? Infinity) <= r.clock.now() - 60_000, 'queued again at once, not after a backoff');
  });
});

describe('delivery loop: waking on new work (docs/delivery.md#the-delivery-loop)', () => {
  function enqueueOne(r: Rig, n: number): void {
    r.outbox.enqueue([
      {
        id: idOf(n),
        originChain: 'anvil1',
        txHash: idOf(2000 + n),
        origin: 1,
        destination: 2,
        nonce: n,
        raw: rawMessage(n),
        enqueuedAt: r.clock.now(),
      },
    ]);
  }

  test('a message enqueued while the loop idles is claimed at once through the change feed, not after pollMs', async () => {
    const r = rig(0);
    const d = scriptedDestination({});
    // The memory outbox's feed publishes its own writes; pollMs is long so that only the feed can wake it.
    const w = worker(r, d, { pollMs: 60_000, changes: (r.outbox as unknown as { changes: ChangeFeed }).changes });
    const running = w.run();
    await r.clock.flush();
    assert.equal(r.clock.pending(), 1, 'idle: one timer (the poll)');
    enqueueOne(r, 7);
    await r.clock.flush();
    assert.equal(row(r, idOf(7)).status, 'delivered', 'delivered with the clock not moved');
    enqueueOne(r, 8);
    await r.clock.flush();
    assert.equal(row(r, idOf(8)).status, 'delivered', 'and again');
    await stopNow(r.clock, w, running);
  });

  test('by default 32 messages are in flight at once (their sends overlap under one nonce sequence), not 4', async () => {
    const r = rig(40);
    const confirms: (() => void)[] = [];
    const d = scriptedDestination({
      process: () => new Promise((resolve) => confirms.push(() => resolve({ hash: TX, status: 'success' as const }))),
    });
    const w = createDeliveryWorker({ outbox: r.consumer, destinations: new Map([[2, d]]), clock: r.clock });
    const running = w.run();
    await r.clock.flush();
    assert.equal(w.inFlight(), 32);
    assert.equal(d.calls.process, 32, 'all 32 sent, none waiting for another to be mined');
    for (const confirm of confirms.splice(0)) confirm();
    await r.clock.flush();
    assert.equal(d.calls.process, 40, 'the other 8 taken as room was made');
    for (const confirm of confirms.splice(0)) confirm();
    await stopNow(r.clock, w, running);
  });

  test('without a feed (changes: null) the loop waits pollMs after a claim that found nothing', async () => {
    const r = rig(0);
    const d = scriptedDestination({});
    const w = worker(r, d, { pollMs: 60_000, changes: null });
    const running = w.run();
    await r.clock.flush();
    enqueueOne(r, 7);
    await r.clock.flush();
    assert.equal(row(r, idOf(7)).status, 'queued');
    await r.clock.advance(60_000);
    assert.equal(row(r, idOf(7)).status, 'delivered');
    await stopNow(r.clock, w, running);
  });

  test("the worker takes the outbox's own feed by default and lets go of it when stopped", async () => {
    const r = rig(0);
    const hub = (r.outbox as unknown as { changes: ChangeHub }).changes;
    const w = worker(r, scriptedDestination({}), { pollMs: 60_000, outbox: { ...r.consumer, changes: hub } });
    const running = w.run();
    await r.clock.flush();
    assert.equal(hub.listeners(), 1);
    enqueueOne(r, 7);
    await r.clock.flush();
    assert.equal(row(r, idOf(7)).status, 'delivered');
    await stopNow(r.clock, w, running);
    assert.equal(hub.listeners(), 0);
  });
});

describe('delivery loop: leases, stops and the journal (docs/delivery.md#the-delivery-loop)', () => {
  test('a stop during a gateway request releases the message unchanged: not counted, last_error and attempt state as they were', async () => {
    const r = rig();
    // A message that failed once already: its count and text must survive the stop.
    const [m] = r.outbox.claim(1, 60_000) as ClaimedMessage[];
    const before = { failures: 1, pendingSince: null, polls: 0 };
    r.outbox.markFailed(m.id, { lease: m.lease, error: 'rpc: node down (failures 1/5)', retryAt: T0, state: before });
    const d = scriptedDestination({
      // The CCIP-read client rejects with the signal's reason once it aborts (lib/worker/ccip/read.ts).
      metadata: (signal) =>
        new Promise<Hex>((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    });
    const w = worker(r, d);
    const running = w.run();
    await r.clock.flush();
    assert.equal(d.calls.metadata, 1, 'the gateway request is under way');
    await stopNow(r.clock, w, running);
    const record = row(r, idOf(1));
    assert.equal(record.status, 'queued');
    assert.equal(record.retryAt, T0, 'claimable at once');
    assert.equal(record.lastError, 'rpc: node down (failures 1/5)', 'last_error unchanged');
    assert.deepEqual({ failures: record.failures, pendingSince: record.pendingSince, polls: record.polls }, before);
    assert.equal(d.calls.process, 0);
  });

  test('a message released with no error and delivered by the next holder shows no last_error: a release writes none', async () => {
    // docs/delivery.md#stopping: released with last_error as it was; docs/api.md: last_error is a
    // failed attempt's error, and a release is none. A lease lost or a signer lease still held
    // releases the same way; a delivery keeps the last error, so a release text would stay.
    const r = rig();
    let unblock!: () => void;
    const first = scriptedDestination({
      metadata: () => new Promise<Hex>((resolve) => (unblock = () => resolve('0x'))),
    });
    const w1 = worker(r, first);
    const running = w1.run();
    await r.clock.flush();
    const stopped = w1.stop();
    await r.clock.flush();
    unblock();
    await now(r.clock, stopped, 'stop()');
    await now(r.clock, running, 'run()');
    const released = row(r, idOf(1));
    assert.deepEqual([released.status, released.lastError], ['queued', null], 'released, no text of its own');
    const [delivered] = await worker(r, scriptedDestination({})).runOnce();
    assert.equal(delivered.outcome, 'delivered');
    const record = row(r, idOf(1));
    assert.deepEqual([record.status, record.lastError], ['delivered', null], 'delivered, no stale release text');
  });

  test('a worker whose lease could not be renewed within its time sends nothing: the next holder delivers the message once', async () => {
    const r = rig();
    let unblock!: () => void;
    const first = scriptedDestination({
      metadata: () => new Promise<Hex>((resolve) => (unblock = () => resolve('0x'))),
    });
    // The store fails for the first worker's renewals only (its connection is down).
    const failing: DeliveryOutbox = {
      ...r.consumer,
      extend: async () => {
        throw new Error('connection terminated');
      },
    };
    const w1 = createDeliveryWorker({
      outbox: failing,
      destinations: new Map([[2, first]]),
      clock: r.clock,
      leaseSeconds: 30,
    });
    const one = w1.runOnce();
    await r.clock.flush();
    assert.equal(first.calls.metadata, 1);
    for (let i = 0; i < 4; i++) await r.clock.advance(10_000);
    // The lease lapsed: another worker claims the message and delivers it.
    const second = scriptedDestination({});
    const w2 = createDeliveryWorker({ outbox: r.consumer, destinations: new Map([[2, second]]), clock: r.clock });
    const [delivered] = await w2.runOnce();
    assert.equal(delivered.outcome, 'delivered');
    unblock();
    const [late] = await one;
    assert.equal(late.outcome, 'released', 'stopped before sending');
    assert.equal(first.calls.process, 0, 'the first worker sent nothing');
    assert.equal(second.calls.process, 1, 'one send for the message');
    assert.equal(row(r, idOf(1)).status, 'delivered');
  });

  test('the journal is read from the second attempt on: a first claim cannot find a transaction of its own message', async () => {
    const r = rig(1);
    let reads = 0;
    const consumer: DeliveryOutbox = {
      ...r.consumer,
      openBroadcasts: (of) => {
        reads++;
        return r.consumer.openBroadcasts(of);
      },
    };
    const d = scriptedDestination({ simulate: async () => Promise.reject(new TransactionError('rpc', 'node down')) });
    const w = createDeliveryWorker({
      outbox: consumer,
      destinations: new Map([[2, d]]),
      clock: r.clock,
      random: () => 0,
    });
    const [first] = await w.runOnce();
    assert.equal(first.outcome, 'retry');
    assert.equal(reads, 0, 'first claim: no read');
    await r.clock.advanceTo(row(r, idOf(1)).retryAt!);
    await w.runOnce();
    assert.equal(reads, 1, 'a retry reads the journal first');
  });

  test('the journal first: a mined transaction ends the attempt; one that may land waits; a dead one lets a new send go', async () => {
    // One that may still land (another signer) is waited for, not counted; one that cannot land any more lets a
    // new send go.
    const r = rig(3);
    const claimed = r.outbox.claim(3, 60_000) as ClaimedMessage[];
    for (const [i, m] of claimed.entries())
      r.outbox.recordBroadcast(
        {
          messageId: m.id,
          chainId: 31337,
          signer: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
          nonce: i,
          hash: idOf(500 + i),
          raw: '0x02f0',
        },
        { lease: m.lease, leaseMs: 60_000 },
      );
    for (const m of claimed) r.outbox.markFailed(m.id, { lease: m.lease, error: 'released', retryAt: T0 });
    const resumed: Record<string, Resumed> = {
      [idOf(1)]: { hash: PRIOR, status: 'success' },
      [idOf(2)]: { status: 'open', detail: 'transaction 0x… of signer 0x… (nonce 1) may still land' },
      [idOf(3)]: { status: 'dropped' },
    };
    const seen: string[] = [];
    const d = scriptedDestination({});
    d.resume = async (entries) => {
      seen.push(entries[0].messageId);
      return resumed[entries[0].messageId];
    };
    const results = await worker(r, d, { maxAttempts: 1 }).runOnce();
    assert.deepEqual(seen.sort(), [idOf(1), idOf(2), idOf(3)]);
    assert.deepEqual(
      results.map((x) => x.outcome),
      ['delivered', 'pending', 'delivered'],
    );
    assert.equal(row(r, idOf(1)).destinationTxHash, PRIOR, 'recorded with the mined transaction, nothing sent');
    assert.equal(row(r, idOf(2)).status, 'queued');
    assert.equal(row(r, idOf(2)).failures, 0, 'waiting for a transaction is not a failure (maxAttempts 1)');
    assert.match(row(r, idOf(2)).lastError ?? '', /^pending: transaction .* may still land/);
    assert.equal(row(r, idOf(3)).destinationTxHash, TX, 'sent anew');
    assert.equal(d.calls.process, 1, 'only the message none of whose transactions can land is sent');
  });
});

describe('delivery errors (lib/worker/errors.ts)', () => {
  test("each failure class is named, the sender's and the CCIP-read client's kinds kept, URLs cut out of the text", async () => {
    const { toDeliveryError } = await import('../../../../lib/worker/errors.ts');
    const { scrub } = await import('../../../../lib/redact.ts');
    const { TransactionError } = await import('../../../../lib/worker/tx/sender.ts');
    const { CcipReadError } = await import('../../../../lib/worker/ccip/read.ts');
    assert.equal(
      toDeliveryError(new TransactionError('insufficient_funds', 'the signer cannot pay')).code,
      'insufficient_funds',
    );
    const revert = toDeliveryError(
      new TransactionError('revert', 'reverted', { reason: 'Mailbox: already delivered' }),
    );
    assert.deepEqual([revert.code, revert.message], ['revert', '"Mailbox: already delivered"'], 'a reason is quoted');
    assert.equal(toDeliveryError(new CcipReadError('pending', 'gateway 1 of 1 answered HTTP 404')).code, 'pending');
    const gateway = toDeliveryError(new CcipReadError('malformed', 'gateway 1 of 1 answered data that is not hex'));
    assert.deepEqual(
      [gateway.code, gateway.message],
      ['gateway', 'malformed: gateway 1 of 1 answered data that is not hex'],
    );
    const rpc = toDeliveryError(
      new Error('HTTP request failed. URL: https://user:secret@rpc.example/v2/KEY123 Status: 500'),
    );
    assert.equal(rpc.code, 'rpc');
    assert.doesNotMatch(rpc.message, /secret|KEY123|rpc\.example/);
    assert.equal(scrub('see http://127.0.0.1:9/x?key=1 now'), 'see <url> now');
    assert.equal(new DeliveryError('unsupported', 'x').final, true);
    assert.equal(new DeliveryError('rpc', 'x').final, false);
  });
});

describe('delivery loop: slow gateways (docs/hostile-recipients.md#slow-gateways)', () => {
  test('messages whose gateways never answer do not hold every slot: the others are delivered meanwhile', async () => {
    // Concurrency 2, so one gateway lookup at a time (concurrency − 1). Messages 1 and 2 name gateways
    // that never answer; 3 and 4 need none. 2 finds the lookup permit taken and is given back (busy).
    const r = rig(4);
    const lookup = limitLookups(
      (_revert, _ism, signal) =>
        new Promise<Hex>((_resolve, reject) =>
          signal?.addEventListener('abort', () => reject(new DeliveryError('stopped', 'aborted'))),
        ),
      1,
    );
    const base = scriptedDestination({});
    const d: Destination = {
      ...base,
      async metadata(message, signal) {
        // The nonce: bytes 1-4 of the message.
        const nonce = Number.parseInt(message.slice(4, 12), 16);
        return nonce < 2 ? lookup('0x', '0x0000000000000000000000000000000000000001', signal) : '0x';
      },
    };
    const w = worker(r, d, { concurrency: 2, batch: 2 });
    const running = w.run();
    for (let i = 0; i < 10; i++) await r.clock.advance(100);
    assert.equal(row(r, idOf(3)).status, 'delivered', 'delivered while a lookup hangs');
    assert.equal(row(r, idOf(4)).status, 'delivered');
    assert.equal(row(r, idOf(1)).status, 'delivering', 'still in its lookup');
    const busy = row(r, idOf(2));
    assert.equal(busy.status, 'queued');
    assert.equal(busy.failures, 0, 'not counted');
    assert.match(busy.lastError!, /^busy: all 1 gateway lookup permits of this worker are in use/);
    await stopNow(r.clock, w, running);
  });

  test('a message that finds every lookup permit taken is asked again within holdMs, not after the pending backoff', async () => {
    // Concurrency 2: one lookup in a slot at a time. Message 1's gateway never answers; message 2's
    // answers at once but finds the lookup permit taken. That permit frees within holdMs (2 s), so 2 is
    // asked again after 1-2 s (1.5 s with random 0.5), not after the pending backoff (3.75 s here).
    const r = rig(2);
    const lookups = offDeliverySlots(
      (revert, _ism, signal) =>
        revert === '0x01'
          ? new Promise<Hex>((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason)))
          : Promise.resolve('0xc0ffee'),
      { clock: r.clock, concurrency: 2, holdMs: 2_000 },
    );
    const d: Destination = {
      ...scriptedDestination({}),
      async metadata(message, signal) {
        const nonce = Number.parseInt(message.slice(4, 12), 16);
        return lookups.read(
          nonce === 0 ? '0x01' : '0x02',
          '0x0000000000000000000000000000000000000001',
          signal,
          message,
        );
      },
    };
    const w = worker(r, d, { concurrency: 2, batch: 2 });
    const once = w.runOnce();
    await r.clock.flush();
    assert.match(row(r, idOf(2)).lastError ?? '', /^busy: all 1 gateway lookup permits of this worker are in use/);
    assert.equal(row(r, idOf(2)).retryAt, T0 + 1_500, 'asked again within holdMs');
    assert.equal(row(r, idOf(2)).failures, 0);
    await r.clock.advance(2_000);
    const [first] = await once;
    assert.match('error' in first ? first.error : '', /did not answer within 2 s/);
    const running = w.run();
    for (let i = 0; i < 30 && row(r, idOf(2)).status !== 'delivered'; i++) await r.clock.advance(100);
    assert.equal(row(r, idOf(2)).status, 'delivered');
    await now(r.clock, w.stop(), 'stop()');
    lookups.close();
    await now(r.clock, running, 'run()');
  });

  test('at concurrency 1 never-answering lookups leave the slot after holdMs: other messages, CCIP-read too, get through', async () => {
    // Messages 1 and 2 name gateways that never answer; 3 needs none; 4's gateway answers at once.
    // The worker's wiring (offDeliverySlots): a lookup holds the one slot for 2 s at most, then goes on in
    // the background and the message is given back, not counted.
    const r = rig(4);
    const hanging: AbortSignal[] = [];
    const lookups = offDeliverySlots(
      (revert, _ism, signal) =>
        revert === '0x01'
          ? new Promise<Hex>((_resolve, reject) => {
              hanging.push(signal!);
              signal?.addEventListener('abort', () => reject(signal.reason));
            })
          : Promise.resolve('0xc0ffee'),
      { clock: r.clock, concurrency: 1, holdMs: 2_000 },
    );
    const d: Destination = {
      ...scriptedDestination({}),
      async metadata(message, signal) {
        const nonce = Number.parseInt(message.slice(4, 12), 16);
        if (nonce === 2) return '0x';
        // One ISM; the hanging ones revert 0x01, the other 0x02; lookups are told apart by message.
        return lookups.read(nonce < 2 ? '0x01' : '0x02', '0x0000000000000000000000000000000000000001', signal, message);
      },
    };
    const w = worker(r, d, { concurrency: 1, batch: 1 });
    const running = w.run();
    for (let i = 0; i < 100 && row(r, idOf(4)).status !== 'delivered'; i++) await r.clock.advance(100);
    assert.equal(row(r, idOf(3)).status, 'delivered', 'delivered while lookups hang');
    assert.equal(row(r, idOf(4)).status, 'delivered', 'a fast CCIP-read message too');
    assert.ok(r.clock.now() - T0 <= 5_000, `both within 2 × holdMs and a little: ${r.clock.now() - T0} ms`);
    for (const id of [idOf(1), idOf(2)]) {
      const slow = row(r, id);
      assert.equal(slow.status, 'queued', 'given back, not holding the slot');
      assert.equal(slow.failures, 0, 'not counted');
      assert.match(
        slow.lastError!,
        /^busy: its gateways did not answer within 2 s: the lookup goes on in the background/,
      );
    }
    assert.equal(lookups.running(), 2, 'both hanging lookups go on in the background');
    await now(r.clock, w.stop(), 'stop()');
    lookups.close();
    assert.ok(
      hanging.every((s) => s.aborted),
      'closed with the worker',
    );
    await now(r.clock, running, 'run()');
  });
});

describe('delivery loop: the last look before a dead letter (docs/delivery.md#retries-pending-proofs-dead-letters)', () => {
  /** Message 1 claimed by `times` workers that each journaled a transaction and died before recording. */
  async function lapsed(r: Rig, times: number): Promise<void> {
    for (let i = 0; i < times; i++) {
      const [m] = r.outbox.claim(1, 60_000, { maxLeaseExpiries: 3 }) as ClaimedMessage[];
      assert.equal(m.lastChance, undefined, `claim ${i + 1} is not the last look`);
      const entry = {
        messageId: m.id,
        chainId: 31337,
        signer: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
        nonce: 7,
        hash: PRIOR,
        raw: '0x02f0',
      };
      if (i === 0) r.outbox.recordBroadcast(entry, { lease: m.lease, leaseMs: 60_000 });
      await r.clock.advance(60_000); // the worker died: its lease lapses
    }
  }

  test('a message mined while its workers kept lapsing is delivered with that transaction, not dead-lettered', async () => {
    const r = rig();
    await lapsed(r, 3);
    const d = scriptedDestination({ resume: async () => ({ hash: PRIOR, status: 'success' }) });
    const results = await worker(r, d, { maxLeaseExpiries: 3 }).runOnce();
    assert.deepEqual(
      results.map((x) => [x.outcome, x.outcome === 'delivered' ? x.txHash : null]),
      [['delivered', PRIOR]],
      'the last look follows the journal to the mined transaction',
    );
    const record = row(r, idOf(1));
    assert.deepEqual([record.status, record.destinationTxHash, record.leaseExpiries], ['delivered', PRIOR, 3]);
    assert.equal(d.calls.process + d.calls.simulate + d.calls.metadata, 0, 'nothing new sent');
  });

  test('the last look follows a pending transaction; once it cannot land and nothing delivered, failed, nothing sent', async () => {
    const r = rig();
    await lapsed(r, 3);
    let resumed: Resumed = { status: 'open', detail: 'transaction 0x… of signer 0x… (nonce 7) may still land' };
    const d = scriptedDestination({ resume: async () => resumed });
    const w = worker(r, d, { maxLeaseExpiries: 3 });
    const [first] = await w.runOnce();
    assert.equal(first.outcome, 'pending', 'a journaled transaction still pending is followed as usual');
    assert.equal(row(r, idOf(1)).status, 'queued');
    resumed = { status: 'dropped' };
    await r.clock.advanceTo(row(r, idOf(1)).retryAt!);
    const [second] = await w.runOnce();
    assert.equal(second.outcome, 'failed');
    const record = row(r, idOf(1));
    assert.equal(record.status, 'failed');
    assert.equal(
      record.lastError,
      'dead letter: its lease expired 3 times with no outcome recorded (maxLeaseExpiries 3)',
    );
    assert.equal(d.calls.deliveredBy, 1, 'delivered(id) asked before giving up');
    assert.equal(d.calls.process + d.calls.simulate + d.calls.metadata, 0, 'nothing new sent');
  });
});
