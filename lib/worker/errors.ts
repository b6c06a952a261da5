/**
 * The worker's errors, members of the library's error family (lib/errors.ts): each is a BaseError
 * whose `code` is its `kind`. Their messages never carry RPC URLs, gateway URLs or keys.
 */
import type { Hash } from 'viem';
import {
  BaseError,
  type CcipReadFailureCode,
  type DeliveryFailureCode,
  type TransactionFailureCode,
} from '../errors.ts';
import { hideUrls } from '../redact.ts';

/**
 * Why one delivery attempt did not deliver (docs/design.md#failures-and-retries). The kind is named
 * at the start of the message's `last_error`.
 *
 * - `pending`: the proof is not there yet (a CCIP-read gateway says the attestation is not ready).
 *   Polled again without counting toward maxAttempts, until the pending deadline.
 * - `unsupported`, `config`: no retry can cure it (an ISM type the worker cannot satisfy, a
 *   destination it has no chain for): final at once.
 * - everything else (`rpc`, `revert`, `gateway`, `forbidden`, `out-of-gas`, `insufficient-funds`,
 *   `nonce`, `timeout`, `metadata`):
 *   retried with backoff, final after maxAttempts.
 */
export type DeliveryErrorKind = DeliveryFailureCode;

export class DeliveryError extends BaseError<DeliveryErrorKind> {
  override name = 'DeliveryError';
  /** The same as `code`. */
  readonly kind: DeliveryErrorKind;
  constructor(kind: DeliveryErrorKind, message: string, options?: { cause?: unknown }) {
    super(kind, message, options);
    this.kind = kind;
  }
  /** No retry can cure it. */
  get final(): boolean {
    return this.kind === 'unsupported' || this.kind === 'config';
  }
}

/**
 * How a send failed (lib/worker/tx/sender.ts; docs/delivery.md#transactions):
 * - `revert`: the call reverts (simulation, or the mined transaction); `reason` says why when the
 *   contract said (Error(string), Panic, or a custom error decoded with `errorAbi`).
 * - `out-of-gas`: the node cannot find a gas limit that works, or the mined transaction used all
 *   of its gas.
 * - `insufficient-funds`: the signer cannot pay for gas.
 * - `nonce`: the nonce sequence could not be put right (nonce too high, or still too low after
 *   re-reading it from the node).
 * - `rpc`: the node is unreachable or answered something unexpected.
 * - `timeout`: the transaction was sent but not mined (with its confirmations) within `timeoutMs`;
 *   `hash` is the last one sent, which may still be mined.
 */
export type TransactionErrorKind = TransactionFailureCode;

export class TransactionError extends BaseError<TransactionErrorKind> {
  override name = 'TransactionError';
  /** The same as `code`. */
  readonly kind: TransactionErrorKind;
  /** For `revert`: the contract's reason when it gave one. */
  readonly reason?: string;
  /** The transaction concerned, once one was sent. */
  readonly hash?: Hash;

  constructor(
    kind: TransactionErrorKind,
    message: string,
    extra: { reason?: string; hash?: Hash; cause?: unknown } = {},
  ) {
    super(kind, message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.kind = kind;
    if (extra.reason !== undefined) this.reason = extra.reason;
    if (extra.hash !== undefined) this.hash = extra.hash;
  }
}

export type CcipReadErrorKind = CcipReadFailureCode;

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
 *   (docs/delivery.md#hostile-recipients). Its own delivery failure kind, so a metric shows it.
 */
export class CcipReadError extends BaseError<CcipReadErrorKind> {
  override name = 'CcipReadError';
  /** The same as `code`. */
  readonly kind: CcipReadErrorKind;

  constructor(kind: CcipReadErrorKind, message: string) {
    super(kind, message);
    this.kind = kind;
  }
}

/** Longest text of an error kept in last_error (the outbox keeps 1000 characters in all). */
const MAX_DETAIL = 600;

/** A text we keep, URLs (with their credentials, paths, keys in query strings) cut out (lib/redact.ts), at most MAX_DETAIL long. */
export function scrub(text: string): string {
  return hideUrls(text).slice(0, MAX_DETAIL);
}

/** One line of an unknown error, scrubbed: viem's shortMessage when there is one. */
export function describe(error: unknown): string {
  const e = error as { shortMessage?: unknown; message?: unknown };
  const text =
    typeof e?.shortMessage === 'string' ? e.shortMessage : typeof e?.message === 'string' ? e.message : String(error);
  return scrub(text.split('\n')[0]);
}

/**
 * The DeliveryError for any error thrown while delivering: our own as is; the CCIP-read client's
 * and the transaction sender's by their class and `kind`; anything else is an RPC failure.
 */
export function toDeliveryError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  if (error instanceof CcipReadError) {
    if (error.kind === 'pending') return new DeliveryError('pending', describe(error), { cause: error });
    if (error.kind === 'forbidden') return new DeliveryError('forbidden', describe(error), { cause: error });
    return new DeliveryError('gateway', `${error.kind}: ${describe(error)}`, { cause: error });
  }
  if (error instanceof TransactionError) {
    const text = error.kind === 'revert' && error.reason ? error.reason : describe(error);
    return new DeliveryError(error.kind, scrub(text), { cause: error });
  }
  return new DeliveryError('rpc', describe(error), { cause: error });
}
