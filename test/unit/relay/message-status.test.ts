/**
 * GET /relay/{message_id} and GET /relay?origin_chain=&tx_hash= (docs/design.md#http-surface,
 * #message-lifecycle) over real loopback, on every outbox engine: messages are put in by POST
 * /relay (receipts from the in-process JSON-RPC fake), moved through their lifecycle by the
 * outbox's consumer API, and read back as the document (docs/openapi.json, checked on every
 * answer by test/helpers/harness/http.ts) says.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { createMemoryOutbox, type Outbox, type RelayQueue } from '../../../lib/outbox/index.ts';
import { createFakeClock, type FakeClock } from '../../helpers/fakes/clock.ts';
import { OUTBOX_ENGINES as ENGINES, type Engine } from '../../helpers/harness/engines.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import {
  gasPaymentLog,
  hyperlaneMessage,
  messageId,
  rpcReceipt,
  transferLogs,
  txHash,
} from '../../helpers/fixtures/builders.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import type { RelayerConfig } from '../../../lib/types.ts';
import { httpRequest, postJson, type RawResponse } from '../../helpers/harness/http.ts';
import { parseExposition } from '../../helpers/harness/prometheus.ts';
import { startApi } from '../../helpers/harness/server.ts';

/** The fake clock's start, 1_700_000_000_000 ms, written by hand. */
const START_ISO = '2023-11-14T22:13:20.000Z';
const DEST_TX = '0x' + 'de'.repeat(32);

interface Harness {
  url: string;
  clock: FakeClock;
  table: ReceiptTable;
  outbox: Outbox;
  get(path: string, headers?: Record<string, string>): Promise<RawResponse>;
  /** POSTs a transaction holding `count` transfers (nonces from `nonce`); returns its hash and ids. */
  relayTransfers(n: number, count: number, nonce: number): Promise<{ hash: string; ids: string[] }>;
}

