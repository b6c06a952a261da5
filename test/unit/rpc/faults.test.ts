/**
 * POST /relay against JSON-RPC endpoints that fail in every way a real one does
 * (docs/design.md#receipt): hang, reset, 5xx, 429, invalid JSON, JSON-RPC error, wrong id, a
 * receipt for another transaction, malformed logs, an endless body, a body that stalls halfway.
 * Each case runs twice: the faulty endpoint alone (the documented outcome: 408 timeout, or 500
 * internal_error for a malformed Mailbox log) and the faulty endpoint first with a good one
 * behind it (fail-over: 200). Every failure must release the dedup reservation
 * (docs/design.md#deduplication).
 *
 * The endpoints are real HTTP servers on 127.0.0.1, reached with the global fetch and again with
 * the keep-alive node:http transport relayer-server injects (the same suite, the same outcomes);
 * time is a fake clock, so the 3 s attempt timeout and the 10 s deadline pass without waiting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock, type FakeClock } from '../../helpers/fakes/clock.ts';
import { startFaultyRpcServer, type Fault, type FaultyRpcServer } from '../../helpers/fakes/faulty-rpc.ts';
import { MAILBOX, rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { postJson, type RawResponse } from '../../helpers/harness/http.ts';
import { startApi, type StartedApi } from '../../helpers/harness/server.ts';
import { TRANSPORTS, type TransportCase } from '../../helpers/harness/transports.ts';

let rpc: FaultyRpcServer;
let nextTx = 0x7000;

before(async () => {
  rpc = await startFaultyRpcServer(new Map(), { mailbox: MAILBOX });
});
after(() => rpc.close());

interface Harness extends StartedApi<FakeClock> {
  outbox: ReturnType<typeof createMemoryOutbox>;
  relay(hash: string): Promise<RawResponse>;
}

async function start(
  t: TestContext,
  transport: TransportCase,
  rpcUrls: string[],
  receiptTimeoutSeconds?: number,
): Promise<Harness> {
  const clock = createFakeClock();
  const base = testConfig();
  const config = testConfig({
    chains: { ...base.chains, ethereum: { ...base.chains.ethereum, rpcUrls } },
    ...(receiptTimeoutSeconds === undefined ? {} : { relayApi: { ...base.relayApi, receiptTimeoutSeconds } }),
  });
  const outbox = createMemoryOutbox({ clock });
  const api = await startApi(t, { config, outbox, clock, fetch: transport.fetch(t) });
  return { ...api, outbox, relay: (hash) => api.relay({ origin_chain: 'ethereum', tx_hash: hash }) };
}

/** A mined transaction with one eligible transfer, in the RPC's table. */
function minedTx(): string {
  const hash = txHash(nextTx++);
  rpc.table.set(hash, rpcReceipt(hash, transferLogs(1, { nonce: nextTx })));
  return hash;
}

/** Moves the fake clock forward until `promise` settles (real I/O runs between steps). */
async function drive<T>(clock: FakeClock, promise: Promise<T>, stepMs = 500): Promise<T> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 400 && !settled; i++) {
    await clock.advance(stepMs);
    await delay(1);
  }
  return promise;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await delay(5);
  assert.ok(condition(), what);
}

function failures(h: Harness): number {
  const text = h.server.api.metrics.render();
  const line = text.split('\n').find((l) => l.startsWith('hyperlane_relay_api_receipt_fetch_failures_total{'));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

function assertError(res: RawResponse, status: number, reason: string): void {
  assert.equal(res.status, status, res.text);
  assert.deepEqual(Object.keys(res.json()).sort(), ['message', 'reason']);
  assert.equal(res.json().reason, reason, res.text);
  if (status === 408) assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/);
}

/** Faults that hold the connection: only the attempt timeout (3 s of fake time) moves past them. */
const HOLDING = new Set<Fault>(['hang', 'stall-body']);

