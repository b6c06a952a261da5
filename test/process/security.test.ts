/**
 * The defences SECURITY.md lists, each tried: the start-up warning for a non-loopback bind
 * without an admin token, RPC URLs (API keys in userinfo, path and query) kept out of responses,
 * metrics and logs even when a hostile RPC echoes them back, no stack or cause in any answer,
 * look-alike events from foreign contracts, and a dedup cache the default rate limit cannot fill.
 * Exact-match CORS is tried in cors.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { Clock } from '../../lib/clock.ts';
import { createLogger } from '../../lib/log.ts';
import { createRelayPipeline } from '../../lib/relay/pipeline.ts';
import { createMemoryOutbox } from '../../lib/outbox/index.ts';
import type { RelayerConfig } from '../../lib/types.ts';
import { fileChains, testConfig } from '../helpers/fixtures/config.ts';
import { createFakeClock } from '../helpers/fakes/clock.ts';
import { fakeRpcFetch } from '../helpers/fakes/rpc.ts';
import { startFaultyRpcServer, type FaultyRpcServer } from '../helpers/fakes/faulty-rpc.ts';
import {
  dispatchLog,
  MAILBOX,
  messageSentLog,
  rpcReceipt,
  transferLogs,
  txHash,
} from '../helpers/fixtures/builders.ts';
import { httpRequest, postJson, type RawResponse } from '../helpers/harness/http.ts';
import { startApi, startRelayerServer } from '../helpers/harness/server.ts';

const LOOPBACK_LISTEN = new URL('../helpers/harness/loopback-listen.ts', import.meta.url).pathname;
const ADMIN_TOKEN = 'an-admin-token-of-some-length';

let rpc: FaultyRpcServer;
let nextTx = 0x9000;

before(async () => {
  rpc = await startFaultyRpcServer(new Map(), { mailbox: MAILBOX });
});
after(() => rpc.close());

function minedTx(logs = transferLogs(1, { nonce: nextTx })): string {
  const hash = txHash(nextTx++);
  rpc.table.set(hash, rpcReceipt(hash, logs));
  return hash;
}

/** Moves the fake clock on until `pending` settles, so a wait that should not happen ends as a 408, not a hang. */
async function settle<T>(clock: ReturnType<typeof createFakeClock>, pending: Promise<T>): Promise<T> {
  let done = false;
  void pending.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 100 && !done; i++) {
    await clock.advance(500);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return pending;
}

function withRpcUrls(rpcUrls: string[], overrides: Parameters<typeof testConfig>[0] = {}): RelayerConfig {
  const base = testConfig(overrides);
  return { ...base, chains: { ...base.chains, ethereum: { ...base.chains.ethereum, rpcUrls } } };
}

