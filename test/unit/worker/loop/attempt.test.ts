/**
 * One delivery attempt (lib/worker/loop/attempt.ts) alone: the Outcome value it returns for each
 * path of docs/delivery.md#the-delivery-loop, compared whole (kind, hash, `already`, the failure's
 * code and text), against a scripted destination and a hold whose stop and lease loss the test
 * sets. test/unit/worker/loop/worker.test.ts checks what the loop records for these outcomes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Hash, Hex } from 'viem';
import { bytesToHex } from '../../../../lib/codec/hex.ts';
import { deadLetterError, type ClaimedMessage } from '../../../../lib/outbox/index.ts';
import { DeliveryError, TransactionError } from '../../../../lib/worker/errors.ts';
import { attempt, type AttemptContext } from '../../../../lib/worker/loop/attempt.ts';
import type { Hold } from '../../../../lib/worker/loop/lease.ts';
import type { Outcome } from '../../../../lib/worker/loop/outcome.ts';
import type { Destination, DeliveryPolicy, Resumed } from '../../../../lib/worker/types.ts';
import type { JournalEntry } from '../../../../lib/outbox/types.ts';
import type { SimulateResult } from '../../../../lib/worker/tx/sender.ts';
import { claimedMessage } from '../../../helpers/fixtures/builders.ts';

const ID = `0x${'11'.repeat(32)}`;
const OURS = `0x${'ab'.repeat(32)}` as Hash;
const THEIRS = `0x${'cd'.repeat(32)}` as Hash;
const RAW = Uint8Array.from({ length: 81 }, (_, i) => i);
const SIMULATED: SimulateResult = { estimate: 100_000n, gas: 120_000n };
const SIGNER = `0x${'22'.repeat(20)}`;

const claimed = (over: Partial<ClaimedMessage> = {}) => claimedMessage({ id: ID, raw: RAW, ...over });

function entry(nonce: number, hash: string): JournalEntry {
  return { messageId: ID, chainId: 31337, signer: SIGNER, nonce, hash, raw: '0x00' } as unknown as JournalEntry;
}

interface Calls {
  deliveredBy: number;
  metadata: unknown[][];
  simulate: number;
  process: unknown[][];
  resume: Array<{ nonces: number[]; sent: boolean; onWait: unknown }>;
  openBroadcasts: number;
}

interface Script {
  deliveredBy?: (call: number) => Hash | null | Promise<Hash | null>;
  metadata?: () => Promise<Hex>;
  simulate?: () => Promise<SimulateResult>;
  process?: () => Promise<{ hash: Hash; status: 'success' | 'reverted' }>;
  resume?: (nonce: number) => Resumed;
  journal?: JournalEntry[];
  policy?: DeliveryPolicy;
}

/** A hold the test stops or aborts; `checks` counts its check() calls. */
function fakeHold(): Hold & { abort(): void; stopWith(reason: string): void } {
  const controller = new AbortController();
  let stopped: string | null = null;
  return {
    signal: controller.signal,
    sent: false,
    async keepAlive() {},
    check() {
      if (stopped !== null) throw new DeliveryError('stopped', stopped);
    },
    stop() {
      controller.abort();
    },
    close() {},
    abort() {
      controller.abort();
    },
    stopWith(reason: string) {
      stopped = reason;
    },
  };
}

function rig(script: Script = {}, hold = fakeHold()) {
  const calls: Calls = { deliveredBy: 0, metadata: [], simulate: 0, process: [], resume: [], openBroadcasts: 0 };
  const destination: Destination = {
    name: 'anvil2',
    domain: 2,
    async deliveredBy() {
      const call = ++calls.deliveredBy;
      return script.deliveredBy ? script.deliveredBy(call) : null;
    },
    async metadata(...args) {
      calls.metadata.push(args);
      return script.metadata ? script.metadata() : '0x';
    },
    async simulate() {
      calls.simulate++;
      return script.simulate ? script.simulate() : SIMULATED;
    },
    async process(...args) {
      calls.process.push(args);
      return script.process ? script.process() : { hash: OURS, status: 'success' };
    },
    async resume(entries, opts) {
      calls.resume.push({ nonces: entries.map((e) => e.nonce), sent: hold.sent, onWait: opts.onWait });
      return script.resume ? script.resume(entries[0].nonce) : { status: 'dropped' };
    },
  };
  const context: AttemptContext = {
    outbox: {
      openBroadcasts: async () => {
        calls.openBroadcasts++;
        return script.journal ?? [];
      },
    },
    destination,
    leaseMs: 30_000,
    maxLeaseExpiries: 5,
    policy: script.policy,
  };
  return { calls, hold, run: (m = claimed()): Promise<Outcome> => attempt(context, m, hold) };
}

