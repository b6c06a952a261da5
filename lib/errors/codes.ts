/**
 * The codes of the library's errors (lib/errors/classes.ts), one union per class, and the table that pairs
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

/** Why a log or message does not decode (lib/codec/abi.ts, lib/codec/message.ts, lib/codec/cctp.ts). */
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

/** Why one JSON-RPC attempt failed (lib/rpc/client.ts): the fetcher then fails over to the next URL. */
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
 * of the wrong type or shape (`invalid_argument`, InvalidArgumentError) or out of its range
 * (`out_of_range`, OutOfRangeError).
 */
export type UsageCode = 'invalid_argument' | 'out_of_range';

/**
 * How a send failed (lib/worker/tx/sender.ts; docs/transactions.md#transactions):
 * - `revert`: the call reverts (simulation, or the mined transaction); `reason` says why when the
 *   contract said (Error(string), Panic, or a custom error decoded with `errorAbi`).
 * - `out_of_gas`: the node cannot find a gas limit that works, or the mined transaction used all
 *   of its gas.
 * - `insufficient_funds`: the signer cannot pay for gas.
 * - `nonce`: the nonce sequence could not be put right (nonce too high, or still too low after
 *   re-reading it from the node).
 * - `rpc`: the node is unreachable or answered something unexpected.
 * - `timeout`: the transaction was sent but not mined (with its confirmations) within `timeoutMs`;
 *   `hash` is the last one sent, which may still be mined.
 */
export type TransactionFailureCode = 'revert' | 'out_of_gas' | 'insufficient_funds' | 'nonce' | 'rpc' | 'timeout';

/**
 * Why no metadata came back from CCIP-read (lib/worker/ccip/read.ts; docs/delivery.md#ccip-read):
 * - `pending`: a gateway said the proof is not there yet (HTTP 404, or HTTP 500 whose body says
 *   the attestation is not found / pending) and none answered: ask again later.
 * - `unavailable`: every gateway failed (5xx, transport error, timeout).
 * - `malformed`: a gateway answered something unusable (bad JSON, non-hex `data`, another
 *   `sender`, too large, a redirect) and none said pending.
 * - `refused`: a gateway answered a 4xx other than 404 (EIP-3668: stop there), or the lookup
 *   itself cannot be followed (its sender is not the contract asked, no http(s) URL).
 * - `forbidden`: a gateway URL's host is, or resolves to, an address that is not public (loopback,
 *   private, link-local, …) and its origin is not allowed: no gateway was asked
 *   (docs/hostile-recipients.md#hostile-recipients). Its own delivery failure kind, so a metric shows it.
 */
export type CcipReadFailureCode = 'pending' | 'unavailable' | 'refused' | 'malformed' | 'forbidden';

/**
 * Why one delivery attempt did not deliver (docs/delivery.md#retries-pending-proofs-dead-letters; lib/worker/errors.ts turns anything thrown while delivering into one). The kind is named
 * at the start of the message's `last_error`.
 *
 * - `pending`: the proof is not there yet (a CCIP-read gateway says the attestation is not ready).
 *   Polled again without counting toward maxAttempts, until the pending deadline.
 * - `gas_payment`: the message's gas payment does not meet its policy yet; `fee`: the base fee is
 *   above the chain's gasPriceCap; `insufficient_funds`: the signer cannot pay for gas. They wait
 *   (checked again with backoff, not counted); an unpaid message is final after the gas payment
 *   deadline.
 * - `busy`: slow gateways (docs/hostile-recipients.md#slow-gateways): every gateway lookup slot of the worker
 *   is in use, or the message's lookup outlasted worker.ccipReadHoldSeconds and goes on in the
 *   background: asked again later, not counted.
 * - `gas`: the estimate exceeds transactionGasLimit: nothing is sent; a counted failure.
 * - `unsupported`, `config`: no retry can cure it (an ISM type the worker cannot satisfy, a
 *   destination it has no chain for): final at once.
 * - everything else (`rpc`, `revert`, `gateway`, `forbidden`, `out_of_gas`, `nonce`, `timeout`,
 *   `metadata`):
 *   retried with backoff, final after maxAttempts.
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