describe('start-up warning for a non-loopback bind (SECURITY.md#secrets-and-internals-in-answers-and-logs)', () => {
  async function startBin(t: TestContext, args: string[], config: Record<string, unknown>): Promise<string> {
    // The preload sends every listen() to 127.0.0.1, whatever host the server was told.
    const server = await startRelayerServer(t, args, {
      nodeArgs: ['--import', LOOPBACK_LISTEN],
      config: {
        chains: fileChains(rpc.endpoint('ok'), null),
        db: ':memory:',
        ...config,
      },
    });
    assert.equal((await httpRequest(server.url, { path: '/relay' })).text, 'up');
    await server.waitForLine(/"msg":"started"/);
    assert.equal(await server.stop(), 0, server.output());
    return server.output();
  }

  const warned = (output: string) =>
    output
      .split('\n')
      .filter((line) => line.includes('"level":"warn"') && /non-loopback/.test(line) && /adminToken/.test(line));

  test('docs/design.md#http-surface, SECURITY.md#secrets-and-internals-in-answers-and-logs: --host 0.0.0.0 without a token warns', async (t) => {
    // Without server.adminToken the server logs one warning naming the host.
    const lines = warned(await startBin(t, ['--host', '0.0.0.0'], {}));
    assert.equal(lines.length, 1);
    assert.equal(JSON.parse(lines[0]).host, '0.0.0.0');
  });

  test('SECURITY.md#hostile-recipients-delivery: a public host without relayApi.clientRateLimit warns once at start', async (t) => {
    // docs/worker-configuration.md#stated-gas-policy: one client could take the whole POST /relay budget.
    const output = await startBin(t, ['--host', '0.0.0.0'], { server: { adminToken: ADMIN_TOKEN } });
    const lines = output
      .split('\n')
      .filter((line) => line.includes('"level":"warn"'))
      .map((line) => JSON.parse(line));
    assert.deepEqual(
      lines.map((l) => [l.msg, l.host]),
      [
        [
          'bound to a non-loopback address without relayApi.clientRateLimit: one client can take the whole POST /relay budget',
          '0.0.0.0',
        ],
      ],
    );
  });

  test('SECURITY.md#secrets-and-internals-in-answers-and-logs: a public host with an admin token, or loopback, warns nothing', async (t) => {
    // --host 0.0.0.0 with an admin token and a per-client limit, and the loopback default without either.
    const withToken = await startBin(t, ['--host', '0.0.0.0'], {
      server: { adminToken: ADMIN_TOKEN },
      relayApi: { clientRateLimit: { burst: 10, perMinute: 10 } },
    });
    assert.equal(warned(withToken).length, 0);
    assert.doesNotMatch(withToken, /"level":"warn"/);
    assert.doesNotMatch(withToken, new RegExp(ADMIN_TOKEN), 'the token itself is never printed');
    const loopback = await startBin(t, [], {});
    assert.doesNotMatch(loopback, /"level":"warn"/);
  });
});

describe('RPC URLs carry API keys: never in responses, metrics or logs (SECURITY.md#secrets-and-internals-in-answers-and-logs)', () => {
  // See also docs/design.md#receipt.
  const SECRET = /secret/i;

  async function run(
    t: TestContext,
    rpcUrls: string[],
    drive: (url: string, clock: ReturnType<typeof createFakeClock>) => Promise<RawResponse[]>,
  ) {
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', write: (line) => lines.push(line) });
    const { url, clock } = await startApi(t, { config: withRpcUrls(rpcUrls), logger });
    const responses = await drive(url, clock);
    const metrics = await httpRequest(url, { path: '/metrics' });
    return { responses, metrics: metrics.text, log: lines.join(''), clock };
  }

  function assertClean(text: string, where: string): void {
    assert.doesNotMatch(text, SECRET, `${where} holds no part of a key`);
    assert.doesNotMatch(text, /apikey|\/v3\/|user-|pw-/i, `${where} holds no URL path, query or userinfo`);
  }

  test('keys in path and query, echoed back by hostile endpoints (500 body, JSON-RPC error): the relay fails over, nothing leaks', async (t) => {
    const keyed = (fault: 'rpc-error' | 'http500' | 'http429' | 'ok') =>
      rpc.endpoint(fault, `/v3/KEY-secret-${fault}?apikey=QUERY-secret-${fault}`);
    const hash = minedTx();
    const seen = rpc.paths.length;
    const { responses, metrics, log } = await run(
      t,
      [keyed('rpc-error'), keyed('http500'), keyed('http429'), keyed('ok')],
      async (url) => [await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash })],
    );
    assert.equal(responses[0].status, 200, responses[0].text);
    // The keys did travel to the endpoints (the URL is used whole), and came back in their answers.
    assert.ok(rpc.paths.slice(seen).some((p) => p.includes('KEY-secret-ok') && p.includes('apikey=QUERY-secret-ok')));
    for (const res of responses) assertClean(res.text + JSON.stringify(res.headers), 'a response');
    assertClean(metrics, '/metrics');
    assertClean(log, 'the log');
    // docs/operations.md#metrics: the three failing endpoints by position, never by host or port.
    for (const position of [0, 1, 2])
      assert.match(
        metrics,
        new RegExp(`receipt_fetch_failures_total\\{chain="ethereum",rpc="ethereum#${position}"\\} 1\\n`),
      );
    assert.ok(!metrics.includes(new URL(rpc.url).host), "the endpoints' host and port");
  });

  test('every endpoint failing: the 408 names the chain, not a URL; the log and metrics stay clean', async (t) => {
    const hash = minedTx();
    const seen = rpc.requests('rpc-error');
    const { responses, metrics, log } = await run(
      t,
      [
        rpc.endpoint('rpc-error', '/KEY-secret-a?apikey=QUERY-secret-a'),
        'http://user-secret:pw-secret@127.0.0.1:9/KEY-secret-b',
      ],
      async (url, clock) => {
        const pending = postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
        await rpc.waitForRequest('rpc-error', seen + 1);
        return [await settle(clock, pending)];
      },
    );
    assert.equal(responses[0].status, 408, responses[0].text);
    assert.match(responses[0].json().message, /RPC endpoints of chain ethereum failed/);
    for (const res of responses) assertClean(res.text + JSON.stringify(res.headers), 'the 408');
    assertClean(metrics, '/metrics');
    assertClean(log, 'the log');
  });

  test('credentials in an RPC URL are sent as HTTP Basic auth (fetch refuses URLs with credentials), and not leaked', async (t) => {
    const hash = minedTx();
    const seen = rpc.authorizations.length;
    const url = rpc.endpoint('ok', '/KEY-secret').replace('http://', 'http://user-secret:p%40ss-secret@');
    const { responses, log, metrics } = await run(t, [url], async (base, clock) => [
      await settle(clock, postJson(base, '/relay', { origin_chain: 'ethereum', tx_hash: hash })),
    ]);
    assert.equal(responses[0].status, 200, responses[0].text);
    assert.equal(rpc.authorizations[seen], `Basic ${Buffer.from('user-secret:p@ss-secret').toString('base64')}`);
    assertClean(log, 'the log');
    assertClean(metrics, '/metrics');
  });
});

