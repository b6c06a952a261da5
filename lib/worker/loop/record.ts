/**
 * The one place an attempt's outcome is written to the outbox (docs/delivery.md#retries-pending-proofs-dead-letters):
 * delivered; retried with exponential backoff and jitter, final after maxAttempts; pending polled
 * again (not counted) until the pending deadline; waiting on policy (gas payment, fee cap) polled
 * the same way (not counted), an unpaid message until the gas payment deadline; released unchanged.
 *
 * The outbox counts claims in `attempts`, pending polls included, so the worker's own count lives
 * in the outbox's attempt-state columns (failures, pending_since, polls), read with the claimed
 * message and written with its outcome: it survives a restart and moves between workers with the
 * message. `last_error` says it again for people:
 * `<kind>: <detail> (failures F/M[; pending since <ISO time>, poll P][, final])`; nothing reads it back.
 */
import { sleep, type Clock } from '../../clock.ts';
import type { Logger } from '../../log.ts';
import type { AttemptState, ClaimedMessage } from '../../outbox/index.ts';
import { describe, failureLabel, ShortWait } from '../errors.ts';
import type { DeliveryEvents, DeliveryOutbox, DeliveryResult, WorkerSettings } from '../types.ts';
import type { Outcome } from './outcome.ts';

export type { AttemptState };

/** last_error for people: the failure and the count it brings the message to. */
export function formatAttemptState(
  kind: string,
  detail: string,
  state: AttemptState,
  maxAttempts: number,
  final = false,
): string {
  const pending =
    state.pendingSince === null
      ? ''
      : `; pending since ${new Date(state.pendingSince).toISOString()}, poll ${state.polls}`;
  return `${kind}: ${detail} (failures ${state.failures}/${maxAttempts}${pending}${final ? ', final' : ''})`;
}

export interface RecorderOptions {
  outbox: Pick<DeliveryOutbox, 'markDelivered' | 'markFailed'>;
  settings: WorkerSettings;
  clock: Clock;
  /** [0, 1): the jitter of backoff delays. */
  random: () => number;
  logger: Logger;
  events: Partial<DeliveryEvents>;
  /** Told when the store refused to record an outcome (the loop reports it unreachable). */
  storeFailed: () => void;
}

/** Records `outcome` of `m` (bound for `destination`) once; `log` names the message in log lines. */
export type Recorder = (
  m: ClaimedMessage,
  destination: string,
  outcome: Outcome,
  log: Record<string, unknown>,
) => Promise<DeliveryResult>;

