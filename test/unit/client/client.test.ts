/**
 * relayer-api/client (docs/design.md#client) against the real server over loopback, on every outbox
 * engine: the server and the client share one fake clock, so Retry-After waits, receipt timeouts
 * and polling intervals pass when the test moves time, never by waiting. The client's fetch is the
 * global fetch, wrapped only to record what went over the wire.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { createRelayClient, RelayApiError, type RelayClientOptions } from '../../../lib/client/index.ts';
import { createRelayServer } from '../../../lib/http/server.ts';
import type { Outbox } from '../../../lib/outbox/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock, type FakeClock } from '../../helpers/fakes/clock.ts';
import { OUTBOX_ENGINES as ENGINES, type Engine } from '../../helpers/harness/engines.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import {
  hyperlaneMessage,
  messageId,
  messageSentLog,
  rpcReceipt,
  transferLogs,
  txHash,
} from '../../helpers/fixtures/builders.ts';
import { InvalidArgumentError, OutOfRangeError } from '../../../lib/errors/classes.ts';

const DEST_TX = '0x' + 'de'.repeat(32);

/** One request the client sent and the answer it got, at fake time `at`. */
interface Exchange {
  method: string;
  path: string;
  body?: string;
  at: number;
  status?: number;
  retryAfter?: number;
  requestId?: string;
}

interface Harness {
  url: string;
  clock: FakeClock;
  table: ReceiptTable;
  outbox: Outbox;
  wire: Exchange[];
  client(options?: Partial<RelayClientOptions>): ReturnType<typeof createRelayClient>;
  /** Requests the server is answering right now. */
  busy(): boolean;
  /** Calls the server made to the outbox that have not settled yet. */
  storeBusy(): boolean;
  /** Puts a mined transaction with `count` transfers (nonces from `nonce`) in the RPC's table. */
  mined(n: number, count?: number, nonce?: number): string;
  close(): Promise<void>;
}

type ConfigOverrides = Parameters<typeof testConfig>[0];

/** A wall-time bound no test of this file reaches: 10 minutes. */
const OUT_OF_PLAY_MS = 600_000;

/** `outbox` with a count of its calls whose promise has not settled yet. */
function countingCalls(outbox: Outbox, calls: { pending: number }): Outbox {
  return new Proxy(outbox, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = value.apply(target, args);
        if (result instanceof Promise) {
          calls.pending++;
          const settled = () => calls.pending--;
          result.then(settled, settled);
        }
        return result;
      };
    },
  });
}

async function start(engine: Engine, overrides: ConfigOverrides = {}): Promise<Harness> {
  const clock = createFakeClock();
  const table: ReceiptTable = new Map();
  const { outbox, close } = await engine.open(clock);
  const storeCalls = { pending: 0 };
  const server = createRelayServer({
    config: testConfig(overrides),
    outbox: countingCalls(outbox, storeCalls),
    clock,
    fetch: fakeRpcFetch(table).fetch,
    // The server's guards against slow clients run on wall time (10 s for the headers, 30 s for a
    // request, 5 s idle keep-alive; test/unit/http/hostile.test.ts checks them): in a loaded shared
    // process a stall past them turned a 429 into Node's bare 408 or a dropped connection. Here
    // only the fake clock decides, so they are set past the describe's 60 s timeout.
    requestTimeoutMs: OUT_OF_PLAY_MS,
    headersTimeoutMs: OUT_OF_PLAY_MS,
    keepAliveTimeoutMs: OUT_OF_PLAY_MS,
  });
  const { url } = await server.listen(0, '127.0.0.1');
  const wire: Exchange[] = [];
  const recordingFetch = async (input: string, init: RequestInit): Promise<Response> => {
    const exchange: Exchange = {
      method: String(init.method),
      path: input.slice(url.length),
      body: init.body as string | undefined,
      at: clock.now(),
    };
    wire.push(exchange);
    const response = await fetch(input, init);
    exchange.status = response.status;
    const retryAfter = response.headers.get('retry-after');
    if (retryAfter !== null) exchange.retryAfter = Number(retryAfter);
    exchange.requestId = response.headers.get('x-request-id') ?? undefined;
    return response;
  };
  return {
    url,
    clock,
    table,
    outbox,
    wire,
    busy: () => server.api.inFlight() > 0,
    storeBusy: () => storeCalls.pending > 0,
    client: (options = {}) => createRelayClient({ baseUrl: url, fetch: recordingFetch, clock, ...options }),
    mined(n, count = 1, nonce = n * 100) {
      const hash = txHash(n);
      table.set(hash, rpcReceipt(hash, transferLogs(count, { nonce })));
      return hash;
    },
    async close() {
      await server.close(100);
      await close();
    },
  };
}

