import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import {
  BaseError,
  ConfigError,
  DecodeError,
  InvalidArgumentError,
  OutOfRangeError,
  RelayApiError,
  RelayError,
  REASON_STATUS,
  retryAfterHeader,
  RpcError,
  SchemaVersionError,
  toRelayError,
  type Reason,
} from '../../../lib/errors/classes.ts';
import * as errorsModule from '../../../lib/errors/worker.ts';
import { CcipReadError, DeliveryError, TransactionError } from '../../../lib/worker/errors.ts';

test('every error the library throws on purpose is a BaseError told apart by class and code', () => {
  const errors = [
    [new RelayError('duplicate_tx', 'dup'), RelayError, 'duplicate_tx'],
    [new DecodeError('topic0', 'bad topic0'), DecodeError, 'topic0'],
    [new RpcError('wrong_id', 'wrong JSON-RPC id'), RpcError, 'wrong_id'],
    [new ConfigError('server.port', 'out of range'), ConfigError, 'invalid_config'],
    [new SchemaVersionError(9, 2), SchemaVersionError, 'schema_version'],
  ] as const;
  for (const [error, type, code] of errors) {
    assert.ok(error instanceof BaseError && error instanceof Error, type.name);
    assert.ok(error instanceof type, type.name);
    assert.equal(error.code, code);
    assert.equal(error.name, type.name);
    const others = errors.filter(([, other]) => other !== type);
    for (const [, other] of others) assert.ok(!(error instanceof other), `${type.name} is not a ${other.name}`);
  }
});

test('docs/design.md#errors: a RelayError carries its reason, the status of REASON_STATUS and a body without the cause', () => {
  const error = new RelayError('timeout', 'slow', { retryAfterSeconds: 3, cause: new Error('secret https://key@rpc') });
  assert.equal(error.code, 'timeout');
  assert.equal(error.status, 408);
  assert.equal(JSON.stringify(error), '{"reason":"timeout","message":"slow"}');
  const unknown = toRelayError(new TypeError('internal detail'));
  assert.deepEqual(unknown.toJSON(), { reason: 'internal_error', message: 'internal error' });
  assert.equal(toRelayError(error), error);
});

test('docs/design.md#errors: 408, 429 and 503 answers carry Retry-After (whole seconds, at least 1); no other status does', () => {
  for (const reason of Object.keys(REASON_STATUS) as Reason[]) {
    const status = REASON_STATUS[reason];
    const retried = status === 408 || status === 429 || status === 503;
    assert.equal(retryAfterHeader(new RelayError(reason, 'x')), retried ? '1' : undefined, reason);
    assert.equal(
      retryAfterHeader(new RelayError(reason, 'x', { retryAfterSeconds: 7 })),
      retried ? '7' : undefined,
      reason,
    );
  }
  assert.equal(retryAfterHeader(new RelayError('rate_limited', 'x', { retryAfterSeconds: 0.2 })), '1');
  assert.equal(retryAfterHeader(new RelayError('rate_limited', 'x', { retryAfterSeconds: 1.2 })), '2');
  assert.equal(retryAfterHeader(new RelayError('cache_full', 'x', { retryAfterSeconds: 0 })), '1');
});

test("the worker's errors are of the family, their kind is their code, their class and name kept", () => {
  const errors = [
    [new DeliveryError('pending', 'proof not ready'), DeliveryError, 'pending'],
    [new TransactionError('out_of_gas', 'out of gas'), TransactionError, 'out_of_gas'],
    [new CcipReadError('refused', 'answered HTTP 403'), CcipReadError, 'refused'],
  ] as const;
  for (const [error, type, code] of errors) {
    assert.ok(error instanceof BaseError && error instanceof Error && error instanceof type, type.name);
    assert.equal(error.code, code);
    assert.equal(error.name, type.name);
    for (const [, other] of errors)
      if (other !== type) assert.ok(!(error instanceof other), `${type.name} is not a ${other.name}`);
    assert.ok(!(error instanceof RelayError));
  }
  const cause = new Error('node said no');
  assert.equal(new TransactionError('rpc', 'x', { cause }).cause, cause);
  assert.equal(new DeliveryError('rpc', 'x', { cause }).cause, cause);
});

