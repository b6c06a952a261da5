/**
 * A scripted `fetch` for JSON-RPC tests: each URL answers with a sequence of handlers (the last
 * one repeats), every call is recorded, and helpers build the usual answers as real Web API
 * `Response` objects, so the code under test reads them exactly as it reads a network response.
 */
import type { FetchLike } from '../../../lib/rpc/client.ts';

export interface FetchCall {
  url: string;
  method: string;
  headers: Headers;
  /** The parsed JSON request body. */
  body: { jsonrpc: string; id: unknown; method: string; params: unknown[] };
  signal: AbortSignal | undefined;
}

export type Handler = (call: FetchCall) => Response | Promise<Response>;

export interface FakeFetch {
  fetch: FetchLike;
  calls: FetchCall[];
  /** The URLs called, in order. */
  urls(): string[];
}

export function createFakeFetch(routes: Record<string, Handler | Handler[]>): FakeFetch {
  const calls: FetchCall[] = [];
  const served = new Map<string, number>();
  const fetch: FetchLike = async (url, init) => {
    const call: FetchCall = {
      url,
      method: init.method ?? 'GET',
      headers: new Headers(init.headers),
      body: JSON.parse(String(init.body)),
      signal: init.signal ?? undefined,
    };
    calls.push(call);
    const route = routes[url];
    if (!route) throw new TypeError('fetch failed'); // like an unreachable host
    const list = Array.isArray(route) ? route : [route];
    const n = served.get(url) ?? 0;
    served.set(url, n + 1);
    return list[Math.min(n, list.length - 1)](call);
  };
  return { fetch, calls, urls: () => calls.map((c) => c.url) };
}

export function jsonResponse(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });
}

/** A JSON-RPC success answering the call's own id. */
export function rpcResult(result: unknown): Handler {
  return (call) => jsonResponse({ jsonrpc: '2.0', id: call.body.id, result });
}

export function rpcError(code: number, message: string): Handler {
  return (call) => jsonResponse({ jsonrpc: '2.0', id: call.body.id, error: { code, message } });
}

export function httpStatus(status: number, body = 'error'): Handler {
  return () => new Response(body, { status });
}

/** Never answers; rejects with the signal's reason when the caller aborts, as real fetch does. */
export const hang: Handler = (call) =>
  new Promise<Response>((_, reject) => {
    const signal = call.signal;
    if (!signal) return;
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

export interface EndlessBody {
  handler: Handler;
  /** Bytes handed to the reader so far. */
  produced(): number;
  cancelled(): boolean;
}

/** A 200 response whose body never ends: it produces `chunkBytes` per pull, or stalls when 0. */
export function endlessBody(chunkBytes: number): EndlessBody {
  let produced = 0;
  let cancelled = false;
  const handler: Handler = () => {
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (chunkBytes === 0) return new Promise<void>(() => {}); // stalls forever
        // JSON-looking prefix so only the size can be what stops it.
        const chunk = new Uint8Array(chunkBytes).fill(0x20);
        if (produced === 0) chunk[0] = 0x5b; // "["
        produced += chunkBytes;
        controller.enqueue(chunk);
      },
      cancel() {
        cancelled = true;
      },
    });
    return new Response(stream, { status: 200, headers: { 'content-type': 'application/json' } });
  };
  return { handler, produced: () => produced, cancelled: () => cancelled };
}
