import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { systemClock } from '../../../lib/clock.ts';
import { RelayError, RpcError, type RpcFailureCode } from '../../../lib/errors/classes.ts';
import { redactUrl } from '../../../lib/redact.ts';
import {
  createReceiptFetcher,
  parseReceipt,
  type Receipt,
  type ReceiptFetchEvent,
  type ReceiptFetcherOptions,
} from '../../../lib/rpc/receipt.ts';
import type { ChainConfig } from '../../../lib/types.ts';
import { createFakeClock, type FakeClock } from '../../helpers/fakes/clock.ts';
import {
  createFakeFetch,
  endlessBody,
  hang,
  httpStatus,
  jsonResponse,
  rpcError,
  rpcResult,
  type Handler,
} from '../../helpers/fakes/fetch.ts';
import {
  DISPATCH_TOPIC,
  dispatchLog,
  MAILBOX,
  messageSentLog,
  rpcReceipt,
  txHash,
} from '../../helpers/fixtures/builders.ts';
import { RUNS, tally } from '../../helpers/fixtures/properties.ts';
import { refusedPort } from '../../helpers/fakes/refused-port.ts';

const TX = '0x' + 'ab'.repeat(32);
const TX_CHECKSUM_CASE = '0x' + 'AB'.repeat(32);
// Hyperlane's mainnet Mailbox as checksummed in the Hyperlane registry.
const MAILBOX_CHECKSUMMED = '0xc005dc82818d67AF737725bD4bf75435d065D239';
const MAILBOX_LOWER = '0xc005dc82818d67af737725bd4bf75435d065d239';

// The secret parts (userinfo, path, query) must never leave the fetcher.
const URL_A = 'https://user:hunter2@rpc-a.example:8545/v2/SECRETKEYA?apikey=SECRETQ#frag';
const URL_B = 'https://rpc-b.example/SECRETKEYB';
const URL_C = 'http://127.0.0.1:1/c';

function chain(rpcUrls: string[]): ChainConfig {
  return { name: 'testchain', domainId: 31337, mailbox: MAILBOX_LOWER, cctpMessageTransmitters: [], rpcUrls };
}

/** A receipt shaped like anvil's (blockTimestamp as a JSON number, extra fields everywhere). */
function receipt(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: '0x2',
    status: '0x1',
    cumulativeGasUsed: '0x1d8a1',
    logs: [
      {
        address: MAILBOX_CHECKSUMMED,
        topics: [DISPATCH_TOPIC, '0x000000000000000000000000F39FD6E51AAD88F6F4CE6AB8827279CFFFB92266'],
        data: '0x00010203FF',
        blockHash: '0x' + '11'.repeat(32),
        blockNumber: '0x5',
        blockTimestamp: 1_700_000_000,
        transactionHash: TX,
        transactionIndex: '0x0',
        logIndex: '0x0',
        removed: false,
      },
    ],
    logsBloom: '0x' + '00'.repeat(256),
    transactionHash: TX,
    transactionIndex: '0x0',
    blockHash: '0x' + '11'.repeat(32),
    blockNumber: '0x5',
    blockTimestamp: 1_700_000_000,
    gasUsed: '0x1d8a1',
    effectiveGasPrice: '0x3b9aca00',
    from: '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266',
    to: MAILBOX_CHECKSUMMED,
    contractAddress: null,
    ...overrides,
  };
}

function withLog(log: Record<string, unknown>): Record<string, unknown> {
  return receipt({ logs: [{ ...(receipt().logs as object[])[0], ...log }] });
}

interface Harness {
  clock: FakeClock;
  events: ReceiptFetchEvent[];
  fetcher: ReturnType<typeof createReceiptFetcher>;
  calls: ReturnType<typeof createFakeFetch>;
}

function harness(routes: Record<string, Handler | Handler[]>, options: ReceiptFetcherOptions = {}): Harness {
  const clock = createFakeClock();
  const calls = createFakeFetch(routes);
  const events: ReceiptFetchEvent[] = [];
  const fetcher = createReceiptFetcher({ fetch: calls.fetch, clock, onAttempt: (e) => events.push(e), ...options });
  return { clock, events, fetcher, calls };
}

