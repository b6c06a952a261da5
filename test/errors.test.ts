import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BaseError, ConfigError, DecodeError, RelayError, REASON_STATUS, retryAfterHeader, RpcError, SchemaVersionError, toRelayError, type Reason } from '../lib/errors.ts';

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
  assert.equal(error.reason, 'timeout');
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
    assert.equal(retryAfterHeader(new RelayError(reason, 'x', { retryAfterSeconds: 7 })), retried ? '7' : undefined, reason);
  }
  assert.equal(retryAfterHeader(new RelayError('rate_limited', 'x', { retryAfterSeconds: 0.2 })), '1');
  assert.equal(retryAfterHeader(new RelayError('rate_limited', 'x', { retryAfterSeconds: 1.2 })), '2');
  assert.equal(retryAfterHeader(new RelayError('cache_full', 'x', { retryAfterSeconds: 0 })), '1');
});
