/**
 * Why one delivery attempt did not deliver (docs/design.md#failures-and-retries). The kind is named
 * at the start of the message's `last_error`; messages never carry RPC URLs, gateway URLs or keys.
 *
 * - `pending`: the proof is not there yet (a CCIP-read gateway says the attestation is not ready).
 *   Polled again without counting toward maxAttempts, until the pending deadline.
 * - `unsupported`, `config`: no retry can cure it (an ISM type the worker cannot satisfy, a
 *   destination it has no chain for): final at once.
 * - everything else (`rpc`, `revert`, `gateway`, `out-of-gas`, `insufficient-funds`, `nonce`,
 *   `timeout`, `metadata`):
 *   retried with backoff, final after maxAttempts.
 */
export type DeliveryErrorKind =
  | 'pending'
  | 'unsupported'
  | 'config'
  | 'rpc'
  | 'revert'
  | 'gateway'
  | 'metadata'
  | 'out-of-gas'
  | 'insufficient-funds'
  | 'nonce'
  | 'timeout'
  | 'stopped';

export class DeliveryError extends Error {
  override name = 'DeliveryError';
  readonly kind: DeliveryErrorKind;
  constructor(kind: DeliveryErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
  /** No retry can cure it. */
  get final(): boolean {
    return this.kind === 'unsupported' || this.kind === 'config';
  }
}

/** Longest text of an error kept in last_error (the outbox keeps 1000 characters in all). */
const MAX_DETAIL = 600;

/** URLs (with their credentials, paths, keys in query strings) are cut out of any text we keep. */
export function scrub(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>)]*/gi, '<url>').slice(0, MAX_DETAIL);
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
 * and the transaction sender's by their `kind`; anything else is an RPC failure.
 */
export function toDeliveryError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const kind = (error as { kind?: unknown })?.kind;
  const name = (error as { name?: unknown })?.name;
  if (name === 'CcipReadError') {
    if (kind === 'pending') return new DeliveryError('pending', describe(error), { cause: error });
    return new DeliveryError('gateway', `${String(kind)}: ${describe(error)}`, { cause: error });
  }
  if (name === 'TransactionError' && typeof kind === 'string') {
    const known: DeliveryErrorKind[] = ['revert', 'out-of-gas', 'insufficient-funds', 'nonce', 'rpc', 'timeout'];
    const reason = (error as { reason?: unknown }).reason;
    const text = kind === 'revert' && typeof reason === 'string' && reason !== '' ? reason : describe(error);
    return new DeliveryError(
      known.includes(kind as DeliveryErrorKind) ? (kind as DeliveryErrorKind) : 'rpc',
      scrub(text),
      { cause: error },
    );
  }
  return new DeliveryError('rpc', describe(error), { cause: error });
}
