/**
 * Hostile HTTP over real sockets: every request below is written byte for byte to a live server,
 * and each has the status (and, where the API answered, the reason) it must get. Whatever is sent,
 * nothing answers 500, nothing pollutes Object.prototype, no reservation is left behind and the
 * server keeps answering (docs/design.md#http-surface, #post-relay, #merkle-tree-insertions).
 *
 * Requests that are not HTTP at all (bad framing, oversized headers, smuggling attempts) never
 * reach the API: Node's parser answers them 400/431 without a body and closes the connection.
 * Those rows expect no reason.
 */
import assert from 'node:assert/strict';
import { before, describe, test, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { RelayServer } from '../../../lib/http/server.ts';
import { createLogger } from '../../../lib/log.ts';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { openSqliteStore, type SqliteStore } from '../../../lib/sqlite/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { rawExchange, rawRequest, type RawReply } from '../../helpers/harness/raw-http.ts';
import { startApi } from '../../helpers/harness/server.ts';

const ADMIN_TOKEN = 'a-long-admin-token-0123456789';
const HEADERS_TIMEOUT_MS = 400;
const REQUEST_TIMEOUT_MS = 800;
const MERKLE_LIMIT = 1024 * 1024;

const table: ReceiptTable = new Map();
const logLines: string[] = [];
let server: RelayServer;
let port: number;
/** The server with short timeouts, for the tests of slow and idle clients. */
let slowServer: RelayServer;
let slowPort: number;
let store: SqliteStore;
let guardedPort: number;
let nextTx = 0x5000;
/** Pairs answered 200: the dedup cache must hold exactly these afterwards. */
let relayed = 0;

// A top-level `before` runs in the file's root test, whose after hooks run once the file is done.
before(async (root) => {
  const t = root as TestContext;
  const clock = createFakeClock();
  const { fetch } = fakeRpcFetch(table);
  store = await openSqliteStore(':memory:');
  const config = testConfig({
    relayApi: { rateLimit: { burst: 100_000, perMinute: 100_000 } },
    server: { maxMerkleBodyBytes: MERKLE_LIMIT },
  });
  const logger = createLogger({ level: 'debug', write: (line) => logLines.push(line) });
  // The rows are not about timeouts, so their server keeps the default ones (10 s, 30 s). Node
  // counts headersTimeout and requestTimeout from the connection's accept: with 400 ms, a stall
  // of this process between the accept and the first read (a busy machine) had Node answer 408
  // before the request was even parsed, and a row expecting 413 got 408.
  ({ server, port } = await startApi(t, {
    config,
    outbox: createMemoryOutbox({ clock }),
    merkle: store.merkle,
    clock,
    fetch,
    logger,
  }));
  ({ server: slowServer, port: slowPort } = await startApi(t, {
    config,
    outbox: createMemoryOutbox({ clock }),
    merkle: store.merkle,
    clock,
    fetch,
    logger,
    headersTimeoutMs: HEADERS_TIMEOUT_MS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
  }));
  ({ port: guardedPort } = await startApi(t, {
    config: testConfig({ server: { adminToken: ADMIN_TOKEN } }),
    merkle: store.merkle,
    clock,
    fetch,
  }));
  t.after(() => store.close());
});

/** A mined transaction with one transfer, known to the fake RPC. */
function mined(): string {
  const hash = txHash(nextTx++);
  table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: nextTx })));
  return hash;
}

const JSON_HEADERS = { 'Content-Type': 'application/json' };

function post(path: string, body: string | Buffer, headers: Record<string, string | number> = JSON_HEADERS): Buffer {
  return rawRequest('POST', path, headers, body);
}

function relayBody(fields: Record<string, unknown>): string {
  return JSON.stringify(fields);
}

function record(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { chain: 1, insertion_block_number: 5, leaf_index: 0, message_id: '0x' + 'ab'.repeat(32), ...fields };
}

function merkleBody(records: unknown[]): string {
  return JSON.stringify({ merkle_tree_insertions: records });
}

/**
 * How long a row waits for its answer before it counts as none: a hang guard, not a speed bound.
 * The 1 MB of 500 000 nested arrays takes 0.6 s on a quiet machine and took 9.5 s at load 19.
 */
const ANSWER_GUARD_MS = 30_000;

async function isUp(on = port): Promise<void> {
  const { replies } = await rawExchange(on, rawRequest('GET', '/relay'), { replies: 1, timeoutMs: ANSWER_GUARD_MS });
  assert.equal(replies[0]?.status, 200, 'the server still answers');
  assert.equal(replies[0].text(), 'up');
}