describe('no stack, cause or internals in any answer (docs/design.md#errors)', () => {
  test('an exception in the queue answers a fixed body; the log has one line, no stack', async (t) => {
    // The exception: a multi-line message, a stack, a non-Error. The body: store_unavailable or internal_error.
    const UNAVAILABLE =
      '{"reason":"store_unavailable","message":"the store is unavailable; nothing was stored, retry shortly"}';
    const INTERNAL = '{"reason":"internal_error","message":"internal error"}';
    const thrown: Array<[unknown, number, string]> = [
      [
        Object.assign(new Error('database is locked\n    at enqueue (/srv/relayer/lib/sqlite/outbox.ts:42:7)'), {
          code: 'ERR_SQLITE_ERROR',
          errcode: 5,
        }),
        503,
        UNAVAILABLE,
      ],
      [
        Object.assign(new Error('disk I/O error\n    at enqueue (/srv/relayer/lib/sqlite/outbox.ts:42:7)'), {
          code: 'SQLITE_IOERR',
        }),
        500,
        INTERNAL,
      ],
      ['a string', 500, INTERNAL],
      [
        {
          toString: () => {
            throw new Error('hostile toString');
          },
        },
        500,
        INTERNAL,
      ],
    ];
    for (const [value, status, body] of thrown) {
      const clock = createFakeClock();
      const table = new Map();
      const hash = txHash(nextTx++);
      table.set(hash, rpcReceipt(hash, transferLogs(1)));
      const lines: string[] = [];
      const { url, server } = await startApi(t, {
        clock,
        fetch: fakeRpcFetch(table).fetch,
        outbox: {
          enqueue: () => {
            throw value;
          },
        },
        logger: createLogger({ level: 'debug', write: (line) => lines.push(line) }),
      });
      const res = await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(res.status, status);
      assert.equal(res.text, body);
      assert.equal(res.headers['x-powered-by'], undefined);
      assert.equal(res.headers.server, undefined);
      const log = lines.join('');
      assert.doesNotMatch(log, /\n\s+at |outbox\.ts:42|hostile toString/, 'no stack frame or later line of a message');
      assert.equal(lines.filter((l) => JSON.parse(l).level === 'error').length, 1, 'one error line');
      assert.equal(server.api.pipeline.dedup.size(), 0);
    }
  });
});