/** Tracks a promise's outcome without awaiting it, so a test can move the fake clock meanwhile. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

function assertNoSecret(text: string) {
  for (const secret of ['hunter2', 'user', 'SECRET', 'apikey', 'v2/', 'frag']) {
    assert.ok(!text.includes(secret), `"${text}" leaks "${secret}"`);
  }
}

describe('receipt fetch: JSON-RPC request and receipt parsing (docs/design.md#receipt)', () => {
  it('posts eth_getTransactionReceipt [txHash] as JSON-RPC 2.0 to the first URL', async () => {
    const h = harness({ [URL_A]: rpcResult(receipt()) });
    await h.fetcher(chain([URL_A]), TX);
    assert.equal(h.calls.calls.length, 1);
    const call = h.calls.calls[0];
    assert.equal(call.method, 'POST');
    assert.match(call.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(call.body.jsonrpc, '2.0');
    assert.equal(call.body.method, 'eth_getTransactionReceipt');
    assert.deepEqual(call.body.params, [TX]);
    assert.ok(call.body.id !== undefined && call.body.id !== null);
  });

  it('docs/design.md#receipt: reads status and logs only; blockTimestamp as a JSON number is ignored', async () => {
    // Logs keep their log index, which identifies a gas payment.
    const h = harness({ [URL_A]: rpcResult(receipt()) });
    const r = await h.fetcher(chain([URL_A]), TX);
    assert.equal(r.success, true);
    assert.equal(r.logs.length, 1);
    assert.deepEqual(Object.keys(r).sort(), ['logs', 'success']);
    assert.deepEqual(Object.keys(r.logs[0]).sort(), ['address', 'data', 'logIndex', 'topics']);
    assert.equal(r.logs[0].logIndex, 0);
    // A log index that is not a JSON-RPC quantity is left out; the receipt is still good.
    for (const logIndex of [undefined, 5, '0x', '0x01', 'ff', '0x1'.padEnd(20, '0'), null]) {
      const odd = receipt();
      (odd.logs as Record<string, unknown>[])[0].logIndex = logIndex;
      const read = await harness({ [URL_A]: rpcResult(odd) }).fetcher(chain([URL_A]), TX);
      assert.equal(read.logs[0].logIndex, undefined, String(logIndex));
      assert.equal(read.logs.length, 1);
    }
    assert.deepEqual(r.logs[0].data, new Uint8Array([0x00, 0x01, 0x02, 0x03, 0xff]));
  });

  it('docs/design.md#extraction-and-eligibility: checksummed addresses and upper-case topics come back lower-case', async () => {
    const h = harness({ [URL_A]: rpcResult(receipt()) });
    const r = await h.fetcher(chain([URL_A]), TX);
    assert.equal(r.logs[0].address, MAILBOX_LOWER);
    assert.deepEqual(r.logs[0].topics, [
      DISPATCH_TOPIC,
      '0x000000000000000000000000f39fd6e51aad88f6f4ce6ab8827279cfffb92266',
    ]);
  });

  it('docs/design.md#extraction-and-eligibility: a reverted receipt (status 0x0) is success=false', async () => {
    const h = harness({ [URL_A]: rpcResult(receipt({ status: '0x0', logs: [] })) });
    assert.deepEqual(await h.fetcher(chain([URL_A]), TX), { success: false, logs: [] });
  });

  it('tx hash is compared case-insensitively with the receipt', async () => {
    const h = harness({ [URL_A]: rpcResult(receipt()) });
    const r = await h.fetcher(chain([URL_A]), TX_CHECKSUM_CASE);
    assert.equal(r.success, true);
  });

  it('a log with no topics and empty data is valid', async () => {
    const h = harness({ [URL_A]: rpcResult(withLog({ topics: [], data: '0x' })) });
    const r = await h.fetcher(chain([URL_A]), TX);
    assert.deepEqual(r.logs[0].topics, []);
    assert.equal(r.logs[0].data.length, 0);
  });

  it('leaves no timer behind after success', async () => {
    const h = harness({ [URL_A]: rpcResult(receipt()) });
    await h.fetcher(chain([URL_A]), TX);
    assert.equal(h.clock.pending(), 0);
  });
});

describe('receipt fetch: fail-over to the next URL (docs/design.md#receipt)', () => {
  it('fails over in configured order: HTTP 500 → HTTP 429 → receipt', async () => {
    const h = harness({ [URL_A]: httpStatus(500), [URL_B]: httpStatus(429), [URL_C]: rpcResult(receipt()) });
    const r = await h.fetcher(chain([URL_A, URL_B, URL_C]), TX);
    assert.equal(r.success, true);
    assert.deepEqual(h.calls.urls(), [URL_A, URL_B, URL_C]);
    assert.deepEqual(
      h.events.map((e) => [e.rpc, e.ok, e.error]),
      [
        ['https://rpc-a.example:8545', false, 'HTTP 500'],
        ['https://rpc-b.example', false, 'HTTP 429'],
        ['http://127.0.0.1:1', true, undefined],
      ],
    );
    assert.ok(h.events.every((e) => e.chain === 'testchain'));
  });

  it('fails over on a transport error (fetch rejects)', async () => {
    const h = harness({ [URL_B]: rpcResult(receipt()) }); // URL_A has no route: fetch rejects
    await h.fetcher(chain([URL_A, URL_B]), TX);
    assert.deepEqual(h.calls.urls(), [URL_A, URL_B]);
    assert.equal(h.events[0].error, 'transport error');
  });

  it('each attempt event carries its number across endpoints and polls, the failure code and the cause, with no secret', async () => {
    const refused: Handler = () => {
      throw new TypeError('fetch failed', { cause: new Error(`connect ECONNREFUSED ${URL_A}\nsecond line`) });
    };
    const h = harness({
      [URL_A]: [refused, refused],
      [URL_B]: [rpcError(-32000, 'header not found'), rpcResult(null)],
    });
    const result = track(h.fetcher(chain([URL_A, URL_B]), TX));
    await h.clock.advance(500);
    await h.clock.advance(0);
    assert.equal(result.settled, false);
    assert.deepEqual(
      h.events.map((e) => [e.attempt, e.rpc, e.ok, e.code, e.error, e.cause]),
      [
        [
          1,
          'https://rpc-a.example:8545',
          false,
          'transport',
          'transport error',
          'connect ECONNREFUSED https://rpc-a.example:8545',
        ],
        [2, 'https://rpc-b.example', false, 'rpc_error', 'JSON-RPC error -32000', 'header not found'],
        [
          3,
          'https://rpc-a.example:8545',
          false,
          'transport',
          'transport error',
          'connect ECONNREFUSED https://rpc-a.example:8545',
        ],
        [4, 'https://rpc-b.example', true, undefined, undefined, undefined],
      ],
    );
    for (const e of h.events) assertNoSecret(JSON.stringify(e));
    await h.clock.advance(10_000);
    assert.ok(result.error instanceof RelayError);
  });

  const failing: [string, Handler, string][] = [
    ['invalid JSON', () => new Response('{"jsonrpc":"2.0",', { status: 200 }), 'invalid JSON'],
    ['invalid UTF-8', () => new Response(new Uint8Array([0x22, 0xff, 0x22]), { status: 200 }), 'invalid JSON'],
    [
      'a JSON array (batch) answer',
      (c) => jsonResponse([{ jsonrpc: '2.0', id: c.body.id, result: receipt() }]),
      'not a JSON-RPC response',
    ],
    [
      'the wrong JSON-RPC id',
      (c) => jsonResponse({ jsonrpc: '2.0', id: Number(c.body.id) + 1, result: receipt() }),
      'wrong JSON-RPC id',
    ],
    [
      'the id as a string',
      (c) => jsonResponse({ jsonrpc: '2.0', id: String(c.body.id), result: receipt() }),
      'wrong JSON-RPC id',
    ],
    ['a JSON-RPC error', rpcError(-32000, 'header not found'), 'JSON-RPC error -32000'],
    ['no result member', (c) => jsonResponse({ jsonrpc: '2.0', id: c.body.id }), 'not a JSON-RPC response'],
    [
      'a receipt for another transaction',
      rpcResult(receipt({ transactionHash: '0x' + 'cd'.repeat(32) })),
      'receipt for another transaction',
    ],
    [
      'a receipt without transactionHash',
      rpcResult(receipt({ transactionHash: undefined })),
      'receipt for another transaction',
    ],
    ['status 0x2', rpcResult(receipt({ status: '0x2' })), 'malformed receipt status'],
    ['status missing (pre-Byzantium)', rpcResult(receipt({ status: undefined })), 'malformed receipt status'],
    ['status as a number', rpcResult(receipt({ status: 1 })), 'malformed receipt status'],
    ['a string result', rpcResult('0x1'), 'malformed receipt'],
    ['logs not an array', rpcResult(receipt({ logs: {} })), 'malformed receipt logs'],
    ['a log that is not an object', rpcResult(receipt({ logs: ['0x'] })), 'malformed receipt log'],
    ['a 19-byte log address', rpcResult(withLog({ address: '0x' + '11'.repeat(19) })), 'malformed receipt log address'],
    ['a non-hex log address', rpcResult(withLog({ address: '0x' + 'zz'.repeat(20) })), 'malformed receipt log address'],
    ['five topics', rpcResult(withLog({ topics: Array(5).fill(DISPATCH_TOPIC) })), 'malformed receipt log topics'],
    ['a 31-byte topic', rpcResult(withLog({ topics: ['0x' + '11'.repeat(31)] })), 'malformed receipt log topics'],
    ['topics not an array', rpcResult(withLog({ topics: DISPATCH_TOPIC })), 'malformed receipt log topics'],
    ['odd-length data', rpcResult(withLog({ data: '0x123' })), 'malformed receipt log data'],
    ['data without 0x', rpcResult(withLog({ data: '1234' })), 'malformed receipt log data'],
    ['data missing', rpcResult(withLog({ data: undefined })), 'malformed receipt log data'],
  ];
  for (const [what, handler, error] of failing) {
    it(`fails over on ${what}`, async () => {
      const h = harness({ [URL_A]: handler, [URL_B]: rpcResult(receipt()) });
      const r = await h.fetcher(chain([URL_A, URL_B]), TX);
      assert.equal(r.success, true);
      assert.deepEqual(h.calls.urls(), [URL_A, URL_B]);
      assert.equal(h.events[0].ok, false);
      assert.equal(h.events[0].error, error);
    });
  }

  it('cancels the body of a non-2xx answer instead of leaving it unread', async () => {
    const endless = endlessBody(1024);
    const h = harness({
      [URL_A]: async (c) => new Response((await endless.handler(c)).body, { status: 502 }),
      [URL_B]: rpcResult(receipt()),
    });
    await h.fetcher(chain([URL_A, URL_B]), TX);
    assert.equal(endless.cancelled(), true);
  });

  it('a hanging URL fails over after the attempt timeout', async () => {
    const h = harness({ [URL_A]: hang, [URL_B]: rpcResult(receipt()) }, { attemptTimeoutMs: 3_000 });
    const start = h.clock.now();
    const result = track(h.fetcher(chain([URL_A, URL_B]), TX));
    await h.clock.advance(2_999);
    assert.equal(result.settled, false);
    assert.deepEqual(h.calls.urls(), [URL_A]);
    await h.clock.advance(1);
    assert.equal(result.settled, true);
    assert.equal(result.error, undefined);
    assert.deepEqual(h.calls.urls(), [URL_A, URL_B]);
    assert.equal(h.events[0].error, 'attempt timed out');
    assert.equal(h.events[0].durationMs, 3_000);
    assert.equal(h.clock.now() - start, 3_000);
    assert.ok(h.calls.calls[0].signal?.aborted, 'the hanging request was aborted');
  });

  it('an endless body is read only up to maxResponseBytes, then cancelled, then the next URL', async () => {
    const endless = endlessBody(16 * 1024);
    const h = harness({ [URL_A]: endless.handler, [URL_B]: rpcResult(receipt()) }, { maxResponseBytes: 100_000 });
    await h.fetcher(chain([URL_A, URL_B]), TX);
    assert.equal(endless.cancelled(), true);
    // At most one chunk past the limit, plus what the stream queued ahead (highWaterMark 1 chunk).
    assert.ok(endless.produced() <= 100_000 + 3 * 16 * 1024, `read ${endless.produced()} bytes`);
    assert.equal(h.events[0].error, 'response too large');
    assert.deepEqual(h.calls.urls(), [URL_A, URL_B]);
  });

  it('a declared Content-Length above maxResponseBytes fails over without reading', async () => {
    const endless = endlessBody(1024);
    const h = harness(
      {
        [URL_A]: async (c) =>
          new Response((await endless.handler(c)).body, { status: 200, headers: { 'content-length': '200000' } }),
        [URL_B]: rpcResult(receipt()),
      },
      { maxResponseBytes: 100_000 },
    );
    await h.fetcher(chain([URL_A, URL_B]), TX);
    assert.equal(endless.cancelled(), true);
    assert.equal(h.events[0].error, 'response too large');
  });

  it('a body that stalls mid-way is cancelled by the attempt timeout, then the next URL', async () => {
    const stalled = endlessBody(0);
    const h = harness({ [URL_A]: stalled.handler, [URL_B]: rpcResult(receipt()) }, { attemptTimeoutMs: 3_000 });
    const result = track(h.fetcher(chain([URL_A, URL_B]), TX));
    await h.clock.advance(3_000);
    assert.equal(result.settled, true);
    assert.equal(result.error, undefined);
    assert.equal(stalled.cancelled(), true);
    assert.deepEqual(h.calls.urls(), [URL_A, URL_B]);
  });
});

describe('receipt fetch: polling and the 10 s deadline (docs/design.md#receipt)', () => {
  it('docs/design.md#receipt: a null result means not mined yet: poll again from the first URL', async () => {
    const h = harness(
      { [URL_A]: [rpcResult(null), rpcResult(null), rpcResult(receipt())], [URL_B]: rpcResult(receipt()) },
      { pollIntervalMs: 500 },
    );
    const result = track(h.fetcher(chain([URL_A, URL_B]), TX));
    await h.clock.flush();
    assert.equal(result.settled, false);
    await h.clock.advance(499);
    assert.deepEqual(h.calls.urls(), [URL_A]);
    // docs/embedding.md#embedding-the-library: between polls the wait (and the deadline) keep a real
    // process alive.
    assert.ok(h.clock.keepingAlive() >= 1, 'the poll wait is not a background timer');
    await h.clock.advance(1);
    assert.deepEqual(h.calls.urls(), [URL_A, URL_A]);
    await h.clock.advance(500);
    assert.equal(result.settled, true);
    assert.equal(result.value?.success, true);
    assert.deepEqual(h.calls.urls(), [URL_A, URL_A, URL_A], 'the second URL is not asked while the first answers');
    assert.equal(h.clock.pending(), 0);
  });

  it('docs/design.md#receipt: still null after 10 s → 408 timeout "transaction receipt not found within 10 seconds"', async () => {
    const h = harness({ [URL_A]: rpcResult(null) });
    const result = track(h.fetcher(chain([URL_A]), TX));
    await h.clock.advance(9_999);
    assert.equal(result.settled, false);
    await h.clock.advance(1);
    assert.equal(result.settled, true);
    const err = result.error;
    assert.ok(err instanceof RelayError);
    assert.equal(err.code, 'timeout');
    assert.equal(err.status, 408);
    assert.equal(err.message, 'transaction receipt not found within 10 seconds');
    assert.equal(err.retryAfterSeconds, 10);
    assert.equal(h.calls.calls.length, 20, 'polled every 500 ms: at 0, 500, …, 9500');
    assert.equal(h.clock.pending(), 0);
  });

  it('docs/design.md#receipt: every URL failing for 10 s → timeout saying the RPC endpoints failed, no URL in it', async () => {
    const h = harness({ [URL_A]: httpStatus(503), [URL_B]: hang });
    const result = track(h.fetcher(chain([URL_A, URL_B]), TX));
    await h.clock.advance(10_000);
    const err = result.error;
    assert.ok(err instanceof RelayError);
    assert.equal(err.code, 'timeout');
    assert.match(err.message, /RPC endpoints of chain testchain failed/);
    assert.match(err.message, /10 seconds/);
    assertNoSecret(err.message);
    assertNoSecret(String(err.stack));
    assert.ok(h.calls.urls().filter((u) => u === URL_A).length >= 2, 'it kept retrying');
    for (const e of h.events) assertNoSecret(JSON.stringify(e));
    assert.equal(h.clock.pending(), 0);
  });

  it('the deadline cancels an in-flight request', async () => {
    const h = harness({ [URL_A]: hang }, { attemptTimeoutMs: 60_000 });
    const result = track(h.fetcher(chain([URL_A]), TX));
    await h.clock.advance(10_000);
    assert.ok(result.error instanceof RelayError);
    assert.equal(result.error.code, 'timeout');
    assert.equal(h.calls.calls[0].signal?.aborted, true);
  });

  it('timeoutMs is configurable and named in the message', async () => {
    const h = harness({ [URL_A]: rpcResult(null) }, { timeoutMs: 3_000 });
    const result = track(h.fetcher(chain([URL_A]), TX));
    await h.clock.advance(3_000);
    assert.ok(result.error instanceof RelayError);
    assert.equal(result.error.message, 'transaction receipt not found within 3 seconds');
  });
});

describe('receipt fetch: caller abort', () => {
  it('an abort from the caller rejects with its reason and cancels the request', async () => {
    const h = harness({ [URL_A]: hang }, { attemptTimeoutMs: 60_000 });
    const controller = new AbortController();
    const result = track(h.fetcher(chain([URL_A]), TX, controller.signal));
    await h.clock.advance(1_000);
    const reason = new Error('client went away');
    controller.abort(reason);
    await h.clock.flush();
    assert.equal(result.settled, true);
    assert.equal(result.error, reason);
    assert.equal(h.calls.calls[0].signal?.aborted, true);
    assert.equal(h.clock.pending(), 0);
  });

  it('an abort during the poll sleep rejects with its reason', async () => {
    const h = harness({ [URL_A]: rpcResult(null) });
    const controller = new AbortController();
    const result = track(h.fetcher(chain([URL_A]), TX, controller.signal));
    await h.clock.advance(100);
    controller.abort(new Error('stop'));
    await h.clock.flush();
    assert.equal((result.error as Error).message, 'stop');
    assert.equal(h.clock.pending(), 0);
  });

  it('an already aborted signal rejects before any request', async () => {
    const h = harness({ [URL_A]: rpcResult(receipt()) });
    const reason = new Error('too late');
    await assert.rejects(h.fetcher(chain([URL_A]), TX, AbortSignal.abort(reason)), (e) => e === reason);
    assert.equal(h.calls.calls.length, 0);
  });
});

describe('redactUrl: RPC URLs carry API keys (docs/design.md#receipt)', () => {
  const table: [string, string][] = [
    [URL_A, 'https://rpc-a.example:8545'],
    [URL_B, 'https://rpc-b.example'],
    ['https://eth-mainnet.g.alchemy.com/v2/abcdef0123456789', 'https://eth-mainnet.g.alchemy.com'],
    ['https://mainnet.infura.io/v3/0123?x=1', 'https://mainnet.infura.io'],
    ['http://[::1]:8545/key', 'http://[::1]:8545'],
    ['https://HOST.example:443/', 'https://host.example'],
    ['not a url with SECRET', '<invalid url>'],
  ];
  for (const [url, expected] of table) {
    it(`${expected}`, () => assert.equal(redactUrl(url), expected));
  }
});

describe('receipt fetch over a real HTTP server (node:http, global fetch)', () => {
  async function withServer(handle: (body: any, res: ServerResponse) => void, run: (url: string) => Promise<void>) {
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (chunk) => (raw += chunk));
      req.on('end', () => handle(JSON.parse(raw), res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await run(`http://127.0.0.1:${port}/rpc/SECRETKEY`);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  it('fails over from a refused port, polls past null, returns the parsed receipt', async () => {
    const seen: any[] = [];
    await withServer(
      (body, res) => {
        seen.push(body);
        const result = seen.length === 1 ? null : receipt();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
      },
      async (url) => {
        // Nothing listens there, and no server of the run can take it (test/helpers/fakes/refused-port.ts).
        const refused = `http://127.0.0.1:${await refusedPort()}/`;
        const events: ReceiptFetchEvent[] = [];
        const fetcher = createReceiptFetcher({
          clock: systemClock,
          pollIntervalMs: 1,
          onAttempt: (e) => events.push(e),
        });
        const r = await fetcher(chain([refused, url]), TX);
        assert.equal(r.success, true);
        assert.equal(r.logs[0].address, MAILBOX_LOWER);
        assert.deepEqual(r.logs[0].data, new Uint8Array([0, 1, 2, 3, 255]));
        assert.equal(seen.length, 2);
        assert.equal(seen[0].method, 'eth_getTransactionReceipt');
        assert.deepEqual(seen[0].params, [TX]);
        assert.equal(events[0].ok, false);
        assert.equal(events[0].error, 'transport error');
        assert.equal(events[1].ok, true);
        for (const e of events) assertNoSecret(JSON.stringify(e));
      },
    );
  });

  it('a real endless HTTP body is cut at maxResponseBytes, then the next URL answers', async () => {
    let writes = 0;
    let requests = 0;
    await withServer(
      (body, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        if (++requests > 1) return res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: receipt() }));
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (!res.destroyed && writes < 10_000 && res.write(chunk)) writes++;
          if (!res.destroyed && writes < 10_000) res.once('drain', pump);
        };
        pump();
      },
      async (url) => {
        const events: ReceiptFetchEvent[] = [];
        const fetcher = createReceiptFetcher({ maxResponseBytes: 256 * 1024, onAttempt: (e) => events.push(e) });
        const r = await fetcher(chain([url, url]), TX);
        assert.equal(r.success, true);
        assert.equal(events[0].error, 'response too large');
        assert.ok(writes < 10_000, `server wrote ${writes} chunks: the client stopped reading`);
      },
    );
  });
});

describe('receipt parser (docs/design.md#receipt: read only status and logs)', () => {
  const TX = txHash(0xbeef);

  /** Replaces the value at a random path of `value` with `replacement` (undefined deletes). */
  function replaceAt(value: unknown, path: number[], replacement: unknown): unknown {
    if (path.length === 0 || typeof value !== 'object' || value === null) return replacement;
    const keys = Object.keys(value);
    if (keys.length === 0) return replacement;
    const key = keys[path[0] % keys.length];
    const next = replaceAt((value as Record<string, unknown>)[key], path.slice(1), replacement);
    // JSON has no holes in arrays: deleting an element removes it.
    if (Array.isArray(value))
      return next === undefined
        ? value.filter((_, i) => i !== Number(key))
        : value.map((v, i) => (i === Number(key) ? next : v));
    const copy: Record<string, unknown> = { ...value };
    if (next === undefined) delete copy[key];
    else copy[key] = next;
    return copy;
  }

  // A receipt that does not parse is a failure of that endpoint (the fetcher fails over).
  const RPC_RECEIPT_CODES: ReadonlySet<RpcFailureCode> = new Set(['malformed_receipt', 'wrong_transaction']);

  it('mutated and arbitrary receipts give a Receipt or the attempt failure that makes the fetcher fail over', () => {
    // A Receipt is lower-case with well-formed logs.
    const seen = tally();
    const base = rpcReceipt(TX, [messageSentLog(), dispatchLog(MAILBOX)]);
    const receipt = fc.oneof(
      fc
        .tuple(fc.array(fc.nat(), { maxLength: 4 }), fc.oneof(fc.jsonValue(), fc.constant(undefined)))
        .map(([path, v]) => replaceAt(base, path, v)),
      fc.jsonValue(),
    );
    fc.assert(
      fc.property(receipt, (value) => {
        let parsed: Receipt;
        try {
          parsed = parseReceipt(value, TX);
        } catch (error) {
          assert.ok(error instanceof RpcError && RPC_RECEIPT_CODES.has(error.code), `unexpected ${String(error)}`);
          seen.add(false);
          return;
        }
        seen.add(true);
        assert.equal(typeof parsed.success, 'boolean');
        for (const log of parsed.logs) {
          assert.match(log.address, /^0x[0-9a-f]{40}$/);
          assert.ok(log.topics.length <= 4);
          for (const t of log.topics) assert.match(t, /^0x[0-9a-f]{64}$/);
          assert.ok(log.data instanceof Uint8Array);
        }
      }),
      { ...RUNS, numRuns: 500 },
    );
    seen.expectBoth(50);
  });
});