function assertReply(reply: RawReply | undefined, status: number, reason: string | undefined, what: string): void {
  assert.ok(reply, `${what}: a response`);
  assert.notEqual(reply.status, 500, `${what}: never 500`);
  assert.equal(reply.status, status, `${what}: ${reply.text()}`);
  if (reason === undefined) return;
  assert.match(reply.headers['content-type'] ?? '', /^application\/json/, what);
  const body = reply.json();
  assert.deepEqual(Object.keys(body).sort(), ['message', 'reason'], what);
  assert.equal(body.reason, reason, `${what}: ${body.message}`);
}

interface Row {
  name: string;
  request: Buffer | (() => Buffer);
  status: number;
  reason?: string;
  /** Check the message names this (the field at fault). */
  message?: RegExp;
  server?: 'guarded';
}

// ---------------------------------------------------------------------------------------------
// The table

const MESSAGE_ID = '0x' + 'cd'.repeat(32);
const rows: Row[] = [];

// Bodies: size, shape, nesting.
rows.push(
  {
    name: 'declared Content-Length 10^12 on /relay',
    request: rawRequest('POST', '/relay', { ...JSON_HEADERS, 'Content-Length': 1e12 }, '{}'),
    status: 413,
    reason: 'payload_too_large',
  },
  {
    name: 'declared Content-Length one past the 64 KiB limit',
    request: post('/relay', ' '.repeat(65_537)),
    status: 413,
    reason: 'payload_too_large',
  },
  {
    name: 'exactly 64 KiB of whitespace around a valid request is read',
    request: () => post('/relay', relayBody({ origin_chain: 'ethereum', tx_hash: mined() }).padEnd(65_536, ' ')),
    status: 200,
  },
  {
    name: 'chunked body past the limit',
    request: rawRequest(
      'POST',
      '/relay',
      { ...JSON_HEADERS, 'Transfer-Encoding': 'chunked' },
      `10000\r\n${' '.repeat(0x10000)}\r\n10\r\n${' '.repeat(16)}\r\n0\r\n\r\n`,
    ),
    status: 413,
    reason: 'payload_too_large',
  },
  {
    name: 'merkle body past its configured limit',
    request: post('/merkle_tree_insertions', ' '.repeat(MERKLE_LIMIT + 1)),
    status: 413,
    reason: 'payload_too_large',
  },
  { name: 'empty body', request: post('/relay', ''), status: 400, reason: 'invalid_request' },
  { name: 'body "null"', request: post('/relay', 'null'), status: 400, reason: 'invalid_request' },
  {
    name: 'body is an array',
    request: post('/relay', '[{"origin_chain":"ethereum"}]'),
    status: 400,
    reason: 'invalid_request',
  },
  { name: 'body is a string', request: post('/relay', '"ethereum"'), status: 400, reason: 'invalid_request' },
  {
    name: 'trailing garbage after the object',
    request: post('/relay', '{"origin_chain":"ethereum","tx_hash":"0x00"} x'),
    status: 400,
    reason: 'invalid_request',
  },
  { name: 'two JSON documents', request: post('/relay', '{}{}'), status: 400, reason: 'invalid_request' },
  {
    name: '30 000 nested arrays on /relay',
    request: post('/relay', '['.repeat(30_000) + ']'.repeat(30_000)),
    status: 400,
    reason: 'invalid_request',
  },
  {
    name: '60 000 unclosed arrays on /relay',
    request: post('/relay', '['.repeat(60_000)),
    status: 400,
    reason: 'invalid_request',
  },
  {
    name: '10 000 nested objects on /relay',
    request: post('/relay', '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000)),
    status: 400,
    reason: 'invalid_request',
  },
  {
    name: '500 000 nested arrays as a merkle record',
    request: post('/merkle_tree_insertions', `{"merkle_tree_insertions":${'['.repeat(500_000)}${']'.repeat(500_000)}}`),
    status: 400,
    reason: 'invalid_request',
    message: /merkle_tree_insertions\[0\] must be an object/,
  },
  {
    name: 'deep nesting in an ignored key next to a valid request',
    request: () =>
      post(
        '/relay',
        `{"x":${'['.repeat(30_000)}${']'.repeat(30_000)},"origin_chain":"ethereum","tx_hash":"${mined()}"}`,
      ),
    status: 200,
  },
);

// Prototype keys: own properties only, nothing polluted, no prototype member mistaken for a chain.
rows.push(
  {
    name: '__proto__ carrying the fields',
    request: () => post('/relay', `{"__proto__":{"origin_chain":"ethereum","tx_hash":"${mined()}"}}`),
    status: 400,
    reason: 'invalid_request',
    message: /origin_chain/,
  },
  {
    name: 'constructor.prototype carrying the fields',
    request: () => post('/relay', `{"constructor":{"prototype":{"origin_chain":"ethereum"}},"tx_hash":"${mined()}"}`),
    status: 400,
    reason: 'invalid_request',
    message: /origin_chain/,
  },
  ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype', '__defineGetter__'].map(
    (name): Row => ({
      name: `origin_chain "${name}"`,
      request: () => post('/relay', relayBody({ origin_chain: name, tx_hash: mined() })),
      status: 400,
      reason: 'invalid_request',
      message: /not a chain known/,
    }),
  ),
  {
    name: '__proto__ and constructor keys beside a valid request are ignored',
    request: () =>
      post(
        '/relay',
        `{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},"origin_chain":"ethereum","tx_hash":"${mined()}"}`,
      ),
    status: 200,
  },
  {
    name: '__proto__ inside a merkle record',
    request: post('/merkle_tree_insertions', `{"merkle_tree_insertions":[{"__proto__":${JSON.stringify(record())}}]}`),
    status: 400,
    reason: 'invalid_request',
    message: /\[0\]\.chain/,
  },
  {
    name: '__proto__ carrying merkle_tree_insertions',
    request: post('/merkle_tree_insertions', `{"__proto__":{"merkle_tree_insertions":[${JSON.stringify(record())}]}}`),
    status: 400,
    reason: 'invalid_request',
    message: /must be an array/,
  },
);

