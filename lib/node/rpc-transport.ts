/**
 * The JSON-RPC transport relayer-server gives the core: a `fetch`-like function on node:http and
 * node:https, one keep-alive Agent per RPC origin (docs/rpc.md#rpc-transport).
 */
import type { Agent as HttpAgentType, RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { basicAuthorization, type ChunkedResponse, type RpcFetch } from '../rpc/client.ts';
import { fetchFailed, toRpcResponse } from './rpc-response.ts';

// node:http as the CommonJS module, not an ES import (see lib/http/server.ts: a start-up cost).
const { Agent: HttpAgent, request: httpRequest } = process.getBuiltinModule('node:http');

export interface RpcTransportOptions {
  /** Sockets open at once to one RPC origin; requests beyond wait for one. Default 64. */
  maxSocketsPerOrigin?: number;
  /**
   * Idle keep-alive sockets kept per origin. Default: as many as `maxSocketsPerOrigin`, so a burst
   * that opened them does not close and reopen connections when it ebbs (an idle one still closes
   * after `idleTimeoutMs`).
   */
  maxFreeSocketsPerOrigin?: number;
  /**
   * An idle keep-alive socket is closed after this long. Default 4 s: under the 5 s many servers
   * (Node's included) close idle connections after, so a request rarely meets a socket the server
   * is closing. A server's `Keep-Alive: timeout=N` hint shortens it.
   */
  idleTimeoutMs?: number;
  /** Origins with an Agent at once; past it the least recently used one is closed. Default 64. */
  maxOrigins?: number;
}

export interface RpcTransport {
  /**
   * A `fetch` for lib/rpc/client.ts (`RpcOptions.fetch`, `createRelayServer({ fetch })`). It answers a
   * ChunkedResponse (lib/rpc/body.ts), not a WHATWG Response: it is meant for the core only.
   */
  fetch: RpcFetch;
  /** Sockets open per origin (scheme://host:port), for tests and diagnostics. */
  sockets(): Record<string, number>;
  /** Closes every socket; requests in flight fail. */
  close(): void;
}

/** What one configured URL needs, parsed once: URLs come from the configuration, a handful. */
interface Target {
  origin: string;
  https: boolean;
  options: RequestOptions;
}

interface Origin {
  agent: HttpAgentType;
}

export function createRpcTransport(opts: RpcTransportOptions = {}): RpcTransport {
  const maxSockets = opts.maxSocketsPerOrigin ?? 64;
  const maxFreeSockets = opts.maxFreeSocketsPerOrigin ?? maxSockets;
  const idleTimeoutMs = opts.idleTimeoutMs ?? 4_000;
  const maxOrigins = opts.maxOrigins ?? 64;
  const origins = new Map<string, Origin>();
  const targets = new Map<string, Target>();
  let closed = false;

  function originFor(key: string, https: boolean): Origin {
    let origin = origins.get(key);
    if (origin) {
      // Most recently used last, so the first is the one to close when there are too many.
      origins.delete(key);
      origins.set(key, origin);
      return origin;
    }
    const agentOptions = {
      keepAlive: true,
      maxSockets,
      maxFreeSockets,
      timeout: idleTimeoutMs,
      scheduling: 'lifo' as const,
    };
    origin = { agent: https ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions) };
    origins.set(key, origin);
    if (origins.size > maxOrigins) {
      const [oldest, { agent }] = origins.entries().next().value!;
      origins.delete(oldest);
      agent.destroy();
    }
    return origin;
  }

  function targetFor(input: string): Target {
    let target = targets.get(input);
    if (target) return target;
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      // Not the parser's error: its message quotes the input, which may hold a key.
      throw fetchFailed(new TypeError('invalid URL'));
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw fetchFailed(new TypeError(`unsupported protocol ${url.protocol}`));
    const headers: Record<string, string> = {};
    // As the global fetch path of lib/rpc/client.ts does (and curl): userinfo becomes Basic auth.
    const authorization = basicAuthorization(url);
    if (authorization !== undefined) headers.authorization = authorization;
    target = {
      origin: url.origin,
      https: url.protocol === 'https:',
      options: {
        // URL.hostname keeps the brackets of an IPv6 literal; node:http wants them off.
        hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port === '' ? undefined : Number(url.port),
        path: url.pathname + url.search,
        headers,
      },
    };
    if (targets.size >= 256) targets.clear();
    targets.set(input, target);
    return target;
  }

  function headersOf(
    init: RequestInit,
    base: Record<string, string>,
    body: string | Uint8Array | undefined,
  ): Record<string, string> {
    const out: Record<string, string> = { ...base };
    const given = init.headers;
    if (given instanceof Headers)
      given.forEach((value, name) => {
        out[name] = value;
      });
    else if (Array.isArray(given)) for (const [name, value] of given) out[name.toLowerCase()] = value;
    else if (given)
      for (const name of Object.keys(given)) out[name.toLowerCase()] = (given as Record<string, string>)[name];
    if (body !== undefined)
      out['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
    return out;
  }

  const transportFetch: RpcFetch = (input, init) => {
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (closed) return Promise.reject(fetchFailed(new Error('transport closed')));
    let target: Target;
    try {
      target = targetFor(input);
    } catch (error) {
      return Promise.reject(error);
    }
    const body =
      init.body === undefined || init.body === null
        ? undefined
        : typeof init.body === 'string'
          ? init.body
          : init.body instanceof Uint8Array
            ? init.body
            : undefined;
    if (init.body !== undefined && init.body !== null && body === undefined)
      return Promise.reject(fetchFailed(new TypeError('unsupported body type')));
    const headers = headersOf(init, target.options.headers as Record<string, string>, body);
    const { agent } = originFor(target.origin, target.https);
    const send = target.https ? httpsRequest : httpRequest;

    return new Promise<ChunkedResponse>((resolve, reject) => {
      let settled = false;
      let retried = false;
      let current: ReturnType<typeof httpRequest>;
      const onAbort = () => {
        current.destroy();
        if (!settled) {
          settled = true;
          reject(signal!.reason);
        }
      };
      const finish = () => signal?.removeEventListener('abort', onAbort);

      const attempt = () => {
        const req = send({ ...target.options, method: init.method ?? 'GET', headers, agent });
        current = req;
        req.once('response', (res) => {
          if (settled) return void res.resume();
          settled = true;
          const destroy = () => {
            finish();
            req.destroy();
          };
          let response: ChunkedResponse;
          try {
            response = toRpcResponse(res, destroy);
          } catch (error) {
            destroy();
            return reject(fetchFailed(error));
          }
          // The abort listener stays until the body is read, ended or cancelled: an abort while
          // the core reads destroys the socket, and the body's reader is told so.
          res.once('close', finish);
          resolve(response);
        });
        req.once('error', (error: NodeJS.ErrnoException) => {
          if (settled) return;
          // A keep-alive socket the server closed while idle fails at once: send again, once,
          // on a fresh socket (Node's documented pattern; eth_getTransactionReceipt is idempotent).
          if (
            req.reusedSocket &&
            !retried &&
            (error.code === 'ECONNRESET' || error.code === 'EPIPE') &&
            !signal?.aborted
          ) {
            retried = true;
            return attempt();
          }
          settled = true;
          finish();
          reject(signal?.aborted ? signal.reason : fetchFailed(error));
        });
        req.end(body);
      };

      signal?.addEventListener('abort', onAbort, { once: true });
      attempt();
    });
  };

  return {
    fetch: transportFetch,
    sockets() {
      const out: Record<string, number> = {};
      for (const [key, { agent }] of origins) {
        let n = 0;
        for (const list of Object.values(agent.sockets)) n += list?.length ?? 0;
        for (const list of Object.values(agent.freeSockets)) n += list?.length ?? 0;
        out[key] = n;
      }
      return out;
    },
    close() {
      closed = true;
      for (const { agent } of origins.values()) agent.destroy();
      origins.clear();
      targets.clear();
    },
  };
}
