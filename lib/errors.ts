/**
 * One error class for everything the relay API can answer with, carrying a stable machine-readable
 * `reason` (spec §7 and DESIGN.md §2) and the HTTP status that reason maps to. The status comes
 * from one table so that no call site can pair a reason with the wrong status.
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
} as const;

export type Reason = keyof typeof REASON_STATUS;

export interface RelayErrorOptions {
  /** Seconds the client should wait before retrying (sent as `Retry-After`). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

export class RelayError extends Error {
  readonly reason: Reason;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(reason: Reason, message: string, options: RelayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RelayError';
    this.reason = reason;
    this.status = REASON_STATUS[reason];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  /** The JSON error body of DESIGN.md §2. Never includes the cause or a stack. */
  toJSON(): { reason: Reason; message: string } {
    return { reason: this.reason, message: this.message };
  }
}

export function isRelayError(value: unknown): value is RelayError {
  return value instanceof RelayError;
}

/**
 * Maps anything thrown to a RelayError. Unknown exceptions become `internal_error` with a fixed
 * message, so internals never reach a client.
 */
export function toRelayError(value: unknown): RelayError {
  if (value instanceof RelayError) return value;
  return new RelayError('internal_error', 'internal error', { cause: value });
}
