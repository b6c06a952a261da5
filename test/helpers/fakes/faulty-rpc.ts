/**
 * A JSON-RPC endpoint on 127.0.0.1 that misbehaves on purpose. The first path segment picks the
 * behaviour (`http://127.0.0.1:PORT/hang/...`), so one server stands in for several RPC
 * endpoints; anything after it (an API key, say) is ignored but recorded, so tests can check it
 * never leaks. `ok` answers from a receipt table like test/helpers/fakes/rpc.ts; the other modes
 * break one thing each. Several modes reflect the request URL back in their answer, as a careless
 * or hostile provider might, so tests can check the relayer does not pass that text on.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export const FAULTS = [
  'ok', // the receipt from the table (null when absent: not mined yet)
  'hang', // reads the request, never answers
  'reset', // TCP RST as soon as the request arrives
  'http500', // 500 with a body echoing the URL
  'http503',
  'http429', // 429 with Retry-After
  'invalid-json', // 200, body is not JSON
  'rpc-error', // a JSON-RPC error whose message echoes the URL
  'wrong-id', // a valid receipt under another JSON-RPC id
  'other-tx', // a receipt for another transaction hash
  'bad-log-hex', // a receipt whose log data is not hex (the receipt parser refuses it)
  'bad-log-abi', // hex log data that is not a valid ABI encoding, from the Mailbox itself
  'endless', // 200 with a body that never ends, written as fast as the reader takes it
  'stall-body', // 200, half a JSON body, then nothing
  'null-result', // always "not mined yet"
  'slow', // like ok, 25 ms later (keeps relays in flight)
] as const;

export type Fault = (typeof FAULTS)[number];

export type ReceiptTable = Map<string, Record<string, unknown> | null>;

export interface FaultyRpcServer {
  /** Base URL, e.g. http://127.0.0.1:1234 */
  url: string;
  /** `${url}/${fault}${suffix}` */
  endpoint(fault: Fault, suffix?: string): string;
  table: ReceiptTable;
  /** Requests received per fault. */
  requests(fault: Fault): number;
  /** Every request path seen (to check where keys travelled). */
  paths: string[];
  /** Authorization headers seen, in order (undefined when absent). */
  authorizations: Array<string | undefined>;
  /** Connections of `hang` / `stall-body` still open (the relayer must close them). */
  held(): number;
  /** Bytes the `endless` mode managed to hand to the socket, summed over requests. */
  endlessBytes(): number;
  /** `endless` responses whose connection the client closed. */
  endlessClosed(): number;
  /** Resolves when the `n`th request for `fault` has arrived. */
  waitForRequest(fault: Fault, n?: number): Promise<void>;
  close(): Promise<void>;
}

function isFault(value: string): value is Fault {
  return (FAULTS as readonly string[]).includes(value);
}

interface RpcRequest {
  id?: unknown;
  method?: unknown;
  params?: unknown[];
}

function parseRequest(text: string): RpcRequest {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as RpcRequest) : {};
  } catch {
    return {};
  }
}

function json(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));
}

/** A copy of `receipt` whose first log (the one from the Mailbox) carries `data`. */
function withLogData(receipt: Record<string, unknown>, data: string, mailbox?: string): Record<string, unknown> {
  const logs = (receipt.logs as Array<Record<string, unknown>>).map((log) => ({ ...log }));
  const target = logs.find((log) => mailbox === undefined || String(log.address).toLowerCase() === mailbox) ?? logs[0];
  if (target) target.data = data;
  return { ...receipt, logs };
}

export interface FaultyRpcOptions {
  /** The Mailbox address whose Dispatch log `bad-log-abi` breaks (lower-case). */
  mailbox?: string;
  /** Answers hashes missing from the table (so a long load run need not store every receipt). */
  receiptFor?: (hash: string) => Record<string, unknown> | null;
}

