/**
 * CORS (docs/operations.md#cors): browser UIs call POST /relay directly. An allowlist of origins
 * from server.corsOrigins (validated and normalised by lib/config/parse.ts), preflight on every route,
 * error answers readable by an allowed page, nothing for other origins, Vary: Origin.
 */
import assert from 'node:assert/strict';
import { after, describe, test, type TestContext } from 'node:test';
import { parseConfig } from '../../../lib/config/parse.ts';
import { ConfigError } from '../../../lib/errors/classes.ts';
import { openSqliteStore } from '../../../lib/sqlite/index.ts';
import type { RelayerConfig } from '../../../lib/types.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { MAILBOX } from '../../helpers/fixtures/builders.ts';
import { httpRequest, postJson, type RawResponse } from '../../helpers/harness/http.ts';
import { openapi } from '../../helpers/harness/openapi.ts';
import { startApi } from '../../helpers/harness/server.ts';

const APP = 'https://app.example.org';
const ROUTES = Object.keys(openapi.paths);
const store = await openSqliteStore(':memory:');
after(() => store.close());

function start(t: TestContext, config: RelayerConfig) {
  return startApi(t, { config, merkle: store.merkle, openapi });
}

function preflight(url: string, path: string, origin: string, method = 'POST'): Promise<RawResponse> {
  return httpRequest(url, {
    method: 'OPTIONS',
    path,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'content-type, authorization, x-request-id',
    },
  });
}

function assertNoCors(res: RawResponse, what: string): void {
  for (const name of Object.keys(res.headers)) assert.doesNotMatch(name, /^access-control-/, `${what}: ${name}`);
}

const allowed = () => testConfig({ server: { corsOrigins: [APP], adminToken: 'admin-token-0123456789abcdef' } });

