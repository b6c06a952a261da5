/**
 * The HTTP API of DESIGN.md §2 as one `(req, res)` handler, for a ready server or for mounting in
 * an existing node:http server. Every error is JSON `{"reason","message"}`; every 408/429/503 has
 * `Retry-After`. The handler never throws and never leaks a stack or a cause to the client.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../clock.ts';
import { RelayError, retryAfterHeader, toRelayError } from '../errors.ts';
import { silentLogger, type Logger } from '../log.ts';
import { createRelayPipeline, type RelayPipeline } from '../pipeline.ts';
import { createMemoryOutbox } from '../outbox.ts';
import type { ReceiptFetchEvent } from '../receipt.ts';
import type { FetchLike } from '../rpc.ts';
import type { Outbox, RelayQueue } from '../outbox.ts';
import { callStore, withDeadline, type RelayerStore } from '../store.ts';
import type { MerkleStore, RelayerConfig } from '../types.ts';
import { isHexOfLength } from '../hex.ts';
import { messageStatusJson } from '../message-status.ts';
import { parseJsonBody, validateMerkleRange, validateMerkleRequest, validateRelayRequest } from '../validate.ts';
import { lingerAfterAnswer, readBody } from './body.ts';
import { createMetricsRegistry, createRelayMetrics, type MetricsRegistry } from './metrics.ts';

export interface RelayApiOptions {
  config: RelayerConfig;
  /**
   * The storage bundle (lib/store.ts): outbox, merkle store, and the dedup store and rate limiter
   * when the engine shares them between replicas. `outbox` and `merkle` below override its parts.
   * GET /ready pings it.
   */
  store?: RelayerStore;
  /**
   * Where accepted relay messages go. Defaults to the store's outbox, else an in-memory outbox.
   * Without `get` / `byTx` (a bare queue) the status lookups answer 404.
   */
  outbox?: RelayQueue & Partial<Pick<Outbox, 'depth' | 'get' | 'byTx'>>;
  /** Backs the merkle endpoints (defaults to the store's); without one they answer 404. */
  merkle?: MerkleStore;
  /** Replaces the pipeline built from config, outbox, clock and fetch. */
  pipeline?: RelayPipeline;
  clock?: Clock;
  fetch?: FetchLike;
  logger?: Logger;
  metrics?: MetricsRegistry;
  /** The OpenAPI document served at GET /openapi.json, if any. */
  openapi?: unknown;
}

export interface RelayApi {
  /** The request handler; never throws. */
  handle(req: IncomingMessage, res: ServerResponse): void;
  readonly pipeline: RelayPipeline;
  readonly metrics: MetricsRegistry;
  /** Requests being handled right now. */
  inFlight(): number;
}

const JSON_TYPE = 'application/json';
const TEXT_TYPE = 'text/plain; charset=utf-8';
/** GET /ready waits this long for the store's ping (DESIGN.md §2). */
const READY_TIMEOUT_MS = 1_000;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Log and metric reason of a request whose client went away before the answer (no RelayError). */
const CLIENT_CLOSED = 'client_closed';

export type RouteHandler = (ex: Exchange) => void | Promise<void>;

/**
 * One endpoint. The table of them drives dispatch, 404, 405 and `Allow`: adding an endpoint is
 * adding an entry. A `{name}` path segment matches one non-empty segment, found in `ex.params`.
 * HEAD is served by GET without the body; OPTIONS answers from the methods listed.
 */
export interface Route {
  path: string;
  GET?: RouteHandler;
  POST?: RouteHandler;
  /** A successful GET is a health probe, logged at debug (probes come every few seconds). */
  probe?: boolean;
}

export interface CompiledRoute extends Route {
  allow: string;
  segments: string[];
}

export interface RouteTable {
  /** The route whose path is exactly `path`, if any (no parameters, no parsing). */
  exact(path: string): CompiledRoute | undefined;
  /** The route matching `path`, with its `{name}` segments written into `params`. */
  match(path: string, params: Record<string, string>): CompiledRoute | undefined;
}

