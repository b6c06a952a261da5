/**
 * JSON-RPC 2.0 over HTTP: one request to one endpoint, its `result` or an RpcError. Each call is
 * bounded in time (`attemptTimeoutMs`) and in bytes (`maxResponseBytes`), and checks that the
 * answer is JSON-RPC for this request's id. The fail-over and polling built on it live in
 * lib/receipt.ts.
 *
 * RPC URLs often carry API keys (path, query, userinfo), so no URL ever appears in an error, a log
 * or an event except through `redactUrl`.
 */
import { systemClock, type Clock } from './clock.ts';
import { RpcError, type RpcFailureCode } from './errors.ts';
import { isPlainObject, joinBytes } from './hex.ts';

import type { FetchLike } from './types.ts';

export type { FetchLike };

export interface RpcOptions {
  fetch?: FetchLike;
  clock?: Clock;
  /** One request's limit, so a hanging endpoint fails over. Default 3 000 ms. */
  attemptTimeoutMs?: number;
  /** Largest response body read. Default 8 MiB. */
  maxResponseBytes?: number;
}

/**
 * Sends `method(params)` to `url` and returns the JSON-RPC `result`. Throws RpcError for a failure
 * of this endpoint, or `signal`'s reason once it aborted.
 */
export type RpcCall = (
  url: string,
  method: string,
  params: readonly unknown[],
  signal: AbortSignal,
) => Promise<unknown>;

/** scheme://host[:port]: drops userinfo, path, query and fragment, where API keys live. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '<invalid url>';
  }
}

export function fail(code: RpcFailureCode, message: string, cause?: unknown): never {
  throw new RpcError(code, message, cause === undefined ? undefined : { cause });
}

/**
 * A signal that aborts with `outer`'s reason when `outer` aborts, and also through `local`.
 * Cheaper than AbortSignal.any (no weak references for the GC to sweep) and undone by the
 * returned function, which every caller runs in `finally`.
 */
export function follow(outer: AbortSignal, local: AbortController): () => void {
  if (outer.aborted) {
    local.abort(outer.reason);
    return () => {};
  }
  const onAbort = () => local.abort(outer.reason);
  outer.addEventListener('abort', onAbort, { once: true });
  return () => outer.removeEventListener('abort', onAbort);
}

/**
 * The global fetch refuses a URL with credentials ("https://user:key@host/…", a form RPC providers
 * hand out), so the default fetch sends them as HTTP Basic auth instead, as curl and the reference
 * relayer's reqwest do. An injected fetch gets the URL as configured.
 */
function fetchWithUrlCredentials(input: string, init: RequestInit): Promise<Response> {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return fetch(input, init);
  }
  if (url.username === '' && url.password === '') return fetch(input, init);
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  };
  let binary = '';
  for (const byte of new TextEncoder().encode(`${decode(url.username)}:${decode(url.password)}`))
    binary += String.fromCharCode(byte);
  const headers = new Headers(init.headers);
  headers.set('authorization', `Basic ${btoa(binary)}`);
  url.username = '';
  url.password = '';
  return fetch(url.href, { ...init, headers });
}

/** Reads at most `maxBytes` of the body, cancelling the stream beyond that or when `signal` aborts. */
async function readBounded(response: Response, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    fail('too_large', 'response too large');
  }
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  // A stalled body must not outlive its attempt: cancelling the reader ends the pending read.
  const onAbort = () => void reader.cancel(signal.reason).catch(() => {});
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (signal.aborted) throw signal.reason;
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        fail('too_large', 'response too large');
      }
      chunks.push(value);
    }
    return joinBytes(chunks);
  } finally {
    signal.removeEventListener('abort', onAbort);
    reader.releaseLock();
  }
}

/** Stateless when used without `stream`, so one instance serves every response. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The `result` of the JSON-RPC response to request `id`. */
function parseResponse(body: Uint8Array, id: number): unknown {
  let json: unknown;
  try {
    json = JSON.parse(UTF8.decode(body));
  } catch {
    fail('invalid_json', 'invalid JSON');
  }
  if (!isPlainObject(json)) fail('not_json_rpc', 'not a JSON-RPC response');
  if (json.id !== id) fail('wrong_id', 'wrong JSON-RPC id');
  if (json.error !== undefined) {
    const error = json.error;
    const code = isPlainObject(error) && Number.isInteger(error.code) ? ` ${error.code}` : '';
    // The node's own words (e.g. "header not found") go to the operator's log as the cause.
    const said = isPlainObject(error) && typeof error.message === 'string' ? error.message : undefined;
    fail('rpc_error', `JSON-RPC error${code}`, said);
  }
  if (!('result' in json)) fail('not_json_rpc', 'not a JSON-RPC response');
  return json.result;
}