async function start(t: TestContext, engine: Engine, queue?: RelayQueue, config?: RelayerConfig): Promise<Harness> {
  const clock = createFakeClock();
  const table: ReceiptTable = new Map();
  const { outbox, close } = await engine.open(clock);
  const { fetch } = fakeRpcFetch(table);
  const { url, get } = await startApi(t, { outbox: queue ?? outbox, clock, fetch, config });
  t.after(close);
  return {
    url,
    clock,
    table,
    outbox,
    get,
    async relayTransfers(n, count, nonce) {
      const hash = txHash(n);
      table.set(hash, rpcReceipt(hash, transferLogs(count, { nonce })));
      const res = await postJson(url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
      assert.equal(res.status, 200, res.text);
      return { hash, ids: res.json().messages.map((m: { message_id: string }) => m.message_id) };
    },
  };
}

function assertError(res: RawResponse, status: number, reason: string, message?: RegExp): void {
  assert.equal(res.status, status, res.text);
  assert.deepEqual(Object.keys(res.json()).sort(), ['message', 'reason']);
  assert.equal(res.json().reason, reason);
  if (message) assert.match(res.json().message, message);
}

/** The answer for transfer `nonce` of transaction `hash`, as docs/design.md#http-surface lists its fields. */
function queuedJson(hash: string, nonce: number) {
  return {
    message_id: messageId(hyperlaneMessage({ nonce, origin: 1, destination: 8453 })),
    origin: 1,
    destination: 8453,
    nonce,
    origin_chain: 'ethereum',
    tx_hash: hash,
    status: 'queued',
    enqueued_at: START_ISO,
    delivered_at: null,
    destination_tx_hash: null,
    attempts: 0,
    last_error: null,
    // No gasPaymentEnforcement in the test config: nothing required, nothing paid.
    gas_payment: nothingPaid('none'),
  };
}

/** `gas_payment` of a message nothing was paid, required or spent for, under `policy`. */
function nothingPaid(policy: string) {
  return {
    policy,
    payments: 0,
    gas_amount: '0',
    payment: '0',
    required_payment: null,
    required_gas_amount: null,
    gas_spent: '0',
    gas_spent_wei: '0',
  };
}

/** The test config with an InterchainGasPaymaster on ethereum and these gas policies. */
const IGP = '0x6cb503b2b1e3e4e5e0e4e1bca6e7f1a3f1d2c0b9';
function withPaymaster(gasPaymentEnforcement: RelayerConfig['gasPaymentEnforcement']): RelayerConfig {
  const base = testConfig();
  return {
    ...base,
    chains: { ...base.chains, ethereum: { ...base.chains.ethereum, interchainGasPaymaster: IGP } },
    gasPaymentEnforcement,
  };
}

const upper = (hex: string) => '0x' + hex.slice(2).toUpperCase();

for (const engine of ENGINES) {
  describe(`message status endpoints: ${engine.name}`, () => {
    test('docs/design.md#http-surface: GET /relay/{message_id} answers every field of an accepted message; the id in any case', async (t) => {
      const h = await start(t, engine);
      const { hash, ids } = await h.relayTransfers(1, 2, 40);
      assert.equal(ids.length, 2);
      for (const [i, id] of ids.entries()) {
        const res = await h.get(`/relay/${id}`);
        assert.equal(res.status, 200, res.text);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.equal(res.headers['cache-control'], 'no-store', 'a status changes: never cached');
        assert.deepEqual(res.json(), queuedJson(hash, 40 + i));
        assert.deepEqual((await h.get(`/relay/${upper(id)}`)).json(), res.json());
      }
    });

    test('docs/outbox.md#message-lifecycle: the answer follows the lifecycle', async (t) => {
      // Delivering with attempts, back to queued with last_error, delivered with its hash and time.
      const h = await start(t, engine);
      const { hash, ids } = await h.relayTransfers(2, 1, 7);
      const [id] = ids;
      await h.clock.advance(1_000);
      const [claimed] = await h.outbox.claim(1, 60_000);
      assert.deepEqual((await h.get(`/relay/${id}`)).json(), {
        ...queuedJson(hash, 7),
        status: 'delivering',
        attempts: 1,
      });

      const error =
        'execution reverted; URL: https://eth-mainnet.g.alchemy.com/v2/SECRETKEY123 and wss://user:pw@rpc.example.org:8546/path';
      await h.outbox.markFailed(id, { error, retryAt: h.clock.now() + 5_000, lease: claimed.lease });
      const failed = await h.get(`/relay/${id}`);
      assert.deepEqual(failed.json(), {
        ...queuedJson(hash, 7),
        attempts: 1,
        last_error: 'execution reverted; URL: https://eth-mainnet.g.alchemy.com and wss://rpc.example.org:8546',
      });
      assert.doesNotMatch(failed.text, /SECRETKEY123|user:pw|\/v2\//, 'RPC keys in a worker error are not shown');

      await h.clock.advance(5_000);
      const [again] = await h.outbox.claim(1, 60_000);
      await h.clock.advance(250);
      assert.equal(await h.outbox.markDelivered(id, { destinationTxHash: DEST_TX, lease: again.lease }), true);
      assert.deepEqual((await h.get(`/relay/${id}`)).json(), {
        ...queuedJson(hash, 7),
        status: 'delivered',
        attempts: 2,
        delivered_at: '2023-11-14T22:13:26.250Z',
        destination_tx_hash: DEST_TX,
        last_error: failed.json().last_error,
      });
    });

    test("docs/gas.md#gas-payment-enforcement: POST /relay stores the receipt's gas payments; GET shows them", async (t) => {
      // GET shows paid and required, for each message its own.
      const h = await start(
        t,
        engine,
        undefined,
        withPaymaster([
          { type: 'minimum', payment: 10n ** 15n, matchingList: [{ destinationDomain: 8453, senderAddress: '*' }] },
        ]),
      );
      const hash = txHash(30);
      const ids = [60, 61, 62].map((nonce) => messageId(hyperlaneMessage({ nonce, origin: 1, destination: 8453 })));
      const logs = [
        ...transferLogs(3, { nonce: 60 }),
        gasPaymentLog(IGP, { messageId: ids[0], gasAmount: 100_000n, payment: 6n * 10n ** 14n }),
        gasPaymentLog(IGP, { messageId: ids[0], gasAmount: 2n ** 255n, payment: 4n * 10n ** 14n }),
        gasPaymentLog(IGP, { messageId: ids[1], destination: 10, payment: 10n ** 18n }), // another destination
        gasPaymentLog('0x000000000000000000000000000000000000dead', { messageId: ids[2] }), // another contract
      ];
      h.table.set(hash, rpcReceipt(hash, logs));
      for (let i = 0; i < 2; i++) {
        // The same receipt twice (a resubmission after the dedup window): its logs count once.
        const res = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
        assert.equal(res.status, 200, res.text);
        await h.clock.advance(301_000);
      }
      const shown = async (id: string) => (await h.get(`/relay/${id}`)).json().gas_payment;
      assert.deepEqual(await shown(ids[0]), {
        policy: 'minimum',
        payments: 2,
        gas_amount: String(100_000n + 2n ** 255n),
        payment: String(10n ** 15n),
        required_payment: String(10n ** 15n),
        required_gas_amount: null,
        gas_spent: '0',
        gas_spent_wei: '0',
      });
      // A reverted transaction of ours cost 3 × 10^14 wei: required is the minimum plus that
      // (docs/gas.md#gas-already-spent), so paid < required says the message waits.
      await h.outbox.addGasSpent([{ messageId: ids[0], txHash: txHash(31), gasUsed: 21_000n, cost: 3n * 10n ** 14n }]);
      const spent = await shown(ids[0]);
      assert.deepEqual([spent.payment, spent.required_payment], [String(10n ** 15n), String(13n * 10n ** 14n)]);
      const unpaid = {
        policy: 'minimum',
        payments: 0,
        gas_amount: '0',
        payment: '0',
        required_payment: String(10n ** 15n),
        required_gas_amount: null,
        gas_spent: '0',
        gas_spent_wei: '0',
      };
      assert.deepEqual(await shown(ids[1]), unpaid);
      assert.deepEqual(await shown(ids[2]), unpaid);
      const listed = (await h.get(`/relay?origin_chain=ethereum&tx_hash=${hash}`)).json();
      assert.deepEqual(
        listed.messages.map((m: { gas_payment: { payments: number } }) => m.gas_payment.payments),
        [2, 0, 0],
      );
      assert.deepEqual((await h.outbox.gasPayments([ids[0], ids[1], ids[2]])).length, 2, 'only what counts is stored');
    });

    test('docs/gas.md#gas-already-spent: gas_payment shows the required gas once estimated, and the gas spent', async (t) => {
      const quoting = { type: 'onChainFeeQuoting', gasFraction: { numerator: 1n, denominator: 2n } } as const;
      const h = await start(t, engine, undefined, withPaymaster([{ ...quoting, matchingList: [] }]));
      const { hash, ids } = await h.relayTransfers(32, 2, 80);
      const shown = async (id: string) => (await h.get(`/relay/${id}`)).json().gas_payment;
      const before = nothingPaid('onChainFeeQuoting');
      assert.deepEqual(await shown(ids[0]), before, 'nothing estimated, nothing spent');
      // A worker estimated message 0 and one of its transactions reverted (256-bit amounts kept whole).
      await h.outbox.setRequiredGas(ids[0], 60_000n);
      const wei = 2n ** 200n + 1n;
      await h.outbox.addGasSpent([{ messageId: ids[0], txHash: txHash(33), gasUsed: 45_123n, cost: wei }]);
      const after = { ...before, required_gas_amount: '60000', gas_spent: '45123', gas_spent_wei: String(wei) };
      assert.deepEqual(await shown(ids[0]), after);
      assert.deepEqual(await shown(ids[1]), before, 'the other message of the transaction');
      const listed = (await h.get(`/relay?origin_chain=ethereum&tx_hash=${hash}`)).json();
      assert.deepEqual(
        listed.messages.map((m: { gas_payment: unknown }) => m.gas_payment),
        [after, before],
      );
    });

    test('docs/gas.md#gas-already-spent: required_gas_amount is null under a policy other than onChainFeeQuoting', async (t) => {
      const h = await start(t, engine, undefined, withPaymaster([{ type: 'minimum', payment: 1n, matchingList: [] }]));
      const { ids } = await h.relayTransfers(34, 1, 90);
      // Stored under an earlier configuration: not what this policy requires.
      await h.outbox.setRequiredGas(ids[0], 60_000n);
      const shown = (await h.get(`/relay/${ids[0]}`)).json().gas_payment;
      assert.equal(shown.required_gas_amount, null);
      assert.equal(shown.required_payment, '1');
    });

    test('docs/gas.md#gas-payment-enforcement: a malformed GasPayment log of the paymaster is 500 and stores nothing', async (t) => {
      const h = await start(t, engine, undefined, withPaymaster([]));
      const hash = txHash(31);
      const id = messageId(hyperlaneMessage({ nonce: 70, origin: 1, destination: 8453 }));
      const bad = gasPaymentLog(IGP, { messageId: id });
      h.table.set(hash, rpcReceipt(hash, [...transferLogs(1, { nonce: 70 }), { ...bad, data: `${bad.data}00` }]));
      const res = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: hash });
      assertError(res, 500, 'internal_error');
      assert.equal((await h.get(`/relay/${id}`)).status, 404);
      assert.deepEqual(await h.outbox.gasPayments([id]), []);
    });

    test('docs/outbox.md#message-lifecycle: a message the worker gave up on answers failed', async (t) => {
      const h = await start(t, engine);
      const { hash, ids } = await h.relayTransfers(3, 1, 1);
      const [claimed] = await h.outbox.claim(1, 60_000);
      assert.equal(
        await h.outbox.markFailed(ids[0], { error: 'recipient reverts', final: true, lease: claimed.lease }),
        true,
      );
      assert.deepEqual((await h.get(`/relay/${ids[0]}`)).json(), {
        ...queuedJson(hash, 1),
        status: 'failed',
        attempts: 1,
        last_error: 'recipient reverts',
      });
    });

    test('docs/design.md#http-surface: HEAD /relay/{message_id} has the headers only', async (t) => {
      const h = await start(t, engine);
      const { ids } = await h.relayTransfers(4, 1, 1);
      const res = await httpRequest(h.url, { method: 'HEAD', path: `/relay/${ids[0]}` });
      assert.equal(res.status, 200);
      assert.equal(res.text, '');
      assert.equal((await httpRequest(h.url, { method: 'HEAD', path: `/relay/0x${'ab'.repeat(32)}` })).status, 404);
    });

    test('docs/design.md#http-surface: an unknown id is 404 not_found; a malformed one is 400 invalid_request; no id is no route', async (t) => {
      const h = await start(t, engine);
      await h.relayTransfers(5, 1, 1);
      assertError(await h.get(`/relay/0x${'ab'.repeat(32)}`), 404, 'not_found', /no message/);
      for (const bad of [
        '0x1234',
        'abc',
        `0x${'g'.repeat(64)}`,
        `0X${'a'.repeat(64)}`,
        `0x${'a'.repeat(66)}`,
        `${'a'.repeat(64)}`,
        '%20',
        '0x%00',
      ]) {
        assertError(await h.get(`/relay/${bad}`), 400, 'invalid_request', /message_id/);
      }
      assertError(await h.get('/relay/'), 404, 'not_found', /endpoint/);
      assertError(await h.get(`/relay/0x${'ab'.repeat(32)}/more`), 404, 'not_found', /endpoint/);
      const post = await postJson(h.url, `/relay/0x${'ab'.repeat(32)}`, {});
      assertError(post, 405, 'method_not_allowed');
      assert.equal(post.headers.allow, 'GET, HEAD, OPTIONS');
    });

    test('docs/design.md#http-surface: GET /relay?origin_chain=&tx_hash= lists the messages of one transaction in order', async (t) => {
      // The tx hash is matched in any case.
      const h = await start(t, engine);
      const { hash, ids } = await h.relayTransfers(6, 3, 20);
      await h.relayTransfers(7, 1, 90); // another transaction
      const expected = { messages: [20, 21, 22].map((nonce) => queuedJson(hash, nonce)) };
      assert.deepEqual(
        expected.messages.map((m) => m.message_id),
        ids,
      );
      for (const tx of [hash, upper(hash)]) {
        const res = await h.get(`/relay?origin_chain=ethereum&tx_hash=${tx}`);
        assert.equal(res.status, 200, res.text);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.deepEqual(res.json(), expected);
      }
      // Parameters in the other order, and percent-encoded, are the same query.
      assert.deepEqual((await h.get(`/relay?tx_hash=${hash}&origin_chain=%65thereum`)).json(), expected);
      const claimed = await h.outbox.claim(2, 60_000);
      assert.deepEqual(
        claimed.map((m) => m.id),
        ids.slice(0, 2),
      );
      assert.equal(await h.outbox.markDelivered(ids[1], { destinationTxHash: DEST_TX, lease: claimed[1].lease }), true);
      const statuses = (await h.get(`/relay?origin_chain=ethereum&tx_hash=${hash}`))
        .json()
        .messages.map((m: { status: string }) => m.status);
      assert.deepEqual(statuses, ['delivering', 'delivered', 'queued']);
    });

    test('docs/design.md#http-surface: a transaction with no accepted message, or another chain, lists nothing', async (t) => {
      const h = await start(t, engine);
      const { hash } = await h.relayTransfers(8, 1, 1);
      assert.deepEqual((await h.get(`/relay?origin_chain=ethereum&tx_hash=${txHash(9)}`)).json(), { messages: [] });
      assert.deepEqual((await h.get(`/relay?origin_chain=base&tx_hash=${hash}`)).json(), { messages: [] });
    });

    test('docs/design.md#http-surface: a lookup with a missing, repeated or malformed parameter is 400 invalid_request', async (t) => {
      // GET /relay without a query stays "up".
      const h = await start(t, engine);
      const hash = txHash(10);
      const bad: Array<[string, RegExp]> = [
        [`?origin_chain=ethereum`, /tx_hash is required/],
        [`?tx_hash=${hash}`, /origin_chain is required/],
        [`?probe=1&tx_hash=${hash}`, /origin_chain is required/],
        [`?origin_chain=ethereum&_=1700000000`, /tx_hash is required/],
        [`?origin_chain=ethereum&origin_chain=base&tx_hash=${hash}`, /origin_chain is given more than once/],
        [`?origin_chain=ethereum&tx_hash=${hash}&tx_hash=${hash}`, /tx_hash is given more than once/],
        [`?origin_chain=ethereum&tx_hash=0x1234`, /tx_hash/],
        [`?origin_chain=ethereum&tx_hash=${hash.slice(2)}`, /tx_hash/],
        [`?origin_chain=&tx_hash=${hash}`, /origin_chain/],
        [`?origin_chain=nowhere&tx_hash=${hash}`, /origin_chain "nowhere" is not a chain known/],
        [`?origin_chain=${'x'.repeat(129)}&tx_hash=${hash}`, /origin_chain exceeds/],
      ];
      for (const [query, message] of bad) assertError(await h.get(`/relay${query}`), 400, 'invalid_request', message);
      // docs/api.md#get-relay-get-ready: only a query naming origin_chain or tx_hash is a lookup;
      // a load balancer's cache-buster or a probe's marker leaves GET /relay the liveness probe.
      for (const path of [
        '/relay',
        '/relay?',
        '/relay?probe=1',
        '/relay?_=1700000000123',
        '/relay?foo=bar&x',
        '/relay?Origin_Chain=ethereum',
      ]) {
        const up = await h.get(path);
        assert.equal(up.status, 200, `${path}: ${up.text}`);
        assert.equal(up.text, 'up');
      }
      const probeHead = await httpRequest(h.url, { method: 'HEAD', path: '/relay?probe=1' });
      assert.equal(probeHead.status, 200);
      const head = await httpRequest(h.url, { method: 'HEAD', path: `/relay?origin_chain=ethereum` });
      assert.equal(head.status, 400);
      assert.equal(head.text, '');
    });
  });
}

