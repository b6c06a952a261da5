/**
 * The connection to a CCIP-read gateway goes to the address that was checked
 * (lib/worker/ccip/target.ts; docs/hostile-recipients.md, Hostile recipients). node:http(s) is given a
 * `lookup` that answers with the checked addresses only, so the name is not resolved a second
 * time: a DNS answer that changes between the check and the connection (rebinding) changes
 * nothing. The URL's host still names the request: the Host header and, for https, the TLS server
 * name (SNI) and the certificate's name check. One connection per request (no pooled socket
 * outlives the check), no redirect followed (node:http follows none), no proxy.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { LookupAddress } from 'node:dns';
import { Readable } from 'node:stream';
import type { GatewayTarget } from './target.ts';

// The CommonJS modules, loaded when first needed (see lib/http/server.ts: an ES import costs start-up time).
const http = () => process.getBuiltinModule('node:http');
const https = () => process.getBuiltinModule('node:https');

/** What the gateway client reads of an answer: a subset of the Fetch API's Response. */
export interface GatewayResponse {
  status: number;
  /** `opaqueredirect` from a browser's fetch with redirect: 'manual'. */
  type?: string;
  headers: { get(name: string): string | null };
  body: ReadableStream<Uint8Array> | null;
}

export interface GatewayRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

/** Sends one request to a checked gateway. */
export type GatewayTransport = (target: GatewayTarget, request: GatewayRequest) => Promise<GatewayResponse>;

function header(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/** The connection's lookup: the checked addresses, whatever name is asked for. */
function pinnedLookup(target: GatewayTarget) {
  const answers: LookupAddress[] = target.addresses.map((a) => ({ address: a.text, family: a.family }));
  return (_hostname: string, options: { all?: boolean } | LookupCallback, callback?: LookupCallback): void => {
    const done = (typeof options === 'function' ? options : callback)!;
    if (typeof options === 'object' && options?.all) done(null, answers);
    else done(null, answers[0].address, answers[0].family);
  };
}

/** node:http(s) to the target's checked addresses. */
export const pinnedTransport: GatewayTransport = (target, request) =>
  new Promise<GatewayResponse>((resolve, reject) => {
    const { url } = target;
    const secure = url.protocol === 'https:';
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== undefined) headers['content-length'] = Buffer.byteLength(request.body);
    const req = (secure ? https() : http()).request(
      {
        protocol: url.protocol,
        // The URL keeps IPv6 literals in brackets; the socket API wants them bare.
        hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers,
        lookup: pinnedLookup(target) as never,
        agent: false,
        signal: request.signal,
      },
      (res: IncomingMessage) => {
        resolve({
          status: res.statusCode ?? 0,
          headers: { get: (name) => header(res.headers, name) },
          body: Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>,
        });
      },
    );
    req.on('error', reject);
    req.end(request.body);
  });

/**
 * A caller's fetch as the transport (an embedder's, a test's): the target was checked, but where
 * the fetch connects is the fetch's business (it resolves the name again).
 */
export function fetchTransport(fetchFn: (input: string, init: RequestInit) => Promise<Response>): GatewayTransport {
  return (target, request) =>
    fetchFn(target.url.href, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      redirect: 'manual',
      signal: request.signal,
    });
}