export function compileRoutes(routes: readonly Route[]): RouteTable {
  const exact = new Map<string, CompiledRoute>();
  const patterns: CompiledRoute[] = [];
  for (const route of routes) {
    const allow = [route.GET && 'GET, HEAD', route.POST && 'POST', 'OPTIONS'].filter(Boolean).join(', ');
    const compiled = { ...route, allow, segments: route.path.split('/') };
    if (route.path.includes('{')) patterns.push(compiled);
    else exact.set(route.path, compiled);
  }
  return {
    exact: (path) => exact.get(path),
    match(path, params) {
      const found = exact.get(path);
      if (found !== undefined) return found;
      const segments = path.split('/');
      for (const route of patterns) {
        if (route.segments.length !== segments.length) continue;
        const values: Record<string, string> = {};
        const matches = route.segments.every((part, i) => {
          if (!part.startsWith('{')) return part === segments[i];
          values[part.slice(1, -1)] = segments[i];
          return segments[i] !== '';
        });
        if (matches) {
          Object.assign(params, values);
          return route;
        }
      }
      return undefined;
    },
  };
}

/** Context of one request, for the log line and the metrics. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  id: string;
  /** The matched route's path pattern ('unknown' before a match): the metric and log label. */
  route: string;
  matched?: CompiledRoute;
  /** Parsed only when the request line is not exactly a route's path. */
  url?: URL;
  params: Record<string, string>;
  reason?: string;
  originChain?: string;
  txHash?: string;
  messages?: number;
}

