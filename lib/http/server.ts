/**
 * A ready node:http server around the relay API: timeouts against slow clients, a bound on
 * headers, and a graceful close that lets in-flight requests finish within a deadline.
 */
import type { Server } from 'node:http';
import { createRelayApi, type RelayApi, type RelayApiOptions } from './handler.ts';
import { listenOn } from '../node/listen.ts';

// node:http as the CommonJS module, not an ES import: importing it evaluates its lazy WebSocket,
// CloseEvent and MessageEvent exports, which load Node's bundled undici (a start-up cost).
const { createServer } = process.getBuiltinModule('node:http');

export interface RelayServerOptions extends RelayApiOptions {
  /** Time allowed to receive a whole request (headers and body). Default 30 s. */
  requestTimeoutMs?: number;
  /** Time allowed to receive the headers. Default 10 s. */
  headersTimeoutMs?: number;
  /** Idle keep-alive time. Default 5 s. */
  keepAliveTimeoutMs?: number;
}

export interface RelayServer {
  readonly server: Server;
  readonly api: RelayApi;
  /** Listens on host:port (defaults from config.server); resolves with the bound address. */
  listen(port?: number, host?: string): Promise<{ host: string; port: number; url: string }>;
  /**
   * Stops accepting connections, lets in-flight requests finish (at most `graceMs`, default 10 s),
   * then closes whatever is left. Resolves when the server is closed.
   */
  close(graceMs?: number): Promise<void>;
}

export function createRelayServer(options: RelayServerOptions): RelayServer {
  const api = createRelayApi(options);
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const server = createServer(
    {
      requestTimeout,
      headersTimeout,
      // Node checks both timeouts only this often (its default is 30 s, which let a slowloris
      // client hold a connection up to 40 s against a 10 s headersTimeout): check at a quarter of
      // the shorter timeout, at most once a second.
      connectionsCheckingInterval: Math.max(
        10,
        Math.min(1_000, Math.floor(Math.min(requestTimeout, headersTimeout) / 4)),
      ),
      keepAliveTimeout: options.keepAliveTimeoutMs ?? 5_000,
      maxHeaderSize: 16 * 1024,
    },
    api.handle,
  );
  server.maxHeadersCount = 100;
  server.maxRequestsPerSocket = 10_000;

  let closing: Promise<void> | undefined;

  return {
    server,
    api,
    listen(port = options.config.server.port, host = options.config.server.host) {
      return listenOn(server, port, host);
    },
    close(graceMs = 10_000) {
      closing ??= new Promise<void>((resolve) => {
        // Status streams never end by themselves: end them, or the grace period would be spent waiting.
        api.closeStreams();
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeIdleConnections();
        // Keep-alive sockets that become idle after their last response are closed as they go idle.
        const sweep = setInterval(() => server.closeIdleConnections(), 100);
        const deadline = setTimeout(() => server.closeAllConnections(), graceMs);
        sweep.unref();
        deadline.unref();
        server.once('close', () => {
          clearInterval(sweep);
          clearTimeout(deadline);
        });
      });
      return closing;
    },
  };
}
