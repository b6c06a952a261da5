/**
 * A JSON-RPC proxy in front of anvil that lies about sends (docs/transactions.md#transactions: what
 * happened is decided from what the node holds, not from the reply). Each `eth_sendRawTransaction`
 * takes the next fault queued with `fault()`, if any:
 * - `already-known`: forwarded, then answered with the error a node gives for a transaction it
 *   already has ("already known"), whatever anvil said;
 * - `cut`: forwarded, then the connection is destroyed before any answer;
 * - `refuse`: not forwarded; answered with a JSON-RPC error (the node refused it);
 * - `nonce-too-low`: not forwarded; answered "nonce too low" (a stale or wrong node).
 * `refuseNonce(n, times)` refuses (as `refuse`) the next `times` sends at nonce `n` (default 1),
 * whatever the queue holds: a refusal below sends that go through, as concurrent sends meet it.
 * Every signed transaction that reached anvil is kept (`forwarded()`), to judge the worker by.
 *
 * The pending count (`eth_getTransactionCount` at `pending`) is answered as geth does: the mined
 * count plus the pool's transactions without a gap from it (anvil counts every pooled
 * transaction of the account, gaps or not).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseTransaction, type Hex } from 'viem';
import { readBody, type RpcCall as Call } from './rpc-proxy.ts';

export type SendFault = 'already-known' | 'cut' | 'refuse' | 'nonce-too-low';

export interface LyingRpc {
  url: string;
  /** Queues faults for the next sends, in order. */
  fault(...faults: SendFault[]): void;
  /** Refuses the next `times` sends at `nonce` (default 1; not forwarded), ahead of the queued faults. */
  refuseNonce(nonce: number, times?: number): void;
  /** Faults queued and not yet applied (refusals by nonce included). */
  pendingFaults(): number;
  /** The signed transactions forwarded to anvil, in order. */
  forwarded(): Hex[];
  close(): Promise<void>;
}

export async function startLyingRpc(target: string): Promise<LyingRpc> {
  const faults: SendFault[] = [];
  /** Nonce -> refusals left there. */
  const refuseAt = new Map<number, number>();
  const forwarded: Hex[] = [];
  const forward = async (body: string) => {
    const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: upstream.status, text: await upstream.text() };
  };
  const ask = async (method: string, params: unknown[]) => {
    const { text } = await forward(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
    return (JSON.parse(text) as { result: unknown }).result;
  };
  /** geth's pending count: mined, then pooled nonces while they follow without a gap. */
  const stopAtGap = async (address: string) => {
    let n = Number(await ask('eth_getTransactionCount', [address, 'latest']));
    const content = (await ask('txpool_content', [])) as Record<string, Record<string, Record<string, unknown>>>;
    const pooled = new Set<number>();
    for (const group of [content.pending, content.queued])
      for (const [from, txs] of Object.entries(group ?? {}))
        if (from.toLowerCase() === address) for (const nonce of Object.keys(txs)) pooled.add(Number(nonce));
    while (pooled.has(n)) n++;
    return n;
  };
  const server = createServer(async (req, res) => {
    try {
      const body = await readBody(req);
      let call: Call | undefined;
      try {
        const parsed = JSON.parse(body) as Call | Call[];
        if (!Array.isArray(parsed)) call = parsed;
      } catch {
        // Not JSON: passed through.
      }
      if (call?.method === 'eth_getTransactionCount' && call.params?.[1] === 'pending') {
        const address = String(call.params[0]).toLowerCase();
        const result = await stopAtGap(address);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result: `0x${result.toString(16)}` }));
        return;
      }
      if (call?.method !== 'eth_sendRawTransaction') {
        const { status, text } = await forward(body);
        res.writeHead(status, { 'content-type': 'application/json' }).end(text);
        return;
      }
      const raw = call.params?.[0] as Hex;
      const nonce = parseTransaction(raw).nonce ?? -1;
      const left = refuseAt.get(nonce) ?? 0;
      if (left > 1) refuseAt.set(nonce, left - 1);
      else refuseAt.delete(nonce);
      const fault = left > 0 ? 'refuse' : faults.shift();
      const error = (message: string, code = -32000) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code, message } }));
      if (fault === 'refuse') return error('request refused: the node is over capacity', -32005);
      if (fault === 'nonce-too-low') return error('nonce too low');
      const { status, text } = await forward(body);
      if (!text.includes('"error"')) forwarded.push(raw);
      if (fault === 'already-known') return error('already known');
      if (fault === 'cut') return void req.socket.destroy();
      res.writeHead(status, { 'content-type': 'application/json' }).end(text);
    } catch {
      res.writeHead(502).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    fault: (...more) => void faults.push(...more),
    refuseNonce: (nonce, times = 1) => void refuseAt.set(nonce, (refuseAt.get(nonce) ?? 0) + times),
    pendingFaults: () => faults.length + [...refuseAt.values()].reduce((a, b) => a + b, 0),
    forwarded: () => [...forwarded],
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
