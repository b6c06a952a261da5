/**
 * Every error the library throws on purpose, from one family with a stable machine-readable
 * `code` (tests and callers tell errors apart by class and code, never by message or name): the
 * subclasses of BaseError, and InvalidArgumentError / OutOfRangeError, which extend TypeError /
 * RangeError and are `instanceof BaseError` too.
 * RelayError is what the API answers with: its code is the `reason` of docs/api.md#errors,
 * docs/design.md#errors, and the HTTP status comes from one table so that no call site can pair a
 * reason with the wrong status.
 */

export const REASON_STATUS = {
  invalid_request: 400,
  message_not_whitelisted: 400,
  message_blacklisted: 400,
  unsupported_destination: 400,
  too_many_messages: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  duplicate_tx: 429,
  internal_error: 500,
  cache_full: 503,
  store_unavailable: 503,
} as const;

export type Reason = keyof typeof REASON_STATUS;

/** Why a log or message does not decode (lib/abi.ts, lib/message.ts, lib/cctp.ts). */
export type DecodeCode =
  | 'data'
  | 'short'
  | 'offset'
  | 'length'
  | 'padding'
  | 'trailing'
  | 'topic_count'
  | 'topic0'
  | 'topic'
  | 'version'
  | 'origin'
  | 'mismatch';

/** Why one JSON-RPC attempt failed (lib/rpc.ts): the fetcher then fails over to the next URL. */
export type RpcFailureCode =
  | 'transport'
  | 'attempt_timeout'
  | 'deadline'
  | 'http_status'
  | 'too_large'
  | 'invalid_json'
  | 'not_json_rpc'
  | 'wrong_id'
  | 'rpc_error'
  | 'malformed_receipt'
  | 'wrong_transaction';

/**
 * What relayer-api/client reports when there is no API answer to quote: the request never got one
 * (network_error), the answer was not the API's (bad_response: a proxy's HTML page, a non-JSON
 * body), or the caller's time budget ran out while a request was in flight (deadline_exceeded).
 */
export type ClientFailureCode = 'network_error' | 'bad_response' | 'deadline_exceeded';

/**
 * A caller's mistake in using the library (not the API's caller: the embedder's code): an argument
 * of the wrong type or shape (`invalid_argument`, a TypeError) or out of its range
 * (`out_of_range`, a RangeError).
 */
export type UsageCode = 'invalid_argument' | 'out_of_range';

/**
 * How one send of relayer-api/worker's transaction sender failed (lib/worker/errors.ts,
 * TransactionError; docs/delivery.md#transactions): its `kind`, which is also its code.
 */
export type TransactionFailureCode = 'revert' | 'out-of-gas' | 'insufficient-funds' | 'nonce' | 'rpc' | 'timeout';

/** Why a CCIP-read gateway gave no metadata (lib/worker/errors.ts, CcipReadError): its `kind`, also its code. */
export type CcipReadFailureCode = 'pending' | 'unavailable' | 'refused' | 'malformed' | 'forbidden';

/**
 * Why one delivery attempt of relayer-api/worker did not deliver (lib/worker/errors.ts,
 * DeliveryError): its `kind`, also its code; it heads the message's last_error and labels metrics.
 */
export type DeliveryFailureCode =
  | TransactionFailureCode
  | 'pending'
  | 'unsupported'
  | 'config'
  | 'gateway'
  | 'forbidden'
  | 'metadata'
  | 'stopped';

export type ErrorCode =
  | Reason
  | DecodeCode
  | RpcFailureCode
  | ClientFailureCode
  | UsageCode
  | TransactionFailureCode
  | CcipReadFailureCode
  | DeliveryFailureCode
  | 'invalid_config'
  | 'schema_version';

/** Marks the family's members that cannot extend BaseError (they extend TypeError or RangeError). */
const FAMILY: unique symbol = Symbol.for('relayer-api.error-family');

export class BaseError<Code extends ErrorCode = ErrorCode> extends Error {
  override name = 'BaseError';
  readonly code: Code;

