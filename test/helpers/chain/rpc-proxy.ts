/**
 * A JSON-RPC pass-through between the relayer server and anvil that watches the
 * `eth_getTransactionReceipt` answers. The mined-later scenario needs to know that the server has
 * really seen "not mined yet" (a null receipt) before the test mines the block; a fixed sleep
 * could not prove that. It also lists every method asked, in order (what a send costs the node).
 * With `firstReceiptNull` it answers the first receipt request of each transaction with null
 * itself, as anvil does now and then when it answers a send before the block is written: a test
 * takes that path every run instead of once in a while.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RpcProxy {
  url: string;
  /** How many receipt requests for `hash` were answered, and how many of them with null. */
  receiptAnswers(hash: string): { total: number; nulls: number };
  /** Resolves once a receipt request for `hash` has been answered with null. */
  nullReceiptServed(hash: string): Promise<void>;
  /** Every JSON-RPC method asked through the proxy so far, in order (a batch's calls in its order). */
  methods(): string[];
  close(): Promise<void>;
}

export interface RpcCall {
  id?: unknown;
  method?: string;
  params?: unknown[];
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startRpcProxy(target: string, opts: { firstReceiptNull?: boolean } = {}): Promise<RpcProxy> {
  const answers = new Map<string, { total: number; nulls: number }>();
  const waiters = new Map<string, (() => void)[]>();
  const asked: string[] = [];

  function record(call: RpcCall, reply: { id?: unknown; result?: unknown }): void {
    if (call.method !== 'eth_getTransactionReceipt' || typeof call.params?.[0] !== 'string') return;
    const hash = call.params[0].toLowerCase();
    const seen = answers.get(hash) ?? { total: 0, nulls: 0 };
    seen.total++;
    if (reply.result === null) {
      seen.nulls++;
      for (const wake of waiters.get(hash) ?? []) wake();
      waiters.delete(hash);
    }
    answers.set(hash, seen);
  }

  const hiddenOnce = new Set<string>();
  /** A lone receipt request for a transaction not asked about before (firstReceiptNull). */
  function firstReceiptRequest(body: string): (RpcCall & { method: string }) | undefined {
    let call: RpcCall;
    try {
      call = JSON.parse(body) as RpcCall;
    } catch {
      return undefined;
    }
    const hash = call?.params?.[0];
    if (call?.method !== 'eth_getTransactionReceipt' || typeof hash !== 'string') return undefined;
    if (hiddenOnce.has(hash.toLowerCase())) return undefined;
    hiddenOnce.add(hash.toLowerCase());
    return { ...call, method: call.method };
  }

  const server = createServer(async (req, res) => {
    try {
      const body = await readBody(req);
      const hidden = opts.firstReceiptNull ? firstReceiptRequest(body) : undefined;
      if (hidden) {
        asked.push(hidden.method);
        const reply = { jsonrpc: '2.0', id: hidden.id, result: null };
        record(hidden, reply);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(reply));
        return;
      }
      const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await upstream.text();
      try {
        const calls = [JSON.parse(body)].flat() as RpcCall[];
        for (const call of calls) asked.push(String(call.method));
        const replies = [JSON.parse(text)].flat() as { id?: unknown; result?: unknown }[];
        for (const call of calls) {
          const reply = replies.find((r) => r.id === call.id);
          if (reply) record(call, reply);
        }
      } catch {
        // Not JSON either way: pass it through unrecorded.
      }
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(text);
    } catch {
      res.writeHead(502).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    methods: () => [...asked],
    receiptAnswers: (hash) => ({ ...(answers.get(hash.toLowerCase()) ?? { total: 0, nulls: 0 }) }),
    nullReceiptServed(hash) {
      const key = hash.toLowerCase();
      if ((answers.get(key)?.nulls ?? 0) > 0) return Promise.resolve();
      return new Promise((resolve) => waiters.set(key, [...(waiters.get(key) ?? []), resolve]));
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
