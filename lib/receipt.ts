/**
 * Fetches a transaction receipt over JSON-RPC (`eth_getTransactionReceipt`), DESIGN.md §3.
 *
 * The chain's RPC URLs are tried in order; any failure of one (transport, attempt timeout, HTTP
 * status, bad JSON, wrong id, JSON-RPC error, malformed receipt, oversized body) moves on to the
 * next. A `null` result means "not mined yet": wait `pollIntervalMs` and start again from the
 * first URL. Everything runs under one deadline (spec §8: 10 s) on the injected clock.
 *
 * RPC URLs often carry API keys (path, query, userinfo), so no URL ever appears in an error, a log
 * or an event except through `redactUrl`.
 */
import { sleep, systemClock, type Clock } from './clock.ts';
import { RelayError, RpcError, type RpcFailureCode } from './errors.ts';
import { hexToBytes, isHexOfLength, joinBytes } from './hex.ts';
import type { ChainConfig, Log, Receipt } from './types.ts';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface ReceiptFetchEvent {
  chain: string;
  /** scheme://host[:port] only. */
  rpc: string;
  /** The endpoint gave a valid answer (a receipt or `null`). */
  ok: boolean;
  durationMs: number;
  /** A fixed, URL-free description of the failure. */
  error?: string;
}

export interface ReceiptFetcherOptions {
  fetch?: FetchLike;
  clock?: Clock;
  /** Overall deadline from the first request. Default 10 000 ms (spec §8). */
  timeoutMs?: number;
  /** Wait between polls while the receipt is `null`, or after every URL failed. Default 500 ms. */
  pollIntervalMs?: number;
  /** One request's limit, so a hanging endpoint fails over. Default 3 000 ms. */
  attemptTimeoutMs?: number;
  /** Largest response body read. Default 8 MiB. */
  maxResponseBytes?: number;
  onAttempt?: (event: ReceiptFetchEvent) => void;
}

export type ReceiptFetcher = (chain: ChainConfig, txHash: string, signal?: AbortSignal) => Promise<Receipt>;

/** scheme://host[:port]: drops userinfo, path, query and fragment, where API keys live. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '<invalid url>';
  }
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
  for (const byte of new TextEncoder().encode(`${decode(url.username)}:${decode(url.password)}`)) binary += String.fromCharCode(byte);
  const headers = new Headers(init.headers);
  headers.set('authorization', `Basic ${btoa(binary)}`);
  url.username = '';
  url.password = '';
  return fetch(url.href, { ...init, headers });
}

function fail(code: RpcFailureCode, message: string): never {
  throw new RpcError(code, message);
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseLog(value: unknown): Log {
  if (!isObject(value)) fail('malformed_receipt', 'malformed receipt log');
  const { address, topics, data } = value;
  if (!isHexOfLength(address, 20)) fail('malformed_receipt', 'malformed receipt log address');
  if (!Array.isArray(topics) || topics.length > 4) fail('malformed_receipt', 'malformed receipt log topics');
  for (const t of topics) if (!isHexOfLength(t, 32)) fail('malformed_receipt', 'malformed receipt log topics');
  const bytes = typeof data === 'string' ? hexToBytes(data) : undefined;
  if (!bytes) fail('malformed_receipt', 'malformed receipt log data');
  return {
    address: address.toLowerCase(),
    topics: (topics as string[]).map((t) => t.toLowerCase()),
    data: bytes,
  };
}

/**
 * Reads only what the pipeline needs (status, logs) and checks the receipt is for `txHash`.
 * Every other field is ignored: nodes differ (anvil sends `blockTimestamp` as a JSON number).
 */
export function parseReceipt(value: unknown, txHash: string): Receipt {
  if (!isObject(value)) fail('malformed_receipt', 'malformed receipt');
  if (typeof value.transactionHash !== 'string' || value.transactionHash.toLowerCase() !== txHash.toLowerCase()) {
    fail('wrong_transaction', 'receipt for another transaction');
  }
  if (value.status !== '0x1' && value.status !== '0x0') fail('malformed_receipt', 'malformed receipt status');
  if (!Array.isArray(value.logs)) fail('malformed_receipt', 'malformed receipt logs');
  return { success: value.status === '0x1', logs: value.logs.map(parseLog) };
}

/** Stateless when used without `stream`, so one instance serves every response. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A signal that aborts with `outer`'s reason when `outer` aborts, and also through `local`.
 * Cheaper than AbortSignal.any (no weak references for the GC to sweep) and undone by the
 * returned function, which every caller runs in `finally`.
 */
function follow(outer: AbortSignal, local: AbortController): () => void {
  if (outer.aborted) {
    local.abort(outer.reason);
    return () => {};
  }
  const onAbort = () => local.abort(outer.reason);
  outer.addEventListener('abort', onAbort, { once: true });
  return () => outer.removeEventListener('abort', onAbort);
}

