/**
 * The argument checks every outbox engine shares (lib/outbox/checks.ts), called directly: each
 * bound at its edge (the last value accepted, the first refused), the error class and its exact
 * text, and what a check returns to store. The engines' use of them is the outbox contract suite's
 * (lib/testing/outbox-contract/, run on every engine by test/process/outbox.test.ts); docs/outbox.md#leases.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InvalidArgumentError, OutOfRangeError } from '../../../lib/errors/classes.ts';
import {
  checkAcquireSigner,
  checkBroadcast,
  checkClaim,
  checkExtend,
  checkJournalFilter,
  checkList,
  checkMarkDelivered,
  checkMarkFailed,
  checkNonceSlot,
  checkNonceSlotOutcome,
  checkRequeueFailed,
  checkSignerLease,
  claimedMessage,
  deadLetterError,
  MAX_DESTINATION_TX_HASH_LENGTH,
  MAX_ERROR_LENGTH,
  MAX_RAW_TRANSACTION_LENGTH,
  newLease,
  signerLeaseAllows,
  validateOutboxBatch,
} from '../../../lib/outbox/checks.ts';
import type { OutboxRecord } from '../../../lib/outbox/types.ts';

const U31 = 2 ** 31 - 1;
const SIGNER = `0x${'ab'.repeat(20)}`;
const HASH = `0x${'cd'.repeat(32)}`;
const ID = `0x${'ef'.repeat(32)}`;

/** `call` throws `type` with exactly `message`. */
function refuses(call: () => unknown, type: typeof InvalidArgumentError | typeof OutOfRangeError, message: string) {
  assert.throws(call, (error: Error) => {
    assert.ok(error instanceof type, `${error.name}: ${error.message}`);
    assert.equal(error.message, message);
    return true;
  });
}

