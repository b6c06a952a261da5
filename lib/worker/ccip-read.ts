/**
 * EIP-3668 (CCIP-read) for the delivery worker: decode an ISM's `OffchainLookup` revert and ask
 * its gateways for the metadata (docs/delivery.md, CCIP-read). On Hyperlane's CCTP routes the
 * gateway is Hyperlane's CCTP attestation service; its answer `data` is the ISM metadata handed
 * to `Mailbox.process` unchanged.
 *
 * The gateways are named by the recipient's ISM, that is by whoever deployed the recipient, so
 * every answer is treated as hostile: one timeout per URL (10 s), no redirects followed, at most
 * 1 MiB read, `data` must be 0x-hex, at most 10 URLs tried. Error messages say which gateway by
 * position ("gateway 1 of 2"), never by URL: a URL may carry an API key.
 *
 * Pure Web APIs (fetch, AbortController); no viem needed here.
 */
import { systemClock, type Clock } from '../clock.ts';
import { bytesToHex, hexToBytes, isPlainObject, joinBytes } from '../hex.ts';
import { keccak256 } from '../keccak.ts';
import type { FetchLike } from '../rpc.ts';
import { CcipReadError, type CcipReadErrorKind } from './errors.ts';

export { CcipReadError, type CcipReadErrorKind } from './errors.ts';

export type Hex = `0x${string}`;

/** The arguments of `error OffchainLookup(address sender, string[] urls, bytes callData, bytes4 callbackFunction, bytes extraData)`. */
export interface OffchainLookup {
  /** Lower-case 0x address. */
  sender: Hex;
  urls: string[];
  /** Lower-case 0x hex. */
  callData: Hex;
  /** Lower-case 0x hex, 4 bytes. */
  callbackFunction: Hex;
  /** Lower-case 0x hex. */
  extraData: Hex;
}

const WORD = 32;
const UTF8 = new TextDecoder('utf-8', { fatal: true });
const UTF8_ENCODER = new TextEncoder();

/** 0x556f1830, from the signature, not typed by hand. */
const SELECTOR = keccak256(UTF8_ENCODER.encode('OffchainLookup(address,string[],bytes,bytes4,bytes)')).slice(0, 4);
export const OFFCHAIN_LOOKUP_SELECTOR = bytesToHex(SELECTOR) as Hex;

/** A word as a number when it is at most `max`, else undefined (offsets and lengths). */
function smallWord(body: Uint8Array, at: number, max: number): number | undefined {
  if (at < 0 || at + WORD > body.length) return undefined;
  for (let i = at; i < at + WORD - 6; i++) if (body[i] !== 0) return undefined;
  let value = 0;
  for (let i = at + WORD - 6; i < at + WORD; i++) value = value * 256 + body[i];
  return value <= max ? value : undefined;
}

function readBytes(body: Uint8Array, at: number): Uint8Array | undefined {
  const length = smallWord(body, at, body.length);
  if (length === undefined || at + WORD + length > body.length) return undefined;
  return body.slice(at + WORD, at + WORD + length);
}

function padded(length: number): number {
  return Math.ceil(length / WORD) * WORD;
}

function uintWord(value: number): Uint8Array {
  const word = new Uint8Array(WORD);
  let v = value;
  for (let i = WORD - 1; v > 0; i--, v = Math.floor(v / 256)) word[i] = v % 256;
  return word;
}

function encodeBytes(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(WORD + padded(bytes.length));
  out.set(uintWord(bytes.length), 0);
  out.set(bytes, WORD);
  return out;
}