interface Case {
  fault: Fault;
  /** What the faulty endpoint alone leads to. */
  alone: { status: number; reason: string; message: RegExp };
  /** Whether a good endpoint after it is reached (fail-over) or the answer is final. */
  failover: boolean;
  /**
   * The receipt deadline when the endpoint is alone (default: the configured 10 s). An endpoint
   * that fails at once is asked again every 500 ms poll, and the outcome (408, each failure counted,
   * the reservation released) is the same after four attempts, in 2 s, as after twenty (on the two
   * transports, some 600 fewer requests in all). `endless` also streams 8 MiB per
   * attempt until the bound cuts it (the bound has its own test below). The faults that hold the
   * connection and `null-result` keep the configured 10 s deadline, which their messages name.
   */
  aloneTimeoutSeconds?: number;
}

const FAILED = /RPC endpoints of chain ethereum failed/;
/** An endpoint that answers each attempt with its fault at once: alone, the 2 s deadline above. */
const failsAtOnce = (fault: Fault): Case => ({
  fault,
  alone: { status: 408, reason: 'timeout', message: FAILED },
  failover: true,
  aloneTimeoutSeconds: 2,
});
const CASES: Case[] = [
  { fault: 'hang', alone: { status: 408, reason: 'timeout', message: FAILED }, failover: true },
  ...(
    [
      'reset',
      'http500',
      'http503',
      'http429',
      'invalid-json',
      'rpc-error',
      'wrong-id',
      'other-tx',
      'bad-log-hex',
    ] as const
  ).map(failsAtOnce),
  {
    fault: 'endless',
    alone: { status: 408, reason: 'timeout', message: FAILED },
    failover: true,
    aloneTimeoutSeconds: 2,
  },
  { fault: 'stall-body', alone: { status: 408, reason: 'timeout', message: FAILED }, failover: true },
  // A well-formed receipt whose Mailbox log is not a valid ABI encoding: the endpoint answered, so
  // there is nothing to fail over from; a real Mailbox cannot emit it, so the RPC lies: 500.
  {
    fault: 'bad-log-abi',
    alone: { status: 500, reason: 'internal_error', message: /malformed message log/ },
    failover: false,
  },
  // null = "not mined yet" (docs/design.md#receipt): poll the first URL again; the second is not
  // asked.
  {
    fault: 'null-result',
    alone: { status: 408, reason: 'timeout', message: /not found within 10 seconds/ },
    failover: false,
  },
];

