/**
 * CCIP-read to public addresses only (docs/hostile-recipients.md#hostile-recipients): a stranger's ISM names
 * the gateway URLs, so a URL at a loopback, private, link-local… address, in any spelling, or a
 * name resolving to one, is refused before any request, and the refusal says nothing per URL. The
 * connection goes to the address checked (no DNS rebinding), origins the operator allows are
 * asked, and one time budget bounds a whole lookup. A loopback canary counts what reaches it.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { describe, test, type TestContext } from 'node:test';
import { parseIpAddress } from '../../../../lib/net/ip-address.ts';
import {
  ccipRead,
  CcipReadError,
  type CcipReadOptions,
  type CcipReadRefusal,
  type OffchainLookup,
  type Resolver,
} from '../../../../lib/worker/ccip/read.ts';
import { pinnedTransport } from '../../../../lib/worker/ccip/transport.ts';
import { toDeliveryError } from '../../../../lib/worker/errors.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';

const ISM = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const METADATA = '0xc0ffee';
const REFUSED = 'CCIP-read refused: the lookup names a gateway at a non-public address; no gateway was asked';

interface Canary {
  port: number;
  /** http://127.0.0.1:port */
  origin: string;
  requests: { path: string; host?: string }[];
}

/** A loopback HTTP server answering every request with the metadata, counting what reaches it. */
async function startCanary(
  t: TestContext,
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: METADATA }));
  },
  host = '127.0.0.1',
): Promise<Canary> {
  const requests: Canary['requests'] = [];
  const server: Server = createServer((req, res) => {
    requests.push({ path: req.url!, host: req.headers.host });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return { port, origin: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, requests };
}

function lookup(urls: string[]): OffchainLookup {
  return { sender: ISM, urls, callData: '0xdeadbeef', callbackFunction: '0xf7e83aee', extraData: '0x' };
}

async function failure(promise: Promise<unknown>): Promise<CcipReadError> {
  const error = await promise.then(
    () => assert.fail('expected a CcipReadError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof CcipReadError, String(error));
  return error;
}

/** A resolver from a table; a name not in it does not resolve. Counts its questions. */
function resolverOf(table: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (name: string) => {
    asked.push(name);
    const answers = table[name];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { asked });
}

/** A fetch that must never be called: nothing may leave for a refused lookup. */
const noFetch: CcipReadOptions['fetch'] = async (url) => assert.fail(`a request was made to ${url}`);

describe('CCIP-read refuses non-public gateways, in every spelling, before any request', () => {
  test('loopback, private, link-local, shared, multicast, reserved, localhost: refused, the canary hears nothing', async (t) => {
    const canary = await startCanary(t);
    const p = canary.port;
    const urls = [
      `http://127.0.0.1:${p}/x`,
      `http://2130706433:${p}/x`,
      `http://0x7f.1:${p}/x`,
      `http://0x7f000001:${p}/x`,
      `http://127.1:${p}/x`,
      `http://0177.0.0.1:${p}/x`,
      `http://127.0.0.1.:${p}/x`,
      `http://[::ffff:127.0.0.1]:${p}/x`,
      `http://[::ffff:7f00:1]:${p}/x`,
      `http://[::1]:${p}/x`,
      `http://localhost:${p}/x`,
      `http://LOCALHOST.:${p}/x`,
      `http://gateway.localhost:${p}/x`,
      `http://0.0.0.0:${p}/x`,
      `http://0:${p}/x`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:169.254.169.254]/latest/meta-data/',
      'http://2852039166/latest/meta-data/',
      'http://10.0.0.1/',
      'http://172.16.0.1/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://224.0.0.1/',
      'http://255.255.255.255/',
      'http://240.0.0.1/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://[ff02::1]/',
      `https://127.0.0.1:${p}/x`,
      `http://127.0.0.1:${p}/{sender}/{data}.json`,
    ];
    for (const url of urls) {
      const refusals: CcipReadRefusal[] = [];
      const error = await failure(
        ccipRead(lookup([url]), { contract: ISM, onRefused: (r) => refusals.push(r), resolve: resolverOf({}) }),
      );
      assert.equal(error.code, 'forbidden', url);
      assert.equal(error.message, REFUSED, url);
      assert.equal(refusals.length, 1, url);
      assert.equal(refusals[0].index, 0);
      assert.equal(refusals[0].url, url);
      assert.notEqual(refusals[0].range, 'public');
    }
    assert.equal(canary.requests.length, 0, 'no request reached the canary');
  });

  test('one non-public URL among public ones refuses the whole lookup: no gateway is asked, no per-URL outcome', async () => {
    const resolve = resolverOf({ 'gateway.example': ['93.184.215.14'], 'intranet.example': ['10.1.2.3'] });
    const refusals: CcipReadRefusal[] = [];
    const error = await failure(
      ccipRead(
        lookup([
          'https://gateway.example/{sender}/{data}',
          'https://intranet.example/{sender}/{data}',
          'https://8.8.8.8/x',
        ]),
        { contract: ISM, resolve, fetch: noFetch, onRefused: (r) => refusals.push(r) },
      ),
    );
    assert.equal(error.code, 'forbidden');
    assert.equal(error.message, REFUSED);
    assert.doesNotMatch(error.message, /gateway \d|intranet|10\.1|example/);
    assert.deepEqual(
      refusals.map((r) => [r.index, r.address, r.range]),
      [[1, '10.1.2.3', 'private']],
    );
  });

  test('a name is resolved and every address it resolves to must be public', async () => {
    const table = {
      'loopback.example': ['127.0.0.1'],
      'mixed.example': ['93.184.215.14', '10.0.0.7'],
      'mapped.example': ['::ffff:192.168.0.1'],
      'metadata.example': ['169.254.169.254'],
      'ula.example': ['2606:4700:4700::1111', 'fd00::5'],
      'public.example': ['93.184.215.14', '2606:4700:4700::1111'],
    };
    for (const name of Object.keys(table).filter((n) => n !== 'public.example')) {
      const error = await failure(
        ccipRead(lookup([`https://${name}/x`]), { contract: ISM, resolve: resolverOf(table), fetch: noFetch }),
      );
      assert.equal(error.code, 'forbidden', name);
    }
    // All public: asked (through the caller's fetch here, since nothing public is reachable from a test).
    const asked: string[] = [];
    const got = await ccipRead(lookup(['https://public.example/{sender}/{data}']), {
      contract: ISM,
      resolve: resolverOf(table),
      fetch: async (url) => {
        asked.push(url);
        return Response.json({ data: METADATA });
      },
    });
    assert.equal(got, METADATA);
    assert.deepEqual(asked, [`https://public.example/${ISM}/0xdeadbeef`]);
  });

  test('localhost names are refused without asking the resolver; an IP-literal host never asks it', async () => {
    const resolve = resolverOf({ localhost: ['93.184.215.14'], 'app.localhost': ['93.184.215.14'] });
    for (const url of ['http://localhost/x', 'http://app.localhost/x', 'http://127.0.0.1/x']) {
      const error = await failure(ccipRead(lookup([url]), { contract: ISM, resolve, fetch: noFetch }));
      assert.equal(error.code, 'forbidden', url);
    }
    assert.deepEqual(resolve.asked, []);
  });

  test('a name that does not resolve is that gateway unavailable (not a refusal); the next is asked', async () => {
    const resolve = resolverOf({ 'good.example': ['93.184.215.14'], 'garbage.example': ['not-an-address'] });
    const asked: string[] = [];
    const fetch: CcipReadOptions['fetch'] = async (url) => {
      asked.push(url);
      return Response.json({ data: METADATA });
    };
    assert.equal(
      await ccipRead(lookup(['https://nowhere.example/x', 'https://good.example/x']), {
        contract: ISM,
        resolve,
        fetch,
      }),
      METADATA,
    );
    assert.deepEqual(asked, ['https://good.example/x']);
    const error = await failure(
      ccipRead(lookup(['https://nowhere.example/x', 'https://garbage.example/x']), { contract: ISM, resolve, fetch }),
    );
    assert.equal(error.code, 'unavailable');
    assert.equal(
      error.message,
      'CCIP-read unavailable: gateway 1 of 2 did not resolve; gateway 2 of 2 resolved to something other than an address',
    );
  });

  test('the refusal is its own delivery failure kind (forbidden), so last_error and the metric label name it', () => {
    const delivery = toDeliveryError(new CcipReadError('forbidden', REFUSED));
    assert.equal(delivery.code, 'forbidden');
    assert.equal(delivery.final, false);
    assert.equal(delivery.message, REFUSED);
  });
});

describe('CCIP-read asks public gateways on ports 80 and 443 only, and never this host', () => {
  const PORT_REFUSED =
    'CCIP-read refused: the lookup names a gateway on a port other than 80 and 443; no gateway was asked';
  const fetchOk: CcipReadOptions['fetch'] = async () => Response.json({ data: METADATA });

  test('a public gateway on another port is refused; 80 and 443 are asked whatever the scheme', async () => {
    const resolve = resolverOf({ 'gateway.example': ['93.184.215.14'] });
    for (const url of [
      'https://gateway.example:8443/x',
      'http://gateway.example:22/x',
      'http://gateway.example:6379/x',
      'https://93.184.215.14:8080/x',
      'http://[2606:4700:4700::1111]:25/x',
    ]) {
      const refusals: CcipReadRefusal[] = [];
      const error = await failure(
        ccipRead(lookup([url]), { contract: ISM, resolve, fetch: noFetch, onRefused: (r) => refusals.push(r) }),
      );
      assert.equal(error.code, 'forbidden', url);
      assert.equal(error.message, PORT_REFUSED, url);
      assert.deepEqual(
        refusals.map((r) => [r.index, r.range]),
        [[0, 'port']],
        url,
      );
    }
    for (const url of [
      'https://gateway.example/x',
      'https://gateway.example:443/x',
      'http://gateway.example/x',
      'http://gateway.example:443/x',
      'https://gateway.example:80/x',
    ])
      assert.equal(await ccipRead(lookup([url]), { contract: ISM, resolve, fetch: fetchOk }), METADATA, url);
    // A private address on another port is named for its address, the stronger reason.
    const error = await failure(ccipRead(lookup(['http://10.0.0.1:8080/x']), { contract: ISM, fetch: noFetch }));
    assert.equal(error.message, REFUSED);
  });

  test('an origin in ccipReadAllowOrigins is asked on its own port; another port of the same host is not', async () => {
    const resolve = resolverOf({ 'gateway.example': ['93.184.215.14'] });
    const allowOrigins = ['https://gateway.example:8443'];
    assert.equal(
      await ccipRead(lookup(['https://gateway.example:8443/x']), {
        contract: ISM,
        resolve,
        fetch: fetchOk,
        allowOrigins,
      }),
      METADATA,
    );
    const error = await failure(
      ccipRead(lookup(['https://gateway.example:8444/x']), { contract: ISM, resolve, fetch: noFetch, allowOrigins }),
    );
    assert.equal(error.message, PORT_REFUSED);
  });

  test("this host's own interface addresses are refused like private ones, public or not, in any spelling", async () => {
    // The host's interfaces as node:os networkInterfaces() lists them: loopback, LAN, public v4 and v6.
    const localAddresses = () => ['127.0.0.1', '192.168.1.20', '93.184.215.20', '2606:4700:4700::64', 'fe80::1'];
    const resolve = resolverOf({
      'self.example': ['93.184.215.20'],
      'self6.example': ['2606:4700:4700::64'],
      'mixed.example': ['93.184.215.14', '93.184.215.20'],
      'other.example': ['93.184.215.14'],
    });
    for (const url of [
      'https://93.184.215.20/x',
      'https://1572394772/x',
      'https://[::ffff:93.184.215.20]/x',
      'https://[64:ff9b::5db8:d714]/x',
      'https://[2606:4700:4700::64]/x',
      'https://self.example/x',
      'https://self6.example/x',
      'https://mixed.example/x',
    ]) {
      const refusals: CcipReadRefusal[] = [];
      const error = await failure(
        ccipRead(lookup([url]), {
          contract: ISM,
          resolve,
          localAddresses,
          fetch: noFetch,
          onRefused: (r) => refusals.push(r),
        }),
      );
      assert.equal(error.code, 'forbidden', url);
      assert.equal(error.message, REFUSED, url);
      assert.deepEqual(
        refusals.map((r) => r.range),
        ['this-host'],
        url,
      );
    }
    const ok: CcipReadOptions = { contract: ISM, resolve, localAddresses, fetch: fetchOk };
    assert.equal(await ccipRead(lookup(['https://other.example/x']), ok), METADATA, 'another public address');
    assert.equal(
      await ccipRead(lookup(['https://93.184.215.20/x']), { ...ok, allowOrigins: ['https://93.184.215.20'] }),
      METADATA,
      'allowed by the operator',
    );
  });
});

describe('worker.ccipReadAllowOrigins: gateways of your own, compared after URL normalisation', () => {
  test('an allowed origin is asked in any spelling of the same origin; another port or scheme is not', async (t) => {
    const canary = await startCanary(t);
    const p = canary.port;
    for (const allowed of [`http://127.0.0.1:${p}`, `http://127.0.0.1:${p}/`, `HTTP://2130706433:${p}`]) {
      for (const url of [`http://127.0.0.1:${p}/a`, `http://2130706433:${p}/b`, `http://0x7f.0.0.1:${p}/c`]) {
        assert.equal(await ccipRead(lookup([url]), { contract: ISM, allowOrigins: [allowed] }), METADATA, url);
      }
    }
    const other = [
      `http://127.0.0.1:${p + 1 > 65535 ? p - 1 : p + 1}/x`,
      `https://127.0.0.1:${p}/x`,
      `http://[::1]:${p}/x`,
    ];
    for (const url of other) {
      const error = await failure(ccipRead(lookup([url]), { contract: ISM, allowOrigins: [canary.origin] }));
      assert.equal(error.code, 'forbidden', url);
    }
    assert.equal(canary.requests.length, 9);
  });

  test('a default port is the same origin written or not', async () => {
    const resolve = resolverOf({ 'gw.internal': ['10.0.0.8'] });
    const fetch: CcipReadOptions['fetch'] = async () => Response.json({ data: METADATA });
    for (const [allowed, url] of [
      ['http://gw.internal:80', 'http://gw.internal/x'],
      ['http://gw.internal', 'http://GW.internal:80/x'],
      ['https://gw.internal:443', 'https://gw.internal/x'],
    ]) {
      assert.equal(await ccipRead(lookup([url]), { contract: ISM, resolve, fetch, allowOrigins: [allowed] }), METADATA);
    }
  });
});

describe('the connection goes to the address checked (no DNS rebinding)', () => {
  test('a name is connected to at its checked address, not resolved again; the Host header keeps the name', async (t) => {
    const canary = await startCanary(t);
    // rebind.invalid resolves nowhere for the system (RFC 6761 .invalid): only the checked address can be reached.
    const target = {
      url: new URL(`http://rebind.invalid:${canary.port}/path?q=1`),
      addresses: [parseIpAddress('127.0.0.1')!],
      allowed: true,
    };
    const response = await pinnedTransport(target, {
      method: 'GET',
      headers: { accept: 'application/json' },
      signal: new AbortController().signal,
    });
    assert.equal(response.status, 200);
    await response.body?.cancel();
    assert.deepEqual(canary.requests, [{ path: '/path?q=1', host: `rebind.invalid:${canary.port}` }]);
  });

  test('a resolver that answers another address the second time changes nothing: one resolution, one checked connection', async (t) => {
    const canary = await startCanary(t);
    let calls = 0;
    // First answer: loopback (allowed origin here, so it is asked); any later answer would be a
    // public address the test cannot reach. The request arriving proves the first answer was used.
    const resolve: Resolver = async () => [{ address: calls++ === 0 ? '127.0.0.1' : '93.184.215.14', family: 4 }];
    const url = `http://rebind.invalid:${canary.port}/x`;
    assert.equal(
      await ccipRead(lookup([url]), { contract: ISM, resolve, allowOrigins: [`http://rebind.invalid:${canary.port}`] }),
      METADATA,
    );
    assert.equal(calls, 1);
    assert.equal(canary.requests.length, 1);
  });

  test('a checked address that refuses the connection is a transport error, even when the name resolves elsewhere', async (t) => {
    const canary = await startCanary(t);
    // localhost resolves to 127.0.0.1 (where the canary listens) for the system; the checked
    // address is 127.0.0.2, where nothing listens.
    const target = {
      url: new URL(`http://localhost:${canary.port}/x`),
      addresses: [parseIpAddress('127.0.0.2')!],
      allowed: true,
    };
    await assert.rejects(
      pinnedTransport(target, { method: 'GET', headers: {}, signal: new AbortController().signal }),
      /ECONNREFUSED 127\.0\.0\.2/,
    );
    assert.equal(canary.requests.length, 0);
  });

  test('https keeps the name for TLS: the server sees it as SNI', async (t) => {
    const seen: string[] = [];
    const server = createTlsServer({
      SNICallback: (name, done) => {
        seen.push(name);
        done(new Error('no certificate here'), undefined);
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    const target = {
      url: new URL(`https://gateway.invalid:${port}/x`),
      addresses: [parseIpAddress('127.0.0.1')!],
      allowed: true,
    };
    await assert.rejects(pinnedTransport(target, { method: 'GET', headers: {}, signal: new AbortController().signal }));
    assert.deepEqual(seen, ['gateway.invalid']);
  });
});

describe('worker.ccipReadBudgetSeconds: one time budget per lookup', () => {
  test('never-answering gateways: the budget ends the lookup, the rest are not asked, and it is a failure', async (t) => {
    const clock = createFakeClock();
    const hang = await startCanary(t, () => {});
    const urls = Array.from({ length: 10 }, (_, i) => `${hang.origin}/${i}`);
    let settled = false;
    const result = failure(
      ccipRead(lookup(urls), {
        contract: ISM,
        allowOrigins: [hang.origin],
        clock,
        timeoutMs: 10_000,
        budgetMs: 25_000,
      }),
    ).finally(() => {
      settled = true;
    });
    for (const n of [1, 2, 3]) {
      while (hang.requests.length < n) await clock.flush();
      await clock.advance(n < 3 ? 10_000 : 5_000);
    }
    await clock.flush();
    assert.ok(settled, 'the lookup ended when the 25 s were used up');
    const error = await result;
    assert.equal(error.code, 'unavailable');
    assert.equal(
      error.message,
      'CCIP-read unavailable (the 25 s time budget ran out): gateway 1 of 10 timed out after 10000 ms; gateway 2 of 10 timed out after 10000 ms; gateway 3 of 10 timed out after 5000 ms; 7 not asked',
    );
    assert.equal(hang.requests.length, 3);
    assert.notEqual(toDeliveryError(error).code, 'pending');
  });

  test('a "not ready" answer before the budget runs out keeps the lookup pending (not counted)', async (t) => {
    const clock = createFakeClock();
    const notReady = await startCanary(t, (_req, res) => res.writeHead(404).end());
    const hang = await startCanary(t, () => {});
    let settled = false;
    const result = failure(
      ccipRead(lookup([`${notReady.origin}/a`, `${hang.origin}/b`, `${hang.origin}/c`]), {
        contract: ISM,
        allowOrigins: [notReady.origin, hang.origin],
        clock,
        budgetMs: 15_000,
      }),
    ).finally(() => {
      settled = true;
    });
    while (hang.requests.length < 1) await clock.flush();
    await clock.advance(10_000);
    while (hang.requests.length < 2) await clock.flush();
    await clock.advance(5_000);
    await clock.flush();
    assert.ok(settled, 'the lookup ended when the 15 s were used up');
    const error = await result;
    assert.equal(error.code, 'pending');
    assert.match(
      error.message,
      /^CCIP-read pending \(proof not ready\) \(the 15 s time budget ran out\): gateway 1 of 3 answered HTTP 404/,
    );
    assert.equal(toDeliveryError(error).code, 'pending');
  });

  test('a resolver that never answers is bounded by the budget too', async () => {
    const clock = createFakeClock();
    const result = failure(
      ccipRead(lookup(['https://slow-dns.example/x']), {
        contract: ISM,
        clock,
        budgetMs: 30_000,
        resolve: () => new Promise(() => {}),
        fetch: noFetch,
      }),
    );
    await clock.advance(30_000);
    const error = await result;
    assert.equal(error.code, 'unavailable');
    assert.equal(error.message, 'CCIP-read unavailable: the 30 s time budget ran out resolving the gateways');
    assert.equal(clock.pending(), 0);
  });
});