// Text: invalid UTF-8, BOM, lone surrogates, NUL.
const validPrefix = Buffer.from('{"origin_chain":"eth');
const validSuffix = Buffer.from(`ereum","tx_hash":"${txHash(1)}"}`);
rows.push(
  ...(
    [
      ['a 0xff byte', [0xff]],
      ['an overlong "/" (C0 AF)', [0xc0, 0xaf]],
      ['a UTF-16 surrogate encoded in UTF-8 (ED A0 80)', [0xed, 0xa0, 0x80]],
      ['a truncated 3-byte sequence', [0xe2, 0x82]],
      ['a code point past U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80]],
    ] as Array<[string, number[]]>
  ).map(
    ([what, bytes]): Row => ({
      name: `invalid UTF-8: ${what}`,
      request: post('/relay', Buffer.concat([validPrefix, Buffer.from(bytes), validSuffix])),
      status: 400,
      reason: 'invalid_request',
      message: /UTF-8/,
    }),
  ),
  {
    name: 'invalid UTF-8 in a merkle body',
    request: post(
      '/merkle_tree_insertions',
      Buffer.concat([Buffer.from('{"merkle_tree_insertions":["'), Buffer.from([0xfe]), Buffer.from('"]}')]),
    ),
    status: 400,
    reason: 'invalid_request',
    message: /UTF-8/,
  },
  {
    name: 'a UTF-8 BOM before the JSON is dropped',
    request: () =>
      post(
        '/relay',
        Buffer.concat([
          Buffer.from([0xef, 0xbb, 0xbf]),
          Buffer.from(relayBody({ origin_chain: 'ethereum', tx_hash: mined() })),
        ]),
      ),
    status: 200,
  },
  {
    name: 'a JSON-escaped lone surrogate in origin_chain',
    request: post('/relay', `{"origin_chain":"eth\\ud800ereum","tx_hash":"${txHash(1)}"}`),
    status: 400,
    reason: 'invalid_request',
  },
  {
    name: 'a NUL in origin_chain',
    request: post('/relay', `{"origin_chain":"ethereum\\u0000","tx_hash":"${txHash(1)}"}`),
    status: 400,
    reason: 'invalid_request',
  },
  {
    name: 'origin_chain of 129 bytes (multi-byte characters)',
    request: post('/relay', relayBody({ origin_chain: 'é'.repeat(64) + 'x', tx_hash: txHash(1) })),
    status: 400,
    reason: 'invalid_request',
    message: /128 bytes/,
  },
);

// Duplicate keys: JSON.parse keeps the last one (RFC 8259 §4 leaves it to the parser); so does the API.
rows.push(
  {
    name: 'duplicate origin_chain: the last one wins (valid)',
    request: () => post('/relay', `{"origin_chain":"nowhere","origin_chain":"ethereum","tx_hash":"${mined()}"}`),
    status: 200,
  },
  {
    name: 'duplicate origin_chain: the last one wins (invalid)',
    request: () => post('/relay', `{"origin_chain":"ethereum","origin_chain":"nowhere","tx_hash":"${mined()}"}`),
    status: 400,
    reason: 'invalid_request',
    message: /not a chain known/,
  },
  {
    name: 'duplicate merkle_tree_insertions: the last one wins',
    request: post(
      '/merkle_tree_insertions',
      `{"merkle_tree_insertions":[${JSON.stringify(record())}],"merkle_tree_insertions":[]}`,
    ),
    status: 400,
    reason: 'invalid_request',
    message: /at least one record/,
  },
);

// Numbers and other wrong types in every integer field of a merkle record.
const HOSTILE_NUMBERS: Array<[string, string]> = [
  ['1e309 (Infinity after parsing)', '1e309'],
  ['-1e309', '-1e309'],
  ['-0', '-0'],
  ['1.5', '1.5'],
  ['1e-7', '1e-7'],
  ['the string "1"', '"1"'],
  ['2**53', '9007199254740992'],
  ['2**64', '18446744073709551616'],
  ['the hex string "0x1"', '"0x1"'],
  ['-1', '-1'],
  ['null', 'null'],
  ['true', 'true'],
  ['[1]', '[1]'],
  ['{}', '{}'],
];
for (const field of ['chain', 'insertion_block_number', 'leaf_index']) {
  for (const [what, literal] of HOSTILE_NUMBERS) {
    // The hostile value sits in the second record, so the message must name index 1.
    const body = merkleBody([record(), record({ leaf_index: 1, [field]: 'HOSTILE' })]).replace('"HOSTILE"', literal);
    rows.push({
      name: `merkle record [1].${field} = ${what}`,
      request: post('/merkle_tree_insertions', body),
      status: 400,
      reason: 'invalid_request',
      message: new RegExp(`\\[1\\]\\.${field}`),
    });
  }
}
rows.push(
  {
    name: 'merkle chain 2**32 (one past uint32)',
    request: post('/merkle_tree_insertions', merkleBody([record({ chain: 2 ** 32 })])),
    status: 400,
    reason: 'invalid_request',
    message: /\[0\]\.chain/,
  },
  {
    name: 'merkle leaf_index 2**32',
    request: post('/merkle_tree_insertions', merkleBody([record({ leaf_index: 2 ** 32 })])),
    status: 400,
    reason: 'invalid_request',
    message: /\[0\]\.leaf_index/,
  },
  {
    name: 'merkle message_id of 31 bytes',
    request: post('/merkle_tree_insertions', merkleBody([record({ message_id: '0x' + 'ab'.repeat(31) })])),
    status: 400,
    reason: 'invalid_request',
    message: /message_id/,
  },
  {
    name: 'merkle message_id without 0x',
    request: post('/merkle_tree_insertions', merkleBody([record({ message_id: 'ab'.repeat(33) })])),
    status: 400,
    reason: 'invalid_request',
    message: /message_id/,
  },
  {
    name: 'merkle bounds are accepted: uint32 max, block 2**53-1, 1.0 and 1e2 are integers',
    request: post(
      '/merkle_tree_insertions',
      `{"merkle_tree_insertions":[{"chain":1.0,"insertion_block_number":9007199254740991,"leaf_index":4294967295,"message_id":"${MESSAGE_ID}"},{"chain":1,"insertion_block_number":1e2,"leaf_index":0,"message_id":"${MESSAGE_ID.toUpperCase().replace('0X', '0x')}"}]}`,
    ),
    status: 200,
  },
);
for (const [what, literal] of [
  ...HOSTILE_NUMBERS,
  ['the string "0x' + '00'.repeat(32) + '" uppercase 0X', `"0X${'00'.repeat(32)}"`],
] as Array<[string, string]>) {
  rows.push({
    name: `relay tx_hash = ${what}`,
    request: post('/relay', `{"origin_chain":"ethereum","tx_hash":${literal}}`),
    status: 400,
    reason: 'invalid_request',
    message: /tx_hash/,
  });
}
rows.push({
  name: 'relay origin_chain = 1',
  request: post('/relay', `{"origin_chain":1,"tx_hash":"${txHash(1)}"}`),
  status: 400,
  reason: 'invalid_request',
  message: /origin_chain/,
});

// Query parameters of the merkle listing.
const HOSTILE_QUERY = [
  '1e309',
  '-0',
  '1.5',
  '0x1',
  '-1',
  '4294967296',
  '9007199254740992',
  '01',
  '+1',
  '%201',
  '1%20',
  '',
  '%D9%A1',
  '1%00',
  'NaN',
  'Infinity',
];
for (const name of ['domain_id', 'leaf_index_start', 'leaf_index_end']) {
  for (const value of HOSTILE_QUERY) {
    const params: Record<string, string> = {
      domain_id: '1',
      leaf_index_start: '0',
      leaf_index_end: '0',
      [name]: value,
    };
    const query = Object.entries(params)
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    rows.push({
      name: `GET merkle ${name}=${value === '' ? '(empty)' : value}`,
      request: rawRequest('GET', `/merkle_tree_insertions?${query}`),
      status: 400,
      reason: 'invalid_request',
      message: new RegExp(name),
    });
  }
}
rows.push(
  {
    name: 'GET merkle with a repeated parameter',
    request: rawRequest('GET', '/merkle_tree_insertions?domain_id=1&domain_id=2&leaf_index_start=0&leaf_index_end=0'),
    status: 400,
    reason: 'invalid_request',
    message: /domain_id/,
  },
  {
    name: 'GET merkle range of 10 001 leaves',
    request: rawRequest('GET', '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=10000'),
    status: 400,
    reason: 'invalid_request',
  },
);

// Content types.
for (const type of [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonp',
  'application/json-seq',
  'application/json, text/html',
  'application/problem+json',
  'json',
  '',
]) {
  for (const path of ['/relay', '/merkle_tree_insertions']) {
    rows.push({
      name: `POST ${path} with Content-Type "${type}"`,
      request: post(path, '{}', { 'Content-Type': type }),
      status: 415,
      reason: 'unsupported_media_type',
    });
  }
}
rows.push(
  {
    name: 'POST /relay without Content-Type',
    request: post('/relay', '{}', {}),
    status: 415,
    reason: 'unsupported_media_type',
  },
  {
    name: 'Content-Type in capitals with a charset is accepted',
    request: () =>
      post('/relay', relayBody({ origin_chain: 'ethereum', tx_hash: mined() }), {
        'Content-Type': 'APPLICATION/JSON; Charset=UTF-8',
      }),
    status: 200,
  },
);

// Methods and paths.
rows.push(
  ...['PUT', 'DELETE', 'PATCH', 'TRACE'].map(
    (method): Row => ({
      name: `${method} /relay`,
      request: rawRequest(method, '/relay'),
      status: 405,
      reason: 'method_not_allowed',
    }),
  ),
  { name: 'POST /metrics', request: post('/metrics', '{}'), status: 405, reason: 'method_not_allowed' },
  { name: 'an unknown method token', request: rawRequest('FOO', '/relay'), status: 400 },
  {
    name: 'GET /RELAY (paths are case-sensitive)',
    request: rawRequest('GET', '/RELAY'),
    status: 404,
    reason: 'not_found',
  },
  {
    name: 'GET /relay/ (no trailing-slash alias)',
    request: rawRequest('GET', '/relay/'),
    status: 404,
    reason: 'not_found',
  },
  {
    name: 'GET /igp_rules (docs/api.md#post-merkle_tree_insertions: not part of the API)',
    request: rawRequest('GET', '/igp_rules'),
    status: 404,
    reason: 'not_found',
  },
  { name: 'GET //relay', request: rawRequest('GET', '//relay'), status: 404, reason: 'not_found' },
  { name: 'GET /%2e%2e/relay normalises to /relay', request: rawRequest('GET', '/%2e%2e/relay'), status: 200 },
  {
    name: 'absolute-form target is served locally, never fetched',
    request: rawRequest('GET', 'http://169.254.169.254/relay'),
    status: 200,
  },
  { name: 'OPTIONS *', request: rawRequest('OPTIONS', '*'), status: 404, reason: 'not_found' },
  { name: 'a path of 20 000 bytes', request: rawRequest('GET', '/relay?' + 'a'.repeat(20_000)), status: 431 },
);

// Headers and framing: Node's parser answers these before the API sees anything.
rows.push(
  {
    name: 'a header of 20 000 bytes',
    request: rawRequest('GET', '/relay', { 'X-Big': 'a'.repeat(20_000) }),
    status: 431,
  },
  {
    name: '90 headers are served',
    request: rawRequest('GET', '/relay', Object.fromEntries(Array.from({ length: 90 }, (_, i) => [`X-H${i}`, 'v']))),
    status: 200,
  },
  {
    name: '500 small headers (over maxHeadersCount 100)',
    request: rawRequest('GET', '/relay', Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`X-H${i}`, 'v']))),
    status: 431,
  },
  {
    name: 'Content-Length and Transfer-Encoding together (smuggling)',
    request: rawRequest(
      'POST',
      '/relay',
      { ...JSON_HEADERS, 'Content-Length': 2, 'Transfer-Encoding': 'chunked' },
      '0\r\n\r\n',
    ),
    status: 400,
  },
  {
    name: 'two different Content-Length headers',
    request: Buffer.from(
      'POST /relay HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
    ),
    status: 400,
  },
  {
    name: 'a negative Content-Length',
    request: rawRequest('POST', '/relay', { ...JSON_HEADERS, 'Content-Length': -1 }, '{}'),
    status: 400,
  },
  {
    name: 'an invalid chunk size',
    request: rawRequest('POST', '/relay', { ...JSON_HEADERS, 'Transfer-Encoding': 'chunked' }, 'zz\r\n{}\r\n0\r\n\r\n'),
    status: 400,
  },
  {
    name: 'obsolete header line folding',
    request: Buffer.from('GET /relay HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n'),
    status: 400,
  },
  { name: 'a bare LF line ending', request: Buffer.from('GET /relay HTTP/1.1\nHost: x\n\n'), status: 400 },
  {
    name: 'a NUL in a header value',
    request: Buffer.from('GET /relay HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n'),
    status: 400,
  },
  { name: 'HTTP/1.1 without Host', request: Buffer.from('GET /relay HTTP/1.1\r\n\r\n'), status: 400 },
  { name: 'HTTP/1.0 without Host is served', request: Buffer.from('GET /relay HTTP/1.0\r\n\r\n'), status: 200 },
  { name: 'an HTTP/2 preface', request: Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), status: 400 },
  {
    name: 'a TLS ClientHello',
    request: Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03]),
    status: 400,
  },
  {
    name: 'Expect: 100-continue with an oversized declared body',
    request: rawRequest('POST', '/relay', { ...JSON_HEADERS, Expect: '100-continue', 'Content-Length': 1e9 }),
    status: 413,
    reason: 'payload_too_large',
  },
  {
    name: 'an X-Request-Id of 1 000 bytes is replaced',
    request: rawRequest('GET', '/nope', { 'X-Request-Id': 'a'.repeat(1000) }),
    status: 404,
    reason: 'not_found',
  },
);

