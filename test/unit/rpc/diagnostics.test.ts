/**
 * docs/operations.md#logs: when the RPC endpoints fail, say why. Each failed attempt is logged at
 * `debug` with the chain, the endpoint's origin, the attempt number and the class of the failure
 * (DNS, connection refused, HTTP 5xx, JSON-RPC error code and message, malformed answer,
 * timeout), and the request gets one `warn` line summing them up (not one per attempt: a dead
 * endpoint fails every poll); the 408 names the class of the last failure. No URL path, query or userinfo (where
 * API keys live) reaches the log or the answer, even when the node quotes the request back.
 *
 * The endpoints are real HTTP servers on 127.0.0.1 (test/helpers/fakes/faulty-rpc.ts) and a loopback
 * port nothing listens on, reached with the global fetch and with the keep-alive node:http
 * transport relayer-server injects (the same classes either way); time is a fake clock.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { RelayError } from '../../../lib/errors/classes.ts';
import { createLogger } from '../../../lib/log.ts';
import { createReceiptFetcher, type ReceiptFetchEvent } from '../../../lib/rpc/receipt.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock, type FakeClock } from '../../helpers/fakes/clock.ts';
import { startFaultyRpcServer, type Fault, type FaultyRpcServer } from '../../helpers/fakes/faulty-rpc.ts';
import { MAILBOX, txHash } from '../../helpers/fixtures/builders.ts';
import type { RawResponse } from '../../helpers/harness/http.ts';
import { refusedPort as findRefusedPort } from '../../helpers/fakes/refused-port.ts';
import { startApi } from '../../helpers/harness/server.ts';
import { TRANSPORTS, type TransportCase } from '../../helpers/harness/transports.ts';

const SECRETS = ['SECRETUSER', 'SECRETPASS', 'SECRETPATH', 'SECRETQUERY', 'SECRETKEY'];
let rpc: FaultyRpcServer;
let refusedPort: number;
let nextTx = 0x16_000;

before(async () => {
  rpc = await startFaultyRpcServer(new Map(), { mailbox: MAILBOX });
  // Nothing listens there, and no server of the run can take it meanwhile (test/helpers/fakes/refused-port.ts).
  refusedPort = await findRefusedPort();
});
after(() => rpc.close());

/** An endpoint of the faulty server whose URL carries a key in every place a provider puts one. */
function keyed(fault: Fault): string {
  const { host } = new URL(rpc.url);
  return `http://SECRETUSER:SECRETPASS@${host}/${fault}/v2/SECRETPATH?apikey=SECRETQUERY`;
}
const refused = () => `http://SECRETUSER:SECRETPASS@127.0.0.1:${refusedPort}/v3/SECRETKEY`;

interface Run {
  res: RawResponse;
  warnings: Array<Record<string, unknown>>;
  /** The debug lines of the failed attempts, one each. */
  attempts: Array<Record<string, unknown>>;
  logText: string;
}

async function relayAgainst(t: TestContext, transport: TransportCase, rpcUrls: string[]): Promise<Run> {
  const clock = createFakeClock();
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => lines.push(line), now: () => clock.now() });
  const base = testConfig();
  const config = testConfig({ chains: { ...base.chains, ethereum: { ...base.chains.ethereum, rpcUrls } } });
  const api = await startApi(t, { config, clock, logger, fetch: transport.fetch(t) });
  const pending = api.relay({ origin_chain: 'ethereum', tx_hash: txHash(nextTx++) });
  let settled = false;
  pending.finally(() => (settled = true)).catch(() => {});
  for (let i = 0; i < 400 && !settled; i++) {
    await clock.advance(250);
    await delay(1);
  }
  const res = await pending;
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    res,
    warnings: records.filter((r) => r.level === 'warn'),
    attempts: records.filter((r) => r.msg === 'rpc attempt failed'),
    logText: lines.join(''),
  };
}

