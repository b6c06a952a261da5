/**
 * relayer-worker's own HTTP endpoint (docs/design.md#delivery), on its own
 * port: `GET /metrics` (Prometheus text), `GET /ready` (200 `ready` while the outbox's store
 * answers and the loop runs, else 503) and `GET /signers` (the signers' state as JSON,
 * docs/workers.md#signers). Everything else is 404; only GET and HEAD are served.
 */
import type { Server } from 'node:http';
import { listenOn } from '../../node/listen.ts';
import { createMetricsRegistry, type MetricsRegistry } from '../../node/metrics.ts';
import type { DeliveryEvents } from '../types.ts';

// node:http as the CommonJS module, not an ES import (see lib/http/server.ts: ~65 ms of CPU at start).
const { createServer } = process.getBuiltinModule('node:http');

/** enqueue→delivered seconds: from the Fast CCTP transfer (seconds) to a Linea Standard one (a day and more). */
export const DELIVERY_BUCKETS = [
  1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1_200, 1_800, 3_600, 7_200, 21_600, 86_400, 172_800,
] as const;

export interface WorkerMetrics {
  registry: MetricsRegistry;
  events: DeliveryEvents;
}

export interface WorkerMetricSources {
  inFlight(): number;
}

export function createWorkerMetrics(
  sources: WorkerMetricSources,
  registry: MetricsRegistry = createMetricsRegistry(),
): WorkerMetrics {
  const delivered = registry.counter(
    'relayer_worker_delivered_total',
    'Messages recorded delivered, by destination chain; already="true" when another transaction had delivered it.',
  );
  const failed = registry.counter(
    'relayer_worker_failed_total',
    'Messages given up (status failed), by destination chain and failure kind.',
  );
  const retries = registry.counter(
    'relayer_worker_retries_total',
    'Attempts that ended in a retry, by destination chain and kind (pending: the proof was not ready yet).',
  );
  const latency = registry.histogram(
    'relayer_worker_enqueue_to_delivered_seconds',
    'Seconds from enqueue (POST /relay accepted it) to recorded delivery.',
    DELIVERY_BUCKETS,
  );
  let oldestAge = 0;
  let lastClaimed = 0;
  registry.gauge('relayer_worker_in_flight', 'Messages this worker holds right now (claimed, not yet recorded).', () =>
    sources.inFlight(),
  );
  registry.gauge(
    'relayer_worker_oldest_claimed_age_seconds',
    'Age of the oldest message the last claim returned (0 when it returned none): how far behind the queue is.',
    () => oldestAge,
  );
  registry.gauge('relayer_worker_last_claim_size', 'Messages the last claim returned.', () => lastClaimed);
  return {
    registry,
    events: {
      delivered: (destination, already, seconds) => {
        delivered.inc({ destination, already: String(already) });
        latency.observe({ destination }, seconds);
      },
      failed: (destination, kind) => failed.inc({ destination, kind }),
      retried: (destination, kind) => retries.inc({ destination, kind }),
      claimed: (count, age) => {
        lastClaimed = count;
        oldestAge = age;
      },
    },
  };
}

export interface OpsServerOptions {
  metrics: WorkerMetrics;
  /** Resolves true when the worker can work (its store answers); false or why not (the 503's body) otherwise. */
  ready(): Promise<boolean | string>;
  /** Messages queued or delivering in the outbox, read at scrape time. */
  depth?: () => Promise<number>;
  /** The signers' state (docs/workers.md#signers), served as JSON on `GET /signers`. */
  signers?: () => Promise<unknown>;
}

export interface OpsServer {
  server: Server;
  listen(port: number, host: string): Promise<{ url: string; port: number }>;
  close(): Promise<void>;
}

export function createOpsServer(options: OpsServerOptions): OpsServer {
  let depth: number | null = null;
  options.metrics.registry.gauge(
    'relayer_worker_outbox_depth',
    'Messages queued or delivering in the outbox (read at scrape time; -1 when the store did not answer).',
    () => depth ?? -1,
  );
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    void (async () => {
      try {
        if (path === '/metrics') {
          depth = options.depth ? await options.depth().catch(() => null) : null;
          res
            .writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
            .end(options.metrics.registry.render());
        } else if (path === '/ready') {
          const ok = await options.ready().catch(() => false);
          const reason = typeof ok === 'string' ? ok : 'store_unavailable';
          res
            .writeHead(ok === true ? 200 : 503, { 'content-type': 'text/plain' })
            .end(ok === true ? 'ready\n' : `${reason}\n`);
        } else if (path === '/signers' && options.signers) {
          const view = await options.signers();
          res.writeHead(200, { 'content-type': 'application/json' }).end(`${JSON.stringify(view, null, 2)}\n`);
        } else {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
        }
      } catch {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error\n');
      }
    })();
  });
  return {
    server,
    listen(port, host) {
      return listenOn(server, port, host);
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