export function createRelayApi(options: RelayApiOptions): RelayApi {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics ?? createMetricsRegistry();
  const store = options.store;
  const outbox = options.outbox ?? store?.outbox ?? createMemoryOutbox(clock);
  const merkle = options.merkle ?? store?.merkle;
  // The status endpoints exist only when the outbox can be read back.
  const readMessage = outbox.get?.bind(outbox);
  const readTx = outbox.byTx?.bind(outbox);
  const chains = new Map(Object.entries(config.chains));
  const knownDomains = new Set(Object.values(config.chains).map((c) => c.domainId));
  const corsOrigins = new Set(config.server.corsOrigins);
  const adminDigest =
    config.server.adminToken === null ? undefined : createHash('sha256').update(config.server.adminToken).digest();
  let inFlight = 0;
  // GET /chains: what a client may send as origin_chain. Never the RPC URLs (they carry API keys).
  const chainList = JSON.stringify({
    chains: Object.values(config.chains).map((c) => ({ name: c.name, domain_id: c.domainId, chain_id: c.chainId ?? null })),
  });

  // The gauges read `pipeline` only at scrape time, after it exists.
  const relayMetrics = createRelayMetrics(metrics, {
    clock,
    dedupSize: () => pipeline.dedup.size(),
    inFlight: () => inFlight,
    outboxDepth: typeof outbox.depth === 'function' ? outbox.depth.bind(outbox) : undefined,
  });
  const pipeline =
    options.pipeline ??
    createRelayPipeline({
      config,
      queue: outbox,
      clock,
      fetch: options.fetch,
      onReceiptAttempt: (event) => {
        relayMetrics.receiptAttempt(event);
        logRpcFailure(event);
      },
      dedup: store?.dedup,
      rateLimiter: store?.rateLimiter,
    });

  /**
   * Each failed JSON-RPC attempt at warn, with why it failed: without it a 408 after ten seconds of
   * failing endpoints says nothing an operator can act on. The event carries the endpoint's origin
   * only and a cause already cut of URLs and of the endpoint's path, query and userinfo.
   */
  function logRpcFailure(event: ReceiptFetchEvent): void {
    if (event.ok || event.code === 'cancelled') return;
    logger.warn('rpc attempt failed', {
      chain: event.chain,
      rpc: event.rpc,
      tx_hash: event.txHash,
      attempt: event.attempt,
      failure: event.failure,
      error: event.error,
      cause: event.cause,
    });
  }

  function send(ex: Exchange, status: number, body: string, type: string, headers: Record<string, string> = {}): void {
    const { res } = ex;
    if (res.headersSent) return;
    // One writeHead instead of a setHeader per field: each setHeader validates and stores its field.
    res.writeHead(status, {
      'Content-Type': type,
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'X-Request-Id': ex.id,
      ...headers,
    });
    res.end(ex.req.method === 'HEAD' ? undefined : body);
  }

  function sendJson(ex: Exchange, status: number, value: unknown): void {
    send(ex, status, JSON.stringify(value), JSON_TYPE);
  }

  function sendError(ex: Exchange, error: RelayError, extra: Record<string, string> = {}): void {
    ex.reason = error.reason;
    const headers: Record<string, string> = { ...extra };
    const retryAfter = retryAfterHeader(error);
    if (retryAfter !== undefined) headers['Retry-After'] = retryAfter;
    if (error.reason === 'rate_limited') relayMetrics.rateLimited.inc();
    if (error.reason === 'internal_error' || error.reason === 'store_unavailable') {
      // The cause is for the operator's log only, reduced to its name and first line.
      const cause = error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message.split('\n')[0]}` : undefined;
      logger.error(error.reason === 'internal_error' ? 'internal error' : 'store unavailable', {
        request_id: ex.id,
        route: ex.route,
        error: error.message,
        cause,
      });
    }
    send(ex, error.status, JSON.stringify(error.toJSON()), JSON_TYPE, headers);
  }

  function applyCors(ex: Exchange): boolean {
    const origin = ex.req.headers.origin;
    if (origin === undefined || corsOrigins.size === 0) return false;
    ex.res.setHeader('Vary', 'Origin');
    if (!corsOrigins.has(origin) && !corsOrigins.has('*')) return false;
    ex.res.setHeader('Access-Control-Allow-Origin', origin);
    ex.res.setHeader('Access-Control-Expose-Headers', 'Retry-After, X-Request-Id');
    return true;
  }

  function requireJson(ex: Exchange): void {
    const type = ex.req.headers['content-type'];
    const media = type?.split(';')[0].trim().toLowerCase();
    if (media !== JSON_TYPE) {
      throw new RelayError('unsupported_media_type', 'Content-Type must be application/json');
    }
  }

  function requireAdmin(ex: Exchange): void {
    if (adminDigest === undefined) return;
    const header = ex.req.headers.authorization ?? '';
    // RFC 9110 §11.1: the auth-scheme is case-insensitive (clients send "bearer" too).
    const match = /^Bearer ([\x21-\x7e]+)$/i.exec(header);
    const given = createHash('sha256').update(match ? match[1] : '').digest();
    // Equal-length digests: the comparison time does not depend on where the tokens differ.
    if (!match || !timingSafeEqual(given, adminDigest)) {
      throw new RelayError('unauthorized', 'a valid admin bearer token is required');
    }
  }

  async function postRelay(ex: Exchange): Promise<void> {
    requireJson(ex);
    const text = await readBody(ex.req, config.server.maxRelayBodyBytes);
    // The pipeline fills ex.originChain and ex.txHash as soon as they are valid, so even a request
    // whose client leaves early is logged with them.
    const result = await pipeline.relayText(text, { info: ex });
    ex.messages = result.messages.length;
    if (result.messages.length > 0) relayMetrics.messagesEnqueued.inc({}, result.messages.length);
    sendJson(ex, 200, result);
  }

  async function postMerkle(ex: Exchange, store: MerkleStore): Promise<void> {
    requireAdmin(ex);
    requireJson(ex);
    const text = await readBody(ex.req, config.server.maxMerkleBodyBytes);
    const { records, sent } = validateMerkleRequest(parseJsonBody(text));
    const known = records.filter((r) => knownDomains.has(r.chain));
    const skipped = sent.filter((_, i) => !knownDomains.has(records[i].chain));
    const count = known.length > 0 ? await callStore(() => store.insertMerkle(known)) : 0;
    relayMetrics.merkleRows.inc({}, count);
    sendJson(ex, 200, { count, skipped });
  }

  async function getMerkle(ex: Exchange, store: MerkleStore): Promise<void> {
    requireAdmin(ex);
    const { domain, start, end } = validateMerkleRange(query(ex));
    sendJson(ex, 200, { merkle_tree_insertions: await callStore(() => store.listMerkle(domain, start, end)) });
  }

  async function getMessage(ex: Exchange, read: NonNullable<typeof readMessage>): Promise<void> {
    const id = ex.params.message_id;
    if (!isHexOfLength(id, 32)) throw new RelayError('invalid_request', 'message_id must be 0x followed by 64 hex digits');
    const record = await callStore(() => read(id));
    if (record === undefined) throw new RelayError('not_found', 'no message with this id was accepted by this relayer');
    sendJson(ex, 200, messageStatusJson(record));
  }

  /** GET /relay: the liveness probe; with a query, the messages accepted from one transaction. */
  function getRelay(ex: Exchange): void | Promise<void> {
    // Any query makes it a lookup; the bare path stays the liveness probe.
    if (ex.url === undefined || ex.url.search === '') return send(ex, 200, 'up', TEXT_TYPE);
    if (readTx === undefined) throw new RelayError('not_found', 'this relayer does not keep message statuses');
    return getMessagesOfTx(ex, ex.url.searchParams, readTx);
  }

  /** GET /relay?origin_chain=&tx_hash=: the messages accepted from one transaction. */
  async function getMessagesOfTx(ex: Exchange, params: URLSearchParams, read: NonNullable<typeof readTx>): Promise<void> {
    const query: Record<string, string> = {};
    for (const name of ['origin_chain', 'tx_hash']) {
      const values = params.getAll(name);
      if (values.length === 0) throw new RelayError('invalid_request', `${name} is required (GET /relay without a query is the liveness probe)`);
      if (values.length > 1) throw new RelayError('invalid_request', `${name} is given more than once`);
      query[name] = values[0];
    }
    // The rules of POST /relay's body, so a pair POST accepted is a pair GET finds.
    const { chain, txHash } = validateRelayRequest(query, chains);
    ex.originChain = chain.name;
    ex.txHash = txHash;
    const records = await callStore(() => read(chain.name, txHash));
    sendJson(ex, 200, { messages: records.map(messageStatusJson) });
  }

  async function getReady(ex: Exchange): Promise<void> {
    // Without a store bundle everything lives in this process, which is answering.
    if (store !== undefined) await withDeadline(callStore(() => store.ping()), READY_TIMEOUT_MS, clock, 'the store ping');
    send(ex, 200, 'ready', TEXT_TYPE);
  }

  async function getMetrics(ex: Exchange): Promise<void> {
    await relayMetrics.sample();
    send(ex, 200, metrics.render(), 'text/plain; version=0.0.4; charset=utf-8');
  }

  const routes = compileRoutes([
    { path: '/relay', GET: getRelay, POST: postRelay, probe: true },
    ...(readMessage === undefined ? [] : [{ path: '/relay/{message_id}', GET: (ex: Exchange) => getMessage(ex, readMessage), probe: true }]),
    { path: '/ready', GET: getReady, probe: true },
    { path: '/chains', GET: (ex) => send(ex, 200, chainList, JSON_TYPE) },
    ...(merkle === undefined ? [] : [{ path: '/merkle_tree_insertions', GET: (ex: Exchange) => getMerkle(ex, merkle), POST: (ex: Exchange) => postMerkle(ex, merkle) }]),
    { path: '/metrics', GET: getMetrics },
    ...(options.openapi === undefined ? [] : [{ path: '/openapi.json', GET: (ex: Exchange) => sendJson(ex, 200, options.openapi) }]),
  ]);

  /** The query of the request line (empty when the line was exactly a route's path). */
  function query(ex: Exchange): URLSearchParams {
    return (ex.url ?? new URL(ex.req.url ?? '/', 'http://localhost')).searchParams;
  }

  function findRoute(ex: Exchange): CompiledRoute {
    const target = ex.req.url ?? '/';
    // A request line that is exactly a route (the usual case) has nothing to normalise or query.
    const exact = routes.exact(target);
    if (exact !== undefined) return exact;
    try {
      ex.url = new URL(target, 'http://localhost');
    } catch {
      throw new RelayError('not_found', 'no such endpoint');
    }
    const found = routes.match(ex.url.pathname, ex.params);
    if (found === undefined) throw new RelayError('not_found', 'no such endpoint');
    return found;
  }

  async function route(ex: Exchange): Promise<void> {
    const { req } = ex;
    const route = findRoute(ex);
    ex.matched = route;
    ex.route = route.path;
    const allowedOrigin = applyCors(ex);
    const method = req.method === 'HEAD' ? 'GET' : req.method;

    if (method === 'OPTIONS') {
      const headers: Record<string, string> = { Allow: route.allow };
      if (allowedOrigin && req.headers['access-control-request-method'] !== undefined) {
        headers['Access-Control-Allow-Methods'] = route.allow;
        headers['Access-Control-Allow-Headers'] = 'Content-Type, Authorization, X-Request-Id';
        headers['Access-Control-Max-Age'] = '600';
      }
      ex.res.statusCode = 204;
      for (const [name, value] of Object.entries(headers)) ex.res.setHeader(name, value);
      ex.res.setHeader('X-Request-Id', ex.id);
      ex.res.end();
      return;
    }
    const handler = method === 'GET' ? route.GET : method === 'POST' ? route.POST : undefined;
    if (handler === undefined) throw new RelayError('method_not_allowed', `${req.method} is not allowed on ${route.path}`);
    return handler(ex);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const started = clock.now();
    const given = req.headers['x-request-id'];
    const ex: Exchange = {
      req,
      res,
      id: typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID(),
      route: 'unknown',
      params: {},
    };
    inFlight++;
    const done = () => {
      inFlight--;
      const seconds = (clock.now() - started) / 1000;
      // A connection closed before the answer was sent must not count as the default 200: it gets
      // nginx's 499 "client closed request".
      if (!res.writableFinished) ex.reason = CLIENT_CLOSED;
      const status = res.writableFinished ? res.statusCode : 499;
      if (ex.route === '/relay' && req.method === 'POST') {
        relayMetrics.requests.inc(status < 400 ? { status: 'success', error_type: '' } : { status: 'failure', error_type: ex.reason ?? 'internal_error' });
      }
      relayMetrics.responses.inc({ route: ex.route, code: String(status) });
      relayMetrics.duration.observe({ route: ex.route }, seconds);
      // A successful health check (GET or HEAD /relay or /ready) or status lookup (/relay/{id}, /relay?…)
      // is logged at debug: probes and UIs polling a message come every few seconds and would bury
      // the relay requests.
      const fields = {
        request_id: ex.id,
        method: req.method,
        route: ex.route,
        status,
        reason: ex.reason,
        duration_ms: Math.round(seconds * 1e6) / 1000,
        origin_chain: ex.originChain,
        tx_hash: ex.txHash,
        messages: ex.messages,
      };
      if (ex.matched?.probe && status === 200 && req.method !== 'POST') logger.debug('request', fields);
      else logger.info('request', fields);
    };
    // 'close' follows 'finish' on every answered response and also ends one whose client left.
    res.once('close', done);
    route(ex).catch((thrown: unknown) => {
      const error = toRelayError(thrown);
      const headers: Record<string, string> = {};
      if (error.reason === 'method_not_allowed' && ex.matched) headers.Allow = ex.matched.allow;
      if (error.reason === 'unauthorized') headers['WWW-Authenticate'] = 'Bearer';
      // An unread or partly read body leaves the connection unusable: close it after answering,
      // letting a client that is still sending read the answer (lingering close).
      if (!req.complete) {
        headers.Connection = 'close';
        lingerAfterAnswer(req, clock);
      }
      sendError(ex, error, headers);
    });
  }

  return { handle, pipeline, metrics, inFlight: () => inFlight };
}