// Admin token (on a server that has one).
rows.push(
  ...(
    [
      ['no Authorization', {}],
      ['the right token under another scheme ("Bearers")', { Authorization: `Bearers ${ADMIN_TOKEN}` }],
      ['two spaces after Bearer', { Authorization: `Bearer  ${ADMIN_TOKEN}` }],
      ['a prefix of the token', { Authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` }],
      ['the token plus one character', { Authorization: `Bearer ${ADMIN_TOKEN}x` }],
      ['Basic credentials', { Authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` }],
      ['a 10 000-byte token', { Authorization: `Bearer ${'t'.repeat(10_000)}` }],
      ['an empty Bearer', { Authorization: 'Bearer ' }],
    ] as Array<[string, Record<string, string>]>
  ).map(
    ([what, headers]): Row => ({
      name: `admin token: ${what}`,
      server: 'guarded',
      request: rawRequest('GET', '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0', headers),
      status: 401,
      reason: 'unauthorized',
    }),
  ),
  {
    name: 'admin token: a wrong token is refused before the body is read',
    server: 'guarded',
    request: post('/merkle_tree_insertions', ' '.repeat(MERKLE_LIMIT * 2), {
      ...JSON_HEADERS,
      Authorization: 'Bearer wrong-token-wrong-token',
    }),
    status: 401,
    reason: 'unauthorized',
  },
  {
    name: 'admin token: trailing whitespace is not part of a header value (RFC 9110 §5.5)',
    server: 'guarded',
    request: rawRequest('GET', '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0', {
      Authorization: `Bearer ${ADMIN_TOKEN}  `,
    }),
    status: 200,
  },
  // RFC 9110 §11.1: the auth-scheme is case-insensitive.
  {
    name: 'admin token: the token with a lower-case "bearer" scheme (RFC 9110 §11.1)',
    server: 'guarded',
    request: rawRequest('GET', '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0', {
      Authorization: `bearer ${ADMIN_TOKEN}`,
    }),
    status: 200,
  },
  {
    name: 'admin token: the token with an upper-case "BEARER" scheme (RFC 9110 §11.1)',
    server: 'guarded',
    request: rawRequest('GET', '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0', {
      Authorization: `BEARER ${ADMIN_TOKEN}`,
    }),
    status: 200,
  },
  {
    name: 'admin token: the right token',
    server: 'guarded',
    request: rawRequest('GET', '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=0', {
      Authorization: `Bearer ${ADMIN_TOKEN}`,
    }),
    status: 200,
  },
);