/** The canonical ABI encoding of the error's arguments (Solidity's own layout). */
function encodeArguments(
  sender: Uint8Array,
  urls: readonly Uint8Array[],
  callData: Uint8Array,
  callback: Uint8Array,
  extraData: Uint8Array,
): Uint8Array {
  const urlParts = urls.map(encodeBytes);
  const urlOffsets: Uint8Array[] = [];
  let urlOffset = urls.length * WORD;
  for (const part of urlParts) {
    urlOffsets.push(uintWord(urlOffset));
    urlOffset += part.length;
  }
  const urlsTail = joinBytes([uintWord(urls.length), ...urlOffsets, ...urlParts]);
  const callDataTail = encodeBytes(callData);
  const extraTail = encodeBytes(extraData);
  const head = new Uint8Array(5 * WORD);
  head.set(sender, 12);
  head.set(uintWord(5 * WORD), WORD);
  head.set(uintWord(5 * WORD + urlsTail.length), 2 * WORD);
  head.set(callback, 3 * WORD);
  head.set(uintWord(5 * WORD + urlsTail.length + callDataTail.length), 4 * WORD);
  return joinBytes([head, urlsTail, callDataTail, extraTail]);
}

/**
 * The OffchainLookup in a revert's data, or null when the data is anything else: another error,
 * a truncated or non-canonical encoding (trailing bytes, dirty padding, offsets out of order),
 * URLs that are not UTF-8. Strict by re-encoding: what is accepted is exactly what Solidity emits.
 */
export function decodeOffchainLookup(revertData: Hex): OffchainLookup | null {
  const data = hexToBytes(revertData);
  if (!data || data.length < 4 + 5 * WORD) return null;
  for (let i = 0; i < 4; i++) if (data[i] !== SELECTOR[i]) return null;
  const body = data.subarray(4);
  const sender = body.slice(12, WORD);
  const urlsAt = smallWord(body, WORD, body.length);
  const callDataAt = smallWord(body, 2 * WORD, body.length);
  const callback = body.slice(3 * WORD, 3 * WORD + 4);
  const extraAt = smallWord(body, 4 * WORD, body.length);
  if (urlsAt === undefined || callDataAt === undefined || extraAt === undefined) return null;
  const count = smallWord(body, urlsAt, (body.length - urlsAt) / WORD);
  if (count === undefined) return null;
  const urlBytes: Uint8Array[] = [];
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    const relative = smallWord(body, urlsAt + WORD + i * WORD, body.length);
    if (relative === undefined) return null;
    const bytes = readBytes(body, urlsAt + WORD + relative);
    if (!bytes) return null;
    try {
      urls.push(UTF8.decode(bytes));
    } catch {
      return null;
    }
    urlBytes.push(bytes);
  }
  const callData = readBytes(body, callDataAt);
  const extraData = readBytes(body, extraAt);
  if (!callData || !extraData) return null;
  const canonical = encodeArguments(sender, urlBytes, callData, callback, extraData);
  if (canonical.length !== body.length) return null;
  for (let i = 0; i < body.length; i++) if (canonical[i] !== body[i]) return null;
  return {
    sender: bytesToHex(sender) as Hex,
    urls,
    callData: bytesToHex(callData) as Hex,
    callbackFunction: bytesToHex(callback) as Hex,
    extraData: bytesToHex(extraData) as Hex,
  };
}

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
/** An error body is read only to look for the "not ready" text: a little is enough. */
const ERROR_BODY_BYTES = 16 * 1024;
/**
 * Hyperlane's CCTP service answers HTTP 500 `{"error":"CCTP attestation is pending"}` until
 * Circle attests; "attestation not found" is the wording of other deployments. Both mean: later.
 */
const NOT_READY = /attestation (is )?(not found|pending)/i;
const HEX_DATA = /^0x(?:[0-9a-fA-F]{2})*$/;

/**
 * A gateway's outcome other than an answer, thrown by askGateway: its kind and what it said
 * ("answered HTTP 404 (not ready)"); `refused` stops the lookup, the others move on to the next.
 */
class GatewayFailure extends CcipReadError {
  override name = 'GatewayFailure';
}

/** Reads at most `maxBytes`; undefined when the body is larger (the stream is cancelled). */
async function readAtMost(response: Response, maxBytes: number): Promise<Uint8Array | undefined> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    return undefined;
  }
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return joinBytes(chunks);
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        return undefined;
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
}

