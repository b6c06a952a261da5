/**
 * One delivery attempt of a claimed message (docs/delivery.md#the-delivery-loop), returning what
 * it ended with as a value (lib/worker/loop/outcome.ts); it records nothing itself:
 * 1. the journal first: a transaction of the message that may still land is followed (this
 *    signer's) or waited for (another's); one that was mined ends the attempt;
 * 2. already delivered on chain → delivered with the transaction that did it; a `lastChance`
 *    claim (its leases kept lapsing) ends here, failed, having sent nothing;
 * 3. the gas payment policy (before anything is spent on the message); 4. the ISM's metadata;
 * 5. `process` simulated, its gas limit set by the policy and `transactionGasLimit`; 6. sent
 *    (recorded in the journal under the lease first) and followed to its confirmations.
 * A revert of a mined transaction is checked against `delivered(id)` (two senders raced): a
 * message someone else delivered first is delivered with that transaction, never failed.
 */
import type { Hex } from 'viem';
import { bytesToHex } from '../../codec/hex.ts';
import { deadLetterError, type ClaimedMessage } from '../../outbox/index.ts';
import { DeliveryError, toDeliveryError } from '../errors.ts';
import type { DeliveryOutbox, DeliveryPolicy, Destination } from '../types.ts';
import type { SimulateResult } from '../tx/types.ts';
import { byNonceSlot } from '../tx/slots.ts';
import type { Hold } from './lease.ts';
import type { Outcome } from './outcome.ts';

export interface AttemptContext {
  outbox: Pick<DeliveryOutbox, 'openBroadcasts'>;
  destination: Destination | undefined;
  leaseMs: number;
  /** claim()'s maxLeaseExpiries: a `lastChance` message that is not delivered fails with deadLetterError's text. */
  maxLeaseExpiries: number;
  /** Gas payment and gas limit (lib/worker/gas/gate.ts); absent: none, the simulation's gas. */
  policy?: DeliveryPolicy;
}

const delivered = (hash: string, already: boolean): Outcome => ({ kind: 'delivered', hash, already });

/** The same message delivered by someone else, or the revert as a counted failure. */
async function afterRevert(destination: Destination, id: Hex, hash: string): Promise<Outcome> {
  const by = await destination.deliveredBy(id);
  if (by) return delivered(by, true);
  return { kind: 'retry', failure: new DeliveryError('revert', `process reverted in ${hash}`) };
}

/** The metadata when the destination has it without another request, and the simulation started with it. */
function ahead(
  d: Destination,
  message: Hex,
): Promise<{ metadata: Hex; simulated: Promise<SimulateResult> } | undefined> {
  return (d.prefetch?.(message) ?? Promise.resolve(undefined)).then(
    (metadata) => {
      if (metadata === undefined) return undefined;
      const simulated = d.simulate(metadata, message);
      // Awaited only if the message is not delivered yet; a revert is handled there.
      simulated.catch(() => {});
      return { metadata, simulated };
    },
    () => undefined,
  );
}

export async function attempt(c: AttemptContext, m: ClaimedMessage, hold: Hold): Promise<Outcome> {
  const { destination } = c;
  const id = m.id as Hex;
  const message = bytesToHex(m.raw) as Hex;
  try {
    if (!destination) throw new DeliveryError('config', `no chain configured for destination domain ${m.destination}`);

    // Only an earlier attempt can have journaled a transaction: a first claim has nothing to read.
    const journaled = m.attempts > 1 ? await c.outbox.openBroadcasts({ messageId: m.id }) : [];
    for (const slot of byNonceSlot(journaled)) {
      // A transaction of this message may be out: a stop waits for it rather than releasing.
      hold.sent = true;
      const resumed = await destination.resume(slot, { onWait: hold.keepAlive });
      if (resumed.status === 'success') return delivered(resumed.hash, false);
      // A last look sends nothing: a revert leaves the check of delivered(id) below to decide.
      if (resumed.status === 'reverted' && !m.lastChance) return afterRevert(destination, id, resumed.hash);
      if (resumed.status === 'open') return { kind: 'pending', failure: new DeliveryError('pending', resumed.detail) };
      hold.sent = false;
    }

    // Beside delivered(id) (docs/delivery.md#throughput): the recipient's ISM is read and, when its
    // metadata needs no other request (a NULL ISM), `process` simulated; unless a gas payment policy
    // must pass first (an unpaid message runs no code of its recipient). Nothing is sent before
    // delivered(id) answers.
    const early = !c.policy && !m.lastChance ? ahead(destination, message) : undefined;
    const prior = await destination.deliveredBy(id);
    if (prior) return delivered(prior, true);
    // Its leases lapsed maxLeaseExpiries times: neither delivered nor pending, it fails now.
    if (m.lastChance)
      return {
        kind: 'final',
        failure: new DeliveryError('lease', deadLetterError(m.leaseExpiries, c.maxLeaseExpiries)),
      };
    await c.policy?.beforeMetadata(m);
    hold.check();
    const built = await early;
    const metadata =
      built?.metadata ??
      (await destination.metadata(message, hold.signal, { originChain: m.originChain, txHash: m.txHash }));
    hold.check();
    let simulated: SimulateResult;
    try {
      simulated = await (built?.simulated ?? destination.simulate(metadata, message));
    } catch (error) {
      const failure = toDeliveryError(error);
      if (failure.code === 'revert' && /already delivered/i.test(failure.message)) {
        const by = await destination.deliveredBy(id);
        if (by) return delivered(by, true);
      }
      throw failure;
    }
    if (c.policy) simulated = await c.policy.gasLimit(m, simulated);
    // A broadcast needs a lease renewed within its time: a worker that could not renew stops here.
    hold.check();
    hold.sent = true;
    const sent = await destination.process(metadata, message, simulated, {
      messageId: m.id,
      fence: { lease: m.lease, leaseMs: c.leaseMs },
      onWait: hold.keepAlive,
    });
    if (sent.status === 'reverted') return afterRevert(destination, id, sent.hash);
    return delivered(sent.hash, false);
  } catch (error) {
    const failure = toDeliveryError(error);
    // Stopped before anything went out (a gateway request aborted by the stop included): the
    // message goes back unchanged.
    if (failure.code === 'stopped' || (!hold.sent && hold.signal.aborted))
      return { kind: 'released', reason: failure.code === 'stopped' ? failure.message : 'the worker is stopping' };
    // A transaction of ours was mined and reverted (or ran out of gas): someone else may have
    // delivered the message first. Then it is delivered with their transaction, never failed.
    if (hold.sent && destination && (failure.code === 'revert' || failure.code === 'out_of_gas')) {
      const by = await destination.deliveredBy(id).catch(() => null);
      if (by) return delivered(by, true);
    }
    if (failure.code === 'pending') return { kind: 'pending', failure };
    // Waits that are not the message's fault: not counted, asked again with the pending backoff
    // (a signer that cannot pay for gas is topped up by its operator: docs/delivery.md#retries-pending-proofs-dead-letters).
    if (
      failure.code === 'gas_payment' ||
      failure.code === 'fee' ||
      failure.code === 'busy' ||
      failure.code === 'insufficient_funds'
    )
      return { kind: 'wait', failure };
    return failure.final ? { kind: 'final', failure } : { kind: 'retry', failure };
  }
}
