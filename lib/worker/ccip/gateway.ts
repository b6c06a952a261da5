/**
 * One CCIP-read gateway asked for the metadata (docs/delivery.md, CCIP-read). The gateway is named
 * by the recipient's ISM, so its answer is treated as hostile: one timeout, no redirects followed,
 * a bounded read, `data` must be 0x-hex. Failures say what happened, never the URL (it may carry
 * an API key). Where the request may go is lib/worker/ccip/target.ts's decision, made before.
 */
import type { Clock } from '../../clock.ts';
import { isPlainObject, joinBytes } from '../../codec/hex.ts';
import { CcipReadError } from '../errors.ts';
import type { Hex } from './offchain-lookup.ts';
import type { GatewayTarget } from './target.ts';
import type { GatewayResponse, GatewayTransport } from './transport.ts';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

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
export class GatewayFailure extends CcipReadError {
  override name = 'GatewayFailure';
}

/** Reads at most `maxBytes`; undefined when the body is larger (the stream is cancelled). */
async function readAtMost(response: GatewayResponse, maxBytes: number): Promise<Uint8Array | undefined> {
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

/** A gateway URL with EIP-3668's `{sender}` and `{data}` filled in, and how to ask it. */
export interface GatewayUrl {
  url: URL;
  /** GET when the template has `{data}`, else POST `{"sender","data"}`. */
  get: boolean;
}

/** The URL a template names for this lookup; a GatewayFailure (`malformed`) when it is not http(s). */
export function gatewayUrl(template: string, sender: string, data: string): GatewayUrl {
  const href = template.replaceAll('{sender}', sender).replaceAll('{data}', data);
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    throw new GatewayFailure('malformed', 'is not a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new GatewayFailure('malformed', 'is not an http(s) URL');
  return { url, get: template.includes('{data}') };
}

export interface Ask {
  sender: string;
  data: string;
  transport: GatewayTransport;
  clock: Clock;
  timeoutMs: number;
  maxBytes: number;
  signal?: AbortSignal;
}

export async function askGateway(target: GatewayTarget, get: boolean, a: Ask): Promise<Hex> {
  const local = new AbortController();
  let timedOut = false;
  const timer = a.clock.setTimeout(() => {
    timedOut = true;
    local.abort(new GatewayFailure('unavailable', `timed out after ${a.timeoutMs} ms`));
  }, a.timeoutMs);
  const onAbort = () => local.abort(a.signal!.reason);
  a.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const response = await a.transport(target, {
      method: get ? 'GET' : 'POST',
      headers: get
        ? { accept: 'application/json' }
        : { accept: 'application/json', 'content-type': 'application/json' },
      body: get ? undefined : JSON.stringify({ sender: a.sender, data: a.data }),
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
