/**
 * The HTTP API of docs/design.md#http-surface as one `(req, res)` handler, for a ready server or
 * for mounting in an existing node:http server. Every error is JSON `{"reason","message"}`; every
 * 408/429/503 has `Retry-After`. The handler never throws and never leaks a stack or a cause to
 * the client.
 *
 * This file only wires the parts: the route table (router.ts), the endpoint groups (relay.ts,
 * status.ts, merkle.ts, ops.ts), CORS (cors.ts), the admin token (auth.ts), answers (answers.ts)
 * and the exchange's log and metrics (exchange.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../clock.ts';
import { InvalidArgumentError, RelayError, toRelayError } from '../errors/classes.ts';
import { silentLogger, type Logger } from '../log.ts';
import { createRelayPipeline, type RelayPipeline } from '../relay/pipeline.ts';
import { createMemoryOutbox } from '../outbox/index.ts';
import type { RpcFetch } from '../rpc/client.ts';
import type { Outbox, RelayQueue } from '../outbox/index.ts';
import type { RelayerStore } from '../store/bundle.ts';
import type { MerkleStore, RelayerConfig } from '../types.ts';
import { sendError } from './answers.ts';
import { authErrorHeaders, createAdminCheck } from './auth.ts';
import { lingerAfterAnswer } from './body.ts';
import { createClientOf } from './client-address.ts';
import { createCors } from './cors.ts';
import { createEventStreams } from './events.ts';
import { createFairness } from './fairness.ts';
import type { EventOutbox } from './events.ts';
import { createExchange, createExchangeRecorder, type Exchange } from './exchange.ts';
import { merkleRoutes } from './merkle.ts';
import { createMetricsRegistry, type MetricsRegistry } from '../node/metrics.ts';
import { createRelayMetrics } from './relay-metrics.ts';
import { opsRoutes } from './ops.ts';
import { listingRoutes } from './listing.ts';
import { relayRoutes } from './relay.ts';
import { compileRoutes, findRoute, routeErrorHeaders, routeHandler } from './router.ts';
import { statusEndpoints } from './status.ts';

export { compileRoutes, type CompiledRoute, type Route, type RouteHandler, type RouteTable } from './router.ts';
export type { Exchange } from './exchange.ts';

export interface RelayApiOptions {
  config: RelayerConfig;
  /**
   * The storage bundle (lib/store/bundle.ts): outbox, merkle store, and the dedup store and rate limiter
   * when the engine shares them between replicas. `outbox` and `merkle` below override its parts.
   * GET /ready pings it.
   */
  store?: RelayerStore;
  /**
   * Where accepted relay messages go. Defaults to the store's outbox, else an in-memory outbox.
   * Without `get` / `byTx` (a bare queue) the status lookups answer 404, without `list` GET /messages.
   */
  outbox?: RelayQueue & Partial<Pick<Outbox, 'depth' | 'get' | 'byTx' | 'list' | 'gasPayments'>> & EventOutbox;
  /** Backs the merkle endpoints (defaults to the store's); without one they answer 404. */
  merkle?: MerkleStore;
  /** Replaces the pipeline built from config, outbox, clock and fetch. */
  pipeline?: RelayPipeline;
  clock?: Clock;
  fetch?: RpcFetch;
  logger?: Logger;
  metrics?: MetricsRegistry;
  /** The OpenAPI document served at GET /openapi.json, if any. */
  openapi?: unknown;
  /**
   * A path prefix the API is served under (`/relayer`: POST /relayer/relay), stripped before
   * routing; a request outside it answers 404 (docs/embedding.md#mounting-the-http-api). Not for
   * Express's app.use(path, …), which strips its mount path itself.
   */
  basePath?: string;
}

export interface RelayApi {
  /** The request handler; never throws. */
  handle(req: IncomingMessage, res: ServerResponse): void;
  readonly pipeline: RelayPipeline;
  readonly metrics: MetricsRegistry;
  /** Requests being handled right now (open status streams included). */
  inFlight(): number;
  /** Status event streams open now. */
  streams(): number;
  /** Ends every status event stream and refuses new ones (shutdown; RelayServer.close does it). */
  closeStreams(): void;
}

