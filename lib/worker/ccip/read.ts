/**
 * EIP-3668 (CCIP-read) for the delivery worker: decode an ISM's `OffchainLookup` revert
 * (lib/worker/ccip/offchain-lookup.ts) and ask its gateways for the metadata (docs/delivery.md,
 * CCIP-read). On Hyperlane's CCTP routes the gateway is Hyperlane's CCTP attestation service; its
 * answer `data` is the ISM metadata handed to `Mailbox.process` unchanged.
 *
 * The gateways are named by the recipient's ISM, that is by whoever deployed the recipient, so
 * they are hostile (docs/hostile-recipients.md, Hostile recipients): only public addresses are asked, the
 * connection goes to the address checked (lib/worker/ccip/target.ts, transport.ts), and a lookup
 * naming any other is refused before any request, saying nothing per URL. Every answer is
 * hostile too (lib/worker/ccip/gateway.ts): one timeout per URL (10 s), one time budget for the
 * whole lookup (30 s), no redirects followed, at most 1 MiB read, `data` must be 0x-hex, at most
 * 10 URLs tried. Error messages say which gateway by position ("gateway 1 of 2"), never by URL:
 * a URL may carry an API key.
 */
import { systemClock, type Clock } from '../../clock.ts';
import type { FetchLike } from '../../rpc/client.ts';
import { CcipReadError, type CcipReadFailureCode } from '../errors.ts';
import { askGateway, GatewayFailure, gatewayUrl, type GatewayUrl } from './gateway.ts';
import { decodeOffchainLookup, type Hex, type OffchainLookup } from './offchain-lookup.ts';
import {
  checkGatewayTarget,
  normalizeOrigins,
  ownAddresses,
  systemLocalAddresses,
  systemResolver,
  type LocalAddresses,
  type Resolver,
  type TargetCheck,
  type TargetRefusal,
} from './target.ts';
import { fetchTransport, pinnedTransport } from './transport.ts';

export { CcipReadError, type CcipReadFailureCode } from '../errors.ts';
export { decodeOffchainLookup, OFFCHAIN_LOOKUP_SELECTOR, type Hex, type OffchainLookup } from './offchain-lookup.ts';
export type { LocalAddresses, ResolvedAddress, Resolver } from './target.ts';

export interface CcipReadOptions {
  /**
   * The contract `getOffchainVerifyInfo` was called on. EIP-3668: a lookup whose `sender` is
   * another contract is refused (a contract could otherwise make its callers ask on another's
   * behalf).
   */
  contract: Hex;
  /**
   * Origins (`http://host:port`) asked although their address is not public: gateways you run
   * yourself. Compared after URL normalisation (`http://127.0.0.1:80` is `http://127.0.0.1`).
   * Default none.
   */
  allowOrigins?: readonly string[];
  /** Resolves gateway host names; every address it answers must be public. Default: the system's. */
  resolve?: Resolver;
  /** This host's own interface addresses, refused like private ones. Default: node:os networkInterfaces(). */
  localAddresses?: LocalAddresses;
  /**
   * Replaces the connection to the gateways (tests, embedders): the address check still runs
   * first, but the fetch resolves the name again itself. Default: node:http(s) to the checked
   * address.
   */
  fetch?: FetchLike;
  clock?: Clock;
  /** Per gateway: request, headers and body. Default 10 000 ms. */
  timeoutMs?: number;
  /** The whole lookup: resolving and asking every gateway. Default 30 000 ms. */
  budgetMs?: number;
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
  /** Told of each gateway refused for its address (for the operator's log; never shown publicly). */
  onRefused?: (refusal: CcipReadRefusal) => void;
}

export interface CcipReadAttempt {
  /** 0-based position in the lookup's URLs. */
  index: number;
  url: string;
  outcome: 'answer' | 'pending' | 'unavailable' | 'malformed' | 'refused';
}

export interface CcipReadRefusal {
  /** 0-based position in the lookup's URLs. */
  index: number;
  /** The template as the ISM gave it (may hold a key). */
  url: string;
  /** The address refused, `localhost`, or `host:port` for a port refused. */
  address: string;
  range: TargetRefusal['range'];
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_BUDGET_MS = 30_000;
const DEFAULT_MAX_BYTES = 1024 * 1024;
const DEFAULT_MAX_URLS = 10;

/** Resolves `work`, or undefined once the budget's `ms` have passed; rejects if `signal` aborts. */
function withinBudget<T>(work: Promise<T>, clock: Clock, ms: number, signal?: AbortSignal): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => finish(() => reject(signal!.reason));
    const timer = clock.setTimeout(() => finish(() => resolve(undefined)), Math.max(0, ms));
    function finish(settle: () => void) {
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settle();
    }
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(error)),
    );
  });
}

/**
 * Asks the lookup's gateways in order and returns the first good answer's `data` (the ISM
 * metadata). URL templates per EIP-3668: `{sender}` and `{data}` replaced by lower-case hex;
 * GET when the template has `{data}`, else POST `{"sender","data"}` as JSON.
 *
 * Every URL's host is checked first (names resolved): if any is not a public address (and its
 * origin not allowed), the lookup is refused (`forbidden`) and no gateway is asked. Then: next
 * gateway on a 5xx, a transport error, a timeout or a malformed answer; 404 (and a 500 saying
 * the attestation is not there yet) means pending and also moves on; any other 4xx stops
 * (refused). When the time budget runs out the gateways left are not asked; the lookup is then
 * pending if a gateway said so, else a failure.
 * Throws CcipReadError, or the signal's reason once it aborts.
 */
