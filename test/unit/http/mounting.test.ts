/**
 * Mounting the HTTP API in one's own server (docs/embedding.md#mounting-the-http-api): under a
 * basePath in node:http, behind Express's express.json() and in Fastify, with the body a framework
 * has read already. Servers on 127.0.0.1 port 0; the node is a fake RPC table.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import express from 'express';
import Fastify from 'fastify';
import { InvalidArgumentError } from '../../../lib/errors/classes.ts';
import { createRelayApi, type RelayApi } from '../../../lib/http/handler.ts';
import { BODY_ALREADY_READ } from '../../../lib/http/body.ts';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { httpRequest, type RawResponse } from '../../helpers/harness/http.ts';

/** An API whose node knows transaction 1 (one CCTP transfer). */
function api(basePath?: string): RelayApi {
  const clock = createFakeClock();
  const table: ReceiptTable = new Map([[txHash(1), rpcReceipt(txHash(1), transferLogs(1))]]);
  return createRelayApi({
    config: testConfig(),
    outbox: createMemoryOutbox({ clock }),
    clock,
    fetch: fakeRpcFetch(table).fetch,
    basePath,
  });
}

async function listen(t: TestContext, server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const relayBody = JSON.stringify({ origin_chain: 'ethereum', tx_hash: txHash(1) });
const post = (url: string, path: string, body = relayBody): Promise<RawResponse> =>
  httpRequest(url, { method: 'POST', path, body, headers: { 'content-type': 'application/json' }, openapi: false });
const get = (url: string, path: string): Promise<RawResponse> => httpRequest(url, { path, openapi: false });

function assertRelayed(res: RawResponse): void {
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json().messages.length, 1);
}

test('docs/embedding.md#mounting-the-http-api: basePath serves the API below a prefix and nothing outside it', async (t) => {
  const relayer = api('/relayer/');
  const url = await listen(
    t,
    createServer((req, res) => relayer.handle(req, res)),
  );
  assertRelayed(await post(url, '/relayer/relay'));
  assert.equal((await get(url, '/relayer/relay')).text, 'up', 'GET /relayer/relay: liveness');
  assert.equal((await get(url, `/relayer/relay?origin_chain=ethereum&tx_hash=${txHash(1)}`)).status, 200);
  for (const path of ['/relay', '/relayerx/relay', '/', '/relayer', '/other/relayer/relay']) {
    const res = await get(url, path);
    assert.equal(res.status, 404, path);
    assert.equal(res.json().reason, 'not_found', path);
  }
  for (const bad of ['relayer', '/a b', '/x?y', 7]) {
    assert.throws(() => api(bad as string), InvalidArgumentError, String(bad));
  }
});

test('docs/embedding.md#mounting-the-http-api: behind express.json() the parsed req.body is the body', {
  timeout: 30_000,
}, async (t) => {
  const relayer = api();
  const app = express();
  app.use(express.json());
  app.use('/relayer', relayer.handle);
  const url = await listen(t, createServer(app));
  assertRelayed(await post(url, '/relayer/relay'));
  const invalid = await post(url, '/relayer/relay', JSON.stringify({ origin_chain: 'ethereum' }));
  assert.equal(invalid.status, 400, invalid.text);
  assert.equal(invalid.json().reason, 'invalid_request');
  const large = await post(url, '/relayer/relay', JSON.stringify({ pad: 'x'.repeat(70_000) }));
  assert.equal(large.status, 413, 'the API limit holds for a parsed body too');
});

test('docs/embedding.md#mounting-the-http-api: a body read by another handler, left nowhere, is refused at once', {
  timeout: 30_000,
}, async (t) => {
  // Without the check the handler waits for an 'end' event that never comes (the test times out).
  const relayer = api();
  const url = await listen(
    t,
    createServer((req, res) => {
      req.resume();
      req.on('end', () => relayer.handle(req, res));
    }),
  );
  const res = await post(url, '/relay');
  assert.equal(res.status, 500);
  assert.deepEqual(res.json(), { reason: 'internal_error', message: BODY_ALREADY_READ });
});

test('docs/embedding.md#mounting-the-http-api: in Fastify with the body as text and a basePath', {
  timeout: 30_000,
}, async (t) => {
  const relayer = api('/relayer');
  const app = Fastify();
  // The JSON body as sent (the API parses and answers errors itself), handed over as req.body.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  const mount = (request: { raw: object; body: unknown }, reply: { hijack(): void; raw: object }) => {
    reply.hijack();
    Object.assign(request.raw, { body: request.body });
    relayer.handle(request.raw as never, reply.raw as never);
  };
  app.all('/relayer', mount);
  app.all('/relayer/*', mount);
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => {
    app.server.closeAllConnections();
    return app.close();
  });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  assertRelayed(await post(url, '/relayer/relay'));
  const malformed = await post(url, '/relayer/relay', '{"origin_chain":');
  assert.equal(malformed.status, 400);
  assert.equal(malformed.json().reason, 'invalid_request');
  assert.equal((await get(url, '/relayer/relay')).text, 'up');
});
