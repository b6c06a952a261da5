/**
 * The contract between the main thread and the SQLite store's worker (lib/sqlite/protocol.ts):
 * every method of every table is classified read or write (writes are group-committed), and an
 * error thrown in the worker reaches the caller with its class, code and fields.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { test } from 'node:test';
import * as classes from '../../../lib/errors/classes.ts';
import * as workerErrors from '../../../lib/errors/worker.ts';
import { openDatabase } from '../../../lib/sqlite/database.ts';
import { openSqliteStore } from '../../../lib/sqlite/index.ts';
import {
  type ACCESS,
  deserializeError,
  isWrite,
  serializeError,
  servedMethods,
  type SerializedError,
} from '../../../lib/sqlite/protocol.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { tempDir } from '../../helpers/harness/temp-dir.ts';

const dir = tempDir('sqlite-protocol-');

const errors = { ...classes, ...workerErrors };

/** One instance of every error class of lib/errors/classes.ts and lib/errors/worker.ts, by class name. */
const samples: Record<string, () => Error> = {
  BaseError: () => new errors.BaseError('invalid_config', 'base'),
  RelayError: () => new errors.RelayError('rate_limited', 'slow down', { retryAfterSeconds: 7 }),
  DecodeError: () => new errors.DecodeError('padding', 'bad padding'),
  RpcError: () => new errors.RpcError('wrong_id', 'the answer has another id'),
  ConfigError: () => new errors.ConfigError('chains.ethereum.mailbox', 'expected an address'),
  SchemaVersionError: () => new errors.SchemaVersionError(9, 5),
  RelayApiError: () =>
    new errors.RelayApiError('bad_response', 'not the API', { status: 502, requestId: 'r-1', retryAfterSeconds: 3 }),
  InvalidArgumentError: () => new errors.InvalidArgumentError('batch must be an array'),
  StoreUnavailableError: () => new errors.StoreUnavailableError('the SQLite store is closed'),
  OutOfRangeError: () => new errors.OutOfRangeError('claim(limit): expected a non-negative integer, got -1'),
  DeliveryError: () => new errors.DeliveryError('pending', 'the gateway says the attestation is pending'),
  TransactionError: () =>
    new errors.TransactionError('revert', 'simulation reverted: nope', {
      reason: 'nope',
      hash: `0x${'ab'.repeat(32)}`,
    }),
  CcipReadError: () => new errors.CcipReadError('refused', 'gateway 1 of 1 answered HTTP 401'),
};

/** Through a real message port: the structured clone the worker's answers go through. */
async function cross(data: SerializedError): Promise<SerializedError> {
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<SerializedError>((resolve) => port2.once('message', resolve));
  port1.postMessage(data);
  try {
    return await received;
  } finally {
    port1.close();
    port2.close();
  }
}

const errorClasses = (Object.entries(errors) as [string, unknown][]).filter(
  (entry): entry is [string, new (...args: never[]) => Error] =>
    typeof entry[1] === 'function' && entry[1].prototype instanceof Error,
);

test('every error class of lib/errors/ has a sample here (a new class must be added)', () => {
  assert.deepEqual(errorClasses.map(([name]) => name).sort(), Object.keys(samples).sort());
});

for (const [name, type] of errorClasses) {
  test(`${name} crosses the thread boundary with its class, code and fields`, async () => {
    const original = samples[name]();
    const copy = deserializeError(await cross(serializeError(original)));
    assert.ok(copy instanceof type, `${copy.name} is a ${name}`);
    assert.ok(copy instanceof errors.BaseError);
    assert.equal(Object.getPrototypeOf(copy), type.prototype);
    assert.equal(copy.name, name);
    assert.equal(copy.message, original.message);
    const { cause: _a, ...fields } = { ...original };
    assert.deepEqual({ ...copy }, fields);
    assert.equal((copy as classes.BaseError).code, (original as classes.BaseError).code);
  });
}

test('built-in errors keep their class; any other keeps its name and data (node:sqlite codes)', async () => {
  for (const original of [new TypeError('t'), new RangeError('r'), new Error('e')]) {
    const copy = deserializeError(await cross(serializeError(original)));
    assert.equal(Object.getPrototypeOf(copy), Object.getPrototypeOf(original));
    assert.equal(copy.message, original.message);
  }
  const sqlite = Object.assign(new Error('database is locked'), {
    code: 'ERR_SQLITE_ERROR',
    errcode: 5,
    errstr: 'database is locked',
  });
  sqlite.name = 'SqliteError';
  const copy = deserializeError(await cross(serializeError(sqlite)));
  assert.equal(copy.name, 'SqliteError');
  assert.deepEqual(
    { ...copy },
    { code: 'ERR_SQLITE_ERROR', errcode: 5, errstr: 'database is locked', name: 'SqliteError' },
  );
  // A non-error thrown value arrives as an Error with its text.
  assert.equal(deserializeError(await cross(serializeError('boom'))).message, 'boom');
});

test('an error thrown by a table in the worker reaches the caller with its class and code', async () => {
  const store = await openSqliteStore(join(dir, 'errors.db'), { clock: createFakeClock() });
  try {
    await assert.rejects(store.outbox.claim(-1, 1000), (e: unknown) => e instanceof errors.OutOfRangeError);
    await assert.rejects(
      store.outbox.claim(-1, 1000),
      (e: unknown) => e instanceof errors.OutOfRangeError && e.code === 'out_of_range' && e instanceof errors.BaseError,
    );
    await assert.rejects(
      // @ts-expect-error: the lease is required
      store.outbox.markDelivered('0x' + '11'.repeat(32), { destinationTxHash: '0x1' }),
      (e: unknown) => e instanceof errors.InvalidArgumentError,
    );
    await assert.rejects(
      // @ts-expect-error: the lease is required
      store.outbox.markDelivered('0x' + '11'.repeat(32), { destinationTxHash: '0x1' }),
      (e: unknown) =>
        e instanceof errors.InvalidArgumentError && e.code === 'invalid_argument' && e instanceof errors.BaseError,
    );
  } finally {
    await store.close();
  }
});

test('the worker serves exactly the classified methods of each table: each one is a read or a group-committed write', () => {
  const database = openDatabase(join(dir, 'methods.db'), createFakeClock(), 1000);
  try {
    for (const [name, table] of Object.entries(database.tables)) {
      const own = Object.keys(table).filter((key) => typeof (table as Record<string, unknown>)[key] === 'function');
      assert.deepEqual(own.sort(), servedMethods(name as keyof typeof ACCESS).sort(), name);
    }
  } finally {
    database.db.close();
  }
  assert.equal(isWrite('outbox', 'claim'), true);
  assert.equal(isWrite('outbox', 'requeue'), true);
  assert.equal(isWrite('merkle', 'insertPacked'), true);
  assert.equal(isWrite('outbox', 'get'), false);
  assert.equal(isWrite('outbox', 'toString'), false);
  assert.equal(isWrite('nothing', 'enqueue'), false);
});
