/**
 * The worker's CCIP-read reader, wired from its config (docs/delivery.md#ccip-read): the
 * OffchainLookup decoded and followed per EIP-3668 (lib/worker/ccip/read.ts) with the worker's
 * per-URL timeout, per-attempt budget and allowed origins; then kept off the loop's slots when
 * its gateways are slow (lib/worker/ccip/lanes.ts: at most `ccipReadHoldSeconds` in a slot, the
 * rest in the background) and at most concurrency − 1 lookups in slots at once
 * (lib/worker/ccip/slots.ts), so slow gateways never hold every slot (docs/hostile-recipients.md#slow-gateways).
 */
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log.ts';
import { urlForLog } from '../../redact.ts';
import type { WorkerConfig } from '../../types.ts';
import { DeliveryError } from '../errors.ts';
import type { OffchainReader } from '../ism/metadata.ts';
import { laneLookups, type LanedReader } from './lanes.ts';
import { ccipRead, decodeOffchainLookup, type LocalAddresses, type Resolver } from './read.ts';
import { limitLookups } from './slots.ts';

/** How long a finished background lookup waits for its message's next claim. */
const KEEP_MS = 600_000;
/** Background lookups at once: at least this many, else worker.concurrency. */
const MIN_BACKGROUND = 4;

export interface WorkerLookupOptions {
  fetch?: typeof fetch;
  resolve?: Resolver;
  localAddresses?: LocalAddresses;
  clock: Clock;
  logger: Logger;
}

export function workerLookups(w: WorkerConfig, o: WorkerLookupOptions): LanedReader {
  const { logger } = o;
  const offchain: OffchainReader = async (revert, ism, signal) => {
    const lookup = decodeOffchainLookup(revert);
    if (!lookup)
      throw new DeliveryError('metadata', 'the CCIP-read ISM reverted with something other than OffchainLookup');
    return ccipRead(lookup, {
      contract: ism,
      fetch: o.fetch,
      resolve: o.resolve,
      localAddresses: o.localAddresses,
      clock: o.clock,
      timeoutMs: w.ccipReadTimeoutSeconds * 1000,
      budgetMs: w.ccipReadBudgetSeconds * 1000,
      allowOrigins: w.ccipReadAllowOrigins,
      signal,
      onAttempt: ({ index, url, outcome }) =>
        logger.info('ccip-read', { ism, gateway: index + 1, of: lookup.urls.length, url: urlForLog(url), outcome }),
      // For the operator only: which URL, which address. last_error (public) says none of it.
      onRefused: ({ index, url, address, range }) =>
        logger.warn('ccip-read refused', {
          ism,
          gateway: index + 1,
          of: lookup.urls.length,
          url: urlForLog(url),
          address,
          range,
        }),
    });
  };
  return offDeliverySlots(offchain, {
    clock: o.clock,
    concurrency: w.concurrency,
    holdMs: w.ccipReadHoldSeconds * 1000,
  });
}

/**
 * `read` kept off a loop of `concurrency` slots: at most `holdMs` in a slot, then in the background
 * (at most max(4, concurrency) there); at most concurrency − 1 (at least 1) lookups in slots.
 */
export function offDeliverySlots(
  read: OffchainReader,
  o: { clock: Clock; concurrency: number; holdMs: number },
): LanedReader {
  const lanes = laneLookups(read, {
    clock: o.clock,
    holdMs: o.holdMs,
    background: Math.max(MIN_BACKGROUND, o.concurrency),
    keepMs: KEEP_MS,
  });
  // A lookup permit frees within holdMs: a message that found none taken is asked again that soon.
  return { ...lanes, read: limitLookups(lanes.read, Math.max(1, o.concurrency - 1), o.holdMs) };
}
