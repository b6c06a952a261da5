/**
 * Every error the library throws on purpose, from one family: each class extends BaseError and
 * carries one stable, machine-readable `code` (lib/errors/codes.ts). Callers and tests tell errors
 * apart by class (`instanceof`) and code, never by message or name.
 * RelayError is what the API answers with: its code is the `reason` of docs/api.md#errors,
 * docs/design.md#errors, and the HTTP status comes from one table so that no call site can pair a
 * reason with the wrong status. The delivery worker's errors (DeliveryError, TransactionError,
 * CcipReadError) are members too, in lib/errors/worker.ts; lib/worker/errors.ts turns anything
 * thrown while delivering into a DeliveryError.
 */
import {
  type ClientFailureCode,
  type DecodeCode,
  type ErrorCode,
  REASON_STATUS,
  type Reason,
  type RpcFailureCode,
} from './codes.ts';

export * from './codes.ts';

/**
 * The one base of every error the package throws: `code` names what went wrong, stable across
 * releases; match on the class (`instanceof`) or on `code`, never on `name` or the message.
 */
export class BaseError extends Error {
  override name = 'BaseError';
  /** Narrowed by each subclass (`declare readonly code`), so `instanceof` narrows it too. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

export interface RelayErrorOptions {
  /** Seconds the client should wait before retrying (sent as `Retry-After`). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

export class RelayError extends BaseError {
  override name = 'RelayError';
  declare readonly code: Reason;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(reason: Reason, message: string, options: RelayErrorOptions = {}) {
    super(reason, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = REASON_STATUS[reason];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  /** The JSON error body of docs/design.md#errors. Never includes the cause or a stack. */
  toJSON(): { reason: Reason; message: string } {
    return { reason: this.code, message: this.message };
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
export class DecodeError extends BaseError {
  override name = 'DecodeError';
  declare readonly code: DecodeCode;

  constructor(code: DecodeCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
  }
}

/** One JSON-RPC endpoint's failure; the message is fixed text, never derived from the URL or the response. */
export class RpcError extends BaseError {
  override name = 'RpcError';
  declare readonly code: RpcFailureCode;

  constructor(code: RpcFailureCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
  }
}

export class ConfigError extends BaseError {
  override name = 'ConfigError';
  declare readonly code: 'invalid_config';
  /** Dotted path of the offending key, e.g. `chains.ethereum.mailbox`. */
  readonly key: string;

  constructor(key: string, problem: string, options?: ErrorOptions) {
    super('invalid_config', key === '' ? problem : `${key}: ${problem}`, options);
    this.key = key;
  }
}

/** The database was written by a newer release (lib/sqlite/schema.ts). */
export class SchemaVersionError extends BaseError {
  override name = 'SchemaVersionError';
  declare readonly code: 'schema_version';
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
export class RelayApiError extends BaseError {
  override name = 'RelayApiError';
  declare readonly code: Reason | ClientFailureCode;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;
  readonly requestId: string | undefined;

  constructor(reason: Reason | ClientFailureCode, message: string, options: RelayApiErrorOptions) {
    super(reason, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.requestId = options.requestId;
  }
}

/**
 * An argument of the wrong type or shape (a missing lease, a batch that is not an array, a metric
 * label that is not a label name): a programming error, code `invalid_argument`.
 */
export class InvalidArgumentError extends BaseError {
  override name = 'InvalidArgumentError';
  declare readonly code: 'invalid_argument';

  constructor(message: string, options?: ErrorOptions) {
    super('invalid_argument', message, options);
  }
}

/** A number out of its range (a negative claim limit, a zero window), code `out_of_range`. */
export class OutOfRangeError extends BaseError {
  override name = 'OutOfRangeError';
  declare readonly code: 'out_of_range';

  constructor(message: string, options?: ErrorOptions) {
    super('out_of_range', message, options);
  }
}

/**
 * What a store (an engine's transport, an embedder's own store) throws when it cannot be used right
 * now and a retry may succeed: a call that timed out, a connection that is closed, a lock held
 * past its wait. It answers 503 `store_unavailable` (lib/store/bundle.ts); its message goes to the log only.
 */
export class StoreUnavailableError extends BaseError {
  override name = 'StoreUnavailableError';
  declare readonly code: 'store_unavailable';

  constructor(message: string, options?: ErrorOptions) {
    super('store_unavailable', message, options);
  }
}