interface Stepped {
  clock: FakeClock;
  busy?: () => boolean;
  storeBusy?: () => boolean;
}

/**
 * Waits until the server is not answering, so that a fake step never races real time: a store on
 * another thread or socket (SQLite's worker, PostgreSQL) answers in real time. A request waiting on
 * the fake clock itself (a receipt not mined yet, polled until the receipt timeout) is answering
 * too, but only a step moves it on: with no store call under way the wait is a few turns, not the
 * 10 000 that a store call may take.
 */
async function quiet(h: Stepped): Promise<void> {
  for (let turn = 0; h.busy?.() && turn < (h.storeBusy?.() ? 10_000 : 100); turn++)
    await new Promise((resolve) => setImmediate(resolve));
}

/** Advances fake time by `ms` in steps, never while the server is answering (see quiet). */
async function advance(h: Stepped, ms: number, stepMs = 50): Promise<void> {
  for (let left = ms; left > 0; left -= stepMs) {
    await quiet(h);
    await h.clock.advance(Math.min(stepMs, left));
  }
}

/** Advances fake time in steps until `promise` settles (real loopback I/O runs in between). */
async function settle<T>(h: Stepped, promise: Promise<T>, stepMs = 50): Promise<T> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; !done && i < 20_000; i++) {
    await quiet(h);
    await h.clock.advance(stepMs);
  }
  assert.ok(done, 'the call settled');
  return promise;
}

const idOf = (nonce: number) => messageId(hyperlaneMessage({ nonce, origin: 1, destination: 8453 }));
const posts = (wire: Exchange[], hash?: string) =>
  wire.filter((e) => e.method === 'POST' && (hash === undefined || e.body?.includes(hash)));

function assertApiError(error: unknown, status: number, reason: string): RelayApiError {
  assert.ok(error instanceof RelayApiError, `a RelayApiError, got ${error}`);
  assert.equal(error.status, status);
  assert.equal(error.code, reason);
  assert.equal(error.code, reason);
  return error;
}