for (const transport of TRANSPORTS) {
  describe(`${transport.name}: RPC faults, endpoint alone: the documented outcome, reservation released`, () => {
    // The reservation is released as docs/design.md#deduplication says.
    for (const c of CASES) {
      test(`docs/design.md#deduplication: ${c.fault} alone → ${c.alone.status} ${c.alone.reason}; a retry is not duplicate_tx`, async (t) => {
        // The retry is immediate.
        const h = await start(t, transport, [rpc.endpoint(c.fault, '/v3/KEY')], c.aloneTimeoutSeconds);
        const hash = minedTx();
        for (const attempt of [1, 2]) {
          const seen = rpc.requests(c.fault);
          const pending = h.relay(hash);
          await rpc.waitForRequest(c.fault, seen + 1);
          const res = await drive(h.clock, pending);
          assertError(res, c.alone.status, c.alone.reason);
          assert.match(res.json().message, c.alone.message);
          assert.equal(h.server.api.pipeline.dedup.size(), 0, `attempt ${attempt}: reservation released`);
        }
        assert.equal(await h.outbox.depth(), 0, 'nothing enqueued');
        if (c.alone.status === 408 && c.fault !== 'null-result') assert.ok(failures(h) >= 2, 'failures are counted');
        if (HOLDING.has(c.fault)) await until(() => rpc.held() === 0, 'the relayer closed the held connections');
      });
    }
  });

  describe(`${transport.name}: RPC faults, a good endpoint behind: fail-over (docs/design.md#receipt)`, () => {
    for (const c of CASES) {
      const expected = c.failover ? '200 from the next endpoint' : `${c.alone.status} ${c.alone.reason} (no fail-over)`;
      test(`docs/design.md#receipt: ${c.fault} then a good endpoint → ${expected}`, async (t) => {
        const h = await start(t, transport, [rpc.endpoint(c.fault), rpc.endpoint('ok')]);
        const hash = minedTx();
        const seen = rpc.requests(c.fault);
        const good = rpc.requests('ok');
        const pending = h.relay(hash);
        await rpc.waitForRequest(c.fault, seen + 1);
        let res: RawResponse;
        if (!c.failover) {
          res = await drive(h.clock, pending);
          assertError(res, c.alone.status, c.alone.reason);
          assert.equal(rpc.requests('ok'), good, 'the second endpoint is not asked');
          assert.equal(h.server.api.pipeline.dedup.size(), 0, 'reservation released');
          return;
        }
        // Only a held connection needs time to pass: exactly the attempt timeout, no more, so the
        // 10 s deadline is far and the good endpoint answers in real time.
        if (HOLDING.has(c.fault)) await h.clock.advance(3_000);
        res = await pending;
        assert.equal(res.status, 200, res.text);
        assert.equal(res.json().messages.length, 1);
        assert.equal(rpc.requests('ok'), good + 1, 'the good endpoint answered');
        assert.equal(failures(h), 1, 'one failed attempt is counted');
        assert.equal(await h.outbox.depth(), 1);
        assert.equal(h.server.api.pipeline.dedup.size(), 1, 'a success commits the reservation');
        if (HOLDING.has(c.fault)) await until(() => rpc.held() === 0, 'the held connection was closed');
      });
    }
  });

  describe(`${transport.name}: RPC faults: bounded reads`, () => {
    test('docs/design.md#receipt: an endless response is cut at the 8 MiB body bound, the connection closed', async (t) => {
      // The server stays up.
      const h = await start(t, transport, [rpc.endpoint('endless'), rpc.endpoint('ok')]);
      const closedBefore = rpc.endlessClosed();
      const bytesBefore = rpc.endlessBytes();
      const res = await h.relay(minedTx());
      assert.equal(res.status, 200, res.text);
      await until(() => rpc.endlessClosed() === closedBefore + 1, 'the relayer closed the endless response');
      const sent = rpc.endlessBytes() - bytesBefore;
      // The reader stops at 8 MiB; what the server managed to push beyond that sits in socket buffers.
      assert.ok(sent > 8 * 1024 * 1024, `the bound was reached (${sent} bytes)`);
      assert.ok(sent < 8 * 1024 * 1024 + 32 * 1024 * 1024, `the read stopped (${sent} bytes written)`);
      const rss = process.memoryUsage().rss;
      assert.ok(rss < 1024 * 1024 * 1024, `memory stays bounded (${rss} bytes RSS)`);
    });

    test('docs/design.md#receipt: one hanging endpoint does not hold other requests', async (t) => {
      // A second relay on another chain answers meanwhile.
      const clock = createFakeClock();
      const base = testConfig();
      const config = testConfig({
        chains: {
          ethereum: { ...base.chains.ethereum, rpcUrls: [rpc.endpoint('hang')] },
          base: { ...base.chains.base, rpcUrls: [rpc.endpoint('ok')] },
        },
      });
      const { url, server } = await startApi(t, { config, clock, fetch: transport.fetch(t) });
      const seen = rpc.requests('hang');
      const stuck = postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: minedTx() });
      await rpc.waitForRequest('hang', seen + 1);
      const other = txHash(nextTx++);
      rpc.table.set(
        other,
        rpcReceipt(other, transferLogs(1, { origin: 8453, destination: 1 }, base.chains.base.mailbox)),
      );
      const res = await postJson(url, '/relay', { origin_chain: 'base', tx_hash: other });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json().messages.length, 1);
      assertError(await drive(clock, stuck), 408, 'timeout');
      assert.equal(server.api.pipeline.dedup.size(), 1, 'only the successful pair is kept');
    });
  });
}
