/**
 * EIP-3668 client of the delivery worker (docs/delivery.md, CCIP-read): the OffchainLookup decoder
 * checked against viem's encoder, and the gateway requests against real HTTP servers on loopback,
 * most of them hostile. Timeouts run on the injected clock: nothing here waits 10 s.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { encodeErrorResult, parseAbi, toFunctionSelector } from 'viem/utils';
import type { Hex } from 'viem';
import {
  ccipRead,
  CcipReadError,
  createOffchainReader,
  decodeOffchainLookup,
  OFFCHAIN_LOOKUP_SELECTOR,
  type OffchainLookup,
} from '../../../../lib/worker/ccip/read.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';

// The error as Hyperlane's ICcipReadIsm declares it (EIP-3668's definition).
const ABI = parseAbi([
  'error OffchainLookup(address sender, string[] urls, bytes callData, bytes4 callbackFunction, bytes extraData)',
  'error Other(address sender, string[] urls, bytes callData, bytes4 callbackFunction, bytes extraData)',
]);

const ISM: Hex = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const ISM_CHECKSUMMED: Hex = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

function encode(
  args: { sender?: Hex; urls?: string[]; callData?: Hex; callbackFunction?: Hex; extraData?: Hex },
  errorName: 'OffchainLookup' | 'Other' = 'OffchainLookup',
): Hex {
  return encodeErrorResult({
    abi: ABI,
    errorName,
    args: [
      args.sender ?? ISM_CHECKSUMMED,
      args.urls ?? ['https://gateway.example/{sender}/{data}.json'],
      args.callData ?? '0x12345678',
      args.callbackFunction ?? '0xf7e83aee',
      args.extraData ?? '0xabcdef',
    ],
  });
}

describe('decodeOffchainLookup (EIP-3668 OffchainLookup, cross-checked against viem)', () => {
  test("the selector is EIP-3668's 0x556f1830", () => {
    assert.equal(OFFCHAIN_LOOKUP_SELECTOR, '0x556f1830');
    assert.equal(toFunctionSelector('OffchainLookup(address,string[],bytes,bytes4,bytes)'), OFFCHAIN_LOOKUP_SELECTOR);
  });

  const vectors: { name: string; urls: string[]; callData: Hex; extraData: Hex }[] = [
    {
      name: 'one URL',
      urls: ['https://offchain-lookup.example/cctp/getCctpAttestation'],
      callData: '0x12345678',
      extraData: '0x',
    },
    { name: 'no URL, empty bytes', urls: [], callData: '0x', extraData: '0x' },
    {
      name: 'three URLs, one empty, one non-ASCII',
      urls: ['https://a.example/{sender}/{data}.json', '', 'https://b.example/ü/€'],
      callData: `0x${'ab'.repeat(33)}`,
      extraData: `0x${'01'.repeat(64)}`,
    },
    {
      name: 'long calldata (a Hyperlane message)',
      urls: ['http://127.0.0.1:1/x'],
      callData: `0x${'5a'.repeat(405)}`,
      extraData: `0x${'5a'.repeat(401)}`,
    },
  ];
  for (const v of vectors) {
    test(v.name, () => {
      const decoded = decodeOffchainLookup(
        encode({ urls: v.urls, callData: v.callData, extraData: v.extraData, callbackFunction: '0xF7E83AEE' as Hex }),
      );
      assert.deepEqual(decoded, {
        sender: ISM,
        urls: v.urls,
        callData: v.callData,
        callbackFunction: '0xf7e83aee',
        extraData: v.extraData,
      });
    });
  }

  test('anything that is not exactly an OffchainLookup is null', () => {
    const good = encode({ urls: ['https://a.example', 'https://b.example'] });
    const body = good.slice(10);
    const word = (i: number) => body.slice(i * 64, (i + 1) * 64);
    const words = body.length / 64;
    const withWord = (i: number, w: string): Hex => `0x556f1830${body.slice(0, i * 64)}${w}${body.slice((i + 1) * 64)}`;
    const cases: [string, Hex][] = [
      ['empty', '0x'],
      ['not hex', '0xzz6f1830'],
      ['another error with the same arguments', encode({}, 'Other')],
      [
        'Error(string)',
        encodeErrorResult({ abi: parseAbi(['error Error(string)']), errorName: 'Error', args: ['already delivered'] }),
      ],
      ['selector only', '0x556f1830'],
      ['truncated by one byte', good.slice(0, -2) as Hex],
      ['a trailing byte', `${good}00`],
      ['a trailing word', `${good}${'00'.repeat(32)}`],
      ['dirty address padding', withWord(0, `01${word(0).slice(2)}`)],
      ['dirty bytes4 padding', withWord(3, `${word(3).slice(0, 62)}01`)],
      ['urls offset out of bounds', withWord(1, (BigInt(body.length) * 4n).toString(16).padStart(64, '0'))],
      ['urls offset huge', withWord(1, 'ff'.repeat(32))],
      ['callData offset pointing at the urls (aliased)', withWord(2, word(1))],
      ['dirty padding after extraData', `0x556f1830${body.slice(0, -2)}01`],
      [
        'a URL that is not UTF-8',
        encode({ urls: ['https://a.example'] }).replace(
          Buffer.from('https://a.example').toString('hex'),
          `ff${Buffer.from('ttps://a.example').toString('hex')}`,
        ) as Hex,
      ],
    ];
    assert.ok(words > 10);
    for (const [name, data] of cases) assert.equal(decodeOffchainLookup(data), null, name);
    assert.notEqual(decodeOffchainLookup(good), null);
  });
});

// ---------------------------------------------------------------------------------------------
// Gateways on loopback

interface Gateway {
  /** Base URL, e.g. http://127.0.0.1:1234 */
  url: string;
  requests: { method: string; path: string; body: string; contentType?: string }[];
  /** Resolves when the n-th request (1-based) arrived. */
  arrived(n: number): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/**
 * The origins of the gateways these tests start: loopback is not a public address, so each is
 * asked only as an allowed origin (`allowOrigins`, read when ccipRead is called).
 */
