/**
 * Fetches a transaction receipt (`eth_getTransactionReceipt` over lib/rpc/client.ts),
 * docs/design.md#receipt.
 *
 * The chain's RPC URLs are tried in order; any failure of one (transport, attempt timeout, HTTP
 * status, bad JSON, wrong id, JSON-RPC error, malformed receipt, oversized body) moves on to the
 * next. A `null` result means "not mined yet": wait `pollIntervalMs` and start again from the
 * first URL. Everything runs under one deadline (docs/design.md#receipt: 10 s) on the injected
 * clock.
 */
import { sleep, systemClock } from '../clock.ts';
import { RelayError, RpcError, type RpcFailureCode } from '../errors/classes.ts';
import { parseHex, isHexOfLength, isPlainObject } from '../codec/hex.ts';
import {
  causeText,
  classifyFailure,
  createRpcClient,
  fail,
  follow,
  type RpcFailureClass,
  type RpcOptions,
} from './client.ts';
import { redactEndpoint, redactUrl } from '../redact.ts';
import type { Log } from '../codec/abi.ts';
import type { ChainConfig } from '../types.ts';

/** A transaction receipt as the pipeline reads it. */
export interface Receipt {
  /** true when the transaction succeeded (status 0x1); a reverted receipt carries no messages. */
  success: boolean;
  logs: Log[];
}

/** One JSON-RPC attempt, for metrics and logs. Nothing in it carries a URL's path, query or userinfo. */
export interface ReceiptFetchEvent {
  chain: string;
  /** scheme://host[:port] only: for the operator's log. */
  rpc: string;
  /**
   * The endpoint by chain and position in its `rpcUrls`, `ethereum#0`: what metrics label it with
   * (docs/operations.md#metrics), since a host may itself name a private network or hold a key.
   */
  endpoint: string;
  /** The transaction whose receipt is asked for, lower-case. */
  txHash: string;
  /** 1 for the first request of this fetch, counting across endpoints and polls. */
  attempt: number;
  /** The endpoint gave a valid answer (a receipt or `null`). */
  ok: boolean;
  durationMs: number;
  /** Why it failed; 'cancelled' when the caller or the deadline ended the wait. */
  code?: RpcFailureCode | 'cancelled';
  /** A fixed, URL-free description of the failure. */
  error?: string;
  /** What the node or the transport said beneath `error` (see lib/rpc/client.ts causeText). */
  cause?: string;
  /** The class of the failure (DNS, connection refused, HTTP 5xx, JSON-RPC error, …). */
  failure?: RpcFailureClass;
}

export interface ReceiptFetcherOptions extends RpcOptions {
  /** Overall deadline from the first request. Default 10 000 ms (docs/design.md#receipt). */
  timeoutMs?: number;
  /** Wait between polls while the receipt is `null`, or after every URL failed. Default 500 ms. */
  pollIntervalMs?: number;
  onAttempt?: (event: ReceiptFetchEvent) => void;
}

/** Where the pipeline gets receipts: the JSON-RPC fetcher below, or anything a test or embedder injects. */
export type ReceiptSource = (chain: ChainConfig, txHash: string, signal?: AbortSignal) => Promise<Receipt>;

function parseLog(value: unknown): Log {
  if (!isPlainObject(value)) fail('malformed_receipt', 'malformed receipt log');
  const { address, topics, data } = value;
  if (!isHexOfLength(address, 20)) fail('malformed_receipt', 'malformed receipt log address');
  if (!Array.isArray(topics) || topics.length > 4) fail('malformed_receipt', 'malformed receipt log topics');
  for (const t of topics) if (!isHexOfLength(t, 32)) fail('malformed_receipt', 'malformed receipt log topics');
  const bytes = typeof data === 'string' ? parseHex(data) : undefined;
  if (!bytes) fail('malformed_receipt', 'malformed receipt log data');
  const log: Log = {
    address: address.toLowerCase(),
    topics: (topics as string[]).map((t) => t.toLowerCase()),
    data: bytes,
  };
  // Only the gas payment logs need it (lib/gas/payment.ts); a log without a valid one is kept.
  const logIndex = quantity(value.logIndex);
  if (logIndex !== undefined) log.logIndex = logIndex;
  return log;
}