/** The metadata in a 2xx answer, or a GatewayFailure saying what is wrong with it. */
function parseAnswer(body: Uint8Array, sender: string): Hex {
  let json: unknown;
  try {
    json = JSON.parse(UTF8.decode(body));
  } catch {
    throw new GatewayFailure('malformed', 'answered invalid JSON');
  }
  if (!isPlainObject(json) || typeof json.data !== 'string')
    throw new GatewayFailure('malformed', 'answered no "data" string');
  if (!HEX_DATA.test(json.data)) throw new GatewayFailure('malformed', 'answered "data" that is not 0x-hex');
  // EIP-3668 answers carry only `data`; one that names a sender must name the contract asked.
  if (json.sender !== undefined && (typeof json.sender !== 'string' || json.sender.toLowerCase() !== sender)) {
    throw new GatewayFailure('malformed', 'answered for another sender');
  }
  return json.data.toLowerCase() as Hex;
}

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

interface Ask {
  sender: string;
  data: string;
  fetchFn: FetchLike;
  clock: Clock;
  timeoutMs: number;
  maxBytes: number;
  signal?: AbortSignal;
}

async function askGateway(template: string, a: Ask): Promise<Hex> {
  const href = template.replaceAll('{sender}', a.sender).replaceAll('{data}', a.data);
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    throw new GatewayFailure('malformed', 'is not a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new GatewayFailure('malformed', 'is not an http(s) URL');
  const get = template.includes('{data}');

  const local = new AbortController();
  let timedOut = false;
  const timer = a.clock.setTimeout(() => {
    timedOut = true;
    local.abort(new GatewayFailure('unavailable', `timed out after ${a.timeoutMs} ms`));
  }, a.timeoutMs);
  const onAbort = () => local.abort(a.signal!.reason);
  a.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const response = await a.fetchFn(url.href, {
      method: get ? 'GET' : 'POST',
      headers: get
        ? { accept: 'application/json' }
        : { accept: 'application/json', 'content-type': 'application/json' },
      body: get ? undefined : JSON.stringify({ sender: a.sender, data: a.data }),
      redirect: 'manual',
      signal: local.signal,
    });
    const status = response.status;
    if (status >= 200 && status < 300) {
      const body = await readAtMost(response, a.maxBytes);
      if (!body) throw new GatewayFailure('malformed', `answered more than ${a.maxBytes} bytes`);
      return parseAnswer(body, a.sender);
    }
    if (status === 404) {
      await response.body?.cancel().catch(() => {});
      throw new GatewayFailure('pending', 'answered HTTP 404 (not ready)');
    }
    if (status === 500) {
      const body = await readAtMost(response, ERROR_BODY_BYTES).catch(() => undefined);
      let text = '';
      try {
        text = body ? UTF8.decode(body) : '';
      } catch {
        // not text: an ordinary 500
      }
      if (NOT_READY.test(text))
        throw new GatewayFailure('pending', 'answered HTTP 500 attestation pending (not ready)');
      throw new GatewayFailure('unavailable', 'answered HTTP 500');
    }
    await response.body?.cancel().catch(() => {});
    // A manual redirect is status 3xx, or 0 for an opaque redirect in browsers.
    if ((status >= 300 && status < 400) || response.type === 'opaqueredirect') {
      throw new GatewayFailure('malformed', `answered a redirect (HTTP ${status}), not followed`);
    }
    if (status >= 400 && status < 500) throw new GatewayFailure('refused', `answered HTTP ${status}`);
    throw new GatewayFailure('unavailable', `answered HTTP ${status}`);
  } catch (err) {
    if (err instanceof GatewayFailure) throw err;
    if (a.signal?.aborted) throw a.signal.reason;
    // The transport's own text may name the URL: keep it out.
    if (timedOut) throw new GatewayFailure('unavailable', `timed out after ${a.timeoutMs} ms`);
    throw new GatewayFailure('unavailable', 'transport error');
  } finally {
    a.clock.clearTimeout(timer);
    a.signal?.removeEventListener('abort', onAbort);
  }
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