test('docs/design.md#errors: argument errors are BaseErrors with one code each, told apart by class, not by name', () => {
  const type = new InvalidArgumentError('batch must be an array');
  const range = new OutOfRangeError('windowMs must be positive');
  assert.ok(type instanceof BaseError && type instanceof InvalidArgumentError);
  assert.ok(range instanceof BaseError && range instanceof OutOfRangeError);
  assert.equal(type.code, 'invalid_argument');
  assert.equal(range.code, 'out_of_range');
  assert.equal(type.name, 'InvalidArgumentError');
  // No instanceof override: a built-in TypeError is not of the family, and the classes are apart.
  assert.ok(!(new TypeError('plain') instanceof BaseError));
  assert.ok(!(type instanceof TypeError) && !(range instanceof RangeError));
  assert.ok(!(type instanceof RelayError));
  assert.ok(!(new RelayError('not_found', 'x') instanceof InvalidArgumentError));
  assert.ok(!(range instanceof InvalidArgumentError));
  assert.equal(Object.hasOwn(BaseError, Symbol.hasInstance), false);
});

test("docs/design.md#errors: code is the one name of an error's code: no kind, no reason alias", () => {
  const delivery = new DeliveryError('pending', 'later');
  const tx = new TransactionError('nonce', 'refused');
  const ccip = new CcipReadError('refused', 'answered HTTP 403');
  const relay = new RelayError('rate_limited', 'slow down');
  const api = new RelayApiError('rate_limited', 'slow down', { status: 429 });
  for (const e of [delivery, tx, ccip]) assert.ok(!('kind' in e), `${e.name} has no kind`);
  for (const e of [relay, api]) assert.ok(!('reason' in e), `${e.name} has no reason`);
  // TransactionError's `reason` is the contract's revert reason, another thing than its code.
  assert.equal(new TransactionError('revert', 'reverted', { reason: 'no' }).reason, 'no');
  // The JSON body's field is `reason` (docs/api.md#errors): the wire name stays.
  assert.deepEqual(relay.toJSON(), { reason: 'rate_limited', message: 'slow down' });
});

test("docs/design.md#errors: the worker's error classes are the family's, in lib/errors/worker.ts", () => {
  assert.equal(CcipReadError, errorsModule.CcipReadError);
  assert.equal(DeliveryError, errorsModule.DeliveryError);
  assert.equal(TransactionError, errorsModule.TransactionError);
});

test('every throw in lib/ comes from the error family', () => {
  // No new Error/TypeError/RangeError, no class extending Error outside lib/errors/classes.ts.
  // The one exception, on purpose: relayer-server's RPC transport rejects exactly as the global
  // fetch does (a plain TypeError 'fetch failed', the reason as its cause), so the core classes its
  // failures by the same rules whichever fetch it is given (docs/rpc.md#rpc-transport).
  // The other, in the test tooling: the outbox contract's element whose getter throws a plain Error,
  // since an engine must store nothing whatever an element throws (docs/design.md#enqueue).
  // Anything else fails this test.
  const pending: Record<string, number> = {
    'lib/node/rpc-transport.ts': 4,
    'lib/node/rpc-response.ts': 2,
    'lib/testing/outbox-contract/enqueue.ts': 1,
    // The test tooling's fake node fails as the global fetch does, for the same reason as the transport.
    'lib/testing/fake-node.ts': 1,
  };
  const found: Record<string, number> = {};
  const root = new URL('../../../lib/', import.meta.url);
  for (const entry of readdirSync(root, { recursive: true })) {
    const path = String(entry);
    if (!path.endsWith('.ts') || path === 'errors/classes.ts') continue;
    const text = readFileSync(new URL(path, root), 'utf8');
    const count = (
      text.match(/new (Error|TypeError|RangeError|SyntaxError)\(|extends (Error|TypeError|RangeError) \{/g) ?? []
    ).length;
    if (count > 0) found[`lib/${path}`] = count;
  }
  assert.deepEqual(found, pending);
});