export function createRecorder(r: RecorderOptions): Recorder {
  const { outbox, settings: o, clock, logger, events } = r;

  /** Exponential with "equal jitter": half the delay fixed, half random. */
  function backoff(base: number, max: number, n: number): number {
    const delay = Math.min(max, base * 2 ** Math.max(0, n - 1));
    return Math.round(delay / 2 + r.random() * (delay / 2));
  }

  /**
   * A delivery's record, tried again while the store fails (0.25 s doubling to 5 s) for at most a
   * lease's time: a short outage costs no lease lapse (docs/transactions.md#the-transaction-journal).
   * false once given up (the lease lapses; the next claim finds the transaction in the journal), or
   * when the lease was lost meanwhile (its new holder records it).
   */
  async function recordDelivered(m: ClaimedMessage, hash: string, log: Record<string, unknown>): Promise<boolean> {
    const giveUpAt = clock.now() + o.leaseMs;
    for (let delay = 250; ; delay = Math.min(5_000, delay * 2)) {
      try {
        return await outbox.markDelivered(m.id, { lease: m.lease, destinationTxHash: hash });
      } catch (error) {
        r.storeFailed();
        if (clock.now() + delay >= giveUpAt) {
          logger.warn('recording the outcome failed; the lease will lapse', { ...log, error: describe(error) });
          return false;
        }
        logger.warn('recording the delivery failed; trying again', { ...log, error: describe(error), delay_ms: delay });
        await sleep(clock, delay);
      }
    }
  }

  /** A store call whose failure leaves the lease to lapse (the next claim retries the message). */
  async function safely(call: () => boolean | Promise<boolean>): Promise<boolean> {
    try {
      return await call();
    } catch (error) {
      r.storeFailed();
      logger.warn('recording the outcome failed; the lease will lapse', { error: describe(error) });
      return false;
    }
  }

  async function final(
    m: ClaimedMessage,
    name: string,
    kind: string,
    error: string,
    state: AttemptState,
    log: Record<string, unknown>,
  ): Promise<DeliveryResult> {
    const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, final: true, state }));
    events.failed?.(name, kind);
    logger.error('failed', { ...log, error, recorded });
    return { id: m.id, outcome: 'failed', error, recorded };
  }

  return async (m, name, outcome, log) => {
    const now = clock.now();
    const state: AttemptState = { failures: m.failures, pendingSince: m.pendingSince, polls: m.polls };
    switch (outcome.kind) {
      case 'delivered': {
        // false: the lease was lost and the new holder records it (it finds the message delivered).
        const recorded = await recordDelivered(m, outcome.hash, log);
        const seconds = Math.max(0, (now - m.enqueuedAt) / 1000);
        if (recorded) events.delivered?.(name, outcome.already, seconds);
        logger.info(outcome.already ? 'already delivered' : 'delivered', {
          ...log,
          tx_hash: outcome.hash,
          recorded,
          seconds: Math.round(seconds * 1000) / 1000,
        });
        return { id: m.id, outcome: 'delivered', txHash: outcome.hash, already: outcome.already, recorded };
      }
      case 'released': {
        // Queued again at once with its last_error and its attempt state as they were: a release
        // is no failed attempt, so it writes no text of its own (none stays none, and a later
        // delivery shows none); its reason is the log's (docs/delivery.md#stopping).
        const recorded = await safely(() =>
          outbox.markFailed(m.id, { lease: m.lease, error: m.lastError, retryAt: now }),
        );
        logger.info('released', { ...log, reason: outcome.reason, recorded });
        return { id: m.id, outcome: 'released', recorded };
      }
      case 'pending': {
        const { failure } = outcome;
        const since = state.pendingSince ?? now;
        const next = { ...state, pendingSince: since, polls: state.polls + 1 };
        if (now - since >= o.pendingDeadlineMs) {
          const error = formatAttemptState(
            'pending',
            `deadline passed, proof still not ready: ${failure.message}`,
            next,
            o.maxAttempts,
            true,
          );
          return final(m, name, 'pending', error, next, log);
        }
        const retryAt = now + backoff(o.pendingBaseMs, o.pendingMaxMs, next.polls);
        const error = formatAttemptState('pending', failure.message, next, o.maxAttempts);
        const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, retryAt, state: next }));
        events.retried?.(name, 'pending');
        logger.info('pending', { ...log, retry_at: new Date(retryAt).toISOString(), error, recorded });
        return { id: m.id, outcome: 'pending', error, retryAt, recorded };
      }
      case 'wait': {
        // Held back by policy: polled with the pending backoff (a top-up is seen within
        // pendingMaxMs), not counted; an unpaid message is final at its deadline from enqueue.
        const { failure } = outcome;
        const next = { ...state, polls: state.polls + 1 };
        if (failure.code === 'gas_payment' && now - m.enqueuedAt >= o.gasPaymentDeadlineMs) {
          const hours = Math.round(o.gasPaymentDeadlineMs / 3_600_000);
          const error = formatAttemptState(
            failure.code,
            `deadline passed (${hours} h from enqueue), still not paid for: ${failure.message}`,
            next,
            o.maxAttempts,
            true,
          );
          return final(m, name, failure.code, error, next, log);
        }
        // A wait known to end soon (every lookup permit taken) says when to ask again.
        const soon = failure instanceof ShortWait ? failure.retryAfterMs : undefined;
        const delay =
          soon === undefined ? backoff(o.pendingBaseMs, o.pendingMaxMs, next.polls) : backoff(soon, soon, 1);
        const retryAt = now + delay;
        const error = formatAttemptState(failure.code, failure.message, next, o.maxAttempts);
        const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, retryAt, state: next }));
        events.retried?.(name, failure.code);
        logger.info('waiting', { ...log, retry_at: new Date(retryAt).toISOString(), error, recorded });
        return { id: m.id, outcome: 'pending', error, retryAt, recorded };
      }
      case 'final': {
        const next = { ...state, failures: state.failures + 1 };
        return final(m, name, outcome.failure.code, outcome.failure.message, next, log);
      }
      case 'retry': {
        const { failure } = outcome;
        const next = { ...state, failures: state.failures + 1 };
        if (next.failures >= o.maxAttempts)
          return final(
            m,
            name,
            failure.code,
            formatAttemptState(failureLabel(failure), failure.message, next, o.maxAttempts, true),
            next,
            log,
          );
        const retryAt = now + backoff(o.retryBaseMs, o.retryMaxMs, next.failures);
        const error = formatAttemptState(failureLabel(failure), failure.message, next, o.maxAttempts);
        const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, retryAt, state: next }));
        events.retried?.(name, failure.code);
        logger.warn('retry', { ...log, retry_at: new Date(retryAt).toISOString(), error, recorded });
        return { id: m.id, outcome: 'retry', error, retryAt, recorded };
      }
    }
  };
}