/** A JSON-RPC quantity (0x hex, no leading zeros) as a safe integer, else undefined. */
function quantity(value: unknown): number | undefined {
  if (typeof value !== 'string' || !/^0x(0|[1-9a-f][0-9a-f]{0,12})$/i.test(value)) return undefined;
  return Number.parseInt(value.slice(2), 16);
}

/**
 * Reads only what the pipeline needs (status, logs) and checks the receipt is for `txHash`.
 * Every other field is ignored: nodes differ (anvil sends `blockTimestamp` as a JSON number).
 */
export function parseReceipt(value: unknown, txHash: string): Receipt {
  if (!isPlainObject(value)) fail('malformed_receipt', 'malformed receipt');
  if (typeof value.transactionHash !== 'string' || value.transactionHash.toLowerCase() !== txHash.toLowerCase()) {
    fail('wrong_transaction', 'receipt for another transaction');
  }
  if (value.status !== '0x1' && value.status !== '0x0') fail('malformed_receipt', 'malformed receipt status');
  if (!Array.isArray(value.logs)) fail('malformed_receipt', 'malformed receipt logs');
  return { success: value.status === '0x1', logs: value.logs.map(parseLog) };
}

export function createReceiptFetcher(opts: ReceiptFetcherOptions = {}): ReceiptSource {
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const pollIntervalMs = opts.pollIntervalMs ?? 500;
  const onAttempt = opts.onAttempt;
  const rpc = createRpcClient({ ...opts, clock });
  // The configured URLs are a handful: each is parsed and redacted once, not on every attempt.
  const origins = new Map<string, string>();
  const originOf = (url: string): string => {
    let origin = origins.get(url);
    if (origin === undefined) {
      origin = redactUrl(url);
      if (origins.size < 256) origins.set(url, origin);
    }
    return origin;
  };

  function report(event: ReceiptFetchEvent, url: string, error?: unknown): void {
    if (error !== undefined) {
      event.code = error instanceof RpcError ? error.code : 'cancelled';
      event.error = error instanceof RpcError ? error.message : 'cancelled';
      if (error instanceof RpcError) event.failure = classifyFailure(error).failure;
      const cause = causeText(error);
      if (cause !== undefined) event.cause = redactEndpoint(cause, url);
    }
    try {
      onAttempt?.(event);
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
    // Why the latest failed attempt failed, for the timeout's message (never a URL).
    let lastFailure: string | undefined;
    let attempts = 0;
    try {
      for (;;) {
        for (const [index, url] of chain.rpcUrls.entries()) {
          const startedAt = clock.now();
          const n = ++attempts;
          const event = (ok: boolean): ReceiptFetchEvent => ({
            chain: chain.name,
            rpc: originOf(url),
            endpoint: `${chain.name}#${index}`,
            txHash: txHash.toLowerCase(),
            attempt: n,
            ok,
            durationMs: clock.now() - startedAt,
          });
          let result: Receipt | null;
          try {
            const answer = await rpc(url, 'eth_getTransactionReceipt', [txHash], signal);
            result = answer === null ? null : parseReceipt(answer, txHash);
          } catch (err) {
            if (onAttempt) report(event(false), url, signal.aborted ? 'cancelled' : err);
            if (signal.aborted) throw err;
            if (err instanceof RpcError) lastFailure = classifyFailure(err).summary;
            continue;
          }
          if (onAttempt) report(event(true), url);
          if (result) return result;
          answered = true;
          break; // not mined yet: wait, then start again from the first URL
        }
        await sleep(clock, pollIntervalMs, signal);
      }
    } catch (err) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      if (deadline.signal.aborted) throw timeoutError(chain, answered, lastFailure);
      throw err;
    } finally {
      unfollow();
      clock.clearTimeout(timer);
    }
  };

  function timeoutError(chain: ChainConfig, answered: boolean, lastFailure: string | undefined): RelayError {
    const seconds = Math.ceil(timeoutMs / 1000);
    const message = answered
      ? `transaction receipt not found within ${seconds} seconds`
      : `transaction receipt not fetched within ${seconds} seconds: the RPC endpoints of chain ${chain.name} failed ` +
        `(last attempt: ${lastFailure ?? 'no answer in time'})`;
    // Retry once the transaction is confirmed (docs/design.md#receipt); one more full wait is a
    // fair first guess.
    return new RelayError('timeout', message, { retryAfterSeconds: Math.max(1, seconds) });
  }
}
