/**
 * JSON-RPC 2.0 over HTTP: one request to one endpoint, its `result` or an RpcError. Each call is
 * bounded in time (`attemptTimeoutMs`) and in bytes (`maxResponseBytes`), and checks that the
 * answer is JSON-RPC for this request's id. The fail-over and polling built on it live in
 * lib/rpc/receipt.ts.
 *
 * RPC URLs often carry API keys (path, query, userinfo), so no URL ever appears in an error, a log
 * or an event except through `redactUrl`.
 */
import { systemClock, type Clock } from '../clock.ts';
import { RpcError, type RpcFailureCode } from '../errors/classes.ts';
import { isPlainObject } from '../codec/hex.ts';
import { discardBody, readBounded, type RpcFetch, type RpcResponse } from './body.ts';
import type { FetchLike } from '../types.ts';

export type { FetchLike, RpcFetch };
export type { BodySink, ChunkedBody, ChunkedResponse, RpcResponse } from './body.ts';
export {
  causeText,
  classifyFailure,
  type RpcFailureClass,
} from './diagnostics.ts';

export interface RpcOptions {
  /** Any `fetch`; a transport may answer a ChunkedResponse (lib/rpc/body.ts). Default: the global fetch. */
  fetch?: RpcFetch;
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
 * The `authorization` header for a URL's userinfo ("https://user:key@host/…", a form RPC providers
 * hand out): HTTP Basic, as curl and the reference relayer's reqwest send it; undefined without
 * userinfo. Both the default fetch below and relayer-api/server's transport use it.
 */
export function basicAuthorization(url: URL): string | undefined {
  if (url.username === '' && url.password === '') return undefined;
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
  return `Basic ${btoa(binary)}`;
}

/**
 * The global fetch refuses a URL with credentials, so the default fetch sends them as Basic auth
 * instead. An injected fetch gets the URL as configured.
 */
function fetchWithUrlCredentials(input: string, init: RequestInit): Promise<Response> {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return fetch(input, init);
  }
  const authorization = basicAuthorization(url);
  if (authorization === undefined) return fetch(input, init);
  const headers = new Headers(init.headers);
  headers.set('authorization', authorization);
  url.username = '';
  url.password = '';
  return fetch(url.href, { ...init, headers });
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
  const fetchFn: RpcFetch = opts.fetch ?? fetchWithUrlCredentials;
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
      let response: RpcResponse;
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
        await discardBody(response);
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