export function createRpcClient(opts: RpcOptions = {}): RpcCall {
  const fetchFn: FetchLike = opts.fetch ?? fetchWithUrlCredentials;
  const clock = opts.clock ?? systemClock;
  const attemptTimeoutMs = opts.attemptTimeoutMs ?? 3_000;
  const maxResponseBytes = opts.maxResponseBytes ?? 8 * 1024 * 1024;
  let nextId = 1;

  return async function call(url, method, params, outer) {
    const id = nextId++;
    const local = new AbortController();
    const timer = clock.setTimeout(
      () => local.abort(new RpcError('attempt_timeout', 'attempt timed out')),
      attemptTimeoutMs,
    );
    const unfollow = follow(outer, local);
    const signal = local.signal;
    try {
      let response: Response;
      try {
        response = await fetchFn(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
          signal,
        });
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        // The transport error's text may contain the URL: keep it out.
        fail('transport', 'transport error', err);
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        fail('http_status', `HTTP ${response.status}`);
      }
      return parseResponse(await readBounded(response, maxResponseBytes, signal), id);
    } catch (err) {
      // An abort of the attempt's own timer is a failure of this URL; an outer abort ends the wait.
      if (outer.aborted) throw outer.reason;
      if (err instanceof RpcError) throw err;
      if (signal.aborted) throw signal.reason;
      fail('transport', 'transport error', err);
    } finally {
      unfollow();
      clock.clearTimeout(timer);
    }
  };
}

/**
 * `text` with every piece of the endpoint `url` that may hold a key (userinfo, path segments,
 * query values) replaced by "…": a node may quote the request back in its error message, with
 * the key in the path. Pieces shorter than 3 characters ("v2") carry no key and stay.
 */
export function redactEndpoint(text: string, url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return text;
  }
  const raw = [
    u.username,
    u.password,
    u.pathname,
    u.search.slice(1),
    ...u.pathname.split('/'),
    ...[...u.searchParams.values()],
  ];
  const pieces = new Set<string>();
  for (const piece of raw) {
    pieces.add(piece);
    try {
      pieces.add(decodeURIComponent(piece));
    } catch {
      // not percent-encoded
    }
  }
  // Longest first, so a whole path goes before the segments inside it.
  for (const piece of [...pieces].filter((p) => p.length >= 3).sort((a, b) => b.length - a.length)) {
    text = text.split(piece).join('…');
  }
  return text;
}

/** The class of an endpoint's failure, as an operator acts on it (docs/operations.md#logs). */
export type RpcFailureClass =
  | 'dns'
  | 'connection_refused'
  | 'connection_reset'
  | 'tls'
  | 'timeout'
  | 'transport'
  | 'http_5xx'
  | 'http_4xx'
  | 'rpc_error'
  | 'malformed_answer';

/** The innermost `code` property on the cause chain (Node's "ECONNREFUSED", undici's "UND_ERR_SOCKET"). */
function transportCode(error: unknown): string | undefined {
  let code: string | undefined;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const own = (e as { code?: unknown }).code;
    if (typeof own === 'string') code = own;
  }
  return code;
}

/** The class of `error` and a short URL-free phrase for it ("connection refused", "HTTP 503"). */
export function classifyFailure(error: RpcError): { failure: RpcFailureClass; summary: string } {
  switch (error.code) {
    case 'transport': {
      const code = transportCode(error.cause) ?? '';
      if (/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL)$/.test(code))
        return { failure: 'dns', summary: `DNS lookup failed (${code})` };
      if (code === 'ECONNREFUSED') return { failure: 'connection_refused', summary: 'connection refused' };
      if (/^(ECONNRESET|EPIPE|UND_ERR_SOCKET|UND_ERR_CLOSED)$/.test(code))
        return { failure: 'connection_reset', summary: 'connection reset' };
      if (/^(ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT)$/.test(code))
        return { failure: 'timeout', summary: 'timed out' };
      if (/CERT|TLS|SSL|UNABLE_TO_VERIFY/.test(code)) return { failure: 'tls', summary: `TLS error (${code})` };
      return { failure: 'transport', summary: code === '' ? 'transport error' : `transport error (${code})` };
    }
    case 'attempt_timeout':
    case 'deadline':
      return { failure: 'timeout', summary: 'no answer in time' };
    case 'http_status':
      return { failure: /^HTTP 5/.test(error.message) ? 'http_5xx' : 'http_4xx', summary: error.message };
    case 'rpc_error':
      return { failure: 'rpc_error', summary: error.message };
    default:
      return { failure: 'malformed_answer', summary: `malformed answer (${error.message})` };
  }
}

/** Every URL in `text` reduced to its origin: errors and causes often quote the URL they called. */
export function redactUrls(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>()]+/gi, redactUrl);
}

/**
 * Why an attempt failed beneath its fixed message, for the operator's log: the node's JSON-RPC
 * error message or the innermost transport cause ("connect ECONNREFUSED 127.0.0.1:8545",
 * "getaddrinfo ENOTFOUND host"): first line, URLs redacted, at most 200 characters.
 */
export function causeText(error: unknown): string | undefined {
  let cause = error instanceof Error ? error.cause : undefined;
  while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause;
  const text = cause instanceof Error ? cause.message : cause;
  if (typeof text !== 'string' || text === '') return undefined;
  return redactUrls(text.split('\n')[0]).slice(0, 200);
}
