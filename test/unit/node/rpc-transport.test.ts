/**
 * The keep-alive node:http transport relayer-server gives the core (lib/node/rpc-transport.ts,
 * docs/rpc.md#rpc-transport): what it adds to the core's fetch path. The outcomes of
 * every RPC fault (timeouts, resets, HTTP errors, bounded bodies, redaction) are the same suites
 * as the global fetch's: test/unit/rpc/faults.test.ts and test/unit/rpc/diagnostics.test.ts run both.
 *
 * Real node:http servers on 127.0.0.1; the attempt timeout is driven through the request's signal.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { RpcError } from '../../../lib/errors/classes.ts';
import { createRpcTransport } from '../../../lib/node/rpc-transport.ts';
import { classifyFailure, createRpcClient } from '../../../lib/rpc/client.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';

interface Peer {
  url: string;
  /** Connections accepted so far. */
  connections(): number;
  /** Connections open now. */
  open(): number;
  requests: IncomingMessage[];
  close(): Promise<void>;
}

async function peer(
  handle: (req: IncomingMessage, res: ServerResponse, body: string, n: number) => void,
): Promise<Peer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    const n = requests.length;
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => handle(req, res, body, n));
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket: Socket) => {
    accepted++;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => accepted,
    open: () => sockets.size,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function answer(res: ServerResponse, body: string): void {
  const { id } = JSON.parse(body) as { id: number };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x1' }));
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(condition(), what);
}

const signal = () => new AbortController().signal;

describe('node:http RPC transport (docs/rpc.md#rpc-transport)', () => {
  const transport = createRpcTransport({ maxSocketsPerOrigin: 4 });
  after(() => transport.close());
  const rpc = createRpcClient({ fetch: transport.fetch });

  test('keeps one connection alive across sequential calls', async (t) => {
    const p = await peer((_req, res, body) => answer(res, body));
    t.after(() => p.close());
    for (let i = 0; i < 20; i++) assert.equal(await rpc(`${p.url}/v3/KEY`, 'eth_chainId', [], signal()), '0x1');
    assert.equal(p.connections(), 1, 'every call on the first socket');
  });

  test('bounds the sockets per origin: 40 concurrent calls over at most 4 connections', {
    timeout: 60_000,
  }, async (t) => {
    const p = await peer((_req, res, body) => setTimeout(() => answer(res, body), 5));
    t.after(() => p.close());
    // The calls queue for the 4 sockets: under load the last ones waited longer than the client's
    // 3 s attempt timeout of wall time, which is not what this test is about. This client's clock
    // never moves, so no attempt times out; a transport that never answers fails on the test's
    // hang guard.
    const patient = createRpcClient({ fetch: transport.fetch, clock: createFakeClock() });
    const results = await Promise.all(Array.from({ length: 40 }, () => patient(p.url, 'eth_chainId', [], signal())));
    assert.deepEqual(new Set(results), new Set(['0x1']));
    assert.ok(p.connections() <= 4, `${p.connections()} connections`);
    assert.ok(p.connections() >= 2, 'concurrent calls do use several');
  });

  test('a burst that opened many connections keeps them for the next one (no close and reopen as it ebbs)', async (t) => {
    // Nor the 4 s idle timeout: under load the first burst's early sockets sat idle past it.
    const own = createRpcTransport({ idleTimeoutMs: 600_000 });
    t.after(() => own.close());
    // As above: 40 calls queued for sockets, no wall-time attempt timeout in play.
    const client = createRpcClient({ fetch: own.fetch, clock: createFakeClock() });
    const p = await peer((_req, res, body) => setTimeout(() => answer(res, body), 20));
    t.after(() => p.close());
    const burst = () => Promise.all(Array.from({ length: 40 }, () => client(p.url, 'eth_chainId', [], signal())));
    await burst();
    const opened = p.connections();
    assert.ok(opened > 16, `the burst used ${opened} connections`);
    await burst();
    assert.equal(p.connections(), opened, 'the second burst reused the idle connections');
  });

  test('URL credentials go out as Basic auth, only the path and query as the request target', async (t) => {
    const p = await peer((_req, res, body) => answer(res, body));
    t.after(() => p.close());
    const url = p.url.replace('http://', 'http://user-secret:p%40ss@') + '/v2/PATHKEY?apikey=QUERYKEY';
    await rpc(url, 'eth_chainId', [], signal());
    assert.equal(p.requests[0].headers.authorization, `Basic ${Buffer.from('user-secret:p@ss').toString('base64')}`);
    assert.equal(p.requests[0].url, '/v2/PATHKEY?apikey=QUERYKEY');
    assert.equal(p.requests[0].headers['content-type'], 'application/json');
  });

  test('an abort mid-request destroys the socket: the server sees it close, the next call opens a new one', async (t) => {
    let held = 0;
    const p = await peer((_req, res, body, n) => {
      if (n === 2) return void held++; // never answers the second request
      answer(res, body);
    });
    t.after(() => p.close());
    await rpc(p.url, 'eth_chainId', [], signal());
    const controller = new AbortController();
    const pending = rpc(p.url, 'eth_chainId', [], controller.signal);
    await until(() => held === 1, 'the second request arrived');
    controller.abort(new Error('caller gave up'));
    await assert.rejects(pending, /caller gave up/);
    await until(() => p.open() === 0, 'the aborted connection was closed');
    await rpc(p.url, 'eth_chainId', [], signal());
    assert.equal(p.connections(), 2);
  });

  test('a keep-alive socket the server drops between calls is replaced once, transparently', async (t) => {
    const p = await peer((req, res, body, n) => {
      if (n === 2) return void req.socket.resetAndDestroy(); // the idle socket was closed under us
      answer(res, body);
    });
    t.after(() => p.close());
    await rpc(p.url, 'eth_chainId', [], signal());
    assert.equal(await rpc(p.url, 'eth_chainId', [], signal()), '0x1');
    assert.equal(p.requests.length, 3, 'sent again on a fresh socket');
    assert.equal(p.connections(), 2);
  });

  test('a reset on a fresh socket is a transport error classed connection_reset (no retry)', async (t) => {
    const p = await peer((req) => void req.socket.resetAndDestroy());
    t.after(() => p.close());
    const error = await rpc(p.url, 'eth_chainId', [], signal()).catch((e: unknown) => e);
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, 'transport');
    assert.equal(classifyFailure(error).failure, 'connection_reset');
    assert.equal(p.requests.length, 1);
  });

  test('a redirect is not followed: HTTP 307 (a moved endpoint is a configuration to fix, and Basic credentials stay put)', async (t) => {
    const p = await peer((_req, res) => void res.writeHead(307, { location: 'http://127.0.0.1:9/elsewhere' }).end());
    t.after(() => p.close());
    const error = await rpc(p.url.replace('http://', 'http://u:KEY@'), 'eth_chainId', [], signal()).catch(
      (e: unknown) => e,
    );
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, 'http_status');
    assert.equal(error.message, 'HTTP 307');
    assert.equal(classifyFailure(error).failure, 'http_4xx');
  });

  test('a gzip body sent unasked is decoded, and the size bound counts decoded bytes', async (t) => {
    const p = await peer((req, res, body) => {
      const { id } = JSON.parse(body) as { id: number };
      assert.equal(req.headers['accept-encoding'], undefined, 'no compression asked for');
      const text = JSON.stringify({ jsonrpc: '2.0', id, result: 'x'.repeat(100_000) });
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(text));
    });
    t.after(() => p.close());
    assert.equal(await rpc(p.url, 'eth_chainId', [], signal()), 'x'.repeat(100_000));
    const small = createRpcClient({ fetch: transport.fetch, maxResponseBytes: 10_000 });
    const error = await small(p.url, 'eth_chainId', [], signal()).catch((e: unknown) => e);
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, 'too_large');
  });

  test('a declared Content-Length above the bound fails too_large before the body is read, and the connection is closed', async (t) => {
    const p = await peer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 50_000 });
      res.write('x'.repeat(1_000));
    });
    t.after(() => p.close());
    const small = createRpcClient({ fetch: transport.fetch, maxResponseBytes: 10_000 });
    const error = await small(p.url, 'eth_chainId', [], signal()).catch((e: unknown) => e);
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, 'too_large');
    await until(() => p.open() === 0, 'the connection was closed, not kept for another request');
  });

  test('a reset in the middle of the body is a transport error classed connection_reset', async (t) => {
    const p = await peer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1_000 });
      res.write('{"jsonrpc":"2.0",', () => req.socket.resetAndDestroy());
    });
    t.after(() => p.close());
    const error = await rpc(p.url, 'eth_chainId', [], signal()).catch((e: unknown) => e);
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, 'transport');
    assert.equal(classifyFailure(error).failure, 'connection_reset');
  });

  test('an invalid URL fails as a transport error that does not quote it', async () => {
    const error = await rpc('http://[SECRETKEY', 'eth_chainId', [], signal()).catch((e: unknown) => e);
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, 'transport');
    assert.ok(!JSON.stringify(error, Object.getOwnPropertyNames(error)).includes('SECRETKEY'));
    assert.ok(!String((error.cause as Error).message).includes('SECRETKEY'));
    assert.ok(!String(((error.cause as Error).cause as Error).message).includes('SECRETKEY'));
  });

  test('close() ends the sockets; a call after it fails as a transport error', async (t) => {
    const own = createRpcTransport();
    const p = await peer((_req, res, body) => answer(res, body));
    t.after(() => p.close());
    const client = createRpcClient({ fetch: own.fetch });
    await client(p.url, 'eth_chainId', [], signal());
    assert.deepEqual(own.sockets(), { [p.url]: 1 });
    own.close();
    await until(() => p.open() === 0, 'the idle socket was closed');
    const error = await client(p.url, 'eth_chainId', [], signal()).catch((e: unknown) => e);
    assert.ok(error instanceof RpcError);
    assert.equal(error.code, 'transport');
  });
});
