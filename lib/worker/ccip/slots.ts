/**
 * How many of a worker's messages may be in CCIP-read lookups at once (docs/hostile-recipients.md#slow-gateways):
 * at most `limit` (the worker uses concurrency − 1), so messages whose gateways never answer cannot
 * hold every delivery slot of the loop. A message that finds every lookup permit in use does not wait holding
 * its delivery slot: it is given back at once (DeliveryError `busy`, a wait that does not count) and
 * asked again after about `retryAfterMs` (the worker's ccipReadHoldSeconds: every lookup in a slot
 * ends or leaves it within that), leaving its delivery slot to messages that need no gateway.
 */
import { DeliveryError, ShortWait } from '../errors.ts';
import type { OffchainReader } from '../ism/metadata.ts';

export function limitLookups(read: OffchainReader, limit: number, retryAfterMs?: number): OffchainReader {
  let active = 0;
  return async (revert, ism, signal, message) => {
    if (active >= limit) {
      const text = `all ${limit} gateway lookup permits of this worker are in use; asked again later`;
      throw retryAfterMs === undefined ? new DeliveryError('busy', text) : new ShortWait(text, retryAfterMs);
    }
    active++;
    try {
      return await read(revert, ism, signal, message);
    } finally {
      active--;
    }
  };
}