// ---------------------------------------------------------------------------------------------

describe('hostile requests, one connection each: expected status and reason, never 500, server up', () => {
  for (const row of rows) {
    test(`${row.status}${row.reason ? ' ' + row.reason : ''}: ${row.name}`, async () => {
      const bytes = typeof row.request === 'function' ? row.request() : row.request;
      const target = row.server === 'guarded' ? guardedPort : port;
      const exchange = await rawExchange(target, bytes, { replies: 1, timeoutMs: ANSWER_GUARD_MS });
      const reply = exchange.replies[0];
      assertReply(reply, row.status, row.reason, row.name);
      if (row.message) assert.match(reply.json().message, row.message);
      if (row.status === 200 && bytes.subarray(0, 12).toString('latin1') === 'POST /relay ') relayed++;
      if (row.name.startsWith('an X-Request-Id')) assert.match(reply.headers['x-request-id'], /^[0-9a-f-]{36}$/);
      if (row.status === 401) assert.equal(reply.headers['www-authenticate'], 'Bearer');
      if (row.status === 405) assert.ok(reply.headers.allow, 'Allow on 405');
      await isUp();
    });
  }

  test('afterwards: Object.prototype is clean, no request is in flight, only the 200 relays hold a dedup entry', async () => {
    const probe: Record<string, unknown> = {};
    assert.equal(probe.polluted, undefined);
    assert.equal(probe.origin_chain, undefined);
    assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
    assert.equal(server.api.inFlight(), 0);
    assert.equal(server.api.pipeline.dedup.size(), relayed);
    const metrics = server.api.metrics.render();
    assert.doesNotMatch(metrics, /code="5\d\d"/, 'no 5xx was ever answered');
    assert.equal(logLines.filter((l) => JSON.parse(l).level === 'error').length, 0, 'no error was logged');
  });
});

