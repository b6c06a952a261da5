/**
 * Per-client limits (docs/api.md#per-client-limits): each client's relay bucket in front of the
 * global one, the read budget apart from it, and who a client is (the peer address; behind
 * server.trustedProxies the address X-Forwarded-For names; an IPv6 client as its /64). Clients are
 * told apart by their loopback address (127.0.0.1, 127.0.0.2, …) or by a trusted proxy's header.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import { parseConfig } from '../../../lib/config/parse.ts';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { createClientOf } from '../../../lib/http/client-address.ts';
import { rpcReceipt, txHash } from '../../helpers/fixtures/builders.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { httpRequest } from '../../helpers/harness/http.ts';
import { outboxMessage } from '../../../lib/testing/index.ts';
import { startApi } from '../../helpers/harness/server.ts';
import { openEvents } from '../../helpers/harness/sse.ts';

let next = 1_000;
function relayFrom(url: string, table: ReceiptTable, localAddress: string, headers: Record<string, string> = {}) {
  const hash = txHash(next++);
  table.set(hash, rpcReceipt(hash, []));
  return httpRequest(url, {
    method: 'POST',
    path: '/relay',
    body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: hash }),
    headers: { 'content-type': 'application/json', ...headers },
    localAddress,
  });
}

describe('relayApi.clientRateLimit', () => {
  test("a client over its own rate is refused by its bucket and spends nothing of the global one: the others' relays go through", async (t) => {
    const table: ReceiptTable = new Map();
    const config = testConfig({
      relayApi: { rateLimit: { burst: 4, perMinute: 1 }, clientRateLimit: { burst: 2, perMinute: 1 } },
    });
    const { url } = await startApi(t, { config, fetch: fakeRpcFetch(table).fetch });
    const flood: number[] = [];
    for (let i = 0; i < 10; i++) flood.push((await relayFrom(url, table, '127.0.0.1')).status);
    assert.deepEqual(flood, [200, 200, ...Array(8).fill(429)]);
    const refused = await relayFrom(url, table, '127.0.0.1');
    assert.equal(refused.json().reason, 'rate_limited');
    assert.match(refused.json().message, /this client's relay rate limit/);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    // The global bucket had 4: the flood took 2, the next client gets the other 2.
    assert.deepEqual(
      [(await relayFrom(url, table, '127.0.0.2')).status, (await relayFrom(url, table, '127.0.0.2')).status],
      [200, 200],
    );
    const third = await relayFrom(url, table, '127.0.0.3');
    assert.deepEqual(
      [third.status, third.json().message],
      [429, 'global rate limit exceeded; retry after a short backoff'],
    );
  });

  test('without clientRateLimit (the default) only the global bucket counts', async (t) => {
    const table: ReceiptTable = new Map();
    const config = testConfig({ relayApi: { rateLimit: { burst: 3, perMinute: 1 } } });
    assert.equal(config.relayApi.clientRateLimit, null);
    const { url } = await startApi(t, { config, fetch: fakeRpcFetch(table).fetch });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await relayFrom(url, table, '127.0.0.1')).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
  });
});

describe('server.trustedProxies', () => {
  test('X-Forwarded-For names the client only from a trusted proxy', async (t) => {
    const table: ReceiptTable = new Map();
    const relayApi = { rateLimit: { burst: 100, perMinute: 1 }, clientRateLimit: { burst: 1, perMinute: 1 } };
    const open = await startApi(t, { config: testConfig({ relayApi }), fetch: fakeRpcFetch(table).fetch });
    // Not trusted: the header is ignored, both requests are 127.0.0.1's.
    assert.equal((await relayFrom(open.url, table, '127.0.0.1', { 'x-forwarded-for': '203.0.113.1' })).status, 200);
    assert.equal((await relayFrom(open.url, table, '127.0.0.1', { 'x-forwarded-for': '203.0.113.2' })).status, 429);

    const proxied = await startApi(t, {
      config: testConfig({ relayApi, server: { trustedProxies: ['127.0.0.0/8', '10.0.0.0/8'] } }),
      fetch: fakeRpcFetch(table).fetch,
    });
    const from = (xff: string) => relayFrom(proxied.url, table, '127.0.0.1', { 'x-forwarded-for': xff });
    assert.equal((await from('203.0.113.1')).status, 200);
    assert.equal((await from('203.0.113.2')).status, 200, 'another client behind the proxy');
    assert.equal((await from('203.0.113.1')).status, 429, 'the first client again');
    // A client's own header before the proxy's hops: the first address from the end that is not a proxy.
    assert.equal((await from('198.51.100.7, 203.0.113.3, 10.1.2.3')).status, 200);
    assert.equal((await from('192.0.2.9, 203.0.113.3')).status, 429, 'the same client, whatever it wrote first');
  });

  test('an IPv6 client counts in its /64, /56 and /48; an IPv4-mapped address as its IPv4 one; the walk stops at the client', () => {
    const req = (remoteAddress: string, xff?: string) =>
      ({
        socket: { remoteAddress },
        headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
      }) as unknown as IncomingMessage;
    const keys = (client: ReturnType<ReturnType<typeof createClientOf>>) => client.map((b) => b.key);
    const plain = createClientOf([]);
    assert.deepEqual(plain(req('2001:db8:1:2::1')), [
      { key: '2001:db8:1:2::/64', scope: 'client', share: 1 },
      { key: '2001:db8:1:0::/56', scope: '56', share: 2 },
      { key: '2001:db8:1::/48', scope: '48', share: 5 },
    ]);
    assert.deepEqual(keys(plain(req('2001:db8:1:2::1'))), keys(plain(req('2001:db8:1:2:ffff::9'))));
    assert.deepEqual(keys(plain(req('2001:db8:1:2ff::1'))), [
      '2001:db8:1:2ff::/64',
      '2001:db8:1:200::/56',
      '2001:db8:1::/48',
    ]);
    assert.deepEqual(keys(plain(req('::ffff:192.0.2.1'))), ['192.0.2.1']);
    const proxied = createClientOf(['::1', '10.0.0.0/8']);
    assert.deepEqual(keys(proxied(req('::1', '192.0.2.1'))), ['192.0.2.1']);
    assert.deepEqual(
      keys(proxied(req('::1', 'garbage, 192.0.2.1, 10.0.0.5'))),
      ['192.0.2.1'],
      'what the client wrote is not read',
    );
    assert.deepEqual(keys(proxied(req('::1'))), ['0:0:0:0::/64', '0:0:0:0::/56', '0:0:0::/48'], 'no header: the proxy');
    assert.deepEqual(keys(proxied(req('192.0.2.50', '198.51.100.1'))), ['192.0.2.50'], 'an untrusted peer');
  });

  test("an IPv6 /56 and /48 take 2× and 5× a client's bucket: a /48 of many /64s takes five clients' share", async (t) => {
    const table: ReceiptTable = new Map();
    const relayApi = { rateLimit: { burst: 100, perMinute: 1 }, clientRateLimit: { burst: 1, perMinute: 1 } };
    const { url } = await startApi(t, {
      config: testConfig({ relayApi, server: { trustedProxies: ['127.0.0.0/8'] } }),
      fetch: fakeRpcFetch(table).fetch,
    });
    const from = async (client: string) => {
      const res = await relayFrom(url, table, '127.0.0.1', { 'x-forwarded-for': client });
      return res.status === 200 ? 200 : [res.status, res.json().message];
    };
    assert.deepEqual([await from('2001:db8:1:1::1'), await from('2001:db8:1:2::1')], [200, 200]);
    assert.deepEqual(await from('2001:db8:1:3::1'), [
      429,
      "the relay rate limit of this client's IPv6 /56 is exceeded; retry after a short backoff",
    ]);
    assert.deepEqual([await from('2001:db8:1:100::1'), await from('2001:db8:1:101::1')], [200, 200]);
    assert.equal(await from('2001:db8:1:200::1'), 200, 'the fifth client of the /48');
    assert.deepEqual(await from('2001:db8:1:300::1'), [
      429,
      "the relay rate limit of this client's IPv6 /48 is exceeded; retry after a short backoff",
    ]);
    assert.equal(await from('2001:db8:2::1'), 200, 'another /48');
  });

  test('hops written address:port and [IPv6]:port are read; a hop the walk reaches that is no address is a 400', async (t) => {
    const table: ReceiptTable = new Map();
    const relayApi = { rateLimit: { burst: 100, perMinute: 1 }, clientRateLimit: { burst: 1, perMinute: 1 } };
    const { url } = await startApi(t, {
      config: testConfig({ relayApi, server: { trustedProxies: ['127.0.0.0/8', '10.0.0.0/8'] } }),
      fetch: fakeRpcFetch(table).fetch,
    });
    const from = (xff: string) => relayFrom(url, table, '127.0.0.1', { 'x-forwarded-for': xff });
    assert.equal((await from('203.0.113.1:51234')).status, 200);
    assert.equal((await from('203.0.113.1:40000')).status, 429, 'another port of the same client');
    assert.equal((await from('203.0.113.1')).status, 429, 'the same client without a port');
    assert.equal((await from('203.0.113.2:51234, 10.0.0.9:3128')).status, 200, 'a client behind two proxies');
    assert.equal((await from('[2001:db8:1:2::7]:443')).status, 200);
    assert.equal((await from('2001:db8:1:2::9')).status, 429, 'the same /64 written bare');
    assert.equal((await from('[2001:db8:1:3::7]')).status, 200, 'brackets without a port');
    for (const hop of [
      'garbage',
      '203.0.113.3:99999',
      '203.0.113.3:',
      '[203.0.113.3]:80',
      'unknown',
      '203.0.113.4, ',
    ]) {
      const refused = await from(hop);
      assert.deepEqual([refused.status, refused.json().reason], [400, 'invalid_request'], hop);
      assert.match(refused.json().message, /X-Forwarded-For/);
    }
    // Never the proxy's own address: a refused hop took no token of 127.0.0.1's bucket.
    assert.equal((await relayFrom(url, table, '127.0.0.1')).status, 200, 'the proxy itself, once');
  });
});

describe('server.readRateLimit', () => {
  test('on by default at 600 and 1 200 a minute: the 601st read at once is refused, null turns it off', async (t) => {
    // docs/api.md#per-client-limits: a value no honest UI reaches (watch() polls every 3 s when it polls).
    const clock = createFakeClock();
    const outbox = createMemoryOutbox({ clock });
    const m = outboxMessage(2);
    outbox.enqueue([m]);
    const { url } = await startApi(t, { config: { ...testConfig(), server: parseConfig({}).server }, outbox, clock });
    const statuses = new Map<number, number>();
    for (let i = 0; i < 601; i++) {
      const { status } = await httpRequest(url, { path: `/relay/${m.id}` });
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    assert.deepEqual(
      [...statuses],
      [
        [200, 600],
        [429, 1],
      ],
    );
    await clock.advance(1_000);
    assert.equal((await httpRequest(url, { path: `/relay/${m.id}` })).status, 200, '20 a second come back');
    const off = await startApi(t, {
      config: { ...testConfig(), server: parseConfig({ server: { readRateLimit: null } }).server },
      outbox,
      clock,
    });
    for (let i = 0; i < 601; i++) assert.equal((await httpRequest(off.url, { path: `/relay/${m.id}` })).status, 200);
  });

  test("status reads and stream openings spend the client's read budget, apart from its relays", async (t) => {
    const clock = createFakeClock();
    const outbox = createMemoryOutbox({ clock });
    const m = outboxMessage(1);
    outbox.enqueue([m]);
    const table: ReceiptTable = new Map();
    const { url } = await startApi(t, {
      config: testConfig({ server: { readRateLimit: { burst: 3, perMinute: 60 } } }),
      outbox,
      clock,
      fetch: fakeRpcFetch(table).fetch,
    });
    const read = (path: string, localAddress = '127.0.0.1') => httpRequest(url, { path, localAddress });
    assert.equal((await read(`/relay/${m.id}`)).status, 200);
    assert.equal((await read(`/relay?origin_chain=ethereum&tx_hash=${m.txHash}`)).status, 200);
    const stream = await openEvents(url, `/relay/${m.id}/events`);
    assert.equal(stream.status, 200);
    stream.close();
    const refused = await read(`/relay/${m.id}`);
    assert.deepEqual([refused.status, refused.json().reason], [429, 'rate_limited']);
    assert.match(refused.json().message, /this client's read rate limit/);
    assert.equal((await read(`/relay/${m.id}`, '127.0.0.2')).status, 200, 'another client reads');
    assert.equal((await relayFrom(url, table, '127.0.0.1')).status, 200, 'relays are not reads');
    assert.equal((await read('/relay')).status, 200, 'the liveness probe is not a read');
    await clock.advance(1_000);
    assert.equal((await read(`/relay/${m.id}`)).status, 200, 'a token a second');
  });
});
