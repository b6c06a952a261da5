/**
 * The loop's hold on one claimed message (docs/delivery.md#the-delivery-loop): the lease renewed a
 * third of the way through while anything is awaited, and what stops the attempt before it sends:
 * the worker stopping, a renewal refused (another worker holds the message), or no renewal
 * within the lease's time (the store failed: another worker may have claimed it meanwhile). Once
 * the worker has stopped (`ended`: its grace for transactions already sent is over), the wait hook
 * throws DeliveryError `stopped`: whatever follows a transaction with it (the send, a self-transfer
 * filling a gap it found) ends at its next look, leaving the slot open in the journal.
 */
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log.ts';
import type { ClaimedMessage } from '../../outbox/index.ts';
import { DeliveryError, describe } from '../errors.ts';
import type { DeliveryOutbox } from '../types.ts';

export interface Hold {
  /** Aborted when the attempt must not go on to send (stop, lease lost); handed to the gateway requests. */
  readonly signal: AbortSignal;
  /** Set once a transaction of the message may be out: a stop then waits for it instead of releasing. */
  sent: boolean;
  /**
   * Renews the lease if a third of it has passed (the wait hook of a transaction being confirmed);
   * throws DeliveryError `stopped` once the worker has ended.
   */
  keepAlive(): Promise<void>;
  /** Throws DeliveryError `stopped` if the attempt must not go on: released, or the lease not renewed in time. */
  check(): void;
  /** The worker stops: a message not sent yet is released. */
  stop(): void;
  close(): void;
}

export function holdLease(options: {
  outbox: Pick<DeliveryOutbox, 'extend'>;
  message: ClaimedMessage;
  clock: Clock;
  leaseMs: number;
  logger: Logger;
  log: Record<string, unknown>;
  /** Aborted when the worker has stopped for good (stop()'s grace over). */
  ended?: AbortSignal;
}): Hold {
  const { outbox, message: m, clock, leaseMs, logger, log, ended } = options;
  const release = new AbortController();
  let reason = 'the worker is stopping';
  let renewedAt = clock.now();
  let lost = false;
  let closed = false;
  let timer: unknown;

  const lose = (why: string) => {
    if (lost) return;
    lost = true;
    reason = why;
    release.abort();
    logger.warn('lease lost', { ...log, reason: why });
  };

  async function keepAlive(): Promise<void> {
    if (ended?.aborted)
      throw new DeliveryError('stopped', 'the worker stopped; its transaction is left to the journal');
    await renew();
  }

  async function renew(): Promise<void> {
    if (lost || clock.now() - renewedAt < leaseMs / 3) return;
    const at = clock.now();
    try {
      if (await outbox.extend(m.id, m.lease, leaseMs)) renewedAt = at;
      else lose('another worker holds it');
    } catch (error) {
      logger.warn('lease extension failed', { ...log, error: describe(error) });
      if (clock.now() - renewedAt >= leaseMs) lose(`not renewed within ${leaseMs} ms`);
    }
  }

  const tick = () => {
    timer = clock.setTimeout(() => void renew().finally(() => !closed && tick()), Math.ceil(leaseMs / 3));
  };
  tick();

  return {
    signal: release.signal,
    sent: false,
    keepAlive,
    check() {
      if (!lost && clock.now() - renewedAt >= leaseMs) lose(`not renewed within ${leaseMs} ms`);
      if (release.signal.aborted) throw new DeliveryError('stopped', lost ? `lease lost: ${reason}` : reason);
    },
    stop() {
      if (!this.sent) release.abort();
    },
    close() {
      closed = true;
      clock.clearTimeout(timer);
    },
  };
}
