/**
 * What one delivery attempt ends with (lib/worker/loop/attempt.ts), as a value the loop records
 * once (lib/worker/loop/record.ts), the way graphile-worker runs a task and records its outcome.
 */
import type { DeliveryError } from '../errors.ts';

export type Outcome =
  /** Recorded delivered with `hash`; `already`: the transaction is not this attempt's. */
  | { kind: 'delivered'; hash: string; already: boolean }
  /** A failure counted toward maxAttempts, retried with backoff (final once they are used up). */
  | { kind: 'retry'; failure: DeliveryError }
  /** Not ready (a proof, a transaction that may still land): polled again, not counted. */
  | { kind: 'pending'; failure: DeliveryError }
  /**
   * Held back by the operator's policy before anything is spent (`gas_payment`: not paid for yet;
   * `fee`: the base fee is above the cap): checked again with the pending backoff, not counted; an
   * unpaid message is final after the gas payment deadline.
   */
  | { kind: 'wait'; failure: DeliveryError }
  /** No retry can cure it. */
  | { kind: 'final'; failure: DeliveryError }
  /** Given back unchanged before anything was sent: the worker stops, or its lease is gone. */
  | { kind: 'released'; reason: string };
