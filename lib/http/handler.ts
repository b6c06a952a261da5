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
import type { FetchLike, ReceiptFetchEvent } from '../receipt.ts';
import type { Outbox, RelayQueue } from '../outbox.ts';
import { callStore, isPromiseLike, withDeadline, type RelayerStore } from '../store.ts';
import type { MerkleStore, RelayerConfig } from '../types.ts';
import { isHexOfLength } from '../hex.ts';
import { messageStatusJson } from '../message-status.ts';
import { parseJsonBody, validateMerkleRange, validateMerkleRequest, validateRelayRequest } from '../validate.ts';
import { lingerAfterAnswer, readBody } from './body.ts';
import { createMetricsRegistry, type MetricsRegistry } from './metrics.ts';

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
/** GET /ready waits this long for the store's ping (DESIGN.md §2). */
const READY_TIMEOUT_MS = 1_000;
/** A /metrics scrape waits this long for a store-backed gauge, then shows its last value. */
const GAUGE_TIMEOUT_MS = 1_000;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Log and metric reason of a request whose client went away before the answer (no RelayError). */
const CLIENT_CLOSED = 'client_closed';

type Route = '/relay' | typeof MESSAGE_ROUTE | '/ready' | '/merkle_tree_insertions' | '/chains' | '/metrics' | '/openapi.json';
/** GET /relay/{message_id}: one route (and one metrics label) for every id. */
const MESSAGE_ROUTE = '/relay/{message_id}';
const MESSAGE_PATH = /^\/relay\/([^/]+)$/;
const ALLOW: Record<Route, string> = {
  '/relay': 'GET, HEAD, POST, OPTIONS',
  [MESSAGE_ROUTE]: 'GET, HEAD, OPTIONS',
  '/ready': 'GET, HEAD, OPTIONS',
  '/merkle_tree_insertions': 'GET, HEAD, POST, OPTIONS',
  '/chains': 'GET, HEAD, OPTIONS',
  '/metrics': 'GET, HEAD, OPTIONS',
  '/openapi.json': 'GET, HEAD, OPTIONS',
};

