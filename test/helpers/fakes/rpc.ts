/**
 * A JSON-RPC endpoint serving `eth_getTransactionReceipt` from a table, both as an in-process fetch
 * function and as a real HTTP server on 127.0.0.1 (for the bin and load tests).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceiptTable = Map<string, Record<string, unknown> | null>;

/** What a fake node says about its chain: eth_chainId, and eth_getBalance for any address. */
export interface FakeChain {
  chainId: number;
  balanceWei?: bigint;
}

function answer(table: ReceiptTable, body: string, chain?: FakeChain): { status: number; text: string } {
  let request: { id?: unknown; method?: unknown; params?: unknown[] };
  try {
    request = JSON.parse(body);
  } catch {
    return {
      status: 400,
      text: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }),
    };
  }
  if (chain !== undefined && (request.method === 'eth_chainId' || request.method === 'eth_getBalance')) {
    const value = request.method === 'eth_chainId' ? BigInt(chain.chainId) : (chain.balanceWei ?? 10n ** 18n);
    return { status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: request.id, result: `0x${value.toString(16)}` }) };
  }
  if (request.method !== 'eth_getTransactionReceipt') {
    return {
      status: 200,
      text: JSON.stringify({ jsonrpc: '2.0', id: request.id, error: { code: -32601, message: 'method not found' } }),
    };
  }
  const hash = String(request.params?.[0] ?? '').toLowerCase();
  return { status: 200, text: JSON.stringify({ jsonrpc: '2.0', id: request.id, result: table.get(hash) ?? null }) };
}

/** In-process fetch over a receipt table; counts calls. */
export function fakeRpcFetch(table: ReceiptTable) {
  const calls: string[] = [];
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    calls.push(url);
    const { status, text } = answer(table, String(init.body));
    return new Response(text, { status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch, calls };
}

export interface FakeRpcServer {
  url: string;
  table: ReceiptTable;
  requests(): number;
  close(): Promise<void>;
}

/** A real HTTP JSON-RPC server on 127.0.0.1 over `table`; with `chain`, it also answers as a node of that chain. */
export async function startFakeRpcServer(table: ReceiptTable = new Map(), chain?: FakeChain): Promise<FakeRpcServer> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      count++;
      const { status, text } = answer(table, Buffer.concat(chunks).toString('utf8'), chain);
      res.writeHead(status, { 'content-type': 'application/json' }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    table,
    requests: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Calls told apart in time: a fake fetch calls `raise()`, a test awaits `next()` to know its request reached the RPC. */
export function callSignal(): { raise(): void; next(): Promise<void> } {
  let waiting: Array<() => void> = [];
  return {
    raise() {
      const resolves = waiting;
      waiting = [];
      for (const resolve of resolves) resolve();
    },
    next: () => new Promise<void>((resolve) => waiting.push(resolve)),
  };
}
