/**
 * One HTTP exchange (request and answer) and everything observed about it: the in-flight count,
 * the request log line, the request metrics, and the operator's log of failures (internal and
 * store errors, failed JSON-RPC attempts). Nothing else in lib/http logs or counts.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../clock.ts';
import type { RelayError } from '../errors/classes.ts';
import type { Logger } from '../log.ts';
import type { ReceiptFetchEvent } from '../rpc/receipt.ts';
import type { RelayMetrics } from './relay-metrics.ts';

/** Context of one request, for the log line and the metrics. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  id: string;
  /** The matched route's path pattern ('unknown' before a match): the metric and log label. */
  route: string;
  /** The matched route (lib/http/router.ts, CompiledRoute): what the log line and an error answer read of it. */
  matched?: { readonly allow: string; readonly probe?: boolean };
  /** Parsed only when the request line is not exactly a route's path. */
  url?: URL;
  /** The request target below the handler's basePath (docs/embedding.md#mounting-the-http-api); req.url without one. */
  target?: string;
  params: Record<string, string>;
  reason?: string;
  originChain?: string;
  txHash?: string;
  messages?: number;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Log and metric reason of a request whose client went away before the answer (no RelayError). */
const CLIENT_CLOSED = 'client_closed';

/** A new exchange; its id is the client's X-Request-Id when well-formed, else a fresh UUID. */
export function createExchange(req: IncomingMessage, res: ServerResponse): Exchange {
  const given = req.headers['x-request-id'];
  return {
    req,
    res,
    id: typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID(),
    route: 'unknown',
    params: {},
  };
}

/** The query of the request line (empty when the line was exactly a route's path). */
export function query(ex: Exchange): URLSearchParams {
  return (ex.url ?? new URL(ex.req.url ?? '/', 'http://localhost')).searchParams;
}

export interface ExchangeRecorder {
  /** Counts the exchange in flight until its response closes, then logs and counts it. */
  begin(ex: Exchange, started: number): void;
  /** Records the error the exchange is answered with (before the answer is written). */
  failed(ex: Exchange, error: RelayError): void;
  /** Observes one eth_getTransactionReceipt attempt (the pipeline's onReceiptAttempt). */
  receiptAttempt(event: ReceiptFetchEvent): void;
  /** Requests being handled right now. */
  inFlight(): number;
}

export function createExchangeRecorder(deps: {
  clock: Clock;
  logger: Logger;
  metrics: RelayMetrics;
}): ExchangeRecorder {
  const { clock, logger, metrics } = deps;
  let inFlight = 0;
  const rpcFailures = createRpcFailureLog();

  function end(ex: Exchange, started: number): void {
    const { req, res } = ex;
    inFlight--;
    const seconds = (clock.now() - started) / 1000;
    // A connection closed before the answer was sent must not count as the default 200: it gets
    // nginx's 499 "client closed request".
    if (!res.writableFinished) ex.reason = CLIENT_CLOSED;
    const status = res.writableFinished ? res.statusCode : 499;
    if (ex.route === '/relay' && req.method === 'POST') {
      metrics.requests.inc(
        status < 400
          ? { status: 'success', error_type: '' }
          : { status: 'failure', error_type: ex.reason ?? 'internal_error' },
      );
    }
    metrics.responses.inc({ route: ex.route, code: String(status) });
    metrics.duration.observe({ route: ex.route }, seconds);
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
    if (ex.originChain !== undefined && ex.txHash !== undefined) {
      const failed = rpcFailures.take(ex.originChain, ex.txHash);
      if (failed) logger.warn('rpc attempts failed', { request_id: ex.id, status, ...failed });
    }
  }

  return {
    begin(ex, started) {
      inFlight++;
      // 'close' follows 'finish' on every answered response and also ends one whose client left.
      ex.res.once('close', () => end(ex, started));
    },
    failed(ex, error) {
      ex.reason = error.code;
      if (error.code === 'rate_limited') metrics.rateLimited.inc();
      if (error.code === 'internal_error' || error.code === 'store_unavailable') {
        // The cause is for the operator's log only, reduced to its name and first line.
        const cause =
          error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message.split('\n')[0]}` : undefined;
        logger.error(error.code === 'internal_error' ? 'internal error' : 'store unavailable', {
          request_id: ex.id,
          route: ex.route,
          error: error.message,
          cause,
        });
      }
    },
    receiptAttempt(event) {
      metrics.receiptAttempt(event);
      // Without the failures a 408 after ten seconds of failing endpoints says nothing an operator
      // can act on, but a dead endpoint fails every 500 ms poll: each attempt at debug, and one
      // warn line per request when it ends (summarised below). The event carries the endpoint's
      // origin only and a cause already cut of URLs and of the endpoint's path, query and userinfo.
      if (event.ok || event.code === 'cancelled') return;
      logger.debug('rpc attempt failed', {
        chain: event.chain,
        rpc: event.rpc,
        tx_hash: event.txHash,
        attempt: event.attempt,
        failure: event.failure,
        error: event.error,
        cause: event.cause,
      });
      rpcFailures.add(event);
    },
    inFlight: () => inFlight,
  };
}

/** What the failed receipt attempts of one relay add up to, for its one warn line. */
interface RpcFailureSummary {
  chain: string;
  tx_hash: string;
  /** Failed attempts, across endpoints and polls. */
  failed_attempts: number;
  /** Failed attempts by class (`http_5xx`, `connection_refused`, …). */
  failures: Record<string, number>;
  /** The origins of the endpoints that failed, in the order they first did. */
  rpcs: string[];
  /** The last failure: its endpoint, class, fixed text and cause. */
  rpc: string;
  failure?: string;
  error?: string;
  cause?: string;
}

/** At most this many relays' failures are held; a relay whose answer was never logged is dropped first. */
const MAX_RPC_FAILURE_SUMMARIES = 10_000;

/**
 * The failed attempts of relays in flight, by (chain, transaction): one relay per pair is in
 * flight at a time (the dedup reservation), and its request's end takes the summary. A relay that
 * goes on after its client left adds to an entry nobody takes: the oldest are dropped past the cap.
 */
function createRpcFailureLog() {
  const open = new Map<string, RpcFailureSummary>();
  return {
    add(event: ReceiptFetchEvent): void {
      const key = `${event.chain}\n${event.txHash}`;
      let entry = open.get(key);
      if (entry === undefined) {
        if (open.size >= MAX_RPC_FAILURE_SUMMARIES) open.delete(open.keys().next().value as string);
        entry = {
          chain: event.chain,
          tx_hash: event.txHash,
          failed_attempts: 0,
          failures: {},
          rpcs: [],
          rpc: event.rpc,
        };
        open.set(key, entry);
      }
      entry.failed_attempts++;
      const failure = event.failure ?? 'transport';
      entry.failures[failure] = (entry.failures[failure] ?? 0) + 1;
      if (!entry.rpcs.includes(event.rpc)) entry.rpcs.push(event.rpc);
      entry.rpc = event.rpc;
      entry.failure = event.failure;
      entry.error = event.error;
      entry.cause = event.cause;
    },
    take(chain: string, txHash: string): RpcFailureSummary | undefined {
      const key = `${chain}\n${txHash}`;
      const entry = open.get(key);
      open.delete(key);
      return entry;
    },
  };
}
