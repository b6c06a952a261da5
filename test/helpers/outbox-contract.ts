/**
 * The Outbox contract (lib/outbox/types.ts, docs/design.md#enqueue, #storage, #message-lifecycle), one
 * suite run against every engine: memory and SQLite (test/process/outbox.test.ts), PostgreSQL (its own
 * test file calls outboxContract with its harness). Messages are real Hyperlane v3 messages
 * encoded by viem, with their keccak256 ids computed by viem. Time is a fake clock handed to the
 * harness, so lease expiry and retry times are driven by the test, never by waiting.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { hexToBytes } from 'viem/utils';
import {
  deadLetterError,
  MAX_ERROR_LENGTH,
  type ClaimedMessage,
  type Outbox,
  type OutboxMessage,
  type OutboxRecord,
} from '../../lib/outbox/index.ts';
import type { GasPayment, GasSpend } from '../../lib/gas-payment.ts';
import { createFakeClock, type FakeClock } from './fake-clock.ts';
import { hyperlaneMessage, messageId, txHash } from './builders.ts';
import { InvalidArgumentError, OutOfRangeError } from '../../lib/errors.ts';

export interface OutboxHarness {
  /** An engine whose time is the `clock` given to `make`. */
  outbox: Outbox;
  /**
   * Optional: another connection (pool, process-local handle) to the same data, for the
   * concurrent-claimers test across connections. Engines that have only one handle omit it.
   */
  connect?(): Promise<{ outbox: Outbox; close(): void | Promise<void> }>;
  close(): void | Promise<void>;
}

export type MakeOutbox = (clock: FakeClock) => Promise<OutboxHarness>;

export const T0 = 1_700_000_000_000;
const LEASE = 30_000;
const DEST_TX = '0x' + 'de'.repeat(32);
const SIGNER = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const OTHER_SIGNER = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';

/** The encoded message and id of each nonce, computed once: the suites ask for the same ones again and again. */
const encoded = new Map<number, { raw: ReturnType<typeof hyperlaneMessage>; id: string }>();

/** Message number `n`: a distinct nonce, so a distinct id. Its bytes are a new copy each time. */
export function outboxMessage(n: number, enqueuedAt = T0 + n, overrides: Partial<OutboxMessage> = {}): OutboxMessage {
  let message = encoded.get(n);
  if (message === undefined) {
    const raw = hyperlaneMessage({ nonce: n, origin: 1, destination: 8453 });
    message = { raw, id: messageId(raw) };
    encoded.set(n, message);
  }
  const { raw, id } = message;
  return {
    id,
    originChain: 'ethereum',
    txHash: txHash(n),
    origin: 1,
    destination: 8453,
    nonce: n,
    raw: hexToBytes(raw),
    enqueuedAt,
    ...overrides,
  };
}

/** What get() returns for a message just enqueued. */
export function queuedRecord(m: OutboxMessage): OutboxRecord {
  return {
    ...m,
    status: 'queued',
    attempts: 0,
    leaseExpiries: 0,
    lastError: null,
    deliveredAt: null,
    destinationTxHash: null,
    claimedUntil: null,
    retryAt: null,
    failures: 0,
    pendingSince: null,
    polls: 0,
    requiredGas: null,
    gasSpent: 0n,
    gasSpentWei: 0n,
  };
}

const id = (n: number) => outboxMessage(n).id;
const ids = (messages: readonly { id: string }[]) => messages.map((m) => m.id);

/** Claims everything claimable now (a delivery worker's view of the old pending()). */
async function claimAll(outbox: Outbox, limit = 1_000): Promise<ClaimedMessage[]> {
  return outbox.claim(limit, LEASE);
}

