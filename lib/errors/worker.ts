/**
 * The delivery worker's errors, members of the one error family (lib/errors/classes.ts): the core
 * holds them because every entry point exports the whole family (docs/embedding.md#typescript);
 * lib/worker/errors.ts turns anything thrown while delivering into a DeliveryError.
 */
import { BaseError } from './classes.ts';
import type { CcipReadFailureCode, DeliveryFailureCode, TransactionFailureCode } from './codes.ts';

/** Why one delivery attempt did not deliver: the codes are listed at DeliveryFailureCode (lib/errors/codes.ts). */
export class DeliveryError extends BaseError {
  override name = 'DeliveryError';
  declare readonly code: DeliveryFailureCode;

  constructor(code: DeliveryFailureCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
  }
  /** No retry can cure it. */
  get final(): boolean {
    return this.code === 'unsupported' || this.code === 'config';
  }
}

/** How a send failed: the codes are listed at TransactionFailureCode (lib/errors/codes.ts). */
export class TransactionError extends BaseError {
  override name = 'TransactionError';
  declare readonly code: TransactionFailureCode;
  /** For `revert`: the contract's reason when it gave one. */
  readonly reason?: string;
  /** The transaction concerned, once one was sent. */
  readonly hash?: `0x${string}`;

  constructor(
    code: TransactionFailureCode,
    message: string,
    extra: { reason?: string; hash?: `0x${string}`; cause?: unknown } = {},
  ) {
    super(code, message, extra.cause === undefined ? undefined : { cause: extra.cause });
    if (extra.reason !== undefined) this.reason = extra.reason;
    if (extra.hash !== undefined) this.hash = extra.hash;
  }
}

/** Why no metadata came back from CCIP-read: the codes are listed at CcipReadFailureCode (lib/errors/codes.ts). */
export class CcipReadError extends BaseError {
  override name = 'CcipReadError';
  declare readonly code: CcipReadFailureCode;

  constructor(code: CcipReadFailureCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
  }
}
