/**
 * Structured logs (docs/operations.md#logs): one JSON line per request with its id, route,
 * status, reason, duration, origin chain and tx hash; X-Request-Id accepted when safe, generated
 * otherwise, echoed; a log level; secrets (admin token, Authorization header, RPC URL path, query
 * and credentials) never in a log line, in-process or from the real relayer-server.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, describe, test, type TestContext } from 'node:test';
import { createLogger, isLogLevel, LOG_LEVELS, type LogLevel } from '../../lib/log.ts';
import type { FetchLike } from '../../lib/rpc/client.ts';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import type { RelayQueue } from '../../lib/outbox/index.ts';
import { fileChains, testConfig } from '../helpers/fixtures/config.ts';
import { createFakeClock } from '../helpers/fakes/clock.ts';
import { callSignal, fakeRpcFetch, startFakeRpcServer, type ReceiptTable } from '../helpers/fakes/rpc.ts';
import { rpcReceipt, transferLogs, txHash } from '../helpers/fixtures/builders.ts';
import { httpRequest, postJson } from '../helpers/harness/http.ts';
import { startApi, startRelayerServer } from '../helpers/harness/server.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const ADMIN_TOKEN = 'admin-token-SECRET-0123456789';
const SECRET = /secret/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const store = await openSqliteStore(':memory:');
after(() => store.close());

interface Line {
  time: string;
  level: string;
  msg: string;
  [field: string]: unknown;
}

async function start(t: TestContext, options: { level?: LogLevel; queue?: RelayQueue; rpcUrls?: string[] } = {}) {
  const clock = createFakeClock();
  const table: ReceiptTable = new Map();
  const rpc = fakeRpcFetch(table);
  const raw: string[] = [];
  const calls = callSignal();
  const fetch: FetchLike = async (url, init) => {
    calls.raise();
    if (new URL(url).hostname === 'down.example.invalid') throw new TypeError('fetch failed');
    return rpc.fetch(url, init as RequestInit);
  };
  const base = testConfig({ server: { adminToken: ADMIN_TOKEN } });
  const ethereum = { ...base.chains.ethereum, rpcUrls: options.rpcUrls ?? base.chains.ethereum.rpcUrls };
  const config = { ...base, chains: { ...base.chains, ethereum } };
  const logger = createLogger({
    level: options.level ?? 'info',
    write: (line) => raw.push(line),
    now: () => clock.now(),
  });
  const { url, port } = await startApi(t, {
    config,
    clock,
    fetch,
    logger,
    merkle: store.merkle,
    outbox: options.queue,
  });
  const lines = (): Line[] =>
    raw.map((text) => {
      assert.ok(text.endsWith('\n') && text.indexOf('\n') === text.length - 1, `one line: ${JSON.stringify(text)}`);
      return JSON.parse(text);
    });
  const requestLines = () => lines().filter((l) => l.msg === 'request');
  const nextCall = calls.next;
  return { url, port, clock, table, raw, lines, requestLines, nextCall };
}

/** Sends `text` as is over a raw socket (bytes node's client would refuse) and returns the whole answer. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    let answer = '';
    socket.on('data', (c) => (answer += c));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('one JSON line per request (docs/operations.md#logs)', () => {
  test('docs/operations.md#logs: each request logs exactly one line with its fields', async (t) => {
    // Time, request id, route, status, reason, duration, origin chain, tx hash.
    const h = await start(t);
    const hash = txHash(1);
    h.table.set(hash, rpcReceipt(hash, transferLogs(2)));
    const ok = await postJson(h.url, '/relay', {
      origin_chain: 'ethereum',
      tx_hash: hash.toUpperCase().replace('0X', '0x'),
    });
    const dup = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    const bad = await postJson(h.url, '/relay', { origin_chain: 'nowhere', tx_hash: hash });
    const missing = await httpRequest(h.url, { path: '/nothing/here' });
    const probe = await httpRequest(h.url, { path: '/relay' });
    const lines = h.requestLines();
    assert.equal(lines.length, 4, 'one line per request, but the successful health check (debug level)');
    assert.equal(probe.status, 200);

    const [l1, l2, l3, l4] = lines;
    for (const [line, res] of [
      [l1, ok],
      [l2, dup],
      [l3, bad],
      [l4, missing],
    ] as const) {
      assert.equal(line.level, 'info');
      assert.equal(line.time, new Date(h.clock.now()).toISOString());
      assert.equal(line.request_id, res.headers['x-request-id'], 'the id the client got');
      assert.equal(line.status, res.status);
      assert.equal(typeof line.duration_ms, 'number');
    }
    assert.deepEqual(
      { ...l1, time: 0, request_id: 0 },
      {
        time: 0,
        level: 'info',
        msg: 'request',
        request_id: 0,
        method: 'POST',
        route: '/relay',
        status: 200,
        duration_ms: 0,
        origin_chain: 'ethereum',
        tx_hash: hash,
        messages: 2,
      },
      'the tx hash is logged lower-cased, as the dedup key',
    );
    assert.deepEqual([l2.status, l2.reason, l2.origin_chain, l2.tx_hash], [429, 'duplicate_tx', 'ethereum', hash]);
    assert.deepEqual(
      [l3.status, l3.reason, l3.origin_chain, l3.tx_hash],
      [400, 'invalid_request', undefined, undefined],
      'nothing unvalidated from the body is logged',
    );
    assert.deepEqual(
      [l4.route, l4.status, l4.reason],
      ['unknown', 404, 'not_found'],
      'unknown paths are not logged as sent',
    );
  });

  test('a successful health check (GET/HEAD /relay) is logged at debug, a refused one at info', async (t) => {
    const h = await start(t, { level: 'debug' });
    const probe = await httpRequest(h.url, { path: '/relay' });
    const head = await httpRequest(h.url, { path: '/relay', method: 'HEAD' });
    const _refused = await httpRequest(h.url, { path: '/relay', method: 'DELETE' });
    const [l1, l2, l3] = h.requestLines();
    assert.deepEqual(
      [l1.level, l1.method, l1.route, l1.status, l1.request_id],
      ['debug', 'GET', '/relay', 200, probe.headers['x-request-id']],
    );
    assert.deepEqual(
      [l2.level, l2.method, l2.status, l2.request_id],
      ['debug', 'HEAD', 200, head.headers['x-request-id']],
    );
    assert.deepEqual([l3.level, l3.method, l3.status, l3.reason], ['info', 'DELETE', 405, 'method_not_allowed']);
  });

  test('docs/operations.md#logs: duration_ms is the time from arrival to answer (fake clock: a receipt mined after 3 s)', async (t) => {
    const h = await start(t);
    const hash = txHash(2);
    const called = h.nextCall();
    const pending = postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
    await called;
    await h.clock.advance(3_000);
    h.table.set(hash, rpcReceipt(hash, transferLogs(1)));
    await h.clock.advance(1_000);
    assert.equal((await pending).status, 200);
    const [line] = h.requestLines();
    assert.ok(Number(line.duration_ms) >= 3_000 && Number(line.duration_ms) <= 3_500, String(line.duration_ms));
  });

  test('a client that leaves before the answer is logged once as 499 client_closed, not as the default 200', async (t) => {
    const h = await start(t);
    const hash = txHash(3);
    const called = h.nextCall();
    const req = request({
      host: '127.0.0.1',
      port: h.port,
      method: 'POST',
      path: '/relay',
      headers: { 'content-type': 'application/json', 'x-request-id': 'leaving-1' },
    });
    req.on('error', () => {});
    req.end(JSON.stringify({ origin_chain: 'ethereum', tx_hash: hash }));
    await called;
    const closed = new Promise((resolve) => req.once('close', resolve));
    req.destroy();
    await closed;
    // the server notices the closed socket, then the pipeline ends at its 10 s receipt deadline
    for (let i = 0; i < 50 && h.requestLines().length === 0; i++) await new Promise((r) => setImmediate(r));
    await h.clock.advance(11_000);
    const lines = h.requestLines();
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.deepEqual(
      [lines[0].request_id, lines[0].status, lines[0].reason, lines[0].origin_chain, lines[0].tx_hash],
      ['leaving-1', 499, 'client_closed', 'ethereum', hash],
    );
  });
});

describe('log level (docs/operations.md#logs)', () => {
  test('each level emits itself and the levels above it; silent emits nothing', () => {
    const order = ['debug', 'info', 'warn', 'error'] as const;
    assert.deepEqual(LOG_LEVELS, [...order, 'silent']);
    for (const level of LOG_LEVELS) {
      const written: string[] = [];
      const logger = createLogger({ level, write: (line) => written.push(line), now: () => 0 });
      for (const method of order) logger[method](`m-${method}`, { k: 1 });
      const expected = level === 'silent' ? [] : order.slice(order.indexOf(level));
      assert.deepEqual(
        written.map((l) => JSON.parse(l).level),
        expected,
        level,
      );
      for (const l of written) assert.deepEqual(Object.keys(JSON.parse(l)), ['time', 'level', 'msg', 'k']);
    }
  });

  test('isLogLevel accepts exactly the five level names', () => {
    for (const level of LOG_LEVELS) assert.equal(isLogLevel(level), true);
    for (const other of ['INFO', 'trace', '', 'warning', undefined, 1])
      assert.equal(isLogLevel(other), false, String(other));
  });

  test('over HTTP: at "warn" no request lines, but a store failure is still logged; at "debug" request lines appear', async (t) => {
    // A connection reset: the store is unavailable (503), not faulty (lib/store/bundle.ts).
    const failing: RelayQueue = {
      enqueue() {
        throw Object.assign(new Error('queue broke'), { code: 'ECONNRESET' });
      },
    };
    const quiet = await start(t, { level: 'warn', queue: failing });
    const hash = txHash(4);
    quiet.table.set(hash, rpcReceipt(hash, transferLogs(1)));
    assert.equal((await postJson(quiet.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash })).status, 503);
    assert.equal((await httpRequest(quiet.url, { path: '/relay' })).status, 200);
    const lines = quiet.lines();
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg]),
      [['error', 'store unavailable']],
    );
    assert.equal(lines[0].cause, 'Error: queue broke', 'the cause is for the operator');
    const loud = await start(t, { level: 'debug' });
    await httpRequest(loud.url, { path: '/relay' });
    assert.equal(loud.requestLines().length, 1);
  });
});

describe('X-Request-Id (docs/operations.md#logs)', () => {
  test('a safe X-Request-Id is echoed and logged; a missing one is generated (UUID v4), distinct per request', async (t) => {
    const h = await start(t, { level: 'debug' }); // GET /relay is logged at debug
    const safe = ['abc-123', 'A.b_c:d-e', 'x'.repeat(128), '0'];
    for (const id of safe) {
      const res = await httpRequest(h.url, { path: '/relay', headers: { 'x-request-id': id } });
      assert.equal(res.headers['x-request-id'], id);
    }
    const a = await httpRequest(h.url, { path: '/relay' });
    const b = await postJson(h.url, '/relay', 'not json');
    for (const res of [a, b]) assert.match(String(res.headers['x-request-id']), UUID);
    assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
    assert.equal(b.json().reason, 'invalid_request', 'error answers carry the id too');
    assert.deepEqual(
      h.requestLines().map((l) => l.request_id),
      [...safe, a.headers['x-request-id'], b.headers['x-request-id']],
    );
    const given = await httpRequest(h.url, { path: '/relay', headers: { 'x-request-id': 'abc-123' } });
    assert.equal(given.headers['x-request-id'], 'abc-123');
    const generated = await httpRequest(h.url, { path: '/relay' });
    assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });

  test('a hostile X-Request-Id (too long, quotes, spaces, markup, non-ASCII, two values) is replaced, never echoed or logged', async (t) => {
    const h = await start(t, { level: 'debug' });
    const hostile = ['x'.repeat(129), 'a"b', "a'b", 'a b', '<script>', '{"x":1}', 'id\\u000a', 'ümlaut', '', 'a,b'];
    for (const id of hostile) {
      const res = await httpRequest(h.url, { path: '/relay', headers: { 'x-request-id': id } });
      assert.match(String(res.headers['x-request-id']), UUID, JSON.stringify(id));
    }
    const lines = h.requestLines();
    assert.equal(lines.length, hostile.length);
    for (const line of lines) assert.match(String(line.request_id), UUID);
    // two X-Request-Id headers: node joins them with ", ", which the id pattern refuses
    const twice = await rawExchange(
      h.port,
      'GET /relay HTTP/1.1\r\nHost: x\r\nX-Request-Id: one\r\nX-Request-Id: two\r\nConnection: close\r\n\r\n',
    );
    assert.match(twice, /^HTTP\/1\.1 200/);
    assert.match(twice, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i);
  });

  test('a newline in X-Request-Id never reaches a header or a log line (node refuses the request: 400)', async (t) => {
    const h = await start(t);
    const answer = await rawExchange(
      h.port,
      'GET /relay HTTP/1.1\r\nHost: x\r\nX-Request-Id: abc\nSet-Cookie: injected=1\r\n\r\n',
    );
    assert.match(answer, /^HTTP\/1\.1 400/);
    assert.doesNotMatch(answer, /injected/);
    assert.doesNotMatch(h.raw.join(''), /injected/);
  });
});

describe('secrets are never logged (docs/operations.md#logs)', () => {
  test('admin token, Authorization header and RPC URL path, query and credentials stay out of the log', async (t) => {
    const h = await start(t, {
      level: 'debug',
      rpcUrls: [
        'https://user-secret:pw-secret@down.example.invalid/v3/KEY-secret?apikey=QUERY-secret',
        'https://up.example.invalid/rpc/PATH-secret',
      ],
    });
    const hash = txHash(5);
    h.table.set(hash, rpcReceipt(hash, transferLogs(1)));
    assert.equal((await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash })).status, 200);
    const body = {
      merkle_tree_insertions: [
        { chain: 1, insertion_block_number: 1, leaf_index: 9, message_id: '0x' + '1'.repeat(64) },
      ],
    };
    assert.equal(
      (await postJson(h.url, '/merkle_tree_insertions', body, { authorization: `Bearer ${ADMIN_TOKEN}` })).status,
      200,
    );
    assert.equal(
      (await postJson(h.url, '/merkle_tree_insertions', body, { authorization: 'Bearer wrong-SECRET-token' })).status,
      401,
    );
    assert.equal((await httpRequest(h.url, { path: '/metrics' })).status, 200);
    const text = h.raw.join('');
    assert.equal(h.requestLines().length, 4);
    assert.doesNotMatch(text, SECRET);
    assert.doesNotMatch(text, /authorization|bearer/i);
  });

  test('relayer-server at --log-level debug prints no secret from its config, requests or RPC URLs, start to shutdown', async (t) => {
    const rpc = await startFakeRpcServer();
    t.after(() => rpc.close());
    const dir = tempDir('relayer-log-', t);
    const hash = txHash(6);
    rpc.table.set(hash, rpcReceipt(hash, transferLogs(1)));
    const config = {
      chains: fileChains(`${rpc.url}/v3/KEY-secret-path?apikey=QUERY-secret-query`, `${rpc.url}/KEY-secret-base`),
      server: { adminToken: ADMIN_TOKEN },
      db: join(dir, 'relayer.db'),
    };
    const server = await startRelayerServer(t, ['--log-level', 'debug'], { config });
    const { url } = server;
    assert.equal((await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash })).status, 200);
    const body = {
      merkle_tree_insertions: [
        { chain: 1, insertion_block_number: 1, leaf_index: 0, message_id: '0x' + '2'.repeat(64) },
      ],
    };
    assert.equal(
      (await postJson(url, '/merkle_tree_insertions', body, { authorization: `Bearer ${ADMIN_TOKEN}` })).status,
      200,
    );
    assert.equal(
      (await postJson(url, '/merkle_tree_insertions', body, { authorization: 'Bearer wrong-SECRET-token' })).status,
      401,
    );
    assert.equal((await httpRequest(url, { path: '/metrics' })).status, 200);
    await server.waitForLine(/"status":200.*"route":"\/metrics"|"route":"\/metrics".*"status":200/);
    assert.equal(await server.stop(), 0, server.output());
    const output = server.output();
    assert.match(output, /"msg":"stopped"/, 'the whole run is in the output');
    assert.equal(output.split('\n').filter((l) => l.includes('"msg":"request"')).length, 4);
    assert.doesNotMatch(output, SECRET);
    assert.doesNotMatch(output, /apikey|\/v3\//);
  });
});
