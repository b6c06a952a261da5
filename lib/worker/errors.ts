/**
 * Anything thrown while delivering, as the DeliveryError the loop records (docs/delivery.md). The
 * worker's error classes are members of the library's one error family, in lib/errors/worker.ts
 * (this module re-exports them); their messages never carry RPC URLs, gateway URLs or keys.
 */
import type { CcipReadFailureCode, DeliveryFailureCode, TransactionFailureCode } from '../errors/codes.ts';
import { CcipReadError, DeliveryError, TransactionError } from '../errors/worker.ts';
import { scrub } from '../redact.ts';

export {
  CcipReadError,
  type CcipReadFailureCode,
  DeliveryError,
  type DeliveryFailureCode,
  TransactionError,
  type TransactionFailureCode,
};

/**
 * A `busy` wait known to end soon (every gateway lookup permit is taken, and each frees within
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

/** Longest text of a recipient's or a gateway's kept in last_error, before quoting. */
export const MAX_FOREIGN_TEXT = 200;

/** Who wrote a failure's text, when we did not: the recipient (or its ISM and hooks) or a gateway. */
export type ForeignSource = 'recipient' | 'gateway';

/**
 * Someone else's text as last_error shows it: scrubbed, bounded to MAX_FOREIGN_TEXT characters
 * (`…` when cut) and JSON-quoted, so where it ends is plain and it cannot pass for ours
 * (docs/delivery.md#retries-pending-proofs-dead-letters).
 */
export function quoteForeign(text: string): string {
  const clean = scrub(text);
  return JSON.stringify(clean.length > MAX_FOREIGN_TEXT ? `${clean.slice(0, MAX_FOREIGN_TEXT - 1)}…` : clean);
}

/** A failure whose text came from `source` (quoted); last_error names it: `revert (recipient): "…"`. */
export class ForeignFailure extends DeliveryError {
  readonly source: ForeignSource;

  constructor(kind: DeliveryFailureCode, source: ForeignSource, text: string, cause?: unknown) {
    super(kind, quoteForeign(text), cause === undefined ? undefined : { cause });
    this.source = source;
  }
}

/** The failure's kind as last_error names it: with its text's source when that is not us. */
export function failureLabel(failure: DeliveryError): string {
  return failure instanceof ForeignFailure ? `${failure.code} (${failure.source})` : failure.code;
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
    // A revert reason is the contract's text: the recipient's, its ISM's or hook's, anyone's.
    if (error.code === 'revert' && error.reason) return new ForeignFailure('revert', 'recipient', error.reason, error);
    return new DeliveryError(error.code, describe(error), { cause: error });
  }
  return new DeliveryError('rpc', describe(error), { cause: error });
}