export async function startFaultyRpcServer(
  table: ReceiptTable = new Map(),
  options: FaultyRpcOptions = {},
): Promise<FaultyRpcServer> {
  const counts = new Map<Fault, number>();
  const waiters: Array<{ fault: Fault; n: number; resolve: () => void }> = [];
  const paths: string[] = [];
  const authorizations: Array<string | undefined> = [];
  const sockets = new Set<Socket>();
  const held = new Set<IncomingMessage>();
  let endlessBytes = 0;
  let endlessClosed = 0;

  function count(fault: Fault): void {
    const n = (counts.get(fault) ?? 0) + 1;
    counts.set(fault, n);
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i].fault === fault && n >= waiters[i].n) {
        waiters[i].resolve();
        waiters.splice(i, 1);
      }
    }
  }

  function hold(req: IncomingMessage, res: ServerResponse): void {
    held.add(req);
    res.once('close', () => held.delete(req));
  }

  function endless(res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    res.write('{"jsonrpc":"2.0","id":1,"result":"');
    let closed = false;
    res.once('close', () => {
      closed = true;
      endlessClosed++;
    });
    const pump = () => {
      // Respect back-pressure: only as fast as the reader takes it, never buffering unboundedly.
      while (!closed) {
        endlessBytes += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
    };
    pump();
  }

  function answer(fault: Fault, req: IncomingMessage, res: ServerResponse, body: string): void {
    const request = parseRequest(body);
    const hash = typeof request.params?.[0] === 'string' ? request.params[0].toLowerCase() : '';
    const receipt = table.get(hash) ?? options.receiptFor?.(hash) ?? null;
    const reply = (result: unknown, id: unknown = request.id) => json(res, 200, { jsonrpc: '2.0', id, result });
    const echo = `requested ${req.url} on ${req.headers.host}`;
    switch (fault) {
      case 'ok':
        return reply(receipt);
      case 'null-result':
        return reply(null);
      case 'slow':
        return void setTimeout(() => reply(receipt), 25);
      case 'hang':
        return hold(req, res);
      case 'reset':
        return void req.socket.resetAndDestroy();
      case 'http500':
        return void res.writeHead(500, { 'content-type': 'text/plain' }).end(`internal error: ${echo}`);
      case 'http503':
        return void res.writeHead(503, { 'content-type': 'text/plain' }).end('unavailable');
      case 'http429':
        return json(
          res,
          429,
          { jsonrpc: '2.0', id: request.id, error: { code: -32005, message: `rate limited: ${echo}` } },
          { 'retry-after': '1' },
        );
      case 'invalid-json':
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(`{"jsonrpc":"2.0","id":${String(request.id)},"result":{"logs":[`);
      case 'rpc-error':
        return json(res, 200, {
          jsonrpc: '2.0',
          id: request.id,
          error: { code: -32000, message: `header not found: ${echo}`, data: echo },
        });
      case 'wrong-id':
        return reply(receipt, typeof request.id === 'number' ? request.id + 1000 : 'x');
      case 'other-tx':
        return reply(receipt === null ? null : { ...receipt, transactionHash: '0x' + 'ee'.repeat(32) });
      case 'bad-log-hex':
        return reply(receipt === null ? null : withLogData(receipt, '0xzz' + 'ab'.repeat(40), options.mailbox));
      case 'bad-log-abi':
        // Well-formed hex, but the ABI `bytes` offset word says 64 instead of 32.
        return reply(
          receipt === null
            ? null
            : withLogData(receipt, '0x' + '00'.repeat(31) + '40' + '00'.repeat(32), options.mailbox),
        );
      case 'endless':
        return endless(res);
      case 'stall-body':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"jsonrpc":"2.0","id":');
        return hold(req, res);
    }
  }

  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    paths.push(path);
    authorizations.push(req.headers.authorization);
    const first = path.split(/[/?]/)[1] ?? '';
    const fault: Fault = isFault(first) ? first : 'ok';
    if (fault === 'reset') {
      count(fault);
      return answer(fault, req, res, '');
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      count(fault);
      answer(fault, req, res, Buffer.concat(chunks).toString('utf8'));
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // A reset socket or a client that cut an endless body short is expected here, not a failure.
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    endpoint: (fault, suffix = '') => `${url}/${fault}${suffix}`,
    table,
    requests: (fault) => counts.get(fault) ?? 0,
    paths,
    authorizations,
    held: () => held.size,
    endlessBytes: () => endlessBytes,
    endlessClosed: () => endlessClosed,
    waitForRequest(fault, n = 1) {
      if ((counts.get(fault) ?? 0) >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ fault, n, resolve }));
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
