/**
 * A fake Ethereum JSON-RPC node as an injected `fetch` (docs/embedding.md#test-tooling): it answers
 * eth_getTransactionReceipt from a table, eth_chainId and eth_blockNumber, and fails or waits on
 * request: a fault for the next calls, a delay on the given clock (a fake clock's time, not the wall's).
 */
import { sleep, systemClock, type Clock } from '../clock.ts';

/** How the next calls fail: no answer (fetch rejects), HTTP 500, a JSON-RPC error, a body that is not JSON, "not mined yet". */
export type NodeFault = 'network' | 'http_500' | 'rpc_error' | 'invalid_json' | 'not_mined';

export interface FakeNodeOptions {
  chainId?: number;
  /** The clock delays run on (default: the system clock). */
  clock?: Clock;
}

export interface FakeNode {
  /** The `fetch` to hand to createRelayPipeline, createReceiptFetcher or createRelayApi. */
  fetch(url: string, init?: RequestInit): Promise<Response>;
  /** Receipts by transaction hash (any case): what eth_getTransactionReceipt answers; absent is null. */
  readonly receipts: Map<string, Record<string, unknown>>;
  /** The next `times` calls (default: every call until `fail()`) fail with `fault`; `fail()` ends it. */
  fail(fault?: NodeFault, times?: number): void;
  /** Each answer waits `ms` on the clock first (0: none). */
  delay(ms: number): void;
  /** The JSON-RPC calls received, in order. */
  readonly calls: { method: string; params: unknown[] }[];
}

/** A Map whose keys are lower-cased, as hashes are compared. */
class HashMap<V> extends Map<string, V> {
  override set(key: string, value: V): this {
    return super.set(key.toLowerCase(), value);
  }
  override get(key: string): V | undefined {
    return super.get(key.toLowerCase());
  }
}

export function createFakeNode(options: FakeNodeOptions = {}): FakeNode {
  const clock = options.clock ?? systemClock;
  const receipts = new HashMap<Record<string, unknown>>();
  const calls: { method: string; params: unknown[] }[] = [];
  let fault: NodeFault | undefined;
  let faultsLeft = 0;
  let delayMs = 0;
  const json = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

  async function fetch(_url: string, init: RequestInit = {}): Promise<Response> {
    const request = JSON.parse(String(init.body)) as { id?: unknown; method: string; params?: unknown[] };
    calls.push({ method: request.method, params: request.params ?? [] });
    if (delayMs > 0) await sleep(clock, delayMs, init.signal ?? undefined);
    const now = fault;
    if (now !== undefined && --faultsLeft <= 0) fault = undefined;
    if (now === 'network') throw new TypeError('fetch failed');
    if (now === 'http_500') return new Response('internal error', { status: 500 });
    if (now === 'invalid_json') return new Response('<html>', { status: 200 });
    const id = request.id ?? null;
    if (now === 'rpc_error') return json({ jsonrpc: '2.0', id, error: { code: -32000, message: 'header not found' } });
    let result: unknown = null;
    if (request.method === 'eth_chainId') result = `0x${(options.chainId ?? 1).toString(16)}`;
    else if (request.method === 'eth_blockNumber') result = '0x1000';
    else if (request.method === 'eth_getTransactionReceipt' && now !== 'not_mined')
      result = receipts.get(String(request.params?.[0]).toLowerCase()) ?? null;
    else if (request.method !== 'eth_getTransactionReceipt')
      return json({ jsonrpc: '2.0', id, error: { code: -32601, message: 'method not found' } });
    return json({ jsonrpc: '2.0', id, result });
  }

  return {
    fetch,
    receipts,
    fail(f, times = Number.POSITIVE_INFINITY) {
      fault = f;
      faultsLeft = f === undefined ? 0 : times;
    },
    delay(ms) {
      delayMs = ms;
    },
    calls,
  };
}