function assertNoSecret(text: string, where: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${where} leaks ${secret}: ${text}`);
  assert.ok(!/\/v[23]\/|apikey|\/http503\/|\/rpc-error\//.test(text), `${where} leaks a URL path or query: ${text}`);
}

for (const transport of TRANSPORTS) {
  describe(`${transport.name}: docs/operations.md#logs: each failed RPC attempt is logged at debug, the request once at warn`, () => {
    // Each attempt with its cause; the 408 names the last one.
    test('HTTP 5xx then connection refused: one debug line per attempt, one warn line; the 408 says "connection refused"', async (t) => {
      // The debug lines are numbered and classed; one warn line for the request.
      const { res, warnings, attempts, logText } = await relayAgainst(t, transport, [keyed('http503'), refused()]);
      assert.equal(res.status, 408, res.text);
      assert.equal(res.json().reason, 'timeout');
      assert.match(
        res.json().message,
        /the RPC endpoints of chain ethereum failed \(last attempt: connection refused\)$/,
      );
      assert.ok(attempts.length >= 4, `${attempts.length} attempt lines`);
      attempts.forEach((w, i) => {
        assert.equal(w.level, 'debug');
        assert.equal(w.chain, 'ethereum');
        assert.equal(w.attempt, i + 1, 'attempts numbered across endpoints and polls');
        assert.match(String(w.tx_hash), /^0x[0-9a-f]{64}$/);
      });
      assert.equal(warnings.length, 1, 'one warn line for the failed request, not one per attempt');
      const [summary] = warnings;
      assert.equal(summary.msg, 'rpc attempts failed');
      assert.equal(summary.status, 408);
      assert.equal(summary.chain, 'ethereum');
      assert.equal(summary.tx_hash, attempts[0].tx_hash);
      assert.equal(summary.failed_attempts, attempts.length);
      assert.deepEqual(summary.rpcs, [rpc.url, `http://127.0.0.1:${refusedPort}`]);
      const failures = summary.failures as Record<string, number>;
      assert.equal(failures.http_5xx + failures.connection_refused, attempts.length);
      assert.equal(summary.failure, 'connection_refused', 'the last failure');
      const first = attempts[0];
      assert.equal(first.rpc, rpc.url);
      assert.equal(first.failure, 'http_5xx');
      assert.equal(first.error, 'HTTP 503');
      const second = attempts[1];
      assert.equal(second.rpc, `http://127.0.0.1:${refusedPort}`);
      assert.equal(second.failure, 'connection_refused');
      assert.match(String(second.cause), /ECONNREFUSED/);
      assertNoSecret(logText, 'the log');
      assertNoSecret(res.text, 'the answer');
    });

    const classes: Array<[Fault, string, RegExp, RegExp]> = [
      ['rpc-error', 'rpc_error', /last attempt: JSON-RPC error -32000\)$/, /^header not found/],
      ['invalid-json', 'malformed_answer', /last attempt: malformed answer \(invalid JSON\)\)$/, /.?/],
      ['wrong-id', 'malformed_answer', /last attempt: malformed answer \(wrong JSON-RPC id\)\)$/, /.?/],
      ['hang', 'timeout', /last attempt: no answer in time\)$/, /.?/],
      ['http500', 'http_5xx', /last attempt: HTTP 500\)$/, /.?/],
    ];
    for (const [fault, failure, message, cause] of classes) {
      test(`${fault}: logged as ${failure}, and the 408 says so, with no key (the node quotes the request back)`, async (t) => {
        const { res, warnings, attempts, logText } = await relayAgainst(t, transport, [keyed(fault)]);
        assert.equal(res.status, 408, res.text);
        assert.match(res.json().message, message);
        assert.ok(attempts.length >= 1);
        for (const w of [...attempts, ...warnings]) {
          assert.equal(w.failure, failure);
          assert.equal(w.rpc, rpc.url);
        }
        assert.equal(warnings.length, 1);
        assert.deepEqual(warnings[0].failures, { [failure]: attempts.length });
        if (fault === 'rpc-error') {
          // The node's own words reach the operator, with the quoted path cut out.
          assert.match(String(attempts[0].cause), cause);
          assert.match(String(warnings[0].cause), /requested …/);
        }
        assertNoSecret(logText, 'the log');
        assertNoSecret(res.text, 'the answer');
      });
    }
  });
}

describe('docs/operations.md#logs: transport failures are told apart by their cause (no network needed)', () => {
  const chain = {
    name: 'testchain',
    domainId: 31337,
    mailbox: MAILBOX,
    cctpMessageTransmitters: [],
    rpcUrls: ['https://SECRETUSER:SECRETPASS@rpc.example/v2/SECRETKEY'],
  };
  const cases: Array<[string, unknown, string, string]> = [
    [
      'DNS',
      Object.assign(new Error('getaddrinfo ENOTFOUND rpc.example'), { code: 'ENOTFOUND' }),
      'dns',
      'DNS lookup failed (ENOTFOUND)',
    ],
    [
      'DNS, temporary',
      Object.assign(new Error('getaddrinfo EAI_AGAIN rpc.example'), { code: 'EAI_AGAIN' }),
      'dns',
      'DNS lookup failed (EAI_AGAIN)',
    ],
    [
      'connection reset',
      Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
      'connection_reset',
      'connection reset',
    ],
    [
      'TLS',
      Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
      'tls',
      'TLS error (UNABLE_TO_VERIFY_LEAF_SIGNATURE)',
    ],
    [
      'TLS, self-signed',
      Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }),
      'tls',
      'TLS error (DEPTH_ZERO_SELF_SIGNED_CERT)',
    ],
    ['no code', new Error('something else'), 'transport', 'transport error'],
  ];
  for (const [name, cause, failure, summary] of cases) {
    test(`${name}: ${failure}`, async () => {
      const clock: FakeClock = createFakeClock();
      const events: ReceiptFetchEvent[] = [];
      const fetcher = createReceiptFetcher({
        clock,
        fetch: async () => {
          throw new TypeError('fetch failed', { cause });
        },
        onAttempt: (e) => events.push(e),
      });
      const result = fetcher(chain, '0x' + 'ab'.repeat(32)).catch((e: unknown) => e);
      await clock.advance(10_000);
      const error = await result;
      assert.ok(error instanceof RelayError);
      assert.equal(error.code, 'timeout');
      assert.ok(error.message.endsWith(`(last attempt: ${summary})`), error.message);
      assert.equal(events[0].failure, failure);
      assertNoSecret(JSON.stringify(events) + error.message, name);
    });
  }
});