/** The JSON-RPC `result` for request `id`: a Receipt, or null when not mined yet. */
function parseRpcResponse(body: Uint8Array, id: number, txHash: string): Receipt | null {
  let json: unknown;
  try {
    json = JSON.parse(UTF8.decode(body));
  } catch {
    fail('invalid_json', 'invalid JSON');
  }
  if (!isObject(json)) fail('not_json_rpc', 'not a JSON-RPC response');
  if (json.id !== id) fail('wrong_id', 'wrong JSON-RPC id');
  if (json.error !== undefined) {
    const code = isObject(json.error) && Number.isInteger(json.error.code) ? ` ${json.error.code}` : '';
    fail('rpc_error', `JSON-RPC error${code}`);
  }
  if (!('result' in json)) fail('not_json_rpc', 'not a JSON-RPC response');
  return json.result === null ? null : parseReceipt(json.result, txHash);
}

const DEFAULTS = {
  timeoutMs: 10_000,
  pollIntervalMs: 500,
  attemptTimeoutMs: 3_000,
  maxResponseBytes: 8 * 1024 * 1024,
};

export function createReceiptFetcher(opts: ReceiptFetcherOptions = {}): ReceiptFetcher {
  const fetchFn: FetchLike = opts.fetch ?? fetchWithUrlCredentials;
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.timeoutMs ?? DEFAULTS.timeoutMs;
  const pollIntervalMs = opts.pollIntervalMs ?? DEFAULTS.pollIntervalMs;
  const attemptTimeoutMs = opts.attemptTimeoutMs ?? DEFAULTS.attemptTimeoutMs;
  const maxResponseBytes = opts.maxResponseBytes ?? DEFAULTS.maxResponseBytes;
  const onAttempt = opts.onAttempt;
  let nextId = 1;

  /** One request to one URL; throws RpcError (or the outer signal's reason when it aborted). */
  async function attempt(url: string, txHash: string, outer: AbortSignal): Promise<Receipt | null> {
    const id = nextId++;
    const local = new AbortController();
    const timer = clock.setTimeout(() => local.abort(new RpcError('attempt_timeout', 'attempt timed out')), attemptTimeoutMs);
    const unfollow = follow(outer, local);
    const signal = local.signal;
    try {
      let response: Response;
      try {
        response = await fetchFn(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'eth_getTransactionReceipt', params: [txHash] }),
          signal,
        });
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        // The transport error's text may contain the URL: keep it out.
        throw new RpcError('transport', 'transport error', { cause: err });
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        fail('http_status', `HTTP ${response.status}`);
      }
      const body = await readBounded(response, maxResponseBytes, signal);
      return parseRpcResponse(body, id, txHash);
    } catch (err) {
      // An abort of the attempt's own timer is a failure of this URL; an outer abort ends the wait.
      if (outer.aborted) throw outer.reason;
      if (err instanceof RpcError) throw err;
      if (local.signal.aborted) throw local.signal.reason;
      throw new RpcError('transport', 'transport error', { cause: err });
    } finally {
      unfollow();
      clock.clearTimeout(timer);
    }
  }

  function report(chain: ChainConfig, url: string, startedAt: number, error?: string): void {
    if (!onAttempt) return;
    const event: ReceiptFetchEvent = { chain: chain.name, rpc: redactUrl(url), ok: error === undefined, durationMs: clock.now() - startedAt };
    if (error !== undefined) event.error = error;
    try {
      onAttempt(event);
    } catch {
      // Observability must not change the outcome.
    }
  }

  return async function fetchReceipt(chain, txHash, callerSignal) {
    callerSignal?.throwIfAborted();
    if (chain.rpcUrls.length === 0) {
      throw new RelayError('internal_error', `no RPC endpoint is configured for chain ${chain.name}`);
    }
    const deadline = new AbortController();
    const timer = clock.setTimeout(() => deadline.abort(new RpcError('deadline', 'deadline')), timeoutMs);
    const unfollow = callerSignal ? follow(callerSignal, deadline) : () => {};
    const signal = deadline.signal;
    // Whether any endpoint answered (with null) during the wait, for the timeout's message.
    let answered = false;
    try {
      for (;;) {
        for (const url of chain.rpcUrls) {
          const startedAt = clock.now();
          let result: Receipt | null;
          try {
            result = await attempt(url, txHash, signal);
          } catch (err) {
            if (signal.aborted) {
              report(chain, url, startedAt, 'cancelled');
              throw err;
            }
            report(chain, url, startedAt, (err as Error).message);
            continue;
          }
          report(chain, url, startedAt);
          if (result) return result;
          answered = true;
          break; // not mined yet: wait, then start again from the first URL
        }
        await sleep(clock, pollIntervalMs, signal);
      }
    } catch (err) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      if (deadline.signal.aborted) throw timeoutError(chain, answered);
      throw err;
    } finally {
      unfollow();
      clock.clearTimeout(timer);
    }
  };

  function timeoutError(chain: ChainConfig, answered: boolean): RelayError {
    const seconds = Math.ceil(timeoutMs / 1000);
    const message = answered
      ? `transaction receipt not found within ${seconds} seconds`
      : `transaction receipt not fetched within ${seconds} seconds: the RPC endpoints of chain ${chain.name} failed`;
    // Retry once the transaction is confirmed (spec §7); one more full wait is a fair first guess.
    return new RelayError('timeout', message, { retryAfterSeconds: Math.max(1, seconds) });
  }
}
