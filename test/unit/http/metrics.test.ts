/**
 * GET /metrics (docs/operations.md#metrics): the hand-written registry obeys the Prometheus text
 * exposition format 0.0.4, checked by an independent reader (test/helpers/harness/prometheus.ts), and the
 * relay API's metrics move as requests arrive. RPC URLs carry API keys: only their origin may
 * appear.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { createMetricsRegistry, DEFAULT_BUCKETS } from '../../../lib/node/metrics.ts';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import type { FetchLike } from '../../../lib/rpc/client.ts';
import { openSqliteStore, type SqliteStore } from '../../../lib/sqlite/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { callSignal, fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { httpRequest, postJson } from '../../helpers/harness/http.ts';
import { startApi } from '../../helpers/harness/server.ts';
import { parseExposition, sampleValue, type Exposition } from '../../helpers/harness/prometheus.ts';

function valid(text: string): Exposition {
  const exposition = parseExposition(text);
  assert.deepEqual(exposition.violations, [], text);
  return exposition;
}

describe('the exposition reader catches each broken rule (so the checks below can fail)', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['no trailing newline', '# TYPE a counter\na 1', /line feed/],
    ['TYPE after samples', 'a 1\n# TYPE a counter\n', /after its samples/],
    ['two HELP lines', '# HELP a x\n# HELP a y\na 1\n', /second HELP/],
    ['interleaved families', '# TYPE a gauge\na{x="1"} 1\n# TYPE b gauge\nb 1\na{x="2"} 2\n', /not one group/],
    ['invalid metric name', '0a 1\n', /invalid metric name/],
    ['invalid label name', 'a{0x="1"} 1\n', /invalid label name/],
    ['reserved label name', 'a{__x="1"} 1\n', /reserved/],
    ['unknown escape', 'a{x="\\t"} 1\n', /invalid escape/],
    ['raw newline in a label value', 'a{x="1\n"} 1\n', /malformed/],
    ['duplicate series', 'a{x="1",y="2"} 1\na{y="2",x="1"} 2\n', /duplicate series/],
    ['negative counter', '# TYPE a_total counter\na_total -1\n', /non-negative/],
    ['bad value', 'a one\n', /invalid value/],
    [
      'buckets not cumulative',
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      /not cumulative/,
    ],
    [
      '+Inf differs from _count',
      '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n',
      /differs from _count/,
    ],
    ['no +Inf bucket', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', /\+Inf/],
    ['no _sum', '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_count 1\n', /no _sum/],
    [
      'le not ascending',
      '# TYPE h histogram\nh_bucket{le="2"} 1\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      /ascending/,
    ],
  ];
  for (const [name, text, message] of cases) {
    test(`refuses ${name}`, () => {
      const { violations } = parseExposition(text);
      assert.ok(
        violations.some((v) => message.test(v)),
        `${JSON.stringify(violations)} should match ${message}`,
      );
    });
  }
});

describe('registry: the text exposition format 0.0.4', () => {
  test('format: HELP and TYPE once per family, before its samples; families grouped; trailing newline', () => {
    const m = createMetricsRegistry();
    const c = m.counter('t_requests_total', 'Requests.');
    const h = m.histogram('t_duration_seconds', 'Duration.');
    m.gauge('t_depth', 'Depth.', () => 3);
    m.gauge('t_by_chain', 'Per chain.', () => [
      [{ chain: 'a' }, 1],
      [{ chain: 'b' }, 2],
    ]);
    c.inc({ route: '/a' });
    h.observe({ route: '/a' }, 0.2);
    c.inc({ route: '/b' });
    h.observe({ route: '/b' }, 0.3);
    const text = m.render();
    assert.ok(text.endsWith('\n'));
    const { families } = valid(text);
    assert.deepEqual([...families.keys()], ['t_requests_total', 't_duration_seconds', 't_depth', 't_by_chain']);
    assert.deepEqual(
      [...families.values()].map((f) => f.type),
      ['counter', 'histogram', 'gauge', 'gauge'],
    );
    assert.deepEqual(
      [...families.values()].map((f) => f.help),
      ['Requests.', 'Duration.', 'Depth.', 'Per chain.'],
    );
  });

  test('format: label values escape backslash, double quote and newline, and read back unchanged', () => {
    const m = createMetricsRegistry();
    const hostile = 'a\\b"c\nd}e,f="g';
    m.counter('t_total', 'x').inc({ v: hostile });
    const text = m.render();
    assert.ok(text.includes('v="a\\\\b\\"c\\nd}e,f=\\"g"'), text);
    assert.equal(text.split('\n').filter((l) => l.startsWith('t_total')).length, 1, 'one line, no raw newline');
    assert.equal(sampleValue(valid(text), 't_total', { v: hostile }), 1);
  });

  test('format: HELP text escapes backslash and newline', () => {
    const m = createMetricsRegistry();
    m.gauge('t_g', 'two\nlines \\ here', () => 1);
    const text = m.render();
    assert.ok(text.includes('# HELP t_g two\\nlines \\\\ here\n'), text);
    valid(text);
  });

  test('format: the same labels in any order are one series', () => {
    const m = createMetricsRegistry();
    const c = m.counter('t_total', 'x');
    c.inc({ a: '1', b: '2' });
    c.inc({ b: '2', a: '1' }, 2);
    const exposition = valid(m.render());
    assert.equal(exposition.families.get('t_total')!.samples.length, 1);
    assert.equal(sampleValue(exposition, 't_total', { a: '1', b: '2' }), 3);
  });

  test('format: histogram buckets are cumulative, le is inclusive, +Inf equals _count, _sum is the sum', () => {
    const m = createMetricsRegistry();
    const h = m.histogram('t_seconds', 'x');
    const observed = [0.001, 0.0011, 0.5, 0.7, 7, 30, 31, 1000];
    for (const v of observed) h.observe({ chain: 'c' }, v);
    const exposition = valid(m.render());
    for (const bound of DEFAULT_BUCKETS) {
      const expected = observed.filter((v) => v <= bound).length;
      assert.equal(
        sampleValue(exposition, 't_seconds_bucket', { chain: 'c', le: String(bound) }),
        expected,
        `le=${bound}`,
      );
    }
    assert.equal(sampleValue(exposition, 't_seconds_bucket', { chain: 'c', le: '+Inf' }), observed.length);
    assert.equal(sampleValue(exposition, 't_seconds_count', { chain: 'c' }), observed.length);
    assert.ok(
      Math.abs(sampleValue(exposition, 't_seconds_sum', { chain: 'c' })! - observed.reduce((a, b) => a + b)) < 1e-9,
    );
  });

  test('format: custom buckets are sorted; special values render as NaN, +Inf, -Inf', () => {
    const m = createMetricsRegistry();
    m.histogram('t_h', 'x', [5, 1, 2]).observe({}, 1.5);
    m.gauge('t_nan', 'x', () => NaN);
    m.gauge('t_inf', 'x', () => [
      [{ s: '+' }, Infinity],
      [{ s: '-' }, -Infinity],
    ]);
    const exposition = valid(m.render());
    assert.deepEqual(
      exposition.families
        .get('t_h')!
        .samples.filter((s) => s.name === 't_h_bucket')
        .map((s) => s.labels.le),
      ['1', '2', '5', '+Inf'],
    );
    assert.ok(Number.isNaN(sampleValue(exposition, 't_nan')!));
    assert.equal(sampleValue(exposition, 't_inf', { s: '-' }), -Infinity);
  });

  test('names: invalid metric or label names and a second registration are refused', () => {
    const m = createMetricsRegistry();
    for (const bad of ['0abc', 'a-b', 'a b', '']) assert.throws(() => m.counter(bad, 'x'), /invalid metric name/);
    m.counter('t_total', 'x');
    assert.throws(() => m.counter('t_total', 'x'), /twice/);
    assert.throws(() => m.gauge('t_total', 'x', () => 1), /twice/);
    const c = m.counter('t2_total', 'x');
    for (const bad of ['0a', 'a-b', '__reserved', 'a b'])
      assert.throws(() => c.inc({ [bad]: 'v' }), /invalid label name/, bad);
  });

  test('histograms refuse an "le" label of their own (it would repeat the bucket label)', () => {
    const m = createMetricsRegistry();
    const h = m.histogram('t_seconds', 'x');
    assert.throws(() => h.observe({ le: '1' }, 1), /le/);
    valid(m.render());
  });

  test('counters only go up: a negative or non-finite increment is refused', () => {
    const m = createMetricsRegistry();
    const c = m.counter('t_total', 'x');
    for (const by of [-1, NaN, Infinity]) assert.throws(() => c.inc({}, by), /increment/, String(by));
    c.inc({}, 0);
    assert.equal(sampleValue(valid(m.render()), 't_total'), 0);
  });
});

describe('GET /metrics over HTTP: the relay API metrics move', () => {
  const SECRET_URL = 'https://user-secret:pw-secret@bad.example.invalid:8545/v3/KEY-secret-123?apikey=QUERY-secret-456';
  const GOOD_URL = 'https://good.example.invalid/rpc/PATH-secret-789';
  // docs/operations.md#metrics: endpoints by chain and position in rpcUrls, never host or port.
  const BAD = { chain: 'ethereum', rpc: 'ethereum#0' };
  const GOOD = { chain: 'ethereum', rpc: 'ethereum#1' };
  let store: SqliteStore;
  before(async () => {
    store = await openSqliteStore(':memory:');
  });
  after(() => store.close());

  async function start(t: TestContext) {
    const clock = createFakeClock();
    const table: ReceiptTable = new Map();
    const rpc = fakeRpcFetch(table);
    const calls = { bad: 0, good: 0 };
    const signal = callSignal();
    // The first endpoint is down (transport error): every attempt fails over to the second.
    const fetch: FetchLike = async (url, init) => {
      signal.raise();
      if (new URL(url).hostname === 'bad.example.invalid') {
        calls.bad++;
        throw new TypeError('fetch failed');
      }
      calls.good++;
      return rpc.fetch(url, init as RequestInit);
    };
    const base = testConfig({ relayApi: { rateLimit: { burst: 4, perMinute: 1 } } });
    const config = {
      ...base,
      chains: { ...base.chains, ethereum: { ...base.chains.ethereum, rpcUrls: [SECRET_URL, GOOD_URL] } },
    };
    const outbox = createMemoryOutbox({ clock });
    const { url } = await startApi(t, { config, clock, fetch, outbox, merkle: store.merkle });
    const scrape = async () => {
      const res = await httpRequest(url, { path: '/metrics' });
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4; charset=utf-8$/);
      assert.doesNotMatch(res.text, /secret|user-|pw-|apikey|\/v3\/|\/rpc\//i, 'no part of an RPC URL');
      assert.doesNotMatch(res.text, /example\.invalid|:8545|https?:/, 'no RPC host, port or scheme');
      return valid(res.text);
    };
    /** Resolves at the next receipt request (the request has reached the pipeline). */
    const nextCall = signal.next;
    return { url, clock, table, calls, scrape, nextCall };
  }

  test('docs/operations.md#metrics: counters, gauges and histograms of a sequence of requests', async (t) => {
    // RPC endpoints are named by chain and position (ethereum#0), never by host or port.
    const h = await start(t);
    const before = await h.scrape();
    assert.equal(sampleValue(before, 'hyperlane_relay_api_outbox_depth'), 0);
    assert.equal(sampleValue(before, 'hyperlane_relay_api_dedup_cache_size'), 0);
    assert.equal(
      sampleValue(before, 'hyperlane_relay_api_rate_limited_total'),
      undefined,
      'no series before the first rejection',
    );

    // Five POST /relay against a bucket of 4: success (2 messages), unknown chain, duplicate,
    // a receipt mined after 3 s of (fake) waiting (1 message), and a rate-limited one.
    const first = txHash(1);
    h.table.set(first, rpcReceipt(first, transferLogs(2)));
    assert.equal((await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: first })).status, 200);
    assert.equal((await postJson(h.url, '/relay', { origin_chain: 'nowhere', tx_hash: first })).status, 400);
    assert.equal((await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: first })).status, 429);
    const slow = txHash(3);
    const called = h.nextCall();
    const pending = postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: slow });
    await called;
    await h.clock.advance(3_000);
    h.table.set(slow, rpcReceipt(slow, transferLogs(1, { nonce: 50 })));
    await h.clock.advance(1_000);
    assert.equal((await pending).status, 200);
    const limited = await postJson(h.url, '/relay', { origin_chain: 'ethereum', tx_hash: txHash(4) });
    assert.equal(limited.json().reason, 'rate_limited');

    // Merkle rows: 2 of 3 records are of a configured chain; an invalid request writes none.
    const record = (leaf: number, chain: number) => ({
      chain,
      insertion_block_number: 1,
      leaf_index: leaf,
      message_id: '0x' + String(leaf).padStart(64, '0'),
    });
    const merkle = await postJson(h.url, '/merkle_tree_insertions', {
      merkle_tree_insertions: [record(0, 1), record(1, 1), record(0, 999)],
    });
    assert.deepEqual(merkle.json().count, 2);
    assert.equal((await postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: [] })).status, 400);

    const m = await h.scrape();
    const requests = (status: string, error_type: string) =>
      sampleValue(m, 'hyperlane_relay_api_requests_total', { status, error_type });
    assert.equal(requests('success', ''), 2, 'reference labels: status="success", error_type=""');
    assert.equal(requests('failure', 'invalid_request'), 1);
    assert.equal(requests('failure', 'duplicate_tx'), 1);
    assert.equal(requests('failure', 'rate_limited'), 1);
    assert.equal(m.families.get('hyperlane_relay_api_requests_total')!.samples.length, 4, 'POST /relay only');
    assert.equal(sampleValue(m, 'hyperlane_relay_api_rate_limited_total'), 1);
    assert.equal(sampleValue(m, 'hyperlane_relay_api_messages_enqueued_total'), 3);
    assert.equal(sampleValue(m, 'hyperlane_relay_api_outbox_depth'), 3);
    assert.equal(sampleValue(m, 'hyperlane_relay_api_dedup_cache_size'), 2);
    assert.equal(sampleValue(m, 'hyperlane_relay_api_merkle_rows_written_total'), 2);
    assert.equal(sampleValue(m, 'hyperlane_relay_api_in_flight_requests'), 1, 'the scrape itself');

    // Receipts: every attempt on the dead endpoint (the first of rpcUrls) failed, under ethereum#0.
    assert.ok(h.calls.bad >= 2 && h.calls.good >= 2, JSON.stringify(h.calls));
    assert.equal(sampleValue(m, 'hyperlane_relay_api_receipt_fetch_failures_total', BAD), h.calls.bad);
    assert.equal(sampleValue(m, 'hyperlane_relay_api_receipt_fetch_failures_total', GOOD), undefined);
    assert.equal(sampleValue(m, 'hyperlane_relay_api_receipt_fetch_duration_seconds_count', BAD), h.calls.bad);
    assert.equal(sampleValue(m, 'hyperlane_relay_api_receipt_fetch_duration_seconds_count', GOOD), h.calls.good);

    // Request durations per route (fake time: 0 s, except the receipt that took 3..4 s).
    const relay = (le: string) =>
      sampleValue(m, 'hyperlane_relay_api_request_duration_seconds_bucket', { route: '/relay', le });
    assert.equal(sampleValue(m, 'hyperlane_relay_api_request_duration_seconds_count', { route: '/relay' }), 5);
    assert.equal(relay('2.5'), 4);
    assert.equal(relay('5'), 5);
    assert.equal(
      sampleValue(m, 'hyperlane_relay_api_request_duration_seconds_count', { route: '/merkle_tree_insertions' }),
      2,
    );
    assert.equal(
      sampleValue(m, 'hyperlane_relay_api_request_duration_seconds_count', { route: '/metrics' }),
      1,
      'the first scrape',
    );

    // Every response, by route and code.
    const responses = (route: string, code: string) =>
      sampleValue(m, 'hyperlane_relay_api_http_responses_total', { route, code });
    assert.deepEqual([responses('/relay', '200'), responses('/relay', '400'), responses('/relay', '429')], [2, 1, 2]);
    assert.deepEqual(
      [responses('/merkle_tree_insertions', '200'), responses('/merkle_tree_insertions', '400')],
      [1, 1],
    );
  });

  test('docs/operations.md#metrics: HEAD /metrics has the headers of GET and no body', async (t) => {
    const h = await start(t);
    const head = await httpRequest(h.url, { method: 'HEAD', path: '/metrics' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.match(String(head.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  });

  test('GET /metrics exposes request counters that move', async (t) => {
    const h = await start(t);
    await postJson(h.url, '/relay', { origin_chain: 'nope', tx_hash: txHash(1) });
    const res = await httpRequest(h.url, { path: '/metrics' });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(res.text, /^hyperlane_relay_api_requests_total\{error_type="invalid_request",status="failure"\} 1$/m);
    assert.match(res.text, /^hyperlane_relay_api_dedup_cache_size 0$/m);
  });
});