describe('CORS allowlist (docs/operations.md#cors)', () => {
  test('docs/operations.md#cors: a preflight from an allowed origin is answered on every route, without the admin token', async (t) => {
    const { url } = await start(t, allowed());
    for (const path of ROUTES) {
      const res = await preflight(url, path, APP);
      assert.equal(res.status, 204, path);
      assert.equal(res.text, '');
      assert.equal(res.headers['access-control-allow-origin'], APP, path);
      assert.equal(res.headers['access-control-allow-methods'], res.headers.allow, `${path}: the path's own methods`);
      const headers = String(res.headers['access-control-allow-headers']).toLowerCase().split(/,\s*/).sort();
      assert.deepEqual(headers, ['authorization', 'content-type', 'x-request-id'], path);
      assert.equal(res.headers['access-control-max-age'], '600');
      assert.match(String(res.headers.vary), /\bOrigin\b/);
    }
  });

  test('docs/operations.md#cors: responses to an allowed page carry Allow-Origin and expose Retry-After and X-Request-Id', async (t) => {
    // Errors included.
    const { url } = await start(t, allowed());
    const headers = { origin: APP };
    const answers: Array<[string, RawResponse]> = [
      ['GET /relay', await httpRequest(url, { path: '/relay', headers })],
      [
        'POST /relay 400',
        await postJson(url, '/relay', { origin_chain: 'nowhere', tx_hash: '0x' + '1'.repeat(64) }, headers),
      ],
      ['POST /relay 415', await httpRequest(url, { method: 'POST', path: '/relay', body: '{}', headers })],
      ['POST /merkle 401', await postJson(url, '/merkle_tree_insertions', { merkle_tree_insertions: [] }, headers)],
      ['PUT /relay 405', await httpRequest(url, { method: 'PUT', path: '/relay', headers })],
      ['GET /metrics', await httpRequest(url, { path: '/metrics', headers })],
      ['GET /relay/{message_id} 404', await httpRequest(url, { path: `/relay/0x${'ab'.repeat(32)}`, headers })],
      ['GET /relay/{message_id} 400', await httpRequest(url, { path: '/relay/0x12', headers })],
      [
        'GET /relay?origin_chain=&tx_hash=',
        await httpRequest(url, { path: `/relay?origin_chain=ethereum&tx_hash=0x${'1'.repeat(64)}`, headers }),
      ],
    ];
    for (const [what, res] of answers) {
      assert.equal(res.headers['access-control-allow-origin'], APP, what);
      const exposed = String(res.headers['access-control-expose-headers']).toLowerCase().split(/,\s*/);
      assert.ok(exposed.includes('retry-after') && exposed.includes('x-request-id'), `${what}: ${exposed}`);
      assert.match(String(res.headers.vary), /\bOrigin\b/, what);
    }
  });

  test('docs/operations.md#cors: other origins get no CORS header, only Vary: Origin; look-alike origins are other origins', async (t) => {
    const { url } = await start(t, allowed());
    const others = [
      'https://evil.example',
      'http://app.example.org',
      'https://app.example.org:8443',
      'https://app.example.org.evil.example',
      'https://sub.app.example.org',
      'https://app.example.org/',
      'null',
      '',
    ];
    for (const origin of others) {
      const pre = await preflight(url, '/relay', origin);
      assert.equal(pre.status, 204, 'the Allow answer stays');
      assertNoCors(pre, `preflight from ${JSON.stringify(origin)}`);
      const res = await postJson(
        url,
        '/relay',
        { origin_chain: 'nowhere', tx_hash: '0x' + '1'.repeat(64) },
        { origin },
      );
      assertNoCors(res, `POST from ${JSON.stringify(origin)}`);
      if (origin !== '') assert.match(String(res.headers.vary), /\bOrigin\b/, 'the answer depends on Origin');
    }
  });

  test('an allowed origin gets CORS headers and a preflight answer; others get none', async (t) => {
    const { url } = await start(t, testConfig({ server: { corsOrigins: ['https://app.example.org'] } }));
    const pre = await httpRequest(url, {
      method: 'OPTIONS',
      path: '/relay',
      headers: {
        origin: 'https://app.example.org',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], 'https://app.example.org');
    assert.match(String(pre.headers['access-control-allow-methods']), /POST/);
    assert.match(String(pre.headers['access-control-allow-headers']), /Content-Type/i);
    const denied = await httpRequest(url, {
      method: 'OPTIONS',
      path: '/relay',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(denied.headers['access-control-allow-origin'], undefined);
    const get = await httpRequest(url, { path: '/relay', headers: { origin: 'https://app.example.org' } });
    assert.equal(get.headers['access-control-allow-origin'], 'https://app.example.org');
    const other = await httpRequest(url, { path: '/relay', headers: { origin: 'https://evil.example' } });
    assert.equal(other.headers['access-control-allow-origin'], undefined);
  });

  test('only the exact configured origin is allowed; look-alikes get nothing; credentials are never allowed', async (t) => {
    const allowed = 'https://app.example.org';
    const { url } = await start(t, testConfig({ server: { corsOrigins: [allowed] } }));
    const cases: Array<[string, boolean]> = [
      [allowed, true],
      ['https://app.example.org.evil.example', false],
      ['https://evil-app.example.org', false],
      ['http://app.example.org', false],
      ['https://app.example.org:8443', false],
      ['https://APP.EXAMPLE.ORG', false],
      ['https://app.example.org/', false],
      ['null', false],
      ['*', false],
    ];
    for (const [origin, ok] of cases) {
      for (const method of ['GET', 'OPTIONS']) {
        const res = await httpRequest(url, {
          method,
          path: '/relay',
          headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' },
        });
        assert.notEqual(res.status, 500);
        assert.equal(res.headers['access-control-allow-origin'], ok ? origin : undefined, `${method} ${origin}`);
        assert.equal(res.headers['access-control-allow-credentials'], undefined);
        if (!ok) assert.equal(res.headers['access-control-allow-methods'], undefined, `${method} ${origin}`);
        assert.match(String(res.headers.vary), /Origin/, 'caches keep answers per Origin');
      }
    }
  });

  test('an OPTIONS without Access-Control-Request-Method is a plain Allow answer, not a preflight', async (t) => {
    const { url } = await start(t, allowed());
    const res = await httpRequest(url, { method: 'OPTIONS', path: '/relay', headers: { origin: APP } });
    assert.equal(res.status, 204);
    assert.equal(res.headers['access-control-allow-methods'], undefined);
    assert.equal(res.headers.allow, 'GET, HEAD, POST, OPTIONS');
  });

  test('a preflight on a path that does not exist is 404 without CORS headers', async (t) => {
    const { url } = await start(t, allowed());
    const res = await preflight(url, '/igp_rules', APP);
    assert.equal(res.status, 404);
    assertNoCors(res, '404');
  });

  test('CORS off (no corsOrigins, the default): no CORS header and no Vary on any answer, whatever the Origin and method', async (t) => {
    const { url } = await start(t, testConfig());
    for (const res of [
      await preflight(url, '/relay', APP),
      await httpRequest(url, { path: '/relay', headers: { origin: APP } }),
    ]) {
      assertNoCors(res, 'CORS off');
      assert.equal(res.headers.vary, undefined);
    }
    const plain = await httpRequest(url, { path: '/relay', headers: { origin: 'https://app.example.org' } });
    assert.equal(plain.headers['access-control-allow-origin'], undefined);
    // whatever the Origin, on every method
    for (const origin of ['https://app.example.org', 'null', 'http://127.0.0.1']) {
      for (const method of ['GET', 'OPTIONS', 'POST']) {
        const res = await httpRequest(url, {
          method,
          path: '/relay',
          headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Content-Type': 'application/json' },
          body: method === 'POST' ? '{}' : undefined,
        });
        const cors = Object.keys(res.headers).filter((h) => h.startsWith('access-control-'));
        assert.deepEqual(cors, [], `${method} ${origin}`);
      }
    }
  });

  test('"*" allows every origin: the origin is echoed with Vary: Origin (no credentials are ever allowed)', async (t) => {
    const { url } = await start(t, testConfig({ server: { corsOrigins: ['*'] } }));
    for (const origin of [APP, 'https://anything.example', 'http://localhost:3000']) {
      const pre = await preflight(url, '/relay', origin);
      assert.equal(pre.headers['access-control-allow-origin'], origin);
      const res = await httpRequest(url, { path: '/relay', headers: { origin } });
      assert.equal(res.headers['access-control-allow-origin'], origin);
      assert.match(String(res.headers.vary), /\bOrigin\b/);
      assert.equal(res.headers['access-control-allow-credentials'], undefined);
    }
  });
});

describe('server.corsOrigins in the config file (lib/config/parse.ts, docs/design.md#configuration)', () => {
  const chains = { ethereum: { domainId: 1, chainId: 1, mailbox: MAILBOX, rpcUrls: [{ http: 'http://127.0.0.1:1' }] } };
  const parse = (corsOrigins: unknown) => parseConfig({ chains, server: { corsOrigins } }).server.corsOrigins;

  test('docs/design.md#configuration: origins are normalised as browsers send them (lower-case, default port dropped)', async (t) => {
    assert.deepEqual(parse(['HTTPS://App.Example.org:443/', 'http://localhost:3000', '*']), [
      APP,
      'http://localhost:3000',
      '*',
    ]);
    // and the server built from it accepts the browser's spelling
    const config = parseConfig({ chains, server: { corsOrigins: ['HTTPS://App.Example.org:443'] } });
    const { url } = await start(t, config);
    const res = await preflight(url, '/relay', APP);
    assert.equal(res.headers['access-control-allow-origin'], APP);
  });

  test('docs/design.md#configuration: anything but "*" or scheme://host[:port] is refused, naming the key', () => {
    for (const bad of [
      'https://x.example/path',
      'ftp://x.example',
      '*.example.org',
      'https://u:p@x.example',
      'null',
      'https://x.example?q',
      '',
      7,
    ]) {
      assert.throws(
        () => parse([bad]),
        (e: Error) => e instanceof ConfigError && /server\.corsOrigins\[0\]/.test(e.message),
        JSON.stringify(bad),
      );
    }
    assert.throws(() => parse('https://x.example'), ConfigError, 'a string is not a list');
  });
});