describe('message status endpoints: store faults and bare queues', () => {
  test('docs/design.md#storage: a store that fails a lookup answers 503 store_unavailable with Retry-After, and nothing leaks', async (t) => {
    const clock = createFakeClock();
    const memory = createMemoryOutbox({ clock });
    const broken: Outbox = {
      ...memory,
      enqueue: (batch) => memory.enqueue(batch),
      // What the engines throw when the database cannot be used right now: SQLITE_BUSY, a refused connection.
      get: () =>
        Promise.reject(
          Object.assign(new Error('SQLITE_BUSY: database is locked at /srv/secret/path.db'), {
            code: 'ERR_SQLITE_ERROR',
            errcode: 5,
          }),
        ),
      byTx: () => {
        throw Object.assign(new Error('connection refused postgres://relayer:hunter2@db:5432/relayer'), {
          code: 'ECONNREFUSED',
        });
      },
    };
    const { url } = await startApi(t, { outbox: broken, clock, fetch: fakeRpcFetch(new Map()).fetch });
    for (const path of [`/relay/0x${'ab'.repeat(32)}`, `/relay?origin_chain=ethereum&tx_hash=${txHash(1)}`]) {
      const res = await httpRequest(url, { path });
      assertError(res, 503, 'store_unavailable');
      assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/);
      assert.doesNotMatch(res.text, /secret|hunter2|SQLITE/);
    }
  });

  test("an embedder's bare queue (enqueue only): the lookups are 404 not_found, the liveness probe still answers", async (t) => {
    const clock = createFakeClock();
    const memory = createMemoryOutbox({ clock });
    const queue: RelayQueue = { enqueue: (batch) => memory.enqueue(batch) };
    const { url } = await startApi(t, { outbox: queue, clock, fetch: fakeRpcFetch(new Map()).fetch });
    assertError(await httpRequest(url, { path: `/relay/0x${'ab'.repeat(32)}` }), 404, 'not_found');
    assertError(
      await httpRequest(url, { path: `/relay?origin_chain=ethereum&tx_hash=${txHash(1)}` }),
      404,
      'not_found',
      /statuses/,
    );
    assert.equal((await httpRequest(url, { path: '/relay' })).text, 'up');
    assert.equal(
      (await httpRequest(url, { path: '/relay?probe=1' })).text,
      'up',
      'a cache-busting query is still the probe',
    );
  });

  test('metrics: every message id is counted under the one route label /relay/{message_id}', async (t) => {
    const h = await start(t, ENGINES[0]);
    await h.get(`/relay/0x${'ab'.repeat(32)}`);
    await h.get(`/relay/0x${'cd'.repeat(32)}`);
    await h.get('/relay/0x12');
    const exposition = parseExposition((await h.get('/metrics')).text);
    assert.deepEqual(exposition.violations, []);
    const samples = exposition.families
      .get('hyperlane_relay_api_http_responses_total')!
      .samples.filter((s) => s.labels.route?.startsWith('/relay/'));
    assert.deepEqual(samples.map((s) => [s.labels.route, s.labels.code, s.value]).sort(), [
      ['/relay/{message_id}', '400', 1],
      ['/relay/{message_id}', '404', 2],
    ]);
  });
});