  /**
   * `x instanceof BaseError` is true for every error of the family, InvalidArgumentError and
   * OutOfRangeError included (they extend TypeError and RangeError, which callers catch).
   * Subclasses keep the ordinary prototype check.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class being tested (a subclass too)
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    // biome-ignore lint/complexity/noThisInStatic: only BaseError itself takes the family check
    return this === BaseError && typeof value === 'object' && value !== null && FAMILY in value;
  }

  constructor(code: Code, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

export interface RelayErrorOptions {
  /** Seconds the client should wait before retrying (sent as `Retry-After`). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

export class RelayError extends BaseError<Reason> {
  override name = 'RelayError';
  /** The same as `code`, under the name the spec gives it. */
  readonly reason: Reason;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(reason: Reason, message: string, options: RelayErrorOptions = {}) {
    super(reason, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.status = REASON_STATUS[reason];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  /** The JSON error body of docs/design.md#errors. Never includes the cause or a stack. */
  toJSON(): { reason: Reason; message: string } {
    return { reason: this.reason, message: this.message };
  }
}

/** A wait of `ms` from now in the whole seconds Retry-After carries, at least 1. */
export function secondsToWait(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The `Retry-After` value of an answer with this error: every 408, 429 and 503 carries one, at
 * least 1 s (a client that retries at once only adds load); other statuses carry none.
 */
export function retryAfterHeader(error: RelayError): string | undefined {
  if (error.status !== 408 && error.status !== 429 && error.status !== 503) return undefined;
  return String(Math.max(1, Math.ceil(error.retryAfterSeconds ?? 1)));
}

/**
 * Maps anything thrown to a RelayError. Unknown exceptions become `internal_error` with a fixed
 * message, so internals never reach a client.
 */
export function toRelayError(value: unknown): RelayError {
  if (value instanceof RelayError) return value;
  return new RelayError('internal_error', 'internal error', { cause: value });
}

/** A log or message that a real contract cannot emit: rejected, never guessed at. */
export class DecodeError extends BaseError<DecodeCode> {
  override name = 'DecodeError';
}

/** One JSON-RPC endpoint's failure; the message is fixed text, never derived from the URL or the response. */
export class RpcError extends BaseError<RpcFailureCode> {
  override name = 'RpcError';
}

export class ConfigError extends BaseError<'invalid_config'> {
  override name = 'ConfigError';
  /** Dotted path of the offending key, e.g. `chains.ethereum.mailbox`. */
  readonly key: string;

  constructor(key: string, problem: string, options?: ErrorOptions) {
    super('invalid_config', key === '' ? problem : `${key}: ${problem}`, options);
    this.key = key;
  }
}

/** The database was written by a newer release (lib/sqlite/schema.ts). */
export class SchemaVersionError extends BaseError<'schema_version'> {
  override name = 'SchemaVersionError';
  readonly found: number;
  readonly supported: number;

  constructor(found: number, supported: number) {
    super(
      'schema_version',
      `the database has schema version ${found}, newer than the ${supported} this relayer knows: ` +
        'it was written by a newer release; upgrade the relayer or open another file',
    );
    this.found = found;
    this.supported = supported;
  }
}

export interface RelayApiErrorOptions {
  /** HTTP status, 0 when there was no HTTP answer (network_error, deadline_exceeded). */
  status: number;
  retryAfterSeconds?: number;
  /** The X-Request-Id of the answer: quote it to the relayer's operator. */
  requestId?: string;
  cause?: unknown;
}

/**
 * The one error relayer-api/client throws for a failed call (docs/design.md#client): the API's
 * answer (`reason` and `message` of its JSON body, `status`, `Retry-After`, `X-Request-Id`), or a
 * ClientFailureCode when there was none. An abort rejects with the signal's reason instead.
 */
export class RelayApiError extends BaseError<Reason | ClientFailureCode> {
  override name = 'RelayApiError';
  /** The same as `code`: the API's reason (a newer server may send one this version does not list). */
  readonly reason: Reason | ClientFailureCode;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;
  readonly requestId: string | undefined;

  constructor(reason: Reason | ClientFailureCode, message: string, options: RelayApiErrorOptions) {
    super(reason, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.requestId = options.requestId;
  }
}

/**
 * An argument of the wrong type or shape (a missing lease, a batch that is not an array, a metric
 * label that is not a label name): a TypeError, and `instanceof BaseError` with code
 * `invalid_argument`.
 */
export class InvalidArgumentError extends TypeError {
  override name = 'InvalidArgumentError';
  readonly code = 'invalid_argument' as const;
  declare readonly [FAMILY]: true;
}

/** A number out of its range (a negative claim limit, a zero window): a RangeError, and `instanceof BaseError` with code `out_of_range`. */
export class OutOfRangeError extends RangeError {
  override name = 'OutOfRangeError';
  readonly code = 'out_of_range' as const;
  declare readonly [FAMILY]: true;
}

for (const type of [InvalidArgumentError, OutOfRangeError]) {
  Object.defineProperty(type.prototype, FAMILY, { value: true });
}

/**
 * What a store (an engine's transport, an embedder's own store) throws when it cannot be used right
 * now and a retry may succeed: a call that timed out, a connection that is closed, a lock held
 * past its wait. It answers 503 `store_unavailable` (lib/store.ts); its message goes to the log only.
 */
export class StoreUnavailableError extends BaseError<'store_unavailable'> {
  override name = 'StoreUnavailableError';

  constructor(message: string, options?: ErrorOptions) {
    super('store_unavailable', message, options);
  }
}
