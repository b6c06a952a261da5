/**
 * What the delivery loop records for each outcome (docs/delivery.md, Retries, pending proofs,
 * dead letters): delivered; retried with exponential backoff and jitter, final after maxAttempts;
 * a pending proof polled again (not counted) until the pending deadline; released at a stop.
 *
 * The outbox counts claims in `attempts`, pending polls included, so the worker keeps its own count
 * in the outbox's attempt-state columns (failures, pending_since, polls), which every worker reads
 * on the next claim: the state survives a restart and moves between workers with the message.
 * `last_error` says it again for people: `<kind>: <detail> (failures F/M[; pending since <ISO
 * time>, poll P])`; nothing reads it back.
 */
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { AttemptState, ClaimedMessage } from '../outbox/index.ts';
import type { DeliveryEvents, DeliveryOutbox, DeliveryResult, WorkerSettings } from './delivery.ts';
import { type DeliveryError, toDeliveryError } from './errors.ts';

export type { AttemptState };

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

export interface OutcomeRecorderOptions {
  outbox: DeliveryOutbox;
  settings: WorkerSettings;
  clock: Clock;
  /** [0, 1): the jitter of backoff delays. */
  random: () => number;
  logger: Logger;
  events: Partial<DeliveryEvents>;
  /** Told when the store refused to record an outcome (the loop reports it unreachable). */
  storeFailed: () => void;
}

export interface OutcomeRecorder {
  /** Records `m` delivered by `txHash` (`already`: found delivered on chain, not by this attempt). */
  delivered(
    m: ClaimedMessage,
    name: string,
    txHash: string,
    already: boolean,
    log: Record<string, unknown>,
  ): Promise<DeliveryResult>;
  /** Records a failed attempt: released, pending, retried or final. */
  failed(
    m: ClaimedMessage,
    name: string,
    failure: DeliveryError,
    log: Record<string, unknown>,
  ): Promise<DeliveryResult>;
}

export function createOutcomeRecorder(r: OutcomeRecorderOptions): OutcomeRecorder {
  const { outbox, settings: o, clock, logger, events } = r;

  /** Exponential with "equal jitter": half the delay fixed, half random. */
  function backoff(base: number, max: number, n: number): number {
    const delay = Math.min(max, base * 2 ** Math.max(0, n - 1));
    return Math.round(delay / 2 + r.random() * (delay / 2));
  }

  async function delivered(
    m: ClaimedMessage,
    name: string,
    txHash: string,
    already: boolean,
    log: Record<string, unknown>,
  ): Promise<DeliveryResult> {
    // false: the lease was lost and the new holder records it (it finds the message delivered).
    const recorded = await outbox.markDelivered(m.id, { lease: m.lease, destinationTxHash: txHash });
    const seconds = Math.max(0, (clock.now() - m.enqueuedAt) / 1000);
    if (recorded) events.delivered?.(name, already, seconds);
    logger.info(already ? 'already delivered' : 'delivered', {
      ...log,
      tx_hash: txHash,
      recorded,
      seconds: Math.round(seconds * 1000) / 1000,
    });
    return { id: m.id, outcome: 'delivered', txHash, already, recorded };
  }

  async function failed(
    m: ClaimedMessage,
    name: string,
    failure: DeliveryError,
    log: Record<string, unknown>,
  ): Promise<DeliveryResult> {
    const now = clock.now();
    const state: AttemptState = { failures: m.failures, pendingSince: m.pendingSince, polls: m.polls };
    if (failure.kind === 'stopped') {
      // Released: queued again at once with its last_error as it was (the count is kept).
      const recorded = await safely(() =>
        outbox.markFailed(m.id, {
          lease: m.lease,
          error: m.lastError ?? 'released: a worker stopped before delivering it',
          retryAt: now,
        }),
      );
      logger.info('released', { ...log, reason: failure.message, recorded });
      return { id: m.id, outcome: 'released', recorded };
    }
    if (failure.kind === 'pending') {
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
        return final(m, name, 'pending', error, log, next);
      }
      const retryAt = now + backoff(o.pendingBaseMs, o.pendingMaxMs, next.polls);
      const error = formatAttemptState('pending', failure.message, next, o.maxAttempts);
      const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, retryAt, state: next }));
      events.retried?.(name, 'pending');
      logger.info('pending', { ...log, retry_at: new Date(retryAt).toISOString(), error, recorded });
      return { id: m.id, outcome: 'pending', error, retryAt, recorded };
    }
    const next = { ...state, failures: state.failures + 1 };
    if (failure.final) return final(m, name, failure.kind, failure.message, log, next);
    if (next.failures >= o.maxAttempts)
      return final(
        m,
        name,
        failure.kind,
        formatAttemptState(failure.kind, failure.message, next, o.maxAttempts, true),
        log,
        next,
      );
    const retryAt = now + backoff(o.retryBaseMs, o.retryMaxMs, next.failures);
    const error = formatAttemptState(failure.kind, failure.message, next, o.maxAttempts);
    const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, retryAt, state: next }));
    events.retried?.(name, failure.kind);
    logger.warn('retry', { ...log, retry_at: new Date(retryAt).toISOString(), error, recorded });
    return { id: m.id, outcome: 'retry', error, retryAt, recorded };
  }

  async function final(
    m: ClaimedMessage,
    name: string,
    kind: string,
    error: string,
    log: Record<string, unknown>,
    state: AttemptState,
  ): Promise<DeliveryResult> {
    const recorded = await safely(() => outbox.markFailed(m.id, { lease: m.lease, error, final: true, state }));
    events.failed?.(name, kind);
    logger.error('failed', { ...log, error, recorded });
    return { id: m.id, outcome: 'failed', error, recorded };
  }

  /** A store call whose failure leaves the lease to lapse (the next claim retries the message). */
  async function safely(call: () => boolean | Promise<boolean>): Promise<boolean> {
    try {
      return await call();
    } catch (error) {
      r.storeFailed();
      logger.warn('recording the outcome failed; the lease will lapse', { error: toDeliveryError(error).message });
      return false;
    }
  }

  return { delivered, failed };
}