/** Context of one request, for the log line and the metrics. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  id: string;
  route: string;
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

  // Same name, labels and label values as the reference relayer (relay_api/metrics.rs), so its
  // dashboards work: POST /relay only, status "success" | "failure", error_type "" on success.
  const requests = metrics.counter(
    'hyperlane_relay_api_requests_total',
    'POST /relay requests by status ("success" or "failure") and error_type (the failure reason, "" on success).',
  );
  const responses = metrics.counter('hyperlane_relay_api_http_responses_total', 'HTTP responses by route and status code.');
  const duration = metrics.histogram('hyperlane_relay_api_request_duration_seconds', 'Relay API request duration by route.');
  const rateLimited = metrics.counter('hyperlane_relay_api_rate_limited_total', 'POST /relay requests refused by the global rate limit.');
  const receiptDuration = metrics.histogram(
    'hyperlane_relay_api_receipt_fetch_duration_seconds',
    'Duration of eth_getTransactionReceipt attempts by chain and RPC endpoint (origin only).',
  );
  const receiptFailures = metrics.counter(
    'hyperlane_relay_api_receipt_fetch_failures_total',
    'Failed eth_getTransactionReceipt attempts by chain and RPC endpoint (origin only).',
  );
  const messagesEnqueued = metrics.counter('hyperlane_relay_api_messages_enqueued_total', 'Messages accepted by POST /relay.');
  const merkleRows = metrics.counter('hyperlane_relay_api_merkle_rows_written_total', 'Merkle tree insertion rows written.');

  const onReceiptAttempt = (event: ReceiptFetchEvent) => {
    const labels = { chain: event.chain, rpc: event.rpc };
    receiptDuration.observe(labels, event.durationMs / 1000);
    if (!event.ok) receiptFailures.inc(labels);
  };
  const pipeline =
    options.pipeline ??
    createRelayPipeline({
      config,
      queue: outbox,
      clock,
      fetch: options.fetch,
      onReceiptAttempt,
      dedup: store?.dedup,
      rateLimiter: store?.rateLimiter,
    });

  // Gauges read from a store that answers asynchronously are sampled before each /metrics render;
  // a synchronous one (the in-memory engines) is read at render time as before.
  const gaugeSamplers: Array<() => Promise<void>> = [];
  function storeGauge(name: string, help: string, read: () => number | Promise<number>): void {
    let last = NaN;
    let kind: 'unknown' | 'sync' | 'async' = 'unknown';
    gaugeSamplers.push(async () => {
      if (kind === 'sync') return;
      try {
        const value = read();
        if (!isPromiseLike(value)) {
          kind = 'sync';
          return;
        }
        kind = 'async';
        last = await withDeadline(value, GAUGE_TIMEOUT_MS, clock, name);
      } catch {
        // A failing store shows as NaN; the scrape itself still answers.
        last = NaN;
      }
    });
    metrics.gauge(name, help, () => {
      if (kind === 'async') return last;
      try {
        const value = read();
        if (!isPromiseLike(value)) return value;
        kind = 'async';
        value.then((v) => (last = v), () => {});
      } catch {
        // As above.
      }
      return last;
    });
  }

  storeGauge('hyperlane_relay_api_dedup_cache_size', 'Live entries in the POST /relay dedup cache.', () => pipeline.dedup.size());
  metrics.gauge('hyperlane_relay_api_in_flight_requests', 'Requests being handled.', () => inFlight);
  if (typeof outbox.depth === 'function') {
    storeGauge('hyperlane_relay_api_outbox_depth', 'Messages in the relay outbox not yet delivered.', outbox.depth.bind(outbox));
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
    if (error.reason === 'rate_limited') rateLimited.inc();
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
    if (result.messages.length > 0) messagesEnqueued.inc({}, result.messages.length);
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
    merkleRows.inc({}, count);
    sendJson(ex, 200, { count, skipped });
  }

  async function getMerkle(ex: Exchange, store: MerkleStore, url: URL): Promise<void> {
    requireAdmin(ex);
    const { domain, start, end } = validateMerkleRange(url.searchParams);
    sendJson(ex, 200, { merkle_tree_insertions: await callStore(() => store.listMerkle(domain, start, end)) });
  }

  async function getMessage(ex: Exchange, id: string): Promise<void> {
    if (!isHexOfLength(id, 32)) throw new RelayError('invalid_request', 'message_id must be 0x followed by 64 hex digits');
    const record = await callStore(() => outbox.get!(id));
    if (record === undefined) throw new RelayError('not_found', 'no message with this id was accepted by this relayer');
    sendJson(ex, 200, messageStatusJson(record));
  }

  /** GET /relay?origin_chain=&tx_hash=: the messages accepted from one transaction. */
  async function getMessagesOfTx(ex: Exchange, params: URLSearchParams): Promise<void> {
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
    const records = await callStore(() => outbox.byTx!(chain.name, txHash));
    sendJson(ex, 200, { messages: records.map(messageStatusJson) });
  }

  async function getReady(ex: Exchange): Promise<void> {
    // Without a store bundle everything lives in this process, which is answering.
    if (store !== undefined) await withDeadline(callStore(() => store.ping()), READY_TIMEOUT_MS, clock, 'the store ping');
    send(ex, 200, 'ready', 'text/plain; charset=utf-8');
  }

  async function getMetrics(ex: Exchange): Promise<void> {
    if (gaugeSamplers.length > 0) await Promise.all(gaugeSamplers.map((sample) => sample()));
    send(ex, 200, metrics.render(), 'text/plain; version=0.0.4; charset=utf-8');
  }

  async function route(ex: Exchange): Promise<void> {
    const { req } = ex;
    const target = req.url ?? '/';
    // A request line that is exactly a route (the usual case) has nothing to normalise or query.
    let url: URL | undefined;
    if (!Object.hasOwn(ALLOW, target)) {
      try {
        url = new URL(target, 'http://localhost');
      } catch {
        throw new RelayError('not_found', 'no such endpoint');
      }
    }
    const pathname = url === undefined ? target : url.pathname;
    const messageId = MESSAGE_PATH.exec(pathname)?.[1];
    const path = (messageId === undefined ? pathname : MESSAGE_ROUTE) as Route;
    const allow = Object.hasOwn(ALLOW, path) ? ALLOW[path] : undefined;
    if (allow === undefined || (path === '/merkle_tree_insertions' && merkle === undefined) ||
        (path === MESSAGE_ROUTE && typeof outbox.get !== 'function') ||
        (path === '/openapi.json' && options.openapi === undefined)) {
      throw new RelayError('not_found', 'no such endpoint');
    }
    ex.route = path;
    const allowedOrigin = applyCors(ex);
    const method = req.method === 'HEAD' ? 'GET' : req.method;

    if (method === 'OPTIONS') {
      const headers: Record<string, string> = { Allow: allow };
      if (allowedOrigin && req.headers['access-control-request-method'] !== undefined) {
        headers['Access-Control-Allow-Methods'] = allow;
        headers['Access-Control-Allow-Headers'] = 'Content-Type, Authorization, X-Request-Id';
        headers['Access-Control-Max-Age'] = '600';
      }
      ex.res.statusCode = 204;
      for (const [name, value] of Object.entries(headers)) ex.res.setHeader(name, value);
      ex.res.setHeader('X-Request-Id', ex.id);
      ex.res.end();
      return;
    }

    if (path === '/relay' && method === 'GET') {
      // Any query makes it a lookup; the bare path stays the liveness probe.
      if (url === undefined || url.search === '') return send(ex, 200, 'up', 'text/plain; charset=utf-8');
      if (typeof outbox.byTx !== 'function') throw new RelayError('not_found', 'this relayer does not keep message statuses');
      return getMessagesOfTx(ex, url.searchParams);
    }
    if (path === MESSAGE_ROUTE && method === 'GET') return getMessage(ex, messageId!);
    if (path === '/relay' && method === 'POST') return postRelay(ex);
    if (path === '/merkle_tree_insertions' && method === 'POST') return postMerkle(ex, merkle!);
    if (path === '/merkle_tree_insertions' && method === 'GET') return getMerkle(ex, merkle!, url ?? new URL(target, 'http://localhost'));
    if (path === '/ready' && method === 'GET') return getReady(ex);
    if (path === '/chains' && method === 'GET') return send(ex, 200, chainList, JSON_TYPE);
    if (path === '/metrics' && method === 'GET') return getMetrics(ex);
    if (path === '/openapi.json' && method === 'GET') return sendJson(ex, 200, options.openapi);
    throw new RelayError('method_not_allowed', `${req.method} is not allowed on ${path}`);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const started = clock.now();
    const given = req.headers['x-request-id'];
    const ex: Exchange = {
      req,
      res,
      id: typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID(),
      route: 'unknown',
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
        requests.inc(status < 400 ? { status: 'success', error_type: '' } : { status: 'failure', error_type: ex.reason ?? 'internal_error' });
      }
      responses.inc({ route: ex.route, code: String(status) });
      duration.observe({ route: ex.route }, seconds);
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
      if ((ex.route === '/relay' || ex.route === '/ready' || ex.route === MESSAGE_ROUTE) && status === 200 && req.method !== 'POST') {
        logger.debug('request', fields);
      }
      else logger.info('request', fields);
    };
    // 'close' follows 'finish' on every answered response and also ends one whose client left.
    res.once('close', done);
    route(ex).catch((thrown: unknown) => {
      const error = toRelayError(thrown);
      const headers: Record<string, string> = {};
      if (error.reason === 'method_not_allowed' && ex.route !== 'unknown') headers.Allow = ALLOW[ex.route as Route];
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