/** The outcome without the failure's class details: kind, hash, already, and code and text of a failure. */
function plain(o: Outcome): unknown {
  if ('failure' in o) return { kind: o.kind, code: o.failure.code, message: o.failure.message };
  return o;
}

describe('one delivery attempt (docs/delivery.md#the-delivery-loop)', () => {
  test('sent and mined: delivered with our transaction, already false; process gets the message, fence and wait hook', async () => {
    const r = rig();
    assert.deepEqual(await r.run(), { kind: 'delivered', hash: OURS, already: false });
    assert.equal(r.calls.openBroadcasts, 0, 'a first claim reads no journal');
    assert.equal(r.calls.process.length, 1);
    const [metadata, message, simulated, opts] = r.calls.process[0] as [
      Hex,
      Hex,
      SimulateResult,
      Record<string, unknown>,
    ];
    assert.deepEqual([metadata, message, simulated], ['0x', bytesToHex(RAW), SIMULATED]);
    assert.equal(opts.messageId, ID);
    assert.deepEqual(opts.fence, { lease: 'the-lease', leaseMs: 30_000 });
    assert.equal(opts.onWait, r.hold.keepAlive, 'the lease is kept alive while the send waits');
    assert.equal(r.hold.sent, true, 'a stop now waits for the transaction');
    const [msg, signal, source] = r.calls.metadata[0] as [Hex, AbortSignal, unknown];
    assert.equal(msg, bytesToHex(RAW));
    assert.equal(signal, r.hold.signal, 'the gateway requests end with the hold');
    assert.deepEqual(source, { originChain: 'anvil1', txHash: `0x${'33'.repeat(32)}` });
  });

  test('already delivered on chain: delivered with their transaction, already true, nothing simulated or sent', async () => {
    const r = rig({ deliveredBy: () => THEIRS });
    assert.deepEqual(await r.run(), { kind: 'delivered', hash: THEIRS, already: true });
    assert.deepEqual([r.calls.metadata.length, r.calls.simulate, r.calls.process.length], [0, 0, 0]);
  });

  test("a simulation reverting 'already delivered': delivered with the transaction delivered(id) names, already true", async () => {
    const simulate = () =>
      Promise.reject(new TransactionError('revert', 'simulation reverted', { reason: 'Mailbox: already delivered' }));
    const r = rig({ simulate, deliveredBy: (call) => (call === 2 ? THEIRS : null) });
    assert.deepEqual(await r.run(), { kind: 'delivered', hash: THEIRS, already: true });
    assert.equal(r.calls.process.length, 0);
    // delivered(id) still false: the revert is a counted failure.
    const lying = rig({ simulate });
    assert.deepEqual(plain(await lying.run()), {
      kind: 'retry',
      code: 'revert',
      message: '"Mailbox: already delivered"',
    });
    assert.equal(lying.calls.deliveredBy, 2, 'asked again after the revert');
  });

  test('a simulation reverting for another reason is a retry, delivered(id) not asked again (nothing of ours was sent)', async () => {
    const r = rig({
      simulate: () => Promise.reject(new TransactionError('revert', 'simulation reverted', { reason: 'no' })),
      deliveredBy: (call) => (call === 2 ? THEIRS : null),
    });
    assert.deepEqual(plain(await r.run()), { kind: 'retry', code: 'revert', message: '"no"' });
    assert.equal(r.calls.deliveredBy, 1);
  });

  test('a reverted receipt of ours: delivered by another if delivered(id) says so, else a retry naming our transaction', async () => {
    const reverted = () => Promise.resolve({ hash: OURS, status: 'reverted' as const });
    const raced = rig({ process: reverted, deliveredBy: (call) => (call === 2 ? THEIRS : null) });
    assert.deepEqual(await raced.run(), { kind: 'delivered', hash: THEIRS, already: true });
    const alone = rig({ process: reverted });
    assert.deepEqual(plain(await alone.run()), {
      kind: 'retry',
      code: 'revert',
      message: `process reverted in ${OURS}`,
    });
  });

  for (const code of ['revert', 'out_of_gas'] as const) {
    test(`a send that throws ${code} after it went out is checked against delivered(id); an error there leaves the failure`, async () => {
      const process = () => Promise.reject(new TransactionError(code, `mined: ${code}`));
      const raced = rig({ process, deliveredBy: (call) => (call === 2 ? THEIRS : null) });
      assert.deepEqual(await raced.run(), { kind: 'delivered', hash: THEIRS, already: true });
      const broken = rig({
        process,
        deliveredBy: (call) => (call === 2 ? Promise.reject(new Error('node down')) : null),
      });
      assert.deepEqual(plain(await broken.run()), { kind: 'retry', code, message: `mined: ${code}` });
    });
  }

  test('a send that throws an RPC error after it went out is a retry; delivered(id) is not asked again', async () => {
    const r = rig({
      process: () => Promise.reject(new Error('socket hang up')),
      deliveredBy: (c) => (c === 2 ? THEIRS : null),
    });
    assert.deepEqual(plain(await r.run()), { kind: 'retry', code: 'rpc', message: 'socket hang up' });
    assert.equal(r.calls.deliveredBy, 1);
  });

  test('the journal is read from the second claim on: a mined transaction ends the attempt, delivered with it', async () => {
    const r = rig({ journal: [entry(4, OURS)], resume: () => ({ hash: OURS, status: 'success' }) });
    assert.deepEqual(await r.run(claimed({ attempts: 2 })), { kind: 'delivered', hash: OURS, already: false });
    assert.equal(r.calls.openBroadcasts, 1);
    assert.deepEqual(r.calls.resume, [{ nonces: [4], sent: true, onWait: r.hold.keepAlive }], 'followed as sent');
    assert.equal(r.calls.deliveredBy, 0);
  });

  test('a journaled transaction still open is pending with its detail; a dropped one lets a new send go', async () => {
    const open = rig({ journal: [entry(4, OURS)], resume: () => ({ status: 'open', detail: 'in the pool' }) });
    assert.deepEqual(plain(await open.run(claimed({ attempts: 3 }))), {
      kind: 'pending',
      code: 'pending',
      message: 'in the pool',
    });
    const dropped = rig({ journal: [entry(4, OURS), entry(5, THEIRS)] });
    const outcome = await dropped.run(claimed({ attempts: 2 }));
    assert.deepEqual(outcome, { kind: 'delivered', hash: OURS, already: false });
    assert.deepEqual(
      dropped.calls.resume.map((c) => c.nonces),
      [[4], [5]],
      'one look per nonce slot',
    );
    assert.equal(dropped.calls.process.length, 1, 'sent anew once every journaled one is dropped');
  });

  test('a dropped journal transaction, then a stop before the send: released, not waited for', async () => {
    const hold = fakeHold();
    const r = rig(
      {
        journal: [entry(4, OURS)],
        metadata: async () => {
          hold.stopWith('lease lost: taken over');
          return '0x';
        },
      },
      hold,
    );
    assert.deepEqual(await r.run(claimed({ attempts: 2 })), { kind: 'released', reason: 'lease lost: taken over' });
    assert.equal(hold.sent, false, 'nothing of this message is out');
  });

  test('a journaled transaction mined reverted: delivered(id) decides; the last look leaves it to the check that follows', async () => {
    const resume = () => ({ hash: OURS, status: 'reverted' as const });
    const raced = rig({ journal: [entry(4, OURS)], resume, deliveredBy: () => THEIRS });
    assert.deepEqual(await raced.run(claimed({ attempts: 2 })), { kind: 'delivered', hash: THEIRS, already: true });
    const lost = rig({ journal: [entry(4, OURS)], resume });
    assert.deepEqual(plain(await lost.run(claimed({ attempts: 2 }))), {
      kind: 'retry',
      code: 'revert',
      message: `process reverted in ${OURS}`,
    });
    const last = rig({ journal: [entry(4, OURS)], resume });
    assert.deepEqual(plain(await last.run(claimed({ attempts: 7, lastChance: true, leaseExpiries: 5 }))), {
      kind: 'final',
      code: 'lease',
      message: deadLetterError(5, 5),
    });
    assert.equal(last.calls.process.length, 0, 'a last look sends nothing');
  });

  test('a last look finding the message delivered ends delivered; otherwise final with the dead-letter text', async () => {
    const found = rig({ deliveredBy: () => THEIRS });
    assert.deepEqual(await found.run(claimed({ attempts: 6, lastChance: true, leaseExpiries: 5 })), {
      kind: 'delivered',
      hash: THEIRS,
      already: true,
    });
    const none = rig();
    assert.deepEqual(plain(await none.run(claimed({ attempts: 6, lastChance: true, leaseExpiries: 6 }))), {
      kind: 'final',
      code: 'lease',
      message: deadLetterError(6, 5),
    });
    assert.equal(none.calls.metadata.length, 0);
  });

  test('no chain configured for the destination: final, config', async () => {
    const r = rig();
    const outcome = await attempt(
      {
        ...({} as AttemptContext),
        destination: undefined,
        leaseMs: 1,
        maxLeaseExpiries: 1,
        outbox: { openBroadcasts: async () => [] },
      },
      claimed({ destination: 9 }),
      r.hold,
    );
    assert.deepEqual(plain(outcome), {
      kind: 'final',
      code: 'config',
      message: 'no chain configured for destination domain 9',
    });
  });

  test('waits that are not the message fault (gas_payment, fee, busy, insufficient_funds) are waits; pending is pending', async () => {
    for (const code of ['gas_payment', 'fee', 'busy', 'insufficient_funds'] as const) {
      const r = rig({
        policy: {
          beforeMetadata: () => Promise.reject(new DeliveryError(code, `held: ${code}`)),
          gasLimit: async (_m, s) => s,
        } as DeliveryPolicy,
      });
      assert.deepEqual(plain(await r.run()), { kind: 'wait', code, message: `held: ${code}` }, code);
      assert.equal(r.calls.metadata.length, 0, `${code}: nothing asked of the gateways`);
    }
    const pending = rig({ metadata: () => Promise.reject(new DeliveryError('pending', 'proof not ready')) });
    assert.deepEqual(plain(await pending.run()), { kind: 'pending', code: 'pending', message: 'proof not ready' });
    const unsupported = rig({ metadata: () => Promise.reject(new DeliveryError('unsupported', 'ISM type 9')) });
    assert.deepEqual(plain(await unsupported.run()), { kind: 'final', code: 'unsupported', message: 'ISM type 9' });
  });

  test("the policy's gas limit is what process is handed", async () => {
    const limited: SimulateResult = { estimate: 100_000n, gas: 150_000n };
    const r = rig({ policy: { beforeMetadata: async () => {}, gasLimit: async () => limited } as DeliveryPolicy });
    await r.run();
    assert.equal(r.calls.process[0][2], limited);
  });

  test('stopped before a send: released with the stop reason; an abort of the gateway request with the stop default', async () => {
    const hold = fakeHold();
    const stopped = rig({ metadata: async () => (hold.stopWith('lease lost: not renewed'), '0x') }, hold);
    assert.deepEqual(await stopped.run(), { kind: 'released', reason: 'lease lost: not renewed' });
    assert.equal(stopped.calls.simulate, 0);
    const aborting = fakeHold();
    const aborted = rig(
      {
        metadata: async () => {
          aborting.abort();
          throw new Error('This operation was aborted');
        },
      },
      aborting,
    );
    assert.deepEqual(await aborted.run(), { kind: 'released', reason: 'the worker is stopping' });
  });

  test('an abort after the send went out is not a release: the failure counts', async () => {
    const hold = fakeHold();
    const r = rig(
      {
        process: async () => {
          hold.abort();
          throw new Error('connection reset');
        },
      },
      hold,
    );
    assert.deepEqual(plain(await r.run()), { kind: 'retry', code: 'rpc', message: 'connection reset' });
  });

  test('a stop during the gas payment check: released before the gateways are asked', async () => {
    const hold = fakeHold();
    const policy = {
      beforeMetadata: async () => hold.stopWith('the worker is stopping'),
      gasLimit: async (_m: unknown, s: SimulateResult) => s,
    } as DeliveryPolicy;
    const r = rig({ policy }, hold);
    assert.deepEqual(await r.run(), { kind: 'released', reason: 'the worker is stopping' });
    assert.equal(r.calls.metadata.length, 0, 'no gateway request after the stop');
  });

  test("only a revert saying 'already delivered' is checked against delivered(id): a node error with those words is a retry", async () => {
    const r = rig({
      simulate: () => Promise.reject(new Error('upstream: message already delivered?')),
      deliveredBy: (call) => (call === 2 ? THEIRS : null),
    });
    assert.deepEqual(plain(await r.run()), {
      kind: 'retry',
      code: 'rpc',
      message: 'upstream: message already delivered?',
    });
    assert.equal(r.calls.deliveredBy, 1);
  });

  test('a stop found by the check just before the send: released, nothing sent', async () => {
    const hold = fakeHold();
    const r = rig({ simulate: async () => (hold.stopWith('the worker is stopping'), SIMULATED) }, hold);
    assert.deepEqual(await r.run(), { kind: 'released', reason: 'the worker is stopping' });
    assert.equal(r.calls.process.length, 0);
    assert.equal(hold.sent, false);
  });
});