describe('look-alike events from foreign contracts (docs/design.md#extraction-and-eligibility)', () => {
  const FOREIGN = '0x' + 'ee'.repeat(20);

  async function relayLogs(t: TestContext, logs: ReturnType<typeof transferLogs>): Promise<RawResponse> {
    const { url } = await startApi(t, { config: withRpcUrls([rpc.endpoint('ok')]) });
    return await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: minedTx(logs) });
  }

  test('copies of a real transfer emitted by a foreign contract add nothing: exactly the real message is relayed', async (t) => {
    const real = transferLogs(1, { nonce: 1 });
    const res = await relayLogs(t, [
      ...real,
      { ...real[0], address: FOREIGN },
      { ...real[1], address: FOREIGN },
      dispatchLog(FOREIGN, { nonce: 2 }),
    ]);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.json().messages.map((m: { nonce: number }) => m.nonce),
      [1],
    );
  });

  test('a foreign MessageSent cannot make a Mailbox Dispatch eligible; a foreign Dispatch cannot ride on a real MessageSent', async (t) => {
    const a = await relayLogs(t, [{ ...messageSentLog(), address: FOREIGN }, dispatchLog(MAILBOX, { nonce: 3 })]);
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(a.json().messages, []);
    const b = await relayLogs(t, [messageSentLog(), dispatchLog(FOREIGN, { nonce: 4 })]);
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.json().messages, []);
  });

  test('a log the Mailbox cannot have emitted is refused as a lying RPC: 500, nothing enqueued', async (t) => {
    // The log names an origin of another chain.
    const res = await relayLogs(t, [messageSentLog(), dispatchLog(MAILBOX, { origin: 8453 })]);
    assert.equal(res.status, 500);
    assert.equal(res.json().reason, 'internal_error');
  });
});

describe('dedup cache exhaustion (docs/design.md#deduplication)', () => {
  /** A clock the test sets by hand; timers never fire (the dedup sweep only reclaims memory). */
  function manualClock(): Clock & { set(ms: number): void } {
    let now = 0;
    return { now: () => now, set: (ms) => (now = ms), setTimeout: () => 0, clearTimeout() {} };
  }

  /** Six minutes of a request every 50 ms, each for a different mined transaction. */
  async function flood(config: RelayerConfig) {
    const clock = manualClock();
    const pipeline = createRelayPipeline({
      config,
      queue: createMemoryOutbox({ clock }),
      clock,
      fetchReceipt: async () => ({ success: true, logs: [] }),
    });
    const counts: Record<string, number> = {};
    let maxSize = 0;
    for (let t = 0, n = 0; t <= 6 * 60_000; t += 50, n++) {
      clock.set(t);
      let outcome = 'ok';
      try {
        await pipeline.relay({ origin_chain: 'ethereum', tx_hash: txHash(n) });
      } catch (error) {
        outcome = (error as { code: string }).code;
      }
      counts[outcome] = (counts[outcome] ?? 0) + 1;
      maxSize = Math.max(maxSize, await pipeline.dedup.size());
    }
    return { counts, maxSize };
  }

  test('with the defaults the global rate limit keeps live entries below the capacity: never cache_full', async () => {
    // burst + perMinute x window (600) < capacity (10 000).
    const { counts, maxSize } = await flood(testConfig());
    assert.equal(counts.cache_full, undefined);
    assert.ok(counts.rate_limited > 0, 'the flood was over the rate limit');
    assert.ok(maxSize <= 100 + 100 * 5, `at most 600 live entries (saw ${maxSize})`);
    assert.ok(maxSize >= 500, `the cache did fill to the bound (saw ${maxSize})`);
  });

  test('control: a capacity below that bound does fill, and then answers cache_full (so the test above can fail)', async () => {
    const { counts, maxSize } = await flood(testConfig({ relayApi: { dedupCapacity: 200 } }));
    assert.ok(counts.cache_full > 0);
    assert.equal(maxSize, 200);
  });
});