const loopbackGateways: string[] = [];

async function startGateway(t: TestContext, handler: Handler): Promise<Gateway> {
  const requests: Gateway['requests'] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method!, path: req.url!, body, contentType: req.headers['content-type'] });
      for (const w of waiters) if (requests.length >= w.n) w.resolve();
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  loopbackGateways.push(`http://127.0.0.1:${port}`);
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    arrived: (n) => (requests.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
  };
}

function json(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const METADATA: Hex = `0x${'00'.repeat(31)}40${'c0'.repeat(2)}`;
const answer: Handler = (_req, res) => json(res, 200, { data: METADATA });

function lookup(urls: string[], over: Partial<OffchainLookup> = {}): OffchainLookup {
  return { sender: ISM, urls, callData: '0xdeadbeef', callbackFunction: '0xf7e83aee', extraData: '0x', ...over };
}

async function rejectsWith(promise: Promise<unknown>, kind: string, message?: RegExp): Promise<CcipReadError> {
  const error = await promise.then(
    () => assert.fail('expected a CcipReadError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof CcipReadError, String(error));
  assert.equal(error.code, kind, error.message);
  if (message) assert.match(error.message, message);
  // Gateways are named by position only: a URL may hold an API key.
  assert.doesNotMatch(error.message, /127\.0\.0\.1|secret-key|http:/);
  return error;
}

describe('ccipRead: requests (EIP-3668)', () => {
  test('a {data} template is a GET with lower-case sender and data; the answer is returned', async (t) => {
    const g = await startGateway(t, answer);
    const got = await ccipRead(
      lookup([`${g.url}/secret-key/{sender}/{data}.json`], { sender: ISM_CHECKSUMMED, callData: '0xDEADBEEF' }),
      { contract: ISM, allowOrigins: loopbackGateways },
    );
    assert.equal(got, METADATA);
    assert.deepEqual(
      g.requests.map((r) => [r.method, r.path, r.body]),
      [['GET', `/secret-key/${ISM}/0xdeadbeef.json`, '']],
    );
  });

  test('a template without {data} is a POST of {sender, data} as JSON', async (t) => {
    const g = await startGateway(t, (_req, res) => json(res, 200, { data: '0xABCDEF' }));
    const got = await ccipRead(lookup([`${g.url}/cctp/getCctpAttestation`]), {
      contract: ISM_CHECKSUMMED,
      allowOrigins: loopbackGateways,
    });
    assert.equal(got, '0xabcdef');
    assert.equal(g.requests.length, 1);
    assert.equal(g.requests[0].method, 'POST');
    assert.equal(g.requests[0].path, '/cctp/getCctpAttestation');
    assert.equal(g.requests[0].contentType, 'application/json');
    assert.deepEqual(JSON.parse(g.requests[0].body), { sender: ISM, data: '0xdeadbeef' });
  });

  test('empty metadata ("0x") is an answer', async (t) => {
    const g = await startGateway(t, (_req, res) => json(res, 200, { data: '0x' }));
    assert.equal(await ccipRead(lookup([`${g.url}/{data}`]), { contract: ISM, allowOrigins: loopbackGateways }), '0x');
  });

  test('a lookup whose sender is not the contract asked is refused before any request', async (t) => {
    const g = await startGateway(t, answer);
    await rejectsWith(
      ccipRead(lookup([`${g.url}/{data}`]), { contract: '0x0000000000000000000000000000000000000001' }),
      'refused',
      /another sender/,
    );
    await rejectsWith(ccipRead(lookup([]), { contract: ISM, allowOrigins: loopbackGateways }), 'refused', /no gateway/);
    assert.equal(g.requests.length, 0);
  });
});

describe('ccipRead: not ready is pending', () => {
  const notReady: [string, Handler][] = [
    ['404', (_req, res) => json(res, 404, { error: 'not found' })],
    [
      '500 "CCTP attestation is pending" (Hyperlane\'s CCTP service)',
      (_req, res) => json(res, 500, { error: 'CCTP attestation is pending' }),
    ],
    ['500 "attestation not found"', (_req, res) => json(res, 500, { error: 'Attestation not found' })],
  ];
  for (const [name, handler] of notReady) {
    test(name, async (t) => {
      const g = await startGateway(t, handler);
      await rejectsWith(
        ccipRead(lookup([`${g.url}/{data}`]), { contract: ISM, allowOrigins: loopbackGateways }),
        'pending',
        /gateway 1 of 1 .*not ready/,
      );
    });
  }

  test('404 on the first gateway, an answer on the next: the answer; onAttempt tells each outcome in order', async (t) => {
    const one = await startGateway(t, (_req, res) => json(res, 404, {}));
    const two = await startGateway(t, answer);
    const attempts: unknown[] = [];
    const urls = [`${one.url}/{data}`, `${two.url}/{data}`];
    assert.equal(
      await ccipRead(lookup(urls), {
        contract: ISM,
        allowOrigins: loopbackGateways,
        onAttempt: (a) => attempts.push(a),
      }),
      METADATA,
    );
    assert.equal(one.requests.length, 1);
    assert.equal(two.requests.length, 1);
    assert.deepEqual(attempts, [
      { index: 0, url: urls[0], outcome: 'pending' },
      { index: 1, url: urls[1], outcome: 'answer' },
    ]);
  });

  test('pending on one gateway and down on the other is pending', async (t) => {
    const one = await startGateway(t, (_req, res) => json(res, 503, {}));
    const two = await startGateway(t, (_req, res) => json(res, 500, { error: 'CCTP attestation is pending' }));
    await rejectsWith(
      ccipRead(lookup([`${one.url}/x`, `${two.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
      'pending',
      /gateway 1 of 2 answered HTTP 503; gateway 2 of 2 answered HTTP 500 attestation pending/,
    );
  });

  test('a 500 with any other text is not pending', async (t) => {
    const g = await startGateway(t, (_req, res) => json(res, 500, { error: 'RPC failed' }));
    await rejectsWith(
      ccipRead(lookup([`${g.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
      'unavailable',
      /gateway 1 of 1 answered HTTP 500$/,
    );
  });
});

describe('ccipRead: hostile gateways', () => {
  test('5xx moves to the next gateway; all down is unavailable', async (t) => {
    const one = await startGateway(t, (_req, res) => json(res, 503, {}));
    const two = await startGateway(t, (_req, res) => json(res, 502, {}));
    const three = await startGateway(t, answer);
    assert.equal(
      await ccipRead(lookup([`${one.url}/x`, `${two.url}/x`, `${three.url}/x`]), {
        contract: ISM,
        allowOrigins: loopbackGateways,
      }),
      METADATA,
    );
    await rejectsWith(
      ccipRead(lookup([`${one.url}/x`, `${two.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
      'unavailable',
      /gateway 1 of 2 answered HTTP 503; gateway 2 of 2 answered HTTP 502/,
    );
  });

  test('a 4xx other than 404 stops: the next gateway is never asked', async (t) => {
    for (const status of [400, 403, 410, 429]) {
      const one = await startGateway(t, (_req, res) => json(res, status, { error: 'no' }));
      const two = await startGateway(t, answer);
      await rejectsWith(
        ccipRead(lookup([`${one.url}/x`, `${two.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
        'refused',
        new RegExp(`gateway 1 of 2 answered HTTP ${status}`),
      );
      assert.equal(two.requests.length, 0, `after ${status}`);
    }
  });

  test('a redirect is not followed', async (t) => {
    const target = await startGateway(t, answer);
    const redirect = await startGateway(t, (_req, res) => {
      res.writeHead(302, { location: `${target.url}/x` });
      res.end();
    });
    await rejectsWith(
      ccipRead(lookup([`${redirect.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
      'malformed',
      /redirect \(HTTP 302\)/,
    );
    assert.equal(target.requests.length, 0);
    // ... and counts as a failed gateway: the next one is asked.
    const next = await startGateway(t, answer);
    assert.equal(
      await ccipRead(lookup([`${redirect.url}/x`, `${next.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
      METADATA,
    );
    assert.equal(target.requests.length, 0);
  });

  test('an answer over the limit is refused, whether or not it declares its length', async (t) => {
    const big = `{"data":"0x${'00'.repeat(600 * 1024)}"}`; // 1.2 MB of text
    const declared = await startGateway(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': big.length });
      res.end(big);
    });
    const chunked = await startGateway(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let i = 0; i < big.length; i += 64 * 1024) res.write(big.slice(i, i + 64 * 1024));
      res.end();
    });
    await rejectsWith(
      ccipRead(lookup([`${declared.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
      'malformed',
      /more than 1048576 bytes/,
    );
    await rejectsWith(
      ccipRead(lookup([`${chunked.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
      'malformed',
      /more than 1048576 bytes/,
    );
    // Just under the limit is an answer.
    const fits = `0x${'00'.repeat(500 * 1024)}`;
    const ok = await startGateway(t, (_req, res) => json(res, 200, { data: fits }));
    assert.equal(await ccipRead(lookup([`${ok.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }), fits);
    // A smaller configured limit applies.
    await rejectsWith(
      ccipRead(lookup([`${ok.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways, maxBytes: 1000 }),
      'malformed',
      /more than 1000 bytes/,
    );
  });

  test('malformed answers move to the next gateway', async (t) => {
    const bad: [string, Handler][] = [
      ['invalid JSON', (_req, res) => res.end('{"data":')],
      ['not an object', (_req, res) => json(res, 200, ['0x00'])],
      ['no data', (_req, res) => json(res, 200, { result: '0x00' })],
      ['data not a string', (_req, res) => json(res, 200, { data: 12 })],
      ['data without 0x', (_req, res) => json(res, 200, { data: 'abcd' })],
      ['data odd length', (_req, res) => json(res, 200, { data: '0xabc' })],
      ['data not hex', (_req, res) => json(res, 200, { data: '0xzz' })],
      [
        'another sender',
        (_req, res) => json(res, 200, { data: '0x00', sender: '0x0000000000000000000000000000000000000001' }),
      ],
      ['invalid UTF-8', (_req, res) => res.end(Buffer.from([0x7b, 0xff, 0x7d]))],
      [
        'a 204 without a body',
        (_req, res) => {
          res.writeHead(204);
          res.end();
        },
      ],
    ];
    const good = await startGateway(t, answer);
    for (const [name, handler] of bad) {
      const g = await startGateway(t, handler);
      await rejectsWith(
        ccipRead(lookup([`${g.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
        'malformed',
        undefined,
      );
      assert.equal(
        await ccipRead(lookup([`${g.url}/x`, `${good.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }),
        METADATA,
        name,
      );
    }
    // An answer naming the right sender (any case) is fine.
    const named = await startGateway(t, (_req, res) => json(res, 200, { data: '0x01', sender: ISM_CHECKSUMMED }));
    assert.equal(await ccipRead(lookup([`${named.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways }), '0x01');
  });

  test('a gateway that never answers times out after 10 s (injected clock), then the next is asked', async (t) => {
    const clock = createFakeClock();
    const hang = await startGateway(t, () => {});
    const good = await startGateway(t, answer);
    let settled = false;
    const result = ccipRead(lookup([`${hang.url}/secret-key`, `${good.url}/x`]), {
      contract: ISM,
      allowOrigins: loopbackGateways,
      clock,
    }).finally(() => {
      settled = true;
    });
    await hang.arrived(1);
    await clock.advance(9_999);
    assert.equal(settled, false);
    assert.equal(good.requests.length, 0);
    await clock.advance(1);
    assert.equal(await result, METADATA);
    assert.equal(clock.pending(), 0, 'no timer left behind');
  });

  test('a body that stalls after the headers times out too; all timed out is unavailable', async (t) => {
    const clock = createFakeClock();
    const stall = await startGateway(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":"0x');
    });
    const result = rejectsWith(
      ccipRead(lookup([`${stall.url}/x`]), { contract: ISM, allowOrigins: loopbackGateways, clock, timeoutMs: 2_000 }),
      'unavailable',
      /gateway 1 of 1 timed out after 2000 ms/,
    );
    await stall.arrived(1);
    await clock.advance(2_000);
    await result;
  });

  test('a closed port is a transport error', async (t) => {
    const g = await startGateway(t, answer);
    // A port that was just free: nothing listens there now.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    loopbackGateways.push(`http://127.0.0.1:${port}`);
    await rejectsWith(
      ccipRead(lookup([`http://127.0.0.1:${port}/secret-key`]), { contract: ISM, allowOrigins: loopbackGateways }),
      'unavailable',
      /gateway 1 of 1 transport error/,
    );
    assert.equal(
      await ccipRead(lookup([`http://127.0.0.1:${port}/x`, `${g.url}/x`]), {
        contract: ISM,
        allowOrigins: loopbackGateways,
      }),
      METADATA,
    );
  });

  test('only http(s) URLs are followed', async (t) => {
    const g = await startGateway(t, answer);
    for (const url of [
      'file:///etc/passwd',
      'data:application/json,{"data":"0x01"}',
      'ftp://127.0.0.1/x',
      'not a url',
    ]) {
      await rejectsWith(ccipRead(lookup([url]), { contract: ISM, allowOrigins: loopbackGateways }), 'malformed');
    }
    assert.equal(
      await ccipRead(lookup(['data:application/json,{"data":"0x01"}', `${g.url}/x`]), {
        contract: ISM,
        allowOrigins: loopbackGateways,
      }),
      METADATA,
    );
  });

  test('at most 10 gateways are asked', async (t) => {
    const g = await startGateway(t, (_req, res) => json(res, 503, {}));
    const error = await rejectsWith(
      ccipRead(lookup(Array.from({ length: 12 }, (_, i) => `${g.url}/${i}`)), {
        contract: ISM,
        allowOrigins: loopbackGateways,
      }),
      'unavailable',
    );
    assert.equal(g.requests.length, 10);
    assert.match(error.message, /gateway 10 of 10 answered HTTP 503$/);
  });

  test("an abort ends the wait with the signal's reason", async (t) => {
    const hang = await startGateway(t, () => {});
    const controller = new AbortController();
    const result = ccipRead(lookup([`${hang.url}/x`]), {
      contract: ISM,
      allowOrigins: loopbackGateways,
      signal: controller.signal,
    });
    await hang.arrived(1);
    const reason = new Error('stopping');
    controller.abort(reason);
    await assert.rejects(result, (e) => e === reason);
  });
});

describe('createOffchainReader: a revert to metadata', () => {
  test('an OffchainLookup revert is followed with the ISM as the contract asked; anything else is malformed', async (t) => {
    const g = await startGateway(t, answer);
    const read = createOffchainReader({ allowOrigins: loopbackGateways });
    const revert = encode({ sender: ISM_CHECKSUMMED, urls: [`${g.url}/{sender}/{data}`], callData: '0xc0ffee' });
    assert.equal(await read(revert, ISM), METADATA);
    assert.equal(g.requests[0].path, `/${ISM}/0xc0ffee`);
    await rejectsWith(read(revert, '0x0000000000000000000000000000000000000002'), 'refused', /another sender/);
    const notLookup = encodeErrorResult({ abi: parseAbi(['error Error(string)']), errorName: 'Error', args: ['no'] });
    await rejectsWith(read(notLookup, ISM), 'malformed', /did not revert with an OffchainLookup/);
    assert.equal(g.requests.length, 1);
  });
});