for (const engine of ENGINES) {
  describe(`relayer-api/client against the server: ${engine.name}`, { timeout: 60_000 }, () => {
    test('docs/design.md#client: relay() posts the transaction and resolves with the accepted messages', async () => {
      const h = await start(engine);
      try {
        const hash = h.mined(1, 2, 50);
        const result = await settle(h, h.client().relay({ origin_chain: 'ethereum', tx_hash: hash }));
        assert.deepEqual(result, {
          messages: [50, 51].map((nonce) => ({ message_id: idOf(nonce), origin: 1, destination: 8453, nonce })),
          alreadySubmitted: false,
        });
        assert.equal(h.wire.length, 1);
        assert.deepEqual(JSON.parse(h.wire[0].body!), { origin_chain: 'ethereum', tx_hash: hash });
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: a 429 storm (burst 3, 1 token/s): every call gets through, each retry waits its Retry-After', async () => {
      const h = await start(engine, { relayApi: { rateLimit: { burst: 3, perMinute: 60 } } });
      try {
        const client = h.client({ maxAttempts: 20, maxTotalMs: 120_000 });
        const hashes = Array.from({ length: 8 }, (_, i) => h.mined(10 + i));
        const results = await settle(
          h,
          Promise.all(hashes.map((tx_hash) => client.relay({ origin_chain: 'ethereum', tx_hash }))),
        );
        assert.deepEqual(
          results.map((r) => r.messages[0].message_id),
          hashes.map((_, i) => idOf((10 + i) * 100)),
        );
        const limited = h.wire.filter((e) => e.status === 429);
        assert.ok(limited.length >= 5, `the storm was rate limited (${limited.length} answers 429)`);
        for (const hash of hashes) {
          const tries = posts(h.wire, hash);
          assert.equal(tries.at(-1)!.status, 200);
          for (let i = 1; i < tries.length; i++) {
            assert.equal(tries[i - 1].status, 429);
            assert.ok(tries[i - 1].retryAfter! >= 1);
            assert.ok(
              tries[i].at - tries[i - 1].at >= tries[i - 1].retryAfter! * 1_000,
              `${hash}: try ${i + 1} waited the Retry-After`,
            );
          }
        }
        assert.equal(await h.outbox.depth(), 8);
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: retries are bounded: the callers that run out get the 429 with retryAfterSeconds', async () => {
      // Five callers, one token per second, two tries each: the losers get the 429 with retryAfterSeconds and
      // the request id.
      const h = await start(engine, { relayApi: { rateLimit: { burst: 1, perMinute: 60 } } });
      try {
        const client = h.client({ maxAttempts: 2, maxTotalMs: 600_000 });
        const hashes = Array.from({ length: 5 }, (_, i) => h.mined(20 + i));
        const outcomes = await settle(
          h,
          Promise.allSettled(hashes.map((tx_hash) => client.relay({ origin_chain: 'ethereum', tx_hash }))),
        );
        assert.equal(
          outcomes.filter((o) => o.status === 'fulfilled').length,
          2,
          'one token at first, one a second later',
        );
        for (const [i, outcome] of outcomes.entries()) {
          const tries = posts(h.wire, hashes[i]);
          if (outcome.status === 'fulfilled') continue;
          const apiError = assertApiError(outcome.reason, 429, 'rate_limited');
          assert.deepEqual(
            tries.map((e) => e.status),
            [429, 429],
            'maxAttempts tries, no more',
          );
          assert.equal(apiError.retryAfterSeconds, tries[1].retryAfter);
          assert.ok(apiError.retryAfterSeconds! >= 1);
          assert.equal(apiError.requestId, tries[1].requestId);
          assert.match(apiError.requestId!, /^[0-9a-f-]{36}$/);
        }
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: a Retry-After longer than the time budget left is not waited: the error comes at once', async () => {
      const h = await start(engine, { relayApi: { rateLimit: { burst: 1, perMinute: 1 } } });
      try {
        const client = h.client({ maxTotalMs: 5_000 });
        await settle(h, client.relay({ origin_chain: 'ethereum', tx_hash: h.mined(1) }));
        const before = h.clock.now();
        const error = await client.relay({ origin_chain: 'ethereum', tx_hash: h.mined(2) }).catch((e: unknown) => e);
        const apiError = assertApiError(error, 429, 'rate_limited');
        assert.ok(apiError.retryAfterSeconds! > 5, `Retry-After ${apiError.retryAfterSeconds} s`);
        assert.equal(h.clock.now(), before, 'settled without fake time passing');
        assert.equal(posts(h.wire, txHash(2)).length, 1);
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: a 408 is retried; it succeeds once the transaction is mined', async () => {
      // A 408: the RPC does not have the transaction yet.
      const h = await start(engine, { relayApi: { receiptTimeoutSeconds: 2 } });
      try {
        const hash = txHash(5);
        const call = h.client().relay({ origin_chain: 'ethereum', tx_hash: hash });
        // The first try waits for a receipt that never comes: 408 after 2 s of fake time.
        for (let i = 0; i < 2_000 && !posts(h.wire).some((e) => e.status === 408); i++) await h.clock.advance(50);
        assert.equal(posts(h.wire)[0].status, 408);
        h.mined(5);
        const result = await settle(h, call);
        assert.equal(result.messages[0].message_id, idOf(500));
        const tries = posts(h.wire);
        assert.deepEqual(
          tries.map((e) => e.status),
          [408, 200],
        );
        assert.ok(tries[1].at - tries[0].at >= tries[0].retryAfter! * 1_000, 'waited the Retry-After of the 408');
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: a transaction that never mines: maxAttempts 408s, then the timeout error', async () => {
      const h = await start(engine, { relayApi: { receiptTimeoutSeconds: 1 } });
      try {
        const error = await settle(
          h,
          h.client({ maxAttempts: 3 }).relay({ origin_chain: 'ethereum', tx_hash: txHash(6) }),
        ).catch((e: unknown) => e);
        const apiError = assertApiError(error, 408, 'timeout');
        assert.ok(apiError.retryAfterSeconds! >= 1);
        assert.deepEqual(
          posts(h.wire).map((e) => e.status),
          [408, 408, 408],
        );
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: duplicate_tx is never retried; relay() answers it from GET /relay?origin_chain=&tx_hash=', async () => {
      const h = await start(engine);
      try {
        const hash = h.mined(7, 2, 70);
        const first = await settle(h, h.client().relay({ origin_chain: 'ethereum', tx_hash: hash }));
        const again = await settle(
          h,
          h.client().relay({ origin_chain: 'ethereum', tx_hash: hash.toUpperCase().replace('0X', '0x') }),
        );
        assert.deepEqual(again, { messages: first.messages, alreadySubmitted: true });
        assert.deepEqual(
          h.wire.map((e) => [e.method, e.status]),
          [
            ['POST', 200],
            ['POST', 429],
            ['GET', 200],
          ],
        );

        const error = await h
          .client({ lookupDuplicates: false })
          .relay({ origin_chain: 'ethereum', tx_hash: hash })
          .catch((e: unknown) => e);
        const apiError = assertApiError(error, 429, 'duplicate_tx');
        assert.ok(apiError.retryAfterSeconds! > 200, 'Retry-After is the rest of the dedup window');
        assert.equal(h.wire.length, 4, 'one POST, no retry, no lookup');
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: duplicate_tx of a transaction with nothing accepted is thrown', async () => {
      // The lookup cannot tell "none" from "in flight".
      const h = await start(engine);
      try {
        const hash = txHash(8);
        h.table.set(hash, rpcReceipt(hash, [...transferLogs(2), messageSentLog()])); // not eligible: 200 []
        assert.deepEqual(await settle(h, h.client().relay({ origin_chain: 'ethereum', tx_hash: hash })), {
          messages: [],
          alreadySubmitted: false,
        });
        const error = await settle(h, h.client().relay({ origin_chain: 'ethereum', tx_hash: hash })).catch(
          (e: unknown) => e,
        );
        assertApiError(error, 429, 'duplicate_tx');
        assert.deepEqual(
          h.wire.map((e) => [e.method, e.status]),
          [
            ['POST', 200],
            ['POST', 429],
            ['GET', 200],
          ],
        );
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: a 400 is never retried', async () => {
      const h = await start(engine);
      try {
        const client = h.client();
        const unknownChain = await client
          .relay({ origin_chain: 'nowhere', tx_hash: txHash(1) })
          .catch((e: unknown) => e);
        assert.match(assertApiError(unknownChain, 400, 'invalid_request').message, /nowhere/);
        assertApiError(await client.message('0x1234').catch((e: unknown) => e), 400, 'invalid_request');
        assertApiError(await client.messagesOfTx('ethereum', '0x12').catch((e: unknown) => e), 400, 'invalid_request');
        assert.equal(h.wire.length, 3);
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client: an AbortSignal cancels a call waiting out a Retry-After; an aborted signal sends nothing', async () => {
      const h = await start(engine, { relayApi: { rateLimit: { burst: 1, perMinute: 1 } } });
      try {
        const client = h.client({ maxTotalMs: 600_000 });
        await settle(h, client.relay({ origin_chain: 'ethereum', tx_hash: h.mined(1) }));
        const controller = new AbortController();
        const call = client.relay({ origin_chain: 'ethereum', tx_hash: h.mined(2) }, { signal: controller.signal });
        for (let i = 0; i < 200 && posts(h.wire, txHash(2)).length === 0; i++) await h.clock.flush();
        await h.clock.advance(1_000); // the 429 came; the client is waiting
        assert.equal(posts(h.wire, txHash(2))[0].status, 429);
        controller.abort();
        await assert.rejects(call, (e: Error) => e.name === 'AbortError');
        await h.clock.advance(120_000);
        assert.equal(posts(h.wire, txHash(2)).length, 1, 'no try after the abort');

        const sent = h.wire.length;
        await assert.rejects(
          client.message(idOf(1), { signal: AbortSignal.abort() }),
          (e: Error) => e.name === 'AbortError',
        );
        assert.equal(h.wire.length, sent);
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#http-surface, #client: message() and messagesOfTx() read the status endpoints', async () => {
      // An unknown id is not_found at once.
      const h = await start(engine);
      try {
        const client = h.client();
        const hash = h.mined(9, 2, 90);
        const { messages } = await settle(h, client.relay({ origin_chain: 'ethereum', tx_hash: hash }));
        const one = await client.message(messages[1].message_id);
        assert.equal(one.message_id, idOf(91));
        assert.equal(one.status, 'queued');
        assert.equal(one.tx_hash, hash);
        assert.deepEqual(
          (await client.messagesOfTx('ethereum', hash)).map((m) => m.nonce),
          [90, 91],
        );
        assert.deepEqual(await client.messagesOfTx('ethereum', txHash(99)), []);
        const error = assertApiError(await client.message(idOf(12345)).catch((e: unknown) => e), 404, 'not_found');
        assert.equal(error.requestId, h.wire.at(-1)!.requestId);
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client, docs/outbox.md#message-lifecycle: waitForDelivery polls until delivered, reporting changes', async () => {
      // It polls until a worker marks the message delivered, reporting each change.
      const h = await start(engine);
      try {
        const client = h.client();
        const { messages } = await settle(h, client.relay({ origin_chain: 'ethereum', tx_hash: h.mined(3) }));
        const id = messages[0].message_id;
        const updates: string[] = [];
        let done = false;
        const wait = client.waitForDelivery(id, {
          pollIntervalMs: 1_000,
          onUpdate: (m) => updates.push(`${m.status}/${m.attempts}`),
        });
        wait.finally(() => (done = true)).catch(() => {});
        await advance(h, 2_500);
        const [claimed] = await h.outbox.claim(1, 60_000);
        await advance(h, 2_000);
        await h.outbox.markDelivered(id, { destinationTxHash: DEST_TX, lease: claimed.lease });
        assert.equal(done, false, 'still waiting until the next poll');
        const delivered = await settle(h, wait);
        assert.equal(delivered.status, 'delivered');
        assert.equal(delivered.destination_tx_hash, DEST_TX);
        assert.deepEqual(updates, ['queued/0', 'delivering/1', 'delivered/1']);
        const gets = h.wire.filter((e) => e.method === 'GET');
        assert.ok(gets.length >= 5, `${gets.length} polls`);
        for (let i = 1; i < gets.length; i++)
          assert.ok(gets[i].at - gets[i - 1].at >= 1_000, 'polls are pollIntervalMs apart');
      } finally {
        await h.close();
      }
    });

    test('docs/design.md#client, docs/outbox.md#message-lifecycle: waitForDelivery ends on a failed message or at its deadline', async () => {
      // It gives up with deadline_exceeded; an unknown id throws at once.
      const h = await start(engine);
      try {
        const client = h.client();
        const { messages } = await settle(h, client.relay({ origin_chain: 'ethereum', tx_hash: h.mined(4, 2, 40) }));
        const [claimed] = await h.outbox.claim(1, 60_000);
        assert.equal(
          await h.outbox.markFailed(messages[0].message_id, {
            error: 'recipient reverts',
            final: true,
            lease: claimed.lease,
          }),
          true,
        );
        const failed = await settle(h, client.waitForDelivery(messages[0].message_id, { pollIntervalMs: 1_000 }));
        assert.equal(failed.status, 'failed');
        assert.equal(failed.last_error, 'recipient reverts');

        const start = h.clock.now();
        const late = await settle(
          h,
          client.waitForDelivery(messages[1].message_id, { pollIntervalMs: 1_000, timeoutMs: 5_000 }),
        ).catch((e: unknown) => e);
        assert.match(assertApiError(late, 0, 'deadline_exceeded').message, /still queued/);
        assert.ok(h.clock.now() - start <= 5_000 + 100, 'gave up at the deadline');

        const sent = h.wire.length;
        assertApiError(await client.waitForDelivery(idOf(4242)).catch((e: unknown) => e), 404, 'not_found');
        assert.equal(h.wire.length, sent + 1);
      } finally {
        await h.close();
      }
    });
  });
}

describe('relayer-api/client without the API behind it', { timeout: 60_000 }, () => {
  test('docs/design.md#client: nothing listening: network_error after maxAttempts tries with a doubling backoff', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const clock = createFakeClock();
    const at: number[] = [];
    const client = createRelayClient({
      baseUrl: `http://127.0.0.1:${port}/`,
      clock,
      maxAttempts: 4,
      backoffMs: 500,
      fetch: (input, init) => (at.push(clock.now()), fetch(input, init)),
    });
    const error = await settle({ clock }, client.message(idOf(1))).catch((e: unknown) => e);
    assertApiError(error, 0, 'network_error');
    assert.equal(at.length, 4);
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    for (const [i, gap] of gaps.entries()) assert.ok(gap >= 500 * 2 ** i, `wait ${i + 1}: ${gap} ms`);
  });

  test("docs/design.md#client: an answer that is not the API's (a proxy's HTML 502) is bad_response, not retried", async () => {
    let hits = 0;
    const proxy = createServer((_req, res) => {
      hits++;
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>');
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const client = createRelayClient({
        baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
        clock: createFakeClock(),
      });
      assertApiError(
        await client.relay({ origin_chain: 'ethereum', tx_hash: txHash(1) }).catch((e: unknown) => e),
        502,
        'bad_response',
      );
      assert.equal(hits, 1);
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  test('docs/design.md#client: the time budget also ends a request in flight (deadline_exceeded)', async () => {
    const clock = createFakeClock();
    const hanging = createServer(() => {}); // never answers
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const client = createRelayClient({
        baseUrl: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`,
        clock,
        maxTotalMs: 3_000,
      });
      const error = await settle({ clock }, client.message(idOf(1))).catch((e: unknown) => e);
      assertApiError(error, 0, 'deadline_exceeded');
    } finally {
      hanging.closeAllConnections();
      await new Promise<void>((resolve) => hanging.close(() => resolve()));
    }
  });

  test('option checks: a missing baseUrl or a non-positive limit is refused at creation', () => {
    assert.throws(() => createRelayClient({} as RelayClientOptions), InvalidArgumentError);
    assert.throws(() => createRelayClient({ baseUrl: '', maxAttempts: 0 }), OutOfRangeError);
    assert.throws(() => createRelayClient({ baseUrl: '', maxTotalMs: Number.NaN }), OutOfRangeError);
  });
});