export async function ccipRead(lookup: OffchainLookup, opts: CcipReadOptions): Promise<Hex> {
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const budgetMs = opts.budgetMs ?? DEFAULT_BUDGET_MS;
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const sender = lookup.sender.toLowerCase();
  const data = lookup.callData.toLowerCase();
  if (sender !== opts.contract.toLowerCase()) {
    throw new CcipReadError('refused', 'the OffchainLookup names another sender than the contract asked');
  }
  const urls = lookup.urls.slice(0, opts.maxUrls ?? DEFAULT_MAX_URLS);
  if (urls.length === 0) throw new CcipReadError('refused', 'the OffchainLookup names no gateway');
  const deadline = clock.now() + budgetMs;
  const budgetText = `the ${budgetMs / 1000} s time budget ran out`;
  opts.signal?.throwIfAborted();

  // Every URL's target, checked before any gateway is asked.
  const allowOrigins = normalizeOrigins(opts.allowOrigins ?? []);
  const resolve = opts.resolve ?? systemResolver;
  const own = ownAddresses((opts.localAddresses ?? systemLocalAddresses)());
  const prepared: (GatewayUrl | GatewayFailure)[] = urls.map((template) => {
    try {
      return gatewayUrl(template, sender, data);
    } catch (error) {
      if (error instanceof GatewayFailure) return error;
      throw error;
    }
  });
  const checks = await withinBudget(
    Promise.all(
      prepared.map(
        (p): Promise<TargetCheck | GatewayFailure> =>
          p instanceof GatewayFailure
            ? Promise.resolve(p)
            : checkGatewayTarget(p.url, { resolve, allowOrigins, ownAddresses: own }),
      ),
    ),
    clock,
    budgetMs,
    opts.signal,
  );
  if (checks === undefined)
    throw new CcipReadError('unavailable', `CCIP-read unavailable: ${budgetText} resolving the gateways`);
  let refused = false;
  let onlyPorts = true;
  checks.forEach((check, index) => {
    if (check instanceof GatewayFailure || check.ok || !('refusal' in check)) return;
    refused = true;
    if (check.refusal.range !== 'port') onlyPorts = false;
    opts.onRefused?.({ index, url: urls[index], ...check.refusal });
  });
  // Nothing per URL: which host resolves where is the operator's to know, not a stranger's.
  if (refused) {
    throw new CcipReadError(
      'forbidden',
      onlyPorts
        ? 'CCIP-read refused: the lookup names a gateway on a port other than 80 and 443; no gateway was asked'
        : 'CCIP-read refused: the lookup names a gateway at a non-public address; no gateway was asked',
    );
  }

  const transport = opts.fetch ? fetchTransport(opts.fetch) : pinnedTransport;
  const outcomes: string[] = [];
  let pending = false;
  let malformed = false;
  let outOfTime = false;
  for (let i = 0; i < urls.length; i++) {
    opts.signal?.throwIfAborted();
    const which = `gateway ${i + 1} of ${urls.length}`;
    const left = deadline - clock.now();
    if (left <= 0) {
      outOfTime = true;
      outcomes.push(`${urls.length - i} not asked`);
      break;
    }
    const check = checks[i];
    try {
      if (check instanceof GatewayFailure) throw check;
      if (!check.ok) throw new GatewayFailure('unavailable', 'unresolved' in check ? check.unresolved : 'refused');
      const answer = await askGateway(check.target, (prepared[i] as GatewayUrl).get, {
        sender,
        data,
        transport,
        clock,
        timeoutMs: Math.min(timeoutMs, left),
        maxBytes,
        signal: opts.signal,
      });
      opts.onAttempt?.({ index: i, url: urls[i], outcome: 'answer' });
      return answer;
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const kind = err instanceof GatewayFailure ? err.code : 'unavailable';
      opts.onAttempt?.({ index: i, url: urls[i], outcome: kind === 'forbidden' ? 'refused' : kind });
      outcomes.push(`${which} ${err instanceof GatewayFailure ? err.message : 'failed'}`);
      if (kind === 'refused') throw new CcipReadError('refused', `CCIP-read refused: ${outcomes.join('; ')}`);
      if (kind === 'pending') pending = true;
      if (kind === 'malformed') malformed = true;
    }
  }
  if (!outOfTime && deadline - clock.now() <= 0 && outcomes.length > 0) outOfTime = true;
  const kind: CcipReadFailureCode = pending ? 'pending' : malformed ? 'malformed' : 'unavailable';
  const lead = kind === 'pending' ? 'CCIP-read pending (proof not ready)' : `CCIP-read ${kind}`;
  throw new CcipReadError(kind, `${lead}${outOfTime ? ` (${budgetText})` : ''}: ${outcomes.join('; ')}`);
}

/**
 * The revert of `getOffchainVerifyInfo(message)` on `ism` followed to its metadata: decode the
 * OffchainLookup (anything else is `malformed`: the ISM is broken), then `ccipRead` with `ism` as
 * the contract asked. The shape of lib/worker/ism/metadata.ts's OffchainReader.
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