describe('streams, drips and pipelines', () => {
  test('docs/design.md#merkle-tree-insertions: an endless chunked body is refused with 413 at the limit, connection closed', async () => {
    const chunk = Buffer.from(`4000\r\n${' '.repeat(0x4000)}\r\n`);
    const head = rawRequest('POST', '/relay', { ...JSON_HEADERS, 'Transfer-Encoding': 'chunked' });
    // 64 MiB offered; the server must stop long before.
    const exchange = await rawExchange(port, [head, ...Array.from({ length: 4096 }, () => chunk)], {
      timeoutMs: 5_000,
    });
    assertReply(exchange.replies[0], 413, 'payload_too_large', 'endless body');
    assert.equal(exchange.closed, true, 'the server closed the connection');
    assert.ok(exchange.written < 16 * 1024 * 1024, `the server stopped reading (${exchange.written} bytes written)`);
    await isUp();
  });

  test('slowloris: headers dripped one byte at a time are cut off at headersTimeout while others are served', async () => {
    const bytes = rawRequest('GET', '/relay', { 'X-Slow': 'a'.repeat(200) });
    const drip = [...bytes].map((b) => Buffer.from([b]));
    // Others are served while a slow client is still sending its headers: on the server with the
    // default headersTimeout (10 s), which does not cut it off meanwhile, each normal request must
    // be answered before the slow one is (a server that read one connection at a time would answer
    // it after the slow client's last byte). The slow client's pace is this process's own timers,
    // 20 ms a byte for its ~250 bytes: a stall of the process delays it as much as the others, so
    // the order holds at any load, where a wall-clock bound (1 s an answer) did not.
    const stop = new AbortController();
    let slowAnswered = false;
    const dripping = rawExchange(port, drip, { dripMs: 20, timeoutMs: 60_000, replies: 1, signal: stop.signal });
    void dripping.then(() => (slowAnswered = true));
    for (let i = 0; i < 5; i++) {
      await isUp();
      assert.equal(slowAnswered, false, `normal request ${i + 1} was answered only after the slow client`);
      await delay(50);
    }
    stop.abort();
    const held = await dripping;
    assert.ok(
      held.written < bytes.length,
      `the slow client was still sending (${held.written} of ${bytes.length} bytes)`,
    );

    // On the server with headersTimeout 400 ms, the same client is cut off: before it sent half its
    // headers, that is within some 2.5 s of its own dripping (a stall of this process slows the
    // drip too, so the bound is in the client's pace, not in wall time).
    const exchange = await rawExchange(slowPort, drip, { dripMs: 20, timeoutMs: 30_000 });
    assert.equal(exchange.closed, true, 'the slow client was disconnected');
    assert.ok(
      exchange.written < bytes.length / 2,
      `cut off near headersTimeout: after ${exchange.written} of ${bytes.length} bytes, ${Math.round(exchange.ms)} ms`,
    );
    if (exchange.replies[0]) assert.equal(exchange.replies[0].status, 408);
  });

  test('slow body: a body dripped one byte at a time is cut off at requestTimeout; no reservation is taken', async () => {
    const body = relayBody({ origin_chain: 'ethereum', tx_hash: mined() });
    const head = rawRequest('POST', '/relay', { ...JSON_HEADERS, 'Content-Length': Buffer.byteLength(body) });
    const drip = [head, ...[...Buffer.from(body)].map((b) => Buffer.from([b]))];
    const before = slowServer.api.pipeline.dedup.size();
    const exchange = await rawExchange(slowPort, drip, { dripMs: 25, timeoutMs: 10_000 });
    assert.equal(exchange.closed, true);
    assert.ok(exchange.written < head.length + Buffer.byteLength(body), 'cut off before the body was complete');
    assert.ok(
      exchange.ms < REQUEST_TIMEOUT_MS * 3 + 1_000,
      `cut off near requestTimeout (${Math.round(exchange.ms)} ms)`,
    );
    if (exchange.replies[0]) assert.notEqual(exchange.replies[0].status, 500);
    await isUp(slowPort);
    for (let i = 0; i < 100 && slowServer.api.inFlight() > 0; i++) await delay(10);
    assert.equal(slowServer.api.inFlight(), 0, 'the request is no longer in flight');
    assert.equal(slowServer.api.pipeline.dedup.size(), before, 'no reservation taken or left');
  });

  test('idle connections that send nothing are closed at headersTimeout; 200 of them do not block service', async () => {
    const idle = Array.from({ length: 200 }, () => rawExchange(slowPort, [], { timeoutMs: 10_000 }));
    await delay(50);
    await isUp(slowPort);
    const results = await Promise.all(idle);
    assert.ok(
      results.every((r) => r.closed),
      'every idle connection was closed by the server',
    );
    assert.ok(
      results.every((r) => r.ms < HEADERS_TIMEOUT_MS * 4 + 2_000),
      'near headersTimeout',
    );
  });

  test('pipelining: three requests in one write are answered in order on one connection', async () => {
    const hash = mined();
    const bytes = Buffer.concat([
      rawRequest('GET', '/relay'),
      post('/relay', relayBody({ origin_chain: 'ethereum', tx_hash: hash })),
      post('/relay', relayBody({ origin_chain: 'ethereum', tx_hash: hash })),
      rawRequest('GET', '/nope'),
    ]);
    const { replies } = await rawExchange(port, bytes, { replies: 4 });
    assert.deepEqual(
      replies.map((r) => r.status),
      [200, 200, 429, 404],
    );
    relayed++;
    assert.equal(replies[0].text(), 'up');
    assert.equal(replies[1].json().messages.length, 1);
    assert.equal(replies[2].json().reason, 'duplicate_tx');
  });

  test('pipelining after a refused body: the 413 is answered, the connection closes, nothing after it is run', async () => {
    const hash = mined();
    const bytes = Buffer.concat([
      rawRequest('POST', '/relay', { ...JSON_HEADERS, 'Content-Length': 1e9 }, '{'),
      post('/relay', relayBody({ origin_chain: 'ethereum', tx_hash: hash })),
    ]);
    const exchange = await rawExchange(port, bytes, { timeoutMs: 5_000 });
    assert.equal(exchange.replies.length, 1);
    assertReply(exchange.replies[0], 413, 'payload_too_large', 'first');
    assert.equal(exchange.closed, true);
    const again = await rawExchange(port, post('/relay', relayBody({ origin_chain: 'ethereum', tx_hash: hash })), {
      replies: 1,
    });
    assertReply(again.replies[0], 200, undefined, 'the smuggled request was never run, so this is not duplicate_tx');
    relayed++;
  });

  test('pipelining: bytes past Content-Length are a garbage request: one 400, then the connection closes', async () => {
    // Node's parser reads ahead: it may reject the garbage before the first request is answered,
    // in which case its bare 400 is the only reply. Either way: 400, closed, the server up.
    const bytes = Buffer.from(
      'POST /relay HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}GARBAGE\r\n\r\n',
    );
    const exchange = await rawExchange(port, bytes, { timeoutMs: 5_000 });
    assert.deepEqual(
      exchange.replies.map((r) => r.status),
      [400],
    );
    assert.equal(exchange.closed, true, 'the parser error closes the connection');
    await isUp();
  });

  test('a client that disconnects mid-request leaves nothing in flight', async () => {
    const body = relayBody({ origin_chain: 'ethereum', tx_hash: mined() });
    const head = rawRequest('POST', '/relay', { ...JSON_HEADERS, 'Content-Length': Buffer.byteLength(body) });
    const before = server.api.pipeline.dedup.size();
    await rawExchange(port, [head, body.slice(0, 10)], { timeoutMs: 100 });
    for (let i = 0; i < 100 && server.api.inFlight() > 0; i++) await delay(10);
    assert.equal(server.api.inFlight(), 0);
    assert.equal(server.api.pipeline.dedup.size(), before);
    await isUp();
  });
});