describe('outbox argument checks (docs/outbox.md#leases)', () => {
  test('claim: limit 0 and up, leaseMs a positive integer, maxLeaseExpiries 1 to 2^31 - 1 or absent', () => {
    assert.equal(checkClaim(0, 1), null);
    assert.equal(checkClaim(5, 1, {}), null);
    assert.equal(checkClaim(1, 1, { maxLeaseExpiries: 1 }), 1);
    assert.equal(checkClaim(1, 1, { maxLeaseExpiries: U31 }), U31);
    refuses(() => checkClaim(-1, 1), OutOfRangeError, 'claim(limit): expected a non-negative integer, got -1');
    refuses(() => checkClaim(1.5, 1), OutOfRangeError, 'claim(limit): expected a non-negative integer, got 1.5');
    refuses(() => checkClaim(1, 0), OutOfRangeError, 'claim(leaseMs): expected a positive integer, got 0');
    refuses(() => checkClaim(1, 0.5), OutOfRangeError, 'claim(leaseMs): expected a positive integer, got 0.5');
    refuses(() => checkClaim(1, '5' as never), OutOfRangeError, 'claim(leaseMs): expected a positive integer, got 5');
    refuses(() => checkClaim(1, 1, null as never), InvalidArgumentError, 'claim(opts): expected an object');
    refuses(() => checkClaim(1, 1, 'x' as never), InvalidArgumentError, 'claim(opts): expected an object');
    for (const max of [0, U31 + 1, 1.5])
      refuses(
        () => checkClaim(1, 1, { maxLeaseExpiries: max }),
        OutOfRangeError,
        `claim(maxLeaseExpiries): expected a positive integer, got ${max}`,
      );
  });

  test('list and requeueFailed: status one of four, destination a uint32, limit 1 to 1000 (defaults 100 and 1000)', () => {
    assert.deepEqual(checkList(), { status: null, destination: null, limit: 100 });
    assert.deepEqual(checkList({ status: 'failed', destination: 0xffff_ffff, limit: 1000 }), {
      status: 'failed',
      destination: 0xffff_ffff,
      limit: 1000,
    });
    assert.deepEqual(checkList({ destination: 0, limit: 1 }), { status: null, destination: 0, limit: 1 });
    assert.deepEqual(checkRequeueFailed(), { destination: null, limit: 1000 });
    refuses(
      () => checkList({ status: 'lost' as never }),
      InvalidArgumentError,
      'list(status): expected one of queued, delivering, delivered, failed, got lost',
    );
    refuses(() => checkList(null as never), InvalidArgumentError, 'list(opts): expected an object');
    refuses(() => checkRequeueFailed(7 as never), InvalidArgumentError, 'requeueFailed(opts): expected an object');
    refuses(
      () => checkList({ destination: 2 ** 32 }),
      OutOfRangeError,
      `list(destination): expected a uint32 domain, got ${2 ** 32}`,
    );
    for (const limit of [0, 1001])
      refuses(
        () => checkRequeueFailed({ limit }),
        OutOfRangeError,
        `requeueFailed(limit): expected an integer from 1 to 1000, got ${limit}`,
      );
    refuses(
      () => checkList({ limit: 2.5 }),
      OutOfRangeError,
      'list(limit): expected an integer from 1 to 1000, got 2.5',
    );
  });

  test('extend: a positive leaseMs and the lease claim() returned', () => {
    assert.equal(checkExtend('l', 1), 'l');
    refuses(() => checkExtend('l', 0), OutOfRangeError, 'extend(leaseMs): expected a positive integer, got 0');
    refuses(() => checkExtend('', 1), InvalidArgumentError, 'extend: lease must be the string claim() returned');
    refuses(() => checkExtend(7, 1), InvalidArgumentError, 'extend: lease must be the string claim() returned');
  });

  test('claimedMessage: lastChance from leaseExpiries equal to maxLeaseExpiries, never without a maximum', () => {
    const record = { id: ID, leaseExpiries: 3 } as OutboxRecord;
    assert.deepEqual(claimedMessage(record, 'l', 3), { id: ID, leaseExpiries: 3, lease: 'l', lastChance: true });
    assert.deepEqual(claimedMessage(record, 'l', 2), { id: ID, leaseExpiries: 3, lease: 'l', lastChance: true });
    assert.deepEqual(claimedMessage(record, 'l', 4), { id: ID, leaseExpiries: 3, lease: 'l' });
    assert.deepEqual(claimedMessage(record, 'l', null), { id: ID, leaseExpiries: 3, lease: 'l' });
    assert.equal(
      deadLetterError(4, 3),
      'dead letter: its lease expired 4 times with no outcome recorded (maxLeaseExpiries 3)',
    );
  });

  test(`markDelivered: a hash of 1 to ${MAX_DESTINATION_TX_HASH_LENGTH} characters and a lease`, () => {
    const long = 'x'.repeat(MAX_DESTINATION_TX_HASH_LENGTH);
    assert.deepEqual(checkMarkDelivered({ destinationTxHash: long, lease: 'l' }), {
      destinationTxHash: long,
      lease: 'l',
    });
    assert.deepEqual(checkMarkDelivered({ destinationTxHash: 'x', lease: 'l' }), {
      destinationTxHash: 'x',
      lease: 'l',
    });
    const text = `markDelivered: destinationTxHash must be a string of 1..${MAX_DESTINATION_TX_HASH_LENGTH} characters`;
    refuses(() => checkMarkDelivered({ destinationTxHash: `${long}x`, lease: 'l' }), InvalidArgumentError, text);
    refuses(() => checkMarkDelivered({ destinationTxHash: '', lease: 'l' }), InvalidArgumentError, text);
    refuses(() => checkMarkDelivered(undefined as never), InvalidArgumentError, text);
    refuses(
      () => checkMarkDelivered({ destinationTxHash: 'x' } as never),
      InvalidArgumentError,
      'markDelivered: lease must be the string claim() returned',
    );
  });

  test('markFailed: the error cut to its limit (no half surrogate pair), retryAt or final, the attempt state bounded', () => {
    const state = { failures: U31, pendingSince: 5, polls: 0 };
    assert.deepEqual(checkMarkFailed({ error: 'e', retryAt: 0, lease: 'l', state }), {
      error: 'e',
      retryAt: 0,
      lease: 'l',
      state,
    });
    assert.deepEqual(checkMarkFailed({ error: 'e', final: true, lease: 'l' }), {
      error: 'e',
      retryAt: null,
      lease: 'l',
      state: null,
    });
    assert.deepEqual(checkMarkFailed({ error: null, retryAt: 1, lease: 'l' }), {
      error: null,
      retryAt: 1,
      lease: 'l',
      state: null,
    });
    const exact = 'e'.repeat(MAX_ERROR_LENGTH);
    assert.equal(checkMarkFailed({ error: `${exact}tail`, retryAt: 0, lease: 'l' }).error, exact);
    const cut = `${'e'.repeat(MAX_ERROR_LENGTH - 1)}\u{1F600}`;
    assert.equal(checkMarkFailed({ error: cut, retryAt: 0, lease: 'l' }).error, 'e'.repeat(MAX_ERROR_LENGTH - 1));
    const whole = `${'e'.repeat(MAX_ERROR_LENGTH - 2)}\u{1F600}`;
    assert.equal(checkMarkFailed({ error: whole, retryAt: 0, lease: 'l' }).error, whole, 'a whole pair is kept');
    assert.deepEqual(
      checkMarkFailed({ error: 'e', retryAt: 0, lease: 'l', state: { failures: 0, pendingSince: null, polls: U31 } })
        .state,
      { failures: 0, pendingSince: null, polls: U31 },
    );
    refuses(
      () => checkMarkFailed({ error: 7, retryAt: 0, lease: 'l' } as never),
      InvalidArgumentError,
      'markFailed: error must be a string, or null with retryAt',
    );
    refuses(
      () => checkMarkFailed({ error: null, final: true, lease: 'l' } as never),
      InvalidArgumentError,
      'markFailed: error must be a string when final',
    );
    refuses(
      () => checkMarkFailed({ error: 'e', final: false, lease: 'l' } as never),
      InvalidArgumentError,
      'markFailed: final must be true',
    );
    for (const retryAt of [Number.NaN, Number.POSITIVE_INFINITY, '1', undefined])
      refuses(
        () => checkMarkFailed({ error: 'e', retryAt, lease: 'l' } as never),
        InvalidArgumentError,
        'markFailed: retryAt must be a finite number (ms) or final: true',
      );
    refuses(
      () => checkMarkFailed({ error: 'e', retryAt: 0, lease: 'l', state: null } as never),
      InvalidArgumentError,
      'markFailed: state must be an object',
    );
    refuses(
      () => checkMarkFailed({ error: 'e', retryAt: 0, lease: 'l', state: 'x' } as never),
      InvalidArgumentError,
      'markFailed: state must be an object',
    );
    for (const failures of [-1, U31 + 1, 1.5])
      refuses(
        () =>
          checkMarkFailed({ error: 'e', retryAt: 0, lease: 'l', state: { failures, pendingSince: null, polls: 0 } }),
        OutOfRangeError,
        'markFailed: state.failures must be a non-negative integer',
      );
    for (const polls of [-1, U31 + 1])
      refuses(
        () =>
          checkMarkFailed({ error: 'e', retryAt: 0, lease: 'l', state: { failures: 0, pendingSince: null, polls } }),
        OutOfRangeError,
        'markFailed: state.polls must be a non-negative integer',
      );
    for (const pendingSince of [Number.NaN, '5'])
      refuses(
        () =>
          checkMarkFailed({
            error: 'e',
            retryAt: 0,
            lease: 'l',
            state: { failures: 0, pendingSince: pendingSince as never, polls: 0 },
          }),
        InvalidArgumentError,
        'markFailed: state.pendingSince must be a finite number (ms) or null',
      );
  });

  test('nonce slots and signer keys: chain id and nonce non-negative integers, the signer a lower-case address', () => {
    assert.deepEqual(checkNonceSlot({ chainId: 0, signer: SIGNER, nonce: 0, extra: 1 } as never, 'm'), {
      chainId: 0,
      signer: SIGNER,
      nonce: 0,
    });
    refuses(() => checkNonceSlot(null as never, 'm'), InvalidArgumentError, 'm: expected an object');
    refuses(
      () => checkNonceSlot({ chainId: -1, signer: SIGNER, nonce: 0 }, 'm'),
      OutOfRangeError,
      'm: chainId must be a non-negative integer',
    );
    refuses(
      () => checkNonceSlot({ chainId: 1, signer: SIGNER.toUpperCase().replace('0X', '0x'), nonce: 0 }, 'm'),
      InvalidArgumentError,
      'm: signer must be a lower-case 0x address',
    );
    refuses(
      () => checkNonceSlot({ chainId: 1, signer: `${SIGNER}00`, nonce: 0 }, 'm'),
      InvalidArgumentError,
      'm: signer must be a lower-case 0x address',
    );
    refuses(
      () => checkNonceSlot({ chainId: 1, signer: `x${SIGNER}`, nonce: 0 }, 'm'),
      InvalidArgumentError,
      'm: signer must be a lower-case 0x address',
    );
    refuses(
      () => checkNonceSlot({ chainId: 1, signer: SIGNER, nonce: -1 }, 'm'),
      OutOfRangeError,
      'm: nonce must be a non-negative integer',
    );
    refuses(
      () => checkNonceSlot({ chainId: 1, signer: SIGNER, nonce: 0.5 }, 'm'),
      OutOfRangeError,
      'm: nonce must be a non-negative integer',
    );
  });

  test('recordBroadcast: lower-case ids and hex, raw bounded, an optional signer lease and fence', () => {
    const b = { chainId: 1, signer: SIGNER, nonce: 2, messageId: ID, hash: HASH, raw: '0x02f8' };
    assert.deepEqual(checkBroadcast(b, undefined), { broadcast: b, fence: null });
    assert.deepEqual(checkBroadcast({ ...b, signerLease: 's' }, { lease: 'l', leaseMs: 1 }), {
      broadcast: { ...b, signerLease: 's' },
      fence: { lease: 'l', leaseMs: 1 },
    });
    const longest = `0x${'ab'.repeat((MAX_RAW_TRANSACTION_LENGTH - 2) / 2)}`;
    assert.equal(checkBroadcast({ ...b, raw: longest }, undefined).broadcast.raw, longest);
    const rawText = `recordBroadcast: raw must be the signed transaction as lower-case 0x-hex, at most ${MAX_RAW_TRANSACTION_LENGTH} characters`;
    for (const raw of [`${longest}ab`, '0x', '0xABCD', '0x0', '02f8', 'x0x02', '0x02x', 7])
      refuses(() => checkBroadcast({ ...b, raw } as never, undefined), InvalidArgumentError, rawText);
    refuses(
      () => checkBroadcast({ ...b, messageId: ID.toUpperCase().replace('0X', '0x') }, undefined),
      InvalidArgumentError,
      'recordBroadcast: messageId must be lower-case 0x + 64 hex',
    );
    refuses(
      () => checkBroadcast({ ...b, messageId: `${ID}00` }, undefined),
      InvalidArgumentError,
      'recordBroadcast: messageId must be lower-case 0x + 64 hex',
    );
    refuses(
      () => checkBroadcast({ ...b, hash: HASH.toUpperCase().replace('0X', '0x') }, undefined),
      InvalidArgumentError,
      'recordBroadcast: hash must be lower-case 0x + 64 hex',
    );
    refuses(
      () => checkBroadcast({ ...b, hash: HASH.slice(0, -2) }, undefined),
      InvalidArgumentError,
      'recordBroadcast: hash must be lower-case 0x + 64 hex',
    );
    refuses(
      () => checkBroadcast({ ...b, signerLease: '' }, undefined),
      InvalidArgumentError,
      'recordBroadcast(signerLease): lease must be the string claim() returned',
    );
    refuses(
      () => checkBroadcast(b, { lease: 'l', leaseMs: 0 }),
      OutOfRangeError,
      'recordBroadcast(leaseMs): expected a positive integer, got 0',
    );
    refuses(
      () => checkBroadcast(b, { lease: '', leaseMs: 1 }),
      InvalidArgumentError,
      'recordBroadcast: lease must be the string claim() returned',
    );
  });

  test('signer leases: a printable ASCII holder of 1 to 200 characters; a renewal needs leaseMs, a release none', () => {
    const key = { chainId: 1, signer: SIGNER };
    const holder = 'h'.repeat(200);
    assert.deepEqual(checkAcquireSigner(key, holder, 1), { ...key, holder });
    assert.deepEqual(checkAcquireSigner(key, ' ~', 1), { ...key, holder: ' ~' });
    const text = 'acquireSignerLease: holder must be printable ASCII, 1 to 200 characters';
    for (const bad of [`${holder}h`, '', 'a\nb', 'é', 'a\x7f', 7])
      refuses(() => checkAcquireSigner(key, bad, 1), InvalidArgumentError, text);
    refuses(
      () => checkAcquireSigner(key, 'h', 0),
      OutOfRangeError,
      'acquireSignerLease(leaseMs): expected a positive integer, got 0',
    );
    refuses(
      () => checkAcquireSigner({ chainId: -1, signer: SIGNER }, 'h', 1),
      OutOfRangeError,
      'acquireSignerLease: chainId must be a non-negative integer',
    );
    assert.deepEqual(checkSignerLease({ ...key, nonce: 9 } as never, 'l', 'releaseSignerLease'), {
      ...key,
      lease: 'l',
    });
    assert.deepEqual(checkSignerLease(key, 'l', 'renewSignerLease', 5), { ...key, lease: 'l' });
    refuses(
      () => checkSignerLease(key, 'l', 'renewSignerLease'),
      OutOfRangeError,
      'renewSignerLease(leaseMs): expected a positive integer, got undefined',
    );
    refuses(
      () => checkSignerLease(key, 'l', 'releaseSignerLease', 0),
      OutOfRangeError,
      'releaseSignerLease(leaseMs): expected a positive integer, got 0',
    );
    refuses(
      () => checkSignerLease(key, '', 'releaseSignerLease'),
      InvalidArgumentError,
      'releaseSignerLease: lease must be the string claim() returned',
    );
  });

  test('signerLeaseAllows: under a lease only that lease; without one only while no live lease (expired at now)', () => {
    const row = { lease: 'a', expiresAt: 100 };
    assert.equal(signerLeaseAllows(row, 'a', 500), true, 'its own lease, even expired');
    assert.equal(signerLeaseAllows(row, 'b', 0), false);
    assert.equal(signerLeaseAllows(undefined, 'a', 0), false, 'a lease nobody holds');
    assert.equal(signerLeaseAllows(undefined, undefined, 0), true);
    assert.equal(signerLeaseAllows(row, undefined, 100), true, 'expired at now');
    assert.equal(signerLeaseAllows(row, undefined, 99), false, 'still live');
  });

  test('closeNonceSlot outcomes and openBroadcasts filters', () => {
    assert.deepEqual(checkNonceSlotOutcome({ outcome: 'dropped', hash: HASH } as never), { outcome: 'dropped' });
    assert.deepEqual(checkNonceSlotOutcome({ outcome: 'mined', hash: HASH, x: 1 } as never), {
      outcome: 'mined',
      hash: HASH,
    });
    const text = "closeNonceSlot: outcome must be { outcome: 'mined', hash } or { outcome: 'dropped' }";
    for (const bad of [
      { outcome: 'mined', hash: HASH.toUpperCase().replace('0X', '0x') },
      { outcome: 'mined', hash: HASH.slice(0, -2) },
      { outcome: 'replaced', hash: HASH },
      undefined,
    ])
      refuses(() => checkNonceSlotOutcome(bad as never), InvalidArgumentError, text);
    assert.deepEqual(checkJournalFilter({ messageId: ID.toUpperCase().replace('0X', '0x') }), { messageId: ID });
    assert.deepEqual(checkJournalFilter({ chainId: 3, signer: SIGNER, nonce: 4 } as never), {
      chainId: 3,
      signer: SIGNER,
    });
    refuses(() => checkJournalFilter(null as never), InvalidArgumentError, 'openBroadcasts: expected an object');
    refuses(
      () => checkJournalFilter({ messageId: 7 } as never),
      InvalidArgumentError,
      'openBroadcasts: messageId must be a string',
    );
    refuses(
      () => checkJournalFilter({ chainId: 1, signer: 'x' }),
      InvalidArgumentError,
      'openBroadcasts: signer must be a lower-case 0x address',
    );
  });

  test('enqueue batches: the first invalid message and field named; a batch is all valid or refused', () => {
    const ok = {
      id: ID,
      originChain: 'a',
      txHash: HASH,
      origin: 0,
      destination: 0xffff_ffff,
      nonce: 0,
      raw: new Uint8Array(1),
      enqueuedAt: 0,
    };
    validateOutboxBatch([ok, { ...ok, gasPayments: [] }]);
    refuses(() => validateOutboxBatch({} as never), InvalidArgumentError, 'batch must be an array');
    refuses(() => validateOutboxBatch([ok, null as never]), InvalidArgumentError, 'batch[1] is not an object');
    const cases: Array<[string, unknown]> = [
      ['id', ID.toUpperCase().replace('0X', '0x')],
      ['id', HASH.slice(0, -2)],
      ['originChain', ''],
      ['originChain', 7],
      ['txHash', HASH.toUpperCase().replace('0X', '0x')],
      ['txHash', ID.slice(0, -2)],
      ['origin', -1],
      ['destination', 2 ** 32],
      ['nonce', 1.5],
      ['raw', [1]],
      ['enqueuedAt', -1],
      ['enqueuedAt', 0.5],
      ['gasPayments', 'x'],
    ];
    for (const [field, value] of cases)
      refuses(
        () => validateOutboxBatch([ok, ok, { ...ok, [field]: value }] as never),
        InvalidArgumentError,
        `batch[2].${field} is invalid`,
      );
    assert.throws(
      () => validateOutboxBatch([{ ...ok, gasPayments: [{}] }] as never),
      (error: Error) => error instanceof InvalidArgumentError && error.message.startsWith('batch[0].gasPayments'),
    );
  });
  test('values that only read like the right type are refused: arrays, numbers and strings where an object or string goes', () => {
    // A RegExp test turns ['0x…'] into '0x…'; each check asks for the type first.
    assert.equal(MAX_RAW_TRANSACTION_LENGTH, 2 + 524_288, '256 KiB of bytes as hex, with 0x');
    refuses(() => checkNonceSlot(5 as never, 'm'), InvalidArgumentError, 'm: expected an object');
    refuses(
      () => checkNonceSlot({ chainId: 1, signer: [SIGNER] as never, nonce: 0 }, 'm'),
      InvalidArgumentError,
      'm: signer must be a lower-case 0x address',
    );
    const b = { chainId: 1, signer: SIGNER, nonce: 2, messageId: ID, hash: HASH, raw: '0x02f8' };
    refuses(
      () => checkBroadcast({ ...b, raw: ['0x02f8'] as never }, undefined),
      InvalidArgumentError,
      `recordBroadcast: raw must be the signed transaction as lower-case 0x-hex, at most ${MAX_RAW_TRANSACTION_LENGTH} characters`,
    );
    refuses(
      () => checkBroadcast({ ...b, nonce: -1 }, undefined),
      OutOfRangeError,
      'recordBroadcast: nonce must be a non-negative integer',
    );
    refuses(
      () => checkBroadcast(b, null as never),
      OutOfRangeError,
      'recordBroadcast(leaseMs): expected a positive integer, got undefined',
    );
    refuses(() => checkJournalFilter('x' as never), InvalidArgumentError, 'openBroadcasts: expected an object');
    refuses(() => validateOutboxBatch([5 as never]), InvalidArgumentError, 'batch[0] is not an object');
    refuses(
      () => checkMarkFailed(undefined as never),
      InvalidArgumentError,
      'markFailed: error must be a string, or null with retryAt',
    );
    refuses(
      () => checkMarkFailed({ error: 'e', retryAt: 0 } as never),
      InvalidArgumentError,
      'markFailed: lease must be the string claim() returned',
    );
  });

  test('newLease: a fresh random UUID for each claim', () => {
    const [a, b] = [newLease(), newLease()];
    assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(a, b);
  });
});
