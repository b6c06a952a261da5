/**
 * The codes of the library's errors (lib/errors.ts), one union per class, and the table that pairs
 * each API reason with its HTTP status (docs/api.md#errors, docs/design.md#errors). Codes are
 * stable across releases: callers and tests match on them, never on messages or names.
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
  too_many_subscribers: 429,
  internal_error: 500,
  cache_full: 503,
  subscribers_full: 503,
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
 * How one send of relayer-api/worker's transaction sender failed (TransactionError;
 * docs/delivery.md#transactions).
 */
export type TransactionFailureCode = 'revert' | 'out-of-gas' | 'insufficient-funds' | 'nonce' | 'rpc' | 'timeout';

/** Why a CCIP-read gateway gave no metadata (CcipReadError). */
export type CcipReadFailureCode = 'pending' | 'unavailable' | 'refused' | 'malformed' | 'forbidden';

/**
 * Why one delivery attempt of relayer-api/worker did not deliver (DeliveryError):
 * it heads the message's last_error and labels metrics.
 */
export type DeliveryFailureCode =
  | TransactionFailureCode
  | 'pending'
  | 'unsupported'
  | 'config'
  | 'gateway'
  | 'forbidden'
  | 'metadata'
  | 'stopped'
  | 'gas_payment'
  | 'gas'
  | 'fee'
  | 'busy'
  // its leases kept lapsing, and a last look found it neither delivered nor pending
  | 'lease';

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
