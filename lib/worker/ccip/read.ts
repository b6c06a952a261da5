/**
 * EIP-3668 (CCIP-read) for the delivery worker: decode an ISM's `OffchainLookup` revert
 * (lib/worker/ccip/offchain-lookup.ts) and ask its gateways for the metadata (docs/delivery.md,
 * CCIP-read). On Hyperlane's CCTP routes the gateway is Hyperlane's CCTP attestation service; its
 * answer `data` is the ISM metadata handed to `Mailbox.process` unchanged.
 *
 * The gateways are named by the recipient's ISM, that is by whoever deployed the recipient, so
 * every answer is treated as hostile (lib/worker/ccip/gateway.ts): one timeout per URL (10 s), no
 * redirects followed, at most 1 MiB read, `data` must be 0x-hex, at most 10 URLs tried. Error
 * messages say which gateway by position ("gateway 1 of 2"), never by URL: a URL may carry an API key.
 *
 * Pure Web APIs (fetch, AbortController); no viem needed here.
 */
import { systemClock, type Clock } from '../../clock.ts';
import type { FetchLike } from '../../rpc.ts';
import { CcipReadError, type CcipReadErrorKind } from '../errors.ts';
import { askGateway, GatewayFailure } from './gateway.ts';
import { decodeOffchainLookup, type Hex, type OffchainLookup } from './offchain-lookup.ts';

export { CcipReadError, type CcipReadErrorKind } from '../errors.ts';
export { decodeOffchainLookup, OFFCHAIN_LOOKUP_SELECTOR, type Hex, type OffchainLookup } from './offchain-lookup.ts';

export interface CcipReadOptions {
  /**
   * The contract `getOffchainVerifyInfo` was called on. EIP-3668: a lookup whose `sender` is
   * another contract is refused (a contract could otherwise make its callers ask on another's
   * behalf).
   */
  contract: Hex;
  fetch?: FetchLike;
  clock?: Clock;
  /** Per gateway: request, headers and body. Default 10 000 ms. */
  timeoutMs?: number;
  /** Largest answer read. Default 1 MiB. */
  maxBytes?: number;
  /** URLs tried, in order; the rest are ignored. Default 10. */
  maxUrls?: number;
  signal?: AbortSignal;
  /**
   * Told of each gateway asked, in order, with its outcome (the demo prints the URL followed).
   * The URL is the template as the ISM gave it: it may hold a key, so log it with care.
   */
  onAttempt?: (attempt: CcipReadAttempt) => void;
}

export interface CcipReadAttempt {
  /** 0-based position in the lookup's URLs. */
  index: number;
  url: string;
  outcome: 'answer' | 'pending' | 'unavailable' | 'malformed' | 'refused';
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BYTES = 1024 * 1024;
const DEFAULT_MAX_URLS = 10;

/**
 * Asks the lookup's gateways in order and returns the first good answer's `data` (the ISM
 * metadata). URL templates per EIP-3668: `{sender}` and `{data}` replaced by lower-case hex;
 * GET when the template has `{data}`, else POST `{"sender","data"}` as JSON. Next gateway on a
 * 5xx, a transport error, a timeout or a malformed answer; 404 (and a 500 saying the attestation
 * is not there yet) means pending and also moves on; any other 4xx stops (refused).
 * Throws CcipReadError, or the signal's reason once it aborts.
 */
export async function ccipRead(lookup: OffchainLookup, opts: CcipReadOptions): Promise<Hex> {
  const fetchFn: FetchLike = opts.fetch ?? ((input, init) => fetch(input, init));
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const sender = lookup.sender.toLowerCase();
  const data = lookup.callData.toLowerCase();
  if (sender !== opts.contract.toLowerCase()) {
    throw new CcipReadError('refused', 'the OffchainLookup names another sender than the contract asked');
  }
  const urls = lookup.urls.slice(0, opts.maxUrls ?? DEFAULT_MAX_URLS);
  if (urls.length === 0) throw new CcipReadError('refused', 'the OffchainLookup names no gateway');

  const outcomes: string[] = [];
  let pending = false;
  let malformed = false;
  for (let i = 0; i < urls.length; i++) {
    opts.signal?.throwIfAborted();
    const which = `gateway ${i + 1} of ${urls.length}`;
    try {
      const answer = await askGateway(urls[i], {
        sender,
        data,
        fetchFn,
        clock,
        timeoutMs,
        maxBytes,
        signal: opts.signal,
      });
      opts.onAttempt?.({ index: i, url: urls[i], outcome: 'answer' });
      return answer;
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const kind: CcipReadErrorKind = err instanceof GatewayFailure ? err.kind : 'unavailable';
      opts.onAttempt?.({ index: i, url: urls[i], outcome: kind });
      outcomes.push(`${which} ${err instanceof GatewayFailure ? err.message : 'failed'}`);
      if (kind === 'refused') throw new CcipReadError('refused', `CCIP-read refused: ${outcomes.join('; ')}`);
      if (kind === 'pending') pending = true;
      if (kind === 'malformed') malformed = true;
    }
  }
  const kind = pending ? 'pending' : malformed ? 'malformed' : 'unavailable';
  const lead = kind === 'pending' ? 'CCIP-read pending (proof not ready)' : `CCIP-read ${kind}`;
  throw new CcipReadError(kind, `${lead}: ${outcomes.join('; ')}`);
}

/**
 * The revert of `getOffchainVerifyInfo(message)` on `ism` followed to its metadata: decode the
 * OffchainLookup (anything else is `malformed`: the ISM is broken), then `ccipRead` with `ism` as
 * the contract asked. The shape of lib/worker/metadata.ts's OffchainReader.
 */
export function createOffchainReader(
  opts: Omit<CcipReadOptions, 'contract' | 'signal'> = {},
): (revertData: Hex, ism: Hex, signal?: AbortSignal) => Promise<Hex> {
  return async (revertData, ism, signal) => {
    const lookup = decodeOffchainLookup(revertData);
    if (!lookup) throw new CcipReadError('malformed', 'the ISM did not revert with an OffchainLookup');
    return ccipRead(lookup, { ...opts, contract: ism, signal });
  };
}