export function outboxContract(name: string, make: MakeOutbox): void {
  describe(`Outbox contract: ${name}`, () => {
    let h: OutboxHarness;
    let clock: FakeClock;
    beforeEach(async () => {
      clock = createFakeClock(T0 + 1_000_000);
      h = await make(clock);
    });
    afterEach(async () => {
      await h.close();
    });

    test('docs/design.md#enqueue: enqueue stores the whole batch and returns how many were newly stored', async () => {
      const batch = [outboxMessage(1), outboxMessage(2), outboxMessage(3)];
      assert.equal(await h.outbox.enqueue(batch), 3);
      assert.equal(await h.outbox.depth(), 3);
      for (const m of batch) {
        const stored = await h.outbox.get(m.id);
        assert.deepEqual(stored, queuedRecord(m));
      }
    });

    test('docs/design.md#enqueue: enqueue is idempotent by message id (a resubmission stores nothing twice)', async () => {
      assert.equal(await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]), 2);
      // The same messages seen again later (a resubmission after the dedup window).
      assert.equal(await h.outbox.enqueue([outboxMessage(1, T0 + 500), outboxMessage(2, T0 + 500)]), 0);
      assert.equal(await h.outbox.enqueue([outboxMessage(2, T0 + 600), outboxMessage(3)]), 1);
      assert.equal(await h.outbox.depth(), 3);
      // The first copy is kept, not overwritten by the later one.
      assert.equal((await h.outbox.get(id(1)))?.enqueuedAt, T0 + 1);
    });

    test('docs/design.md#enqueue: one id twice in the same batch is stored once', async () => {
      assert.equal(await h.outbox.enqueue([outboxMessage(7), outboxMessage(7)]), 1);
      assert.equal(await h.outbox.depth(), 1);
    });

    test('docs/design.md#enqueue: an empty batch stores nothing and returns 0', async () => {
      assert.equal(await h.outbox.enqueue([]), 0);
      assert.equal(await h.outbox.depth(), 0);
    });

    for (const [what, bad] of [
      ['an id that is not 32 bytes', { id: '0x1234' }],
      ['an upper-case id', { id: outboxMessage(2).id.toUpperCase().replace('0X', '0x') }],
      ['a negative nonce', { nonce: -1 }],
      ['an origin of -0 (the engines would store it as 0 and -0)', { origin: -0 }],
      ['a destination above uint32', { destination: 2 ** 32 }],
      ['raw that is not bytes', { raw: 'not bytes' as unknown as Uint8Array }],
    ] as const) {
      test(`docs/design.md#enqueue: enqueue is atomic: a batch with ${what} in the middle stores nothing`, async () => {
        const batch = [outboxMessage(1), outboxMessage(2, T0 + 2, bad), outboxMessage(3)];
        await assert.rejects(async () => h.outbox.enqueue(batch));
        assert.equal(await h.outbox.depth(), 0);
        assert.deepEqual(await claimAll(h.outbox), []);
        assert.equal(await h.outbox.get(id(1)), undefined);
        assert.deepEqual(await h.outbox.byTx('ethereum', outboxMessage(1).txHash), []);
        // Nothing half-stored blocks a later, valid enqueue of the same messages.
        assert.equal(await h.outbox.enqueue([outboxMessage(1), outboxMessage(3)]), 2);
      });
    }

    test('docs/design.md#enqueue: enqueue is atomic: an element that throws while being read stores nothing', async () => {
      const exploding = outboxMessage(2);
      Object.defineProperty(exploding, 'raw', {
        enumerable: true,
        get() {
          throw new Error('boom');
        },
      });
      await assert.rejects(async () => h.outbox.enqueue([outboxMessage(1), exploding, outboxMessage(3)]), /boom/);
      assert.equal(await h.outbox.depth(), 0);
      assert.equal(await h.outbox.get(id(1)), undefined);
    });

    // docs/delivery.md#gas-payment-enforcement: the payments stored with their messages.
    const payment = (n: number, logIndex: number, over: Partial<GasPayment> = {}): GasPayment => ({
      messageId: id(n),
      destination: 8453,
      gasAmount: 50_000n + BigInt(logIndex),
      payment: 10n ** 15n,
      txHash: txHash(n),
      logIndex,
      ...over,
    });
    const sorted = (list: GasPayment[]) =>
      [...list].sort((a, b) => a.txHash.localeCompare(b.txHash) || a.logIndex - b.logIndex);

    test("docs/delivery.md#gas-payment-enforcement: enqueue stores a message's gas payments; gasPayments reads them back by id", async () => {
      // gasPayments finds them by message id in any case.
      const big = payment(1, 3, { gasAmount: 2n ** 256n - 1n, payment: 2n ** 255n + 7n, destination: 4_294_967_295 });
      assert.equal(
        await h.outbox.enqueue([
          { ...outboxMessage(1), gasPayments: [payment(1, 1), big] },
          outboxMessage(2),
          { ...outboxMessage(3), gasPayments: [payment(3, 0)] },
        ]),
        3,
      );
      assert.deepEqual(sorted(await h.outbox.gasPayments([id(1).toUpperCase().replace('0X', '0x')])), [
        payment(1, 1),
        big,
      ]);
      assert.deepEqual(await h.outbox.gasPayments([id(2)]), []);
      assert.deepEqual(
        sorted(await h.outbox.gasPayments([id(1), id(3), id(9)])),
        sorted([payment(1, 1), big, payment(3, 0)]),
      );
      assert.deepEqual(await h.outbox.gasPayments([]), []);
      // The record itself is unchanged by its payments.
      assert.deepEqual(await h.outbox.get(id(1)), queuedRecord(outboxMessage(1)));
    });

    test('docs/delivery.md#gas-payment-enforcement: each (tx hash, log index) is stored once', async () => {
      // Once: on a resubmission, for the same log twice in a batch, and for a top-up seen twice.
      await h.outbox.enqueue([{ ...outboxMessage(1), gasPayments: [payment(1, 1), payment(1, 1)] }]);
      assert.equal(await h.outbox.enqueue([{ ...outboxMessage(1), gasPayments: [payment(1, 1)] }]), 0);
      assert.deepEqual(await h.outbox.gasPayments([id(1)]), [payment(1, 1)]);
      // Top-ups found later (eth_getLogs): new logs are added, known ones are not.
      const topUp = payment(1, 7, { txHash: txHash(77) });
      assert.equal(await h.outbox.addGasPayments([topUp, payment(1, 1)]), 1);
      assert.equal(await h.outbox.addGasPayments([topUp]), 0);
      assert.equal(await h.outbox.addGasPayments([]), 0);
      assert.deepEqual(sorted(await h.outbox.gasPayments([id(1)])), sorted([payment(1, 1), topUp]));
    });

    test('docs/delivery.md#gas-payment-enforcement: a batch with a bad payment stores nothing, messages included', async () => {
      // addGasPayments refuses a batch with a bad payment whole too.
      const bad: [string, Partial<GasPayment>][] = [
        ['messageId', { messageId: '0x1234' }],
        ['messageId', { messageId: id(1).toUpperCase().replace('0X', '0x') }],
        ['destination', { destination: -1 }],
        ['gasAmount', { gasAmount: -1n }],
        ['gasAmount', { gasAmount: 2n ** 256n }],
        ['payment', { payment: 5 as unknown as bigint }],
        ['txHash', { txHash: 'nope' }],
        ['logIndex', { logIndex: 1.5 }],
      ];
      for (const [field, over] of bad) {
        await assert.rejects(
          async () =>
            h.outbox.enqueue([
              outboxMessage(2),
              { ...outboxMessage(1), gasPayments: [payment(1, 0), payment(1, 1, over)] },
            ]),
          (e: Error) => e.name === 'InvalidArgumentError' && e.message.includes(field),
          field,
        );
        await assert.rejects(
          async () => h.outbox.addGasPayments([payment(1, 0), payment(1, 1, over)]),
          /invalid/,
          field,
        );
      }
      assert.equal(await h.outbox.depth(), 0);
      assert.deepEqual(await h.outbox.gasPayments([id(1), id(2)]), []);
    });

    // docs/delivery.md#gas-already-spent: the gas book, on the message's record.
    const spend = (n: number, tx: number, gasUsed: bigint, cost = gasUsed * 7n): GasSpend => ({
      messageId: id(n),
      txHash: txHash(tx),
      gasUsed,
      cost,
    });
    const book = async (n: number) => {
      const r = await h.outbox.get(id(n));
      return r && { requiredGas: r.requiredGas, gasSpent: r.gasSpent, gasSpentWei: r.gasSpentWei };
    };

    test('docs/delivery.md#gas-already-spent: setRequiredGas keeps the last required gas, says when it changed', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      assert.deepEqual(await book(1), { requiredGas: null, gasSpent: 0n, gasSpentWei: 0n });
      // The id in any case; the same value again is no change; a uint256 is kept whole.
      assert.equal(await h.outbox.setRequiredGas(id(1).toUpperCase().replace('0X', '0x'), 60_000n), true);
      assert.equal(await h.outbox.setRequiredGas(id(1), 60_000n), false);
      assert.equal((await h.outbox.get(id(1)))?.requiredGas, 60_000n);
      assert.equal(await h.outbox.setRequiredGas(id(1), 2n ** 256n - 1n), true);
      assert.equal((await h.outbox.get(id(1)))?.requiredGas, 2n ** 256n - 1n);
      assert.equal(await h.outbox.setRequiredGas(id(1), 0n), true);
      assert.equal((await h.outbox.get(id(1)))?.requiredGas, 0n);
      assert.equal((await h.outbox.get(id(2)))?.requiredGas, null, 'the other message is untouched');
      assert.equal(await h.outbox.setRequiredGas(id(9), 1n), false, 'an unknown id');
      assert.equal(await h.outbox.get(id(9)), undefined);
      // A claim hands it out with the message, and the lifecycle keeps it.
      await h.outbox.setRequiredGas(id(1), 75_000n);
      const [claimed] = await claimAll(h.outbox);
      assert.equal(claimed.requiredGas, 75_000n);
      await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease });
      assert.equal((await h.outbox.get(id(1)))?.requiredGas, 75_000n);
      for (const [gas, what] of [
        [-1n, 'negative'],
        [2n ** 256n, 'above uint256'],
        [5, 'a number'],
      ] as const) {
        await assert.rejects(async () => h.outbox.setRequiredGas(id(2), gas as bigint), InvalidArgumentError, what);
      }
      await assert.rejects(async () => h.outbox.setRequiredGas(7 as unknown as string, 1n), InvalidArgumentError);
      assert.equal((await h.outbox.get(id(2)))?.requiredGas, null);
    });

    test('docs/delivery.md#gas-already-spent: addGasSpent adds each transaction once to its message, exactly', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      // Amounts beyond 2^63 (SQLite's integers) and 2^53 (a double) are summed exactly.
      const big = 2n ** 64n + 1n;
      assert.equal(
        await h.outbox.addGasSpent([spend(1, 101, 50_000n), spend(1, 102, big, 3n ** 100n), spend(2, 103, 21_000n)]),
        3,
      );
      assert.deepEqual(await book(1), {
        requiredGas: null,
        gasSpent: 50_000n + big,
        gasSpentWei: 350_000n + 3n ** 100n,
      });
      assert.deepEqual(await book(2), { requiredGas: null, gasSpent: 21_000n, gasSpentWei: 147_000n });
      // The same receipt seen again (a crash, a second look) counts nothing, whatever it says now.
      assert.equal(await h.outbox.addGasSpent([spend(1, 101, 50_000n)]), 0);
      assert.equal(await h.outbox.addGasSpent([spend(2, 101, 99n), spend(1, 102, 1n)]), 0);
      // Twice in one call: once.
      assert.equal(await h.outbox.addGasSpent([spend(2, 104, 10n), spend(2, 104, 10n)]), 1);
      assert.deepEqual(await book(2), { requiredGas: null, gasSpent: 21_010n, gasSpentWei: 147_070n });
      assert.deepEqual(await book(1), {
        requiredGas: null,
        gasSpent: 50_000n + big,
        gasSpentWei: 350_000n + 3n ** 100n,
      });
      assert.equal(await h.outbox.addGasSpent([]), 0);
      // The record is otherwise unchanged, and a claim and requeue keep what was spent.
      const [first] = await claimAll(h.outbox, 1);
      assert.equal(first.gasSpent, 50_000n + big);
      await h.outbox.markFailed(id(1), { error: 'revert', final: true, lease: first.lease });
      await h.outbox.requeue(id(1));
      assert.deepEqual(await h.outbox.get(id(1)), {
        ...queuedRecord(outboxMessage(1)),
        attempts: 1,
        lastError: 'revert',
        gasSpent: 50_000n + big,
        gasSpentWei: 350_000n + 3n ** 100n,
      });
    });

    test('docs/delivery.md#gas-already-spent: a spend of an unknown message is not kept; a bad spend stores nothing', async () => {
      assert.equal(await h.outbox.addGasSpent([spend(1, 101, 50_000n)]), 0, 'message 1 is not in the outbox');
      await h.outbox.enqueue([outboxMessage(1)]);
      assert.deepEqual(await book(1), { requiredGas: null, gasSpent: 0n, gasSpentWei: 0n });
      // Nothing was kept of it: once the message is there, the same transaction counts.
      assert.equal(await h.outbox.addGasSpent([spend(1, 101, 50_000n), spend(9, 109, 1n)]), 1);
      assert.equal((await h.outbox.get(id(1)))?.gasSpent, 50_000n);
      const bad: [string, Partial<GasSpend>][] = [
        ['messageId', { messageId: '0x1234' }],
        ['messageId', { messageId: id(1).toUpperCase().replace('0X', '0x') }],
        ['txHash', { txHash: 'nope' }],
        ['txHash', { txHash: `0x${'AB'.repeat(32)}` }],
        ['gasUsed', { gasUsed: -1n }],
        ['gasUsed', { gasUsed: 5 as unknown as bigint }],
        ['cost', { cost: 2n ** 256n }],
      ];
      for (const [field, over] of bad) {
        await assert.rejects(
          async () => h.outbox.addGasSpent([spend(1, 105, 1n), { ...spend(1, 106, 1n), ...over }]),
          (e: Error) => e.name === 'InvalidArgumentError' && e.message.includes(field),
          field,
        );
      }
      assert.equal((await h.outbox.get(id(1)))?.gasSpent, 50_000n, 'the valid spend before the bad one is not kept');
      assert.equal(await h.outbox.addGasSpent([spend(1, 105, 1n)]), 1);
    });

    test('docs/delivery.md#gas-already-spent: one transaction recorded over two connections at once counts once', async () => {
      if (!h.connect) return;
      await h.outbox.enqueue([outboxMessage(1)]);
      const other = await h.connect();
      try {
        const counts = await Promise.all([
          h.outbox.addGasSpent([spend(1, 101, 50_000n)]),
          other.outbox.addGasSpent([spend(1, 101, 50_000n)]),
          other.outbox.addGasSpent([spend(1, 101, 50_000n), spend(1, 102, 1n)]),
        ]);
        assert.equal(counts[0] + counts[1] + counts[2], 2);
        assert.deepEqual(await book(1), { requiredGas: null, gasSpent: 50_001n, gasSpentWei: 350_007n });
      } finally {
        await other.close();
      }
    });

    test('docs/design.md#leases: claim takes queued messages oldest first, a batch in its own order', async () => {
      await h.outbox.enqueue([outboxMessage(5, T0 + 300)]);
      await h.outbox.enqueue([outboxMessage(9, T0 + 100), outboxMessage(3, T0 + 100), outboxMessage(4, T0 + 100)]);
      await h.outbox.enqueue([outboxMessage(1, T0 + 200)]);
      const claimed = await claimAll(h.outbox);
      assert.deepEqual(ids(claimed), [9, 3, 4, 1, 5].map(id));
      for (const m of claimed) {
        assert.equal(m.deliveredAt, null);
        assert.equal(m.status, 'delivering');
      }
    });

    test('docs/design.md#leases: claim(limit) returns at most limit messages, the oldest; the rest stay claimable', async () => {
      await h.outbox.enqueue([1, 2, 3, 4].map((n) => outboxMessage(n)));
      assert.deepEqual(ids(await h.outbox.claim(2, LEASE)), [id(1), id(2)]);
      assert.deepEqual(await h.outbox.claim(0, LEASE), []);
      assert.deepEqual(ids(await h.outbox.claim(100, LEASE)), [id(3), id(4)]);
      assert.deepEqual(await h.outbox.claim(100, LEASE), [], 'all four are held');
    });

    test('docs/design.md#leases: claim leases a message to the caller with a lease token; get shows it without the token', async () => {
      // The claimed record: delivering, claimedUntil = now + leaseMs, attempts + 1, a lease token.
      const m = outboxMessage(1);
      await h.outbox.enqueue([m]);
      const now = clock.now();
      const [claimed] = await h.outbox.claim(10, 5_000);
      assert.equal(typeof claimed.lease, 'string');
      assert.ok(claimed.lease.length > 0);
      const { lease, ...record } = claimed;
      const expected: OutboxRecord = {
        ...queuedRecord(m),
        status: 'delivering',
        attempts: 1,
        claimedUntil: now + 5_000,
      };
      assert.deepEqual(record, expected);
      assert.deepEqual(await h.outbox.get(m.id), expected);
      assert.equal(await h.outbox.depth(), 1, 'a delivering message is still in the outbox');
      assert.deepEqual(await h.outbox.claim(10, 5_000), [], 'a live lease is not claimable');
    });

    test('docs/design.md#leases: an expired lease makes the message claimable again, with a new lease, and the old lease is void', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const [first] = await h.outbox.claim(1, 5_000);
      await clock.advance(4_999);
      assert.deepEqual(ids(await h.outbox.claim(10, 5_000)), [id(2)], 'message 1 is still held one ms before expiry');
      await clock.advance(1);
      const [second, ...none] = await h.outbox.claim(10, 5_000);
      assert.deepEqual(none, []);
      assert.equal(second.id, id(1));
      assert.equal(second.attempts, 2, 'the expired attempt counts');
      assert.equal(second.leaseExpiries, 1, 'and is counted as an expired lease');
      assert.notEqual(second.lease, first.lease);
      assert.equal(second.claimedUntil, clock.now() + 5_000);
      // The first worker wakes up late: its outcome no longer applies.
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: first.lease }), false);
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'late', retryAt: clock.now(), lease: first.lease }),
        false,
      );
      assert.equal((await h.outbox.get(id(1)))?.status, 'delivering');
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: second.lease }), true);
      assert.equal((await h.outbox.get(id(1)))?.status, 'delivered');
    });

    test('docs/design.md#leases: a lease that expired but was not taken over still lets its holder mark the outcome', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      const [claimed] = await h.outbox.claim(1, 1_000);
      await clock.advance(60_000);
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease }), true);
      assert.deepEqual(await h.outbox.claim(10, 1_000), []);
    });

    test('docs/design.md#leases: extend renews a live lease for its holder only: claimedUntil = now + leaseMs', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const [held] = await h.outbox.claim(1, 5_000);
      await clock.advance(4_000);
      assert.equal(await h.outbox.extend(id(1), 'not-a-lease', 60_000), false, 'a wrong lease');
      assert.equal(await h.outbox.extend(id(2), held.lease, 60_000), false, 'another message (queued)');
      assert.equal(await h.outbox.extend(id(99), held.lease, 60_000), false, 'an unknown id');
      assert.equal((await h.outbox.get(id(1)))?.claimedUntil, T0 + 1_000_000 + 5_000, 'unchanged by refused calls');
      assert.equal(await h.outbox.extend(id(1).toUpperCase().replace('0X', '0x'), held.lease, 5_000), true);
      assert.deepEqual(await h.outbox.get(id(1)), {
        ...queuedRecord(outboxMessage(1)),
        status: 'delivering',
        attempts: 1,
        claimedUntil: clock.now() + 5_000,
      });
      await clock.advance(4_999); // past the first lease's end, within the renewed one
      assert.deepEqual(ids(await h.outbox.claim(10, 5_000)), [id(2)], 'the renewed message is still held');
      assert.equal(
        await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: held.lease }),
        true,
        'the lease is the same token',
      );
      assert.equal(await h.outbox.extend(id(1), held.lease, 5_000), false, 'delivered');
    });

    test('docs/design.md#leases: extend is refused once the lease was taken over, or the message failed or went back to the queue', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2), outboxMessage(3)]);
      const [first, _two, three] = await h.outbox.claim(3, 1_000);
      await clock.advance(1_000);
      // Expired but nobody claimed it since: the holder keeps it, like markDelivered.
      assert.equal(await h.outbox.extend(id(3), three.lease, 1_000), true);
      assert.equal((await h.outbox.get(id(3)))?.claimedUntil, clock.now() + 1_000);
      const [second, ...rest] = await h.outbox.claim(10, 1_000);
      assert.deepEqual(ids([second, ...rest]), [id(1), id(2)]);
      assert.equal(await h.outbox.extend(id(1), first.lease, 60_000), false, 'taken over');
      assert.equal(
        (await h.outbox.get(id(1)))?.claimedUntil,
        clock.now() + 1_000,
        "the new holder's lease is unchanged",
      );
      assert.equal(
        await h.outbox.markFailed(id(2), { error: 'x', retryAt: clock.now() + 5, lease: rest[0].lease }),
        true,
      );
      assert.equal(await h.outbox.extend(id(2), rest[0].lease, 60_000), false, 'queued again');
      assert.equal((await h.outbox.get(id(2)))?.status, 'queued');
      assert.equal(await h.outbox.markFailed(id(3), { error: 'x', final: true, lease: three.lease }), true);
      assert.equal(await h.outbox.extend(id(3), three.lease, 60_000), false, 'failed');
      assert.equal((await h.outbox.get(id(3)))?.claimedUntil, null);
      assert.equal(await h.outbox.extend(id(1), second.lease, 60_000), true, 'the new holder may');
    });

    test('docs/delivery.md#retries-pending-proofs-dead-letters: a message whose leases expired maxAttempts times gets a last look', async () => {
      // Handed out once more, flagged lastChance; if that lease expires too, it is the dead letter.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const leases: string[] = [];
      for (let round = 1; round <= 3; round++) {
        const got = await h.outbox.claim(1, 1_000, { maxAttempts: 3 });
        assert.deepEqual(ids(got), [id(1)], `round ${round}`);
        assert.equal(got[0].attempts, round);
        assert.equal(got[0].leaseExpiries, round - 1);
        assert.equal(got[0].lastChance, undefined, `round ${round}: not the last look yet`);
        leases.push(got[0].lease);
        await clock.advance(1_000); // the worker holding it stopped
      }
      // The third lease expired: message 1 is handed out once more, flagged.
      const [last] = await h.outbox.claim(1, 1_000, { maxAttempts: 3 });
      assert.equal(last.id, id(1));
      assert.equal(last.lastChance, true);
      assert.equal(last.leaseExpiries, 3);
      assert.equal(last.attempts, 4);
      assert.equal((await h.outbox.get(id(1)))?.status, 'delivering');
      leases.push(last.lease);
      await clock.advance(1_000); // the last look's worker stopped too
      // Its lease expired as well: message 1 is the dead letter, and the claim hands out message 2.
      assert.deepEqual(ids(await h.outbox.claim(1, 1_000, { maxAttempts: 3 })), [id(2)]);
      const dead = await h.outbox.get(id(1));
      assert.deepEqual(dead, {
        ...queuedRecord(outboxMessage(1)),
        status: 'failed',
        attempts: 4,
        leaseExpiries: 4,
        lastError: deadLetterError(4, 3),
      });
      assert.match(dead!.lastError!, /lease expired 4 times/);
      assert.equal(await h.outbox.depth(), 1);
      await clock.advance(60_000);
      assert.deepEqual(ids(await h.outbox.claim(10, 1_000)), [id(2)], 'not claimable, with or without maxAttempts');
      assert.equal(
        await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: leases[3] }),
        false,
        'its last lease is void',
      );
      assert.equal((await h.outbox.get(id(1)))?.status, 'failed');
    });

    test('docs/delivery.md#retries-pending-proofs-dead-letters: a last look that retried or waited is flagged again', async () => {
      // Its leaseExpiries stays at maxAttempts: claimed from queued, it is still the last look.
      await h.outbox.enqueue([outboxMessage(1)]);
      for (let round = 0; round < 2; round++) {
        await h.outbox.claim(1, 1_000, { maxAttempts: 2 });
        await clock.advance(1_000);
      }
      const [last] = await h.outbox.claim(1, 1_000, { maxAttempts: 2 });
      assert.equal(last.lastChance, true);
      const error = 'pending: transaction 0x… may still land';
      assert.equal(await h.outbox.markFailed(last.id, { error, retryAt: clock.now() + 5, lease: last.lease }), true);
      await clock.advance(5);
      const [again] = await h.outbox.claim(1, 1_000, { maxAttempts: 2 });
      assert.deepEqual([again.id, again.lastChance, again.leaseExpiries], [id(1), true, 2]);
      assert.deepEqual(await h.outbox.claim(1, 1_000), [], 'held');
      await clock.advance(1_000);
      const [plain] = await h.outbox.claim(1, 1_000);
      assert.equal(plain.lastChance, undefined, 'a claim without maxAttempts flags nothing');
    });

    test('docs/design.md#leases: maxAttempts counts expired leases only', async () => {
      // Retries recorded by markFailed and live leases never dead-letter.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      for (let round = 1; round <= 4; round++) {
        const [m] = await h.outbox.claim(1, 1_000, { maxAttempts: 1 });
        assert.equal(m.id, id(1), `round ${round}`);
        assert.equal(
          await h.outbox.markFailed(m.id, { error: 'rpc timeout', retryAt: clock.now(), lease: m.lease }),
          true,
        );
      }
      assert.equal((await h.outbox.get(id(1)))?.attempts, 4);
      assert.equal((await h.outbox.get(id(1)))?.leaseExpiries, 0);
      // Held with live leases: a claim with maxAttempts 1 leaves them alone.
      const held = await h.outbox.claim(2, 1_000, { maxAttempts: 1 });
      assert.deepEqual(ids(held), [id(1), id(2)]);
      await clock.advance(999);
      assert.deepEqual(await h.outbox.claim(10, 1_000, { maxAttempts: 1 }), []);
      assert.deepEqual(ids(await h.outbox.claim(10, 1_000)), [], 'no claim without maxAttempts either');
      for (const m of held) assert.equal((await h.outbox.get(m.id))?.status, 'delivering');
    });

    test('docs/design.md#leases: without maxAttempts expired leases are counted but never dead-letter', async () => {
      // The count goes up only on a takeover.
      await h.outbox.enqueue([outboxMessage(1)]);
      for (let round = 0; round < 5; round++) {
        const [m] = await h.outbox.claim(1, 1_000);
        assert.equal(m.leaseExpiries, round);
        await clock.advance(1_000);
      }
      const record = await h.outbox.get(id(1));
      assert.equal(record?.status, 'delivering');
      assert.equal(record?.leaseExpiries, 4, 'the fifth lease expired but nobody has taken it over yet');
      // A later claim with maxAttempts sees the fifth expiry: 5 >= 5, the last look.
      const [last] = await h.outbox.claim(1, 1_000, { maxAttempts: 5 });
      assert.equal(last.lastChance, true);
      await clock.advance(1_000);
      assert.deepEqual(await h.outbox.claim(1, 1_000, { maxAttempts: 5 }), []);
      assert.equal((await h.outbox.get(id(1)))?.lastError, deadLetterError(6, 5));
    });

    test('docs/design.md#leases: requeue puts a failed message back to queued, claimable at once', async () => {
      // attempts and lastError are kept, the expired-lease count is reset.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      for (let round = 0; round < 3; round++) {
        await h.outbox.claim(1, 1_000, { maxAttempts: 2 });
        await clock.advance(1_000); // the third, the last look, lapses too
      }
      assert.deepEqual(ids(await h.outbox.claim(1, 1_000, { maxAttempts: 2 })), [id(2)]);
      assert.equal((await h.outbox.get(id(1)))?.status, 'failed');
      assert.equal(await h.outbox.requeue(id(1).toUpperCase().replace('0X', '0x')), true);
      assert.deepEqual(await h.outbox.get(id(1)), {
        ...queuedRecord(outboxMessage(1)),
        attempts: 3,
        lastError: deadLetterError(3, 2),
      });
      assert.equal(await h.outbox.depth(), 2);
      assert.equal(await h.outbox.requeue(id(1)), false, 'already queued');
      // Not dead-lettered again at once by the next claim with the same maxAttempts.
      const [again] = await h.outbox.claim(1, 1_000, { maxAttempts: 2 });
      assert.equal(again.id, id(1));
      assert.equal(again.attempts, 4);
      assert.equal(again.leaseExpiries, 0);
      assert.equal(again.lastChance, undefined, 'nor given a last look');
      assert.equal(await h.outbox.requeue(id(1)), false, 'delivering');
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: again.lease }), true);
      assert.equal(await h.outbox.requeue(id(1)), false, 'delivered');
      assert.equal((await h.outbox.get(id(1)))?.status, 'delivered');
      assert.equal(await h.outbox.requeue(id(99)), false, 'unknown');
    });

    test('docs/design.md#leases: requeue re-drives a message its worker failed for good (markFailed final)', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      const [m] = await h.outbox.claim(1, LEASE);
      assert.equal(await h.outbox.markFailed(m.id, { error: 'recipient reverts', final: true, lease: m.lease }), true);
      assert.equal(await h.outbox.requeue(m.id), true);
      assert.deepEqual(await h.outbox.get(m.id), {
        ...queuedRecord(outboxMessage(1)),
        attempts: 1,
        lastError: 'recipient reverts',
      });
      const [again] = await h.outbox.claim(1, LEASE);
      assert.equal(again.id, m.id);
      assert.equal(
        await h.outbox.markFailed(m.id, { error: 'late', final: true, lease: m.lease }),
        false,
        'the first lease stays void',
      );
    });

    test('docs/design.md#listing-and-bulk-requeue: list filters by status and destination, oldest first, at most limit', async () => {
      // Without a status, list gives every message not delivered.
      await h.outbox.enqueue([
        outboxMessage(6, T0 + 60, { destination: 10 }),
        outboxMessage(5, T0 + 50, { destination: 10 }),
        ...[1, 2, 3, 4].map((n) => outboxMessage(n)),
      ]);
      // 1 delivered, 2 and 5 failed, 3 delivering; 4 and 6 stay queued (claimed one at a time).
      const take = async (n: number) => {
        const [m] = await h.outbox.claim(1, LEASE);
        assert.equal(m.id, id(n));
        return m;
      };
      const one = await take(1);
      await h.outbox.markDelivered(one.id, { destinationTxHash: DEST_TX, lease: one.lease });
      const two = await take(2);
      await h.outbox.markFailed(two.id, { error: 'gave up on 2', final: true, lease: two.lease });
      await take(3);
      const four = await take(4);
      await h.outbox.markFailed(four.id, { error: 'try later', retryAt: clock.now() + 60_000, lease: four.lease });
      const five = await take(5);
      await h.outbox.markFailed(five.id, { error: 'gave up on 5', final: true, lease: five.lease });

      assert.deepEqual(ids(await h.outbox.list()), [id(2), id(3), id(4), id(5), id(6)], 'not delivered, oldest first');
      assert.deepEqual(ids(await h.outbox.list({ status: 'failed' })), [id(2), id(5)]);
      assert.deepEqual(ids(await h.outbox.list({ status: 'queued' })), [id(4), id(6)]);
      assert.deepEqual(ids(await h.outbox.list({ status: 'delivering' })), [id(3)]);
      assert.deepEqual(ids(await h.outbox.list({ status: 'delivered' })), [id(1)]);
      assert.deepEqual(ids(await h.outbox.list({ destination: 10 })), [id(5), id(6)]);
      assert.deepEqual(ids(await h.outbox.list({ status: 'failed', destination: 10 })), [id(5)]);
      assert.deepEqual(ids(await h.outbox.list({ destination: 11 })), []);
      assert.deepEqual(ids(await h.outbox.list({ limit: 2 })), [id(2), id(3)]);
      // The records are get()'s.
      assert.deepEqual((await h.outbox.list({ status: 'failed', limit: 1 }))[0], await h.outbox.get(id(2)));
      const [queued] = await h.outbox.list({ status: 'queued' });
      assert.equal(queued.lastError, 'try later');
      assert.equal(queued.attempts, 1);
      assert.equal(queued.retryAt, clock.now() + 60_000);
    });

    test('docs/design.md#listing-and-bulk-requeue: requeueFailed puts back every failed message, as requeue does', async () => {
      // Of one destination when given, oldest first, at most limit.
      await h.outbox.enqueue(
        [1, 2, 3, 4].map((n) => outboxMessage(n, T0 + n, { destination: n % 2 === 0 ? 10 : 8453 })),
      );
      for (const n of [1, 2, 3, 4]) {
        const [m] = await h.outbox.claim(1, LEASE);
        assert.equal(m.id, id(n));
        if (n === 4) continue; // stays delivering
        await h.outbox.markFailed(m.id, { error: `gave up on ${n}`, final: true, lease: m.lease });
      }
      assert.deepEqual(await h.outbox.requeueFailed({ destination: 10 }), [id(2)]);
      assert.deepEqual(await h.outbox.get(id(2)), {
        ...queuedRecord(outboxMessage(2, T0 + 2, { destination: 10 })),
        attempts: 1,
        lastError: 'gave up on 2',
      });
      assert.deepEqual(await h.outbox.requeueFailed({ destination: 10 }), [], 'nothing failed left there');
      assert.deepEqual(await h.outbox.requeueFailed({ limit: 1 }), [id(1)]);
      assert.deepEqual(await h.outbox.requeueFailed(), [id(3)]);
      assert.deepEqual(await h.outbox.requeueFailed(), []);
      assert.equal((await h.outbox.get(id(4)))?.status, 'delivering', 'only failed messages');
      assert.deepEqual(ids(await h.outbox.claim(10, LEASE)), [id(1), id(2), id(3)], 'claimable at once');
    });

    test('docs/design.md#listing-and-bulk-requeue: list and requeueFailed refuse bad options and change nothing', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      const [m] = await h.outbox.claim(1, LEASE);
      await h.outbox.markFailed(m.id, { error: 'x', final: true, lease: m.lease });
      const bad: unknown[] = [
        { limit: 0 },
        { limit: 1001 },
        { limit: 1.5 },
        { destination: -1 },
        { destination: 2 ** 32 },
        { status: 'stuck' },
        null,
      ];
      for (const opts of bad) {
        await assert.rejects(
          async () => h.outbox.list(opts as never),
          (e) => e instanceof InvalidArgumentError || e instanceof OutOfRangeError,
          JSON.stringify(opts),
        );
        if (!(opts !== null && typeof opts === 'object' && 'status' in opts))
          await assert.rejects(
            async () => h.outbox.requeueFailed(opts as never),
            (e) => e instanceof InvalidArgumentError || e instanceof OutOfRangeError,
            JSON.stringify(opts),
          );
      }
      assert.equal((await h.outbox.get(id(1)))?.status, 'failed');
    });

    test('docs/design.md#leases: an expired lease is claimed in age order among queued messages', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2), outboxMessage(3)]);
      await h.outbox.claim(2, 1_000); // 1 and 2
      await clock.advance(1_000);
      assert.deepEqual(ids(await claimAll(h.outbox)), [id(1), id(2), id(3)]);
    });

    test('docs/design.md#leases: markDelivered: delivering -> delivered with the destination tx hash; depth drops', async () => {
      // delivered at the clock's time.
      await h.outbox.enqueue([1, 2, 3].map((n) => outboxMessage(n)));
      const claimed = await claimAll(h.outbox);
      await clock.advance(5_000);
      const two = claimed[1];
      assert.equal(await h.outbox.markDelivered(two.id, { destinationTxHash: DEST_TX, lease: two.lease }), true);
      assert.equal(await h.outbox.depth(), 2);
      const record = await h.outbox.get(two.id);
      assert.deepEqual(record, {
        ...queuedRecord(outboxMessage(2)),
        status: 'delivered',
        attempts: 1,
        deliveredAt: clock.now(),
        destinationTxHash: DEST_TX,
      });
      assert.equal((await h.outbox.get(id(1)))?.deliveredAt, null);
      // The other two come back after their leases; the delivered one never does.
      await clock.advance(LEASE);
      assert.deepEqual(ids(await claimAll(h.outbox)), [id(1), id(3)]);
    });

    test('docs/design.md#leases: markDelivered counts only changes', async () => {
      // Unknown ids are ignored; a second mark keeps the first time and hash.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const [first1, first2] = await claimAll(h.outbox);
      assert.equal(await h.outbox.markDelivered(id(99), { destinationTxHash: DEST_TX, lease: first1.lease }), false);
      const first = clock.now();
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: first1.lease }), true);
      await clock.advance(10);
      assert.equal(
        await h.outbox.markDelivered(id(1), { destinationTxHash: '0x' + '11'.repeat(32), lease: first1.lease }),
        false,
      );
      assert.equal(await h.outbox.markDelivered(id(2), { destinationTxHash: DEST_TX, lease: first2.lease }), true);
      const one = await h.outbox.get(id(1));
      assert.equal(one?.deliveredAt, first);
      assert.equal(one?.destinationTxHash, DEST_TX);
      assert.equal(await h.outbox.depth(), 0);
      assert.deepEqual(await claimAll(h.outbox), []);
    });

    test('docs/design.md#leases: markDelivered needs the claim', async () => {
      // A queued message is not delivered by any lease; a wrong lease changes nothing.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: 'not-a-lease' }), false);
      assert.equal((await h.outbox.get(id(1)))?.status, 'queued');
      const [claimed] = await h.outbox.claim(1, LEASE);
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: 'not-a-lease' }), false);
      assert.equal(
        await h.outbox.markDelivered(id(2), { destinationTxHash: DEST_TX, lease: claimed.lease }),
        false,
        "another message's lease",
      );
      assert.equal((await h.outbox.get(id(2)))?.status, 'queued');
      assert.deepEqual(await h.outbox.get(id(1)), {
        ...queuedRecord(outboxMessage(1)),
        status: 'delivering',
        attempts: 1,
        claimedUntil: clock.now() + LEASE,
      });
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease }), true);
      assert.equal((await h.outbox.get(id(1)))?.deliveredAt, clock.now());
    });

    test('docs/design.md#leases: the lease is required: a call without it throws InvalidArgumentError', async () => {
      // It also leaves another worker's live claim alone.
      await h.outbox.enqueue([outboxMessage(1)]);
      const [held] = await h.outbox.claim(1, LEASE);
      const before = await h.outbox.get(id(1));
      const leaseless = [
        () => h.outbox.markFailed(id(1), { error: 'x', retryAt: clock.now() } as never),
        () => h.outbox.markFailed(id(1), { error: 'x', final: true } as never),
        () => h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX } as never),
        () => h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: undefined } as never),
        () => h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: '' }),
        () => h.outbox.markFailed(id(1), { error: 'x', final: true, lease: null } as never),
        () => h.outbox.extend(id(1), undefined as never, LEASE),
      ];
      for (const call of leaseless) await assert.rejects(async () => call(), InvalidArgumentError);
      // Still the holder's: not failed under it, not handed to a third worker (delivered twice).
      assert.deepEqual(await h.outbox.get(id(1)), before);
      assert.deepEqual(await h.outbox.claim(10, LEASE), []);
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: held.lease }), true);
    });

    test('docs/design.md#leases: markFailed with retryAt: delivering -> queued with lastError, not claimable before retryAt', async () => {
      // attempts keep counting.
      await h.outbox.enqueue([outboxMessage(1)]);
      const [claimed] = await h.outbox.claim(1, LEASE);
      const retryAt = clock.now() + 10_000;
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'execution reverted', retryAt, lease: claimed.lease }),
        true,
      );
      assert.deepEqual(await h.outbox.get(id(1)), {
        ...queuedRecord(outboxMessage(1)),
        attempts: 1,
        lastError: 'execution reverted',
        retryAt,
      });
      assert.equal(await h.outbox.depth(), 1, 'a message waiting for its retry is still in the outbox');
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'again', retryAt, lease: claimed.lease }),
        false,
        'a queued message is not failed again',
      );
      await clock.advance(9_999);
      assert.deepEqual(await claimAll(h.outbox), []);
      await clock.advance(1);
      const [again] = await claimAll(h.outbox);
      assert.equal(again.id, id(1));
      assert.equal(again.attempts, 2);
      assert.equal(again.retryAt, null);
      assert.equal(again.lastError, 'execution reverted', 'the last error stays visible while it is retried');
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: again.lease }), true);
      const done = await h.outbox.get(id(1));
      assert.equal(done?.status, 'delivered');
      assert.equal(done?.attempts, 2);
      assert.equal(done?.lastError, 'execution reverted');
      assert.equal(done?.retryAt, null);
    });

    test('docs/design.md#leases: markFailed with a retryAt already past makes the message claimable at once', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      const [claimed] = await h.outbox.claim(1, LEASE);
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'nonce too low', retryAt: clock.now() - 1, lease: claimed.lease }),
        true,
      );
      assert.deepEqual(ids(await claimAll(h.outbox)), [id(1)]);
    });

    test('docs/design.md#leases: markFailed final: delivering -> failed, out of depth and of claim, terminal', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const [claimed] = await h.outbox.claim(1, LEASE);
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'recipient reverts', final: true, lease: claimed.lease }),
        true,
      );
      assert.deepEqual(await h.outbox.get(id(1)), {
        ...queuedRecord(outboxMessage(1)),
        status: 'failed',
        attempts: 1,
        lastError: 'recipient reverts',
      });
      assert.equal(await h.outbox.depth(), 1);
      await clock.advance(LEASE * 10);
      assert.deepEqual(ids(await claimAll(h.outbox)), [id(2)]);
      assert.equal(
        await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease }),
        false,
        'failed is terminal',
      );
      assert.equal(await h.outbox.markFailed(id(1), { error: 'x', final: true, lease: claimed.lease }), false);
      assert.equal(await h.outbox.markFailed(id(1), { error: 'x', retryAt: clock.now(), lease: claimed.lease }), false);
      assert.equal((await h.outbox.get(id(1)))?.status, 'failed');
    });

    test('docs/design.md#leases: markFailed only applies to a delivering message under the given lease', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      assert.equal(
        await h.outbox.markFailed(id(99), { error: 'x', final: true, lease: 'not-a-lease' }),
        false,
        'unknown id',
      );
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'x', final: true, lease: 'not-a-lease' }),
        false,
        'queued, never claimed',
      );
      const [claimed] = await h.outbox.claim(1, LEASE);
      assert.equal(await h.outbox.markFailed(id(1), { error: 'x', final: true, lease: 'not-a-lease' }), false);
      assert.equal(
        await h.outbox.markFailed(id(2), { error: 'x', final: true, lease: claimed.lease }),
        false,
        "another message's lease",
      );
      assert.equal((await h.outbox.get(id(1)))?.status, 'delivering');
      assert.equal((await h.outbox.get(id(2)))?.status, 'queued');
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease }), true);
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'x', final: true, lease: claimed.lease }),
        false,
        'delivered is terminal',
      );
      assert.equal((await h.outbox.get(id(1)))?.lastError, null);
    });

    test(`docs/design.md#leases: markFailed keeps the first ${MAX_ERROR_LENGTH} characters of a long error`, async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      const [claimed] = await h.outbox.claim(1, LEASE);
      const long = 'e'.repeat(MAX_ERROR_LENGTH - 1) + '\u{1F600}' + 'tail';
      assert.equal(await h.outbox.markFailed(id(1), { error: long, retryAt: clock.now(), lease: claimed.lease }), true);
      assert.equal((await h.outbox.get(id(1)))?.lastError, 'e'.repeat(MAX_ERROR_LENGTH - 1), 'not half an emoji');
    });

    test('docs/design.md#leases: invalid consumer arguments throw and change nothing', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      for (const [limit, leaseMs] of [
        [-1, LEASE],
        [1.5, LEASE],
        [Number.NaN, LEASE],
        [1, 0],
        [1, -5],
        [1, Number.POSITIVE_INFINITY],
      ]) {
        await assert.rejects(
          async () => h.outbox.claim(limit, leaseMs),
          OutOfRangeError,
          `claim(${limit}, ${leaseMs})`,
        );
      }
      for (const maxAttempts of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
        await assert.rejects(
          async () => h.outbox.claim(1, LEASE, { maxAttempts }),
          OutOfRangeError,
          `maxAttempts ${maxAttempts}`,
        );
      }
      for (const leaseMs of [0, -1, 1.5, Number.NaN]) {
        await assert.rejects(
          async () => h.outbox.extend(id(1), 'a-lease', leaseMs),
          OutOfRangeError,
          `extend(leaseMs ${leaseMs})`,
        );
      }
      const lease = 'a-lease';
      const bad = [
        () => h.outbox.markDelivered(id(1), {} as never),
        () => h.outbox.markDelivered(id(1), { destinationTxHash: '', lease }),
        () => h.outbox.markDelivered(id(1), { destinationTxHash: 'x'.repeat(257), lease }),
        () => h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: 7 as never }),
        () => h.outbox.markFailed(id(1), { error: 'x', lease } as never),
        () => h.outbox.markFailed(id(1), { error: 'x', retryAt: Number.NaN, lease }),
        () => h.outbox.markFailed(id(1), { error: 'x', final: false, lease } as never),
        () => h.outbox.markFailed(id(1), { error: 42, final: true, lease } as never),
        () => h.outbox.extend(id(1), 7 as never, LEASE),
        () => h.outbox.claim(1, LEASE, 'often' as never),
      ];
      for (const call of bad) await assert.rejects(async () => call(), InvalidArgumentError);
      assert.deepEqual(await h.outbox.get(id(1)), queuedRecord(outboxMessage(1)));
    });

    test('Outbox: get returns undefined for an unknown id and finds an id in any case', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      assert.equal(await h.outbox.get(id(2)), undefined);
      assert.deepEqual(await h.outbox.get(id(1).toUpperCase().replace('0X', '0x')), queuedRecord(outboxMessage(1)));
    });

    test('docs/design.md#http-surface: byTx lists the messages of one (chain, tx) in enqueue order, tx hash in any case', async () => {
      const tx = txHash(42);
      const batch = [outboxMessage(3, T0, { txHash: tx }), outboxMessage(1, T0, { txHash: tx })];
      await h.outbox.enqueue(batch);
      await h.outbox.enqueue([
        outboxMessage(2, T0 - 5, { txHash: tx }),
        outboxMessage(4),
        outboxMessage(5, T0, { txHash: tx, originChain: 'base' }),
      ]);
      const expected = [3, 1, 2].map(id);
      assert.deepEqual(ids(await h.outbox.byTx('ethereum', tx)), expected);
      assert.deepEqual(ids(await h.outbox.byTx('ethereum', tx.toUpperCase().replace('0X', '0x'))), expected);
      assert.deepEqual(ids(await h.outbox.byTx('base', tx)), [id(5)]);
      assert.deepEqual(await h.outbox.byTx('polygon', tx), []);
      assert.deepEqual(await h.outbox.byTx('ethereum', txHash(43)), []);
      assert.deepEqual(await h.outbox.byTx('base', tx), [
        queuedRecord(outboxMessage(5, T0, { txHash: tx, originChain: 'base' })),
      ]);
      // Records carry their lifecycle.
      const claimed = await claimAll(h.outbox);
      const one = claimed.find((m) => m.id === id(1))!;
      await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: one.lease });
      const records = await h.outbox.byTx('ethereum', tx);
      assert.deepEqual(
        records.map((r) => r.status),
        ['delivering', 'delivered', 'delivering'],
      );
      assert.deepEqual(records[0], {
        ...queuedRecord(batch[0]),
        status: 'delivering',
        attempts: 1,
        claimedUntil: clock.now() + LEASE,
      });
    });

    test('docs/design.md#enqueue: a delivered message enqueued again is not stored again and stays delivered', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      const at = clock.now();
      const [claimed] = await claimAll(h.outbox);
      await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: claimed.lease });
      await clock.advance(50);
      assert.equal(await h.outbox.enqueue([outboxMessage(1, T0 + 50)]), 0);
      assert.equal(await h.outbox.depth(), 0);
      assert.equal((await h.outbox.get(id(1)))?.deliveredAt, at);
    });

    test('docs/design.md#leases: a claimed or failed message enqueued again keeps its status and attempts', async () => {
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      await h.outbox.claim(1, LEASE);
      const [two] = await h.outbox.claim(1, LEASE);
      assert.equal(await h.outbox.markFailed(id(2), { error: 'gave up', final: true, lease: two.lease }), true);
      assert.equal(await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]), 0);
      assert.equal((await h.outbox.get(id(1)))?.status, 'delivering');
      assert.equal((await h.outbox.get(id(2)))?.status, 'failed');
      assert.equal((await h.outbox.get(id(2)))?.attempts, 1);
    });

    test('Outbox: the store keeps its own copy of the raw bytes', async () => {
      const m = outboxMessage(1);
      const original = m.raw.slice();
      await h.outbox.enqueue([m]);
      m.raw.fill(0); // the caller reuses its buffer
      const read = await h.outbox.get(m.id);
      assert.deepEqual(read?.raw, original);
      read!.raw.fill(0xff); // a reader scribbles on what it got
      assert.deepEqual((await h.outbox.get(m.id))?.raw, original);
      assert.deepEqual((await h.outbox.byTx('ethereum', m.txHash))[0].raw, original);
      const [claimed] = await claimAll(h.outbox);
      assert.deepEqual(claimed.raw, original);
      claimed.raw.fill(0xff);
      assert.deepEqual((await h.outbox.get(m.id))?.raw, original);
    });

    test('docs/design.md#leases: concurrent claimers never hand out a message twice, and all are claimed', async () => {
      // Many claim() calls race on the same queue.
      const N = 60;
      await h.outbox.enqueue(Array.from({ length: N }, (_, i) => outboxMessage(i + 1)));
      const handles = [h.outbox];
      const extra: { close(): void | Promise<void> }[] = [];
      if (h.connect) {
        for (let i = 0; i < 3; i++) {
          const c = await h.connect();
          extra.push(c);
          handles.push(c.outbox);
        }
      }
      try {
        const seen = new Map<string, number>();
        // Rounds of racing claimers until nothing is left; every call starts before any settles.
        for (let round = 0; round < N; round++) {
          const results = await Promise.all(
            Array.from({ length: 12 }, (_, i) =>
              Promise.resolve().then(() => handles[i % handles.length].claim(2, LEASE)),
            ),
          );
          const got = results.flat();
          for (const m of got) seen.set(m.id, (seen.get(m.id) ?? 0) + 1);
          if (got.length === 0) break;
        }
        assert.equal(seen.size, N, 'every message claimed');
        for (const [mid, times] of seen) assert.equal(times, 1, `${mid} claimed once`);
        for (let i = 1; i <= N; i++) assert.equal((await h.outbox.get(id(i)))?.attempts, 1);
        assert.equal(await h.outbox.depth(), N);
      } finally {
        for (const c of extra) await c.close();
      }
    });

    test('docs/design.md#leases: racing claimers dead-letter or claim each expired message once, never both', async () => {
      // Claimers with and without maxAttempts race on expired messages.
      const N = 30;
      await h.outbox.enqueue(Array.from({ length: N }, (_, i) => outboxMessage(i + 1)));
      await h.outbox.claim(N, 1_000);
      await clock.advance(1_000);
      assert.equal((await h.outbox.claim(N, 1_000)).length, N, 'taken over once: one expired lease each');
      await clock.advance(1_000);
      const last = await h.outbox.claim(N, 1_000, { maxAttempts: 2 });
      assert.equal(last.filter((m) => m.lastChance).length, N, 'the second expiry: a last look each');
      await clock.advance(1_000); // the last look's lease expired too: maxAttempts 2 dead-letters them
      const handles = [h.outbox];
      const extra: { close(): void | Promise<void> }[] = [];
      if (h.connect) {
        for (let i = 0; i < 2; i++) {
          const c = await h.connect();
          extra.push(c);
          handles.push(c.outbox);
        }
      }
      try {
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            Promise.resolve().then(() =>
              handles[i % handles.length].claim(3, 1_000, i % 3 === 0 ? undefined : { maxAttempts: 2 }),
            ),
          ),
        );
        const claimed = ids(results.flat());
        assert.equal(new Set(claimed).size, claimed.length, 'no message handed out twice');
        for (let i = 1; i <= N; i++) {
          const record = (await h.outbox.get(id(i)))!;
          assert.equal(record.leaseExpiries, 3, `${id(i)}: its third expiry counted once`);
          if (claimed.includes(id(i))) {
            assert.equal(record.status, 'delivering');
            assert.equal(record.attempts, 4);
          } else {
            assert.equal(record.status, 'failed', `${id(i)}: neither claimed nor dead-lettered`);
            assert.equal(record.lastError, deadLetterError(3, 2));
            assert.equal(record.attempts, 3);
          }
        }
      } finally {
        for (const c of extra) await c.close();
      }
    });

    test('docs/delivery.md#retries-pending-proofs-dead-letters: the attempt state lives in columns', async () => {
      // markFailed with state writes them, without state (a release) keeps them, requeue resets them.
      await h.outbox.enqueue([outboxMessage(1)]);
      let [m] = await h.outbox.claim(1, LEASE);
      const state = { failures: 2, pendingSince: T0 + 123.5, polls: 7 };
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'for people', retryAt: clock.now(), lease: m.lease, state }),
        true,
      );
      assert.deepEqual(await h.outbox.get(id(1)), {
        ...queuedRecord(outboxMessage(1)),
        attempts: 1,
        lastError: 'for people',
        retryAt: clock.now(),
        ...state,
      });
      [m] = await h.outbox.claim(1, LEASE);
      assert.deepEqual([m.failures, m.pendingSince, m.polls], [2, T0 + 123.5, 7], 'the next claim reads them');
      assert.equal(await h.outbox.markFailed(id(1), { error: 'released', retryAt: clock.now(), lease: m.lease }), true);
      let record = await h.outbox.get(id(1));
      assert.deepEqual([record?.failures, record?.pendingSince, record?.polls], [2, T0 + 123.5, 7], 'kept');
      [m] = await h.outbox.claim(1, LEASE);
      const last = { failures: 5, pendingSince: null, polls: 0 };
      assert.equal(
        await h.outbox.markFailed(id(1), { error: 'given up', final: true, lease: m.lease, state: last }),
        true,
      );
      assert.equal(await h.outbox.requeue(id(1)), true);
      record = await h.outbox.get(id(1));
      assert.deepEqual(
        [record?.failures, record?.pendingSince, record?.polls],
        [0, null, 0],
        'requeue resets the count: the worker gives a re-driven message maxAttempts again',
      );
      for (const bad of [
        { failures: -1, pendingSince: null, polls: 0 },
        { failures: 1.5, pendingSince: null, polls: 0 },
        { failures: 0, pendingSince: 'soon', polls: 0 },
        { failures: 0, pendingSince: null, polls: Number.NaN },
      ]) {
        [m] = await h.outbox.claim(1, LEASE);
        await assert.rejects(async () =>
          h.outbox.markFailed(id(1), { error: 'x', retryAt: clock.now(), lease: m.lease, state: bad as never }),
        );
        assert.equal(await h.outbox.markFailed(id(1), { error: 'x', retryAt: clock.now(), lease: m.lease }), true);
      }
    });

    /** A signed transaction of message `n` at `nonce` (its bytes stand in for one; the store does not parse them). */
    const broadcast = (n: number, nonce: number, replacement = 0, signer = SIGNER) => ({
      messageId: id(n),
      chainId: 31337,
      signer,
      nonce,
      hash: `0x${(n * 1_000 + nonce * 10 + replacement).toString(16).padStart(64, '0')}`,
      raw: `0x02f8${(n * 1_000 + nonce * 10 + replacement).toString(16).padStart(8, '0')}`,
    });
    const slotOf = (b: { chainId: number; signer: string; nonce: number }) => ({
      chainId: b.chainId,
      signer: b.signer,
      nonce: b.nonce,
    });
    const hashes = (entries: readonly { hash: string }[]) => entries.map((e) => e.hash);

    test('docs/delivery.md#the-transaction-journal: a first broadcast is recorded under the live lease, which it renews', async () => {
      // Without the live lease nothing is recorded.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const [m] = await h.outbox.claim(1, 5_000);
      await clock.advance(4_000);
      const first = broadcast(1, 0);
      assert.equal(await h.outbox.recordBroadcast(first, { lease: 'not-the-lease', leaseMs: 5_000 }), false);
      assert.equal(
        await h.outbox.recordBroadcast(broadcast(2, 1), { lease: m.lease, leaseMs: 5_000 }),
        false,
        'another message (queued)',
      );
      assert.deepEqual(await h.outbox.openBroadcasts({ messageId: id(1) }), []);
      assert.equal(await h.outbox.recordBroadcast(first, { lease: m.lease, leaseMs: 5_000 }), true);
      assert.equal(
        (await h.outbox.get(id(1)))?.claimedUntil,
        clock.now() + 5_000,
        'the lease is renewed by the record',
      );
      const [entry] = await h.outbox.openBroadcasts({ messageId: id(1) });
      assert.deepEqual(entry, { ...first, sentAt: clock.now() });
      assert.equal(
        await h.outbox.recordBroadcast(first, { lease: m.lease, leaseMs: 5_000 }),
        true,
        'the same hash again',
      );
      assert.equal((await h.outbox.openBroadcasts({ messageId: id(1) })).length, 1, 'recorded once');
      // The lease expires and another worker claims the message: the first holder's fence is gone.
      await clock.advance(5_000);
      const [taken] = await h.outbox.claim(1, 5_000);
      assert.equal(taken.id, id(1));
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 1), { lease: m.lease, leaseMs: 5_000 }), false);
      assert.deepEqual(
        hashes(await h.outbox.openBroadcasts({ messageId: id(1) })),
        [first.hash],
        'the next holder reads it',
      );
    });

    test('docs/delivery.md#the-transaction-journal: a replacement is recorded only beside an open broadcast', async () => {
      // A replacement (no lease) needs an open broadcast of the same slot and message.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const [m] = await h.outbox.claim(1, LEASE);
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 4, 1)), false, 'no open slot yet');
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 4), { lease: m.lease, leaseMs: LEASE }), true);
      await clock.advance(1);
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 4, 1)), true, 'a replacement at the same nonce');
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 5, 1)), false, 'another nonce');
      assert.equal(await h.outbox.recordBroadcast({ ...broadcast(2, 4, 2), nonce: 4 }), false, 'another message');
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 4, 2, OTHER_SIGNER)), false, 'another signer');
      assert.deepEqual(hashes(await h.outbox.openBroadcasts({ messageId: id(1) })), [
        broadcast(1, 4).hash,
        broadcast(1, 4, 1).hash,
      ]);
      // Recorded while the message is delivered or queued too: the signer's own replacement needs no lease.
      assert.equal(await h.outbox.markDelivered(id(1), { destinationTxHash: DEST_TX, lease: m.lease }), true);
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 4, 3)), true);
    });

    test('docs/delivery.md#the-transaction-journal: forgetBroadcast, closeSlot and openBroadcasts', async () => {
      // forgetBroadcast drops a refused broadcast; closeSlot settles a slot; openBroadcasts lists what may
      // still land, by message or by signer, oldest first.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2), outboxMessage(3)]);
      const claimed = await h.outbox.claim(3, LEASE);
      const fence = (n: number) => ({ lease: claimed[n - 1].lease, leaseMs: LEASE });
      for (const [n, nonce] of [
        [1, 0],
        [2, 1],
        [3, 2],
      ]) {
        assert.equal(await h.outbox.recordBroadcast(broadcast(n, nonce), fence(n)), true);
        await clock.advance(1);
      }
      assert.equal(await h.outbox.recordBroadcast(broadcast(2, 1, 1)), true);
      assert.equal(await h.outbox.recordBroadcast(broadcast(3, 7, 0, OTHER_SIGNER), fence(3)), true);
      const mine = { chainId: 31337, signer: SIGNER };
      assert.deepEqual(hashes(await h.outbox.openBroadcasts(mine)), [
        broadcast(1, 0).hash,
        broadcast(2, 1).hash,
        broadcast(3, 2).hash,
        broadcast(2, 1, 1).hash,
      ]);
      assert.deepEqual(await h.outbox.openBroadcasts({ chainId: 1, signer: SIGNER }), [], 'another chain');
      // The node refused message 3's broadcast for good: it never existed.
      assert.equal(await h.outbox.forgetBroadcast(broadcast(3, 2).hash), true);
      assert.equal(await h.outbox.forgetBroadcast(broadcast(3, 2).hash), false);
      // Nonce 1: the replacement was mined; nonce 0: used by a transaction not in the journal.
      assert.equal(
        await h.outbox.closeSlot(slotOf(broadcast(2, 1)), { outcome: 'mined', hash: broadcast(2, 1, 1).hash }),
        2,
      );
      assert.equal(await h.outbox.closeSlot(slotOf(broadcast(1, 0)), { outcome: 'dropped' }), 1);
      assert.equal(await h.outbox.closeSlot(slotOf(broadcast(1, 0)), { outcome: 'dropped' }), 0, 'settled once');
      assert.deepEqual(await h.outbox.openBroadcasts(mine), []);
      assert.deepEqual(await h.outbox.openBroadcasts({ messageId: id(2) }), []);
      assert.deepEqual(hashes(await h.outbox.openBroadcasts({ messageId: id(3) })), [
        broadcast(3, 7, 0, OTHER_SIGNER).hash,
      ]);
      assert.equal(await h.outbox.forgetBroadcast(broadcast(2, 1).hash), false, 'a settled broadcast is history');
      assert.equal(
        await h.outbox.recordBroadcast(broadcast(2, 1, 4)),
        false,
        'no replacement once its slot is settled',
      );
      assert.equal(
        await h.outbox.recordBroadcast(broadcast(2, 1, 5), fence(2)),
        true,
        'a settled nonce does not hold the slot (a new first broadcast under the lease)',
      );
    });

    test("docs/delivery.md#the-transaction-journal: markDelivered settles the delivering transaction's slot, only that one", async () => {
      // In the same write as the delivery.
      await h.outbox.enqueue([outboxMessage(1), outboxMessage(2)]);
      const [m1, m2] = await h.outbox.claim(2, LEASE);
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 0), { lease: m1.lease, leaseMs: LEASE }), true);
      await clock.advance(1);
      assert.equal(await h.outbox.recordBroadcast(broadcast(1, 0, 1)), true);
      assert.equal(await h.outbox.recordBroadcast(broadcast(2, 1), { lease: m2.lease, leaseMs: LEASE }), true);
      // A wrong lease settles nothing.
      assert.equal(
        await h.outbox.markDelivered(id(1), { destinationTxHash: broadcast(1, 0, 1).hash, lease: m2.lease }),
        false,
      );
      assert.equal((await h.outbox.openBroadcasts({ messageId: id(1) })).length, 2);
      assert.equal(
        await h.outbox.markDelivered(id(1), { destinationTxHash: broadcast(1, 0, 1).hash, lease: m1.lease }),
        true,
      );
      assert.deepEqual(await h.outbox.openBroadcasts({ messageId: id(1) }), [], 'both broadcasts of the slot settled');
      // Delivered by a transaction the journal does not hold (another relayer): its slot stays open.
      assert.equal(await h.outbox.markDelivered(id(2), { destinationTxHash: DEST_TX, lease: m2.lease }), true);
      assert.deepEqual(hashes(await h.outbox.openBroadcasts({ messageId: id(2) })), [broadcast(2, 1).hash]);
    });

    test('docs/delivery.md#the-transaction-journal: invalid journal arguments throw and record nothing', async () => {
      await h.outbox.enqueue([outboxMessage(1)]);
      const [m] = await h.outbox.claim(1, LEASE);
      const fence = { lease: m.lease, leaseMs: LEASE };
      const good = broadcast(1, 0);
      const calls = [
        () => h.outbox.recordBroadcast({ ...good, hash: good.hash.toUpperCase().replace('0X', '0x') }, fence),
        () => h.outbox.recordBroadcast({ ...good, hash: '0x1234' }, fence),
        () => h.outbox.recordBroadcast({ ...good, signer: '0xABCDEF0000000000000000000000000000000000' }, fence),
        () => h.outbox.recordBroadcast({ ...good, nonce: -1 }, fence),
        () => h.outbox.recordBroadcast({ ...good, nonce: 1.5 }, fence),
        () => h.outbox.recordBroadcast({ ...good, chainId: -1 }, fence),
        () => h.outbox.recordBroadcast({ ...good, raw: 'f86b' }, fence),
        () => h.outbox.recordBroadcast({ ...good, raw: '0x123' }, fence),
        () => h.outbox.recordBroadcast({ ...good, messageId: 'x' }, fence),
        () => h.outbox.recordBroadcast(good, { lease: '', leaseMs: LEASE }),
        () => h.outbox.recordBroadcast(good, { lease: m.lease, leaseMs: 0 }),
        () => h.outbox.closeSlot(slotOf(good), { outcome: 'mined' } as never),
        () => h.outbox.closeSlot(slotOf(good), { outcome: 'lost' } as never),
        () => h.outbox.closeSlot({ ...slotOf(good), signer: 'nobody' }, { outcome: 'dropped' }),
        () => h.outbox.openBroadcasts({ chainId: 1, signer: 'nobody' }),
      ];
      for (const call of calls) await assert.rejects(async () => call());
      assert.deepEqual(await h.outbox.openBroadcasts({ messageId: id(1) }), []);
      assert.equal(await h.outbox.recordBroadcast(good, fence), true);
    });

    test("docs/design.md#leases: claim and a lease-holder's markDelivered racing: the message ends delivered once, never reclaimed", async () => {
      await h.outbox.enqueue(Array.from({ length: 20 }, (_, i) => outboxMessage(i + 1)));
      const claimed = await h.outbox.claim(20, 1_000);
      await clock.advance(1_000); // every lease expired: claimers and late holders now race
      const [marks, reclaimed] = await Promise.all([
        Promise.all(
          claimed.map((m) =>
            Promise.resolve().then(() => h.outbox.markDelivered(m.id, { destinationTxHash: DEST_TX, lease: m.lease })),
          ),
        ),
        Promise.all(Array.from({ length: 10 }, () => Promise.resolve().then(() => h.outbox.claim(2, 1_000)))).then(
          (r) => r.flat(),
        ),
      ]);
      const reclaimedIds = new Set(ids(reclaimed));
      assert.equal(reclaimedIds.size, reclaimed.length, 'no message reclaimed twice');
      for (let i = 0; i < claimed.length; i++) {
        const m = claimed[i];
        const record = await h.outbox.get(m.id);
        // Exactly one of the two won: the late holder delivered it, or a new claimer holds it.
        assert.equal(marks[i], !reclaimedIds.has(m.id), `${m.id}: delivered xor reclaimed`);
        assert.equal(record?.status, marks[i] ? 'delivered' : 'delivering');
      }
    });
  });
}