export function createRelayApi(options: RelayApiOptions): RelayApi {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics ?? createMetricsRegistry();
  const store = options.store;
  const outbox = options.outbox ?? store?.outbox ?? createMemoryOutbox({ clock });
  const below = basePathOf(options.basePath);
  const relayMetrics = createRelayMetrics(metrics, clock);
  const recorder = createExchangeRecorder({ clock, logger, metrics: relayMetrics });
  const pipeline =
    options.pipeline ??
    createRelayPipeline({
      config,
      queue: outbox,
      clock,
      fetch: options.fetch,
      onReceiptAttempt: recorder.receiptAttempt,
      dedup: store?.dedup,
      rateLimiter: store?.rateLimiter,
      // The store's two-step POST /relay, when the queue is the store's own outbox.
      admission: store !== undefined && outbox === store.outbox ? store.admission : undefined,
    });
  const cors = createCors(config.server.corsOrigins);
  const chains = new Map(Object.entries(config.chains));
  const clientOf = createClientOf(config.server.trustedProxies);
  const fairness = createFairness({
    relay: config.relayApi.clientRateLimit,
    read: config.server.readRateLimit,
    clock,
    store,
    clientOf,
  });
  // Status events exist only when the outbox can be followed (a change feed and versioned reads).
  const events = createEventStreams({
    outbox: outbox as EventOutbox,
    chains,
    clock,
    gasPaymentEnforcement: config.gasPaymentEnforcement,
    maxSubscribers: config.server.maxSubscribers,
    maxSubscribersPerClient: config.server.maxSubscribersPerClient,
    maxLifetimeMs: config.server.streamMaxSeconds * 1000,
    emptyWaitMs: config.server.txStreamWaitSeconds * 1000,
    clientOf,
    admit: fairness.read,
  });
  relayMetrics.gauges({
    dedupSize: () => pipeline.dedup.size(),
    inFlight: recorder.inFlight,
    outboxDepth: typeof outbox.depth === 'function' ? outbox.depth.bind(outbox) : undefined,
    // docs/operations.md#metrics: only where the status streams exist (the outbox can be followed).
    openStreams: events.routes.length > 0 ? events.open : undefined,
  });
  const routes = compileRoutes([
    ...events.routes,
    ...relayRoutes({
      pipeline,
      maxBodyBytes: config.server.maxRelayBodyBytes,
      messagesEnqueued: relayMetrics.messagesEnqueued,
      // The status endpoints exist only when the outbox can be read back.
      status: statusEndpoints(outbox, chains, config.gasPaymentEnforcement, fairness.read),
      clientToken: fairness.relay,
    }),
    ...merkleRoutes({
      merkle: options.merkle ?? store?.merkle,
      knownDomains: new Set(Object.values(config.chains).map((c) => c.domainId)),
      maxBodyBytes: config.server.maxMerkleBodyBytes,
      requireAdmin: createAdminCheck(config.server.adminToken),
      rowsWritten: relayMetrics.merkleRows,
    }),
    ...listingRoutes({
      outbox,
      chains: new Map(Object.entries(config.chains)),
      adminToken: config.server.adminToken,
      gasPaymentEnforcement: config.gasPaymentEnforcement,
    }),
    ...opsRoutes({ config, store, clock, metrics, relayMetrics, openapi: options.openapi }),
  ]);

  async function dispatch(ex: Exchange): Promise<void> {
    if (below) ex.target = below(ex.req.url ?? '/');
    const route = findRoute(routes, ex);
    const allowedOrigin = cors.apply(ex);
    if (ex.req.method === 'OPTIONS') return cors.options(ex, route.allow, allowedOrigin);
    return routeHandler(route, ex.req.method)(ex);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const started = clock.now();
    const ex = createExchange(req, res);
    recorder.begin(ex, started);
    dispatch(ex).catch((thrown: unknown) => {
      const error = toRelayError(thrown);
      const headers: Record<string, string> = {};
      routeErrorHeaders(ex, error, headers);
      authErrorHeaders(error, headers);
      // An unread or partly read body leaves the connection unusable: close it after answering,
      // letting a client that is still sending read the answer (lingering close).
      if (!req.complete) {
        headers.Connection = 'close';
        lingerAfterAnswer(req, clock);
      }
      recorder.failed(ex, error);
      sendError(ex, error, headers);
    });
  }

  return {
    handle,
    pipeline,
    metrics,
    inFlight: recorder.inFlight,
    streams: events.open,
    closeStreams: events.close,
  };
}

/** The request target below `basePath` (`/base`, `/base/x`, `/base?q`), or not_found outside it. */
function basePathOf(basePath: string | undefined): ((url: string) => string) | undefined {
  if (basePath === undefined || basePath === '' || basePath === '/') return undefined;
  if (typeof basePath !== 'string' || !/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+\/?$/.test(basePath))
    throw new InvalidArgumentError(`basePath must be a path such as /relayer, got ${JSON.stringify(basePath)}`);
  const base = basePath.replace(/\/$/, '');
  return (url) => {
    const rest = url.slice(base.length);
    if (!url.startsWith(base) || (rest !== '' && rest[0] !== '/' && rest[0] !== '?'))
      throw new RelayError('not_found', 'no such endpoint');
    return rest === '' || rest[0] === '?' ? `/${rest}` : rest;
  };
}
