/**
 * One claimed message delivered (docs/delivery.md, The delivery loop): already delivered on chain
 * (`delivered(id)`) → recorded with the transaction that delivered it (its `ProcessId` log); else
 * the ISM's metadata; `process` simulated first (a message that would revert costs no gas; a
 * revert `already delivered` is a delivery); then sent, the lease extended while it waits for its
 * confirmations, and recorded delivered. Whatever fails goes to the outcome recorder
 * (lib/worker/outcomes.ts).
 */
import type { Hex } from 'viem';
import type { Clock } from '../clock.ts';
import { bytesToHex } from '../hex.ts';
import type { Logger } from '../log.ts';
import type { ClaimedMessage } from '../outbox/index.ts';
import type { DeliveryOutbox, DeliveryResult, Destination } from './delivery.ts';
import { DeliveryError, toDeliveryError } from './errors.ts';
import type { OutcomeRecorder } from './outcomes.ts';

export interface MessageDeliveryOptions {
  outbox: DeliveryOutbox;
  destinations: ReadonlyMap<number, Destination>;
  clock: Clock;
  logger: Logger;
  leaseMs: number;
  record: OutcomeRecorder;
}

/** The loop's hold on a message: aborting `release` stops a delivery not yet sent; `sent` once it is. */
export interface Hold {
  release: AbortController;
  sent: boolean;
}

export async function deliverMessage(
  d: MessageDeliveryOptions,
  m: ClaimedMessage,
  hold: Hold,
): Promise<DeliveryResult> {
  const { outbox, clock, logger, leaseMs, record } = d;
  const id = m.id as Hex;
  const message = bytesToHex(m.raw) as Hex;
  const destination = d.destinations.get(m.destination);
  const name = destination?.name ?? String(m.destination);
  const log = { message_id: m.id, destination: name, attempt: m.attempts };
  logger.debug('claimed', log);

  // The lease is renewed a third of the way through, while anything is awaited (metadata,
  // simulation, confirmations). A renewal refused means another worker holds it now.
  let lastExtended = clock.now();
  let lost = false;
  const keepAlive = async () => {
    if (lost || clock.now() - lastExtended < leaseMs / 3) return;
    lastExtended = clock.now();
    try {
      if (!(await outbox.extend(m.id, m.lease, leaseMs))) {
        lost = true;
        hold.release.abort();
        logger.warn('lease lost', log);
      }
    } catch (error) {
      logger.warn('lease extension failed', { ...log, error: toDeliveryError(error).message });
    }
  };
  let timer: unknown;
  const tick = () => {
    timer = clock.setTimeout(() => void keepAlive().finally(() => !done && tick()), Math.ceil(leaseMs / 3));
  };
  let done = false;
  tick();
  const checkReleased = () => {
    if (hold.release.signal.aborted) throw new DeliveryError('stopped', lost ? 'lease lost' : 'the worker is stopping');
  };

  try {
    if (!destination) throw new DeliveryError('config', `no chain configured for destination domain ${m.destination}`);
    const prior = await destination.deliveredBy(id);
    if (prior) return await record.delivered(m, name, prior, true, log);
    checkReleased();
    const metadata = await destination.metadata(message, hold.release.signal);
    checkReleased();
    let simulated: unknown;
    try {
      simulated = await destination.simulate(metadata, message);
    } catch (error) {
      const failure = toDeliveryError(error);
      if (failure.kind === 'revert' && /already delivered/i.test(failure.message)) {
        const by = await destination.deliveredBy(id);
        if (by) return await record.delivered(m, name, by, true, log);
      }
      throw failure;
    }
    checkReleased();
    hold.sent = true;
    const sent = await destination.process(metadata, message, keepAlive, simulated);
    if (sent.status === 'reverted') {
      const by = await destination.deliveredBy(id);
      if (by) return await record.delivered(m, name, by, true, log);
      throw new DeliveryError('revert', `process reverted in ${sent.hash}`);
    }
    return await record.delivered(m, name, sent.hash, false, log);
  } catch (error) {
    return await record.failed(m, name, toDeliveryError(error), log);
  } finally {
    done = true;
    clock.clearTimeout(timer);
  }
}
