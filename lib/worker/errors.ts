/**
 * Anything thrown while delivering, as the DeliveryError the loop records (docs/delivery.md). The
 * worker's error classes are members of the library's one error family, in lib/errors.ts (this
 * module re-exports them); their messages never carry RPC URLs, gateway URLs or keys.
 */
import {
  CcipReadError,
  type CcipReadErrorKind,
  DeliveryError,
  type DeliveryErrorKind,
  TransactionError,
  type TransactionErrorKind,
} from '../errors.ts';
import { hideUrls } from '../redact.ts';

export {
  CcipReadError,
  type CcipReadErrorKind,
  DeliveryError,
  type DeliveryErrorKind,
  TransactionError,
  type TransactionErrorKind,
};

/**
 * A `busy` wait known to end soon (every gateway lookup slot is taken, and each frees within
 * worker.ccipReadHoldSeconds): the loop asks the message again after about `retryAfterMs` (half
 * of it random) instead of the pending backoff.
 */
export class ShortWait extends DeliveryError {
  readonly retryAfterMs: number;

  constructor(message: string, retryAfterMs: number) {
    super('busy', message);
    this.retryAfterMs = retryAfterMs;
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
    if (error.code === 'pending') return new DeliveryError('pending', describe(error), { cause: error });
    if (error.code === 'forbidden') return new DeliveryError('forbidden', describe(error), { cause: error });
    return new DeliveryError('gateway', `${error.code}: ${describe(error)}`, { cause: error });
  }
  if (error instanceof TransactionError) {
    const text = error.code === 'revert' && error.reason ? error.reason : describe(error);
    return new DeliveryError(error.code, scrub(text), { cause: error });
  }
  return new DeliveryError('rpc', describe(error), { cause: error });
}
