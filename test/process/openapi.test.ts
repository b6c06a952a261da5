/**
 * docs/openapi.json (docs/api.md#http-api): a valid OpenAPI 3.1 document that lists every
 * endpoint, status, header and error reason the server has, served at GET /openapi.json. That
 * every response of the HTTP suites matches it is checked by test/helpers/harness/http.ts on each
 * response; the tests at the end show that check rejects departures from the document.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test, type TestContext } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { REASON_STATUS } from '../../lib/errors/classes.ts';
import { openSqliteStore, type SqliteStore } from '../../lib/sqlite/index.ts';
import { validateMerkleRequest, validateRelayRequest } from '../../lib/relay/validate.ts';
import { testConfig } from '../helpers/fixtures/config.ts';
import { txHash } from '../helpers/fixtures/builders.ts';
import { httpRequest } from '../helpers/harness/http.ts';
import { checkAgainstOpenApi, openapi, resolve, type CheckedResponse } from '../helpers/harness/openapi.ts';
import { startApi, startRelayerServer } from '../helpers/harness/server.ts';

type Json = any;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const RETRY_STATUSES = new Set(['408', '429', '503']);
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

/** Every (where, response) pair of the document: each operation's responses and the two fallbacks. */
function allResponses(): Array<{ where: string; status: string; response: Json; at: string[] }> {
  const out: Array<{ where: string; status: string; response: Json; at: string[] }> = [];
  for (const [path, item] of Object.entries<Json>(openapi.paths)) {
    for (const method of METHODS.filter((m) => item[m])) {
      for (const [status, raw] of Object.entries(item[method].responses)) {
        const { node, at } = resolve(raw, ['paths', path, method, 'responses', status]);
        out.push({ where: `${method.toUpperCase()} ${path}`, status, response: node, at });
      }
    }
  }
  out.push({ where: 'unmatched path', status: '404', ...named(resolve(openapi['x-unmatched-path-response'], [])) });
  out.push({
    where: 'undocumented method',
    status: '405',
    ...named(resolve(openapi['x-undocumented-method-response'], [])),
  });
  return out;
}

function named(r: { node: Json; at: string[] }): { response: Json; at: string[] } {
  return { response: r.node, at: r.at };
}

/** The reasons an error response allows: its narrowed `reason` enum, or every reason. */
function reasonsOf(response: Json): string[] | undefined {
  const schema = response.content?.['application/json']?.schema;
  if (!schema?.allOf) return undefined;
  const isError = schema.allOf.some((s: Json) => s.$ref === '#/components/schemas/Error');
  if (!isError) return undefined;
  const narrowed = schema.allOf.find((s: Json) => s.properties?.reason?.enum);
  return narrowed ? narrowed.properties.reason.enum : Object.keys(REASON_STATUS);
}

function walk(node: Json, visit: (node: Json, path: string) => void, path = '#'): void {
  if (node === null || typeof node !== 'object') return;
  visit(node, path);
  for (const [key, value] of Object.entries(node)) walk(value, visit, `${path}/${key}`);
}

describe('docs/openapi.json is a valid OpenAPI 3.1 document', () => {
  const oasText = readFileSync(new URL('../vectors/openapi/oas-3.1-schema-2022-10-07.json', import.meta.url), 'utf8');
  // See test/vectors/openapi/README.md: ajv mis-resolves the dynamic reference to Schema Objects.
  const oas = JSON.parse(oasText.replaceAll('"$dynamicRef": "#meta"', '"$ref": "#/$defs/schema"'));
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  const validateDocument = ajv.compile(oas);

  test('docs/api.md#http-api: the document validates against the OpenAPI Initiative schema for 3.1 (2022-10-07)', () => {
    assert.match(openapi.openapi, /^3\.1\.\d+$/);
    assert.equal(validateDocument(openapi), true, JSON.stringify(validateDocument.errors, null, 2));
  });

  test('the OAS schema check can fail: a response without description and a path without "/" are refused', () => {
    const noDescription = structuredClone(openapi);
    delete noDescription.paths['/relay'].post.responses['200'].description;
    assert.equal(validateDocument(noDescription), false);
    const badPath = structuredClone(openapi);
    badPath.paths.relay = {};
    assert.equal(validateDocument(badPath), false);
  });

  test('every $ref resolves and every Schema Object is valid JSON Schema 2020-12', () => {
    let refs = 0;
    walk(openapi, (node, path) => {
      if (typeof node.$ref === 'string') {
        assert.doesNotThrow(() => resolve(node, []), `${path}: ${node.$ref}`);
        refs++;
      }
    });
    assert.ok(refs > 50, `${refs} references followed`);
    const meta = new Ajv2020({ strict: true });
    let schemas = 0;
    walk(openapi, (node, path) => {
      if (Object.hasOwn(node, 'schema') && path.match(/\/(content\/[^/]+|headers\/[^/]+|parameters\/\d+)$/)) {
        // $refs inside point into the document: check the schema's own keywords, references resolved.
        const schema = JSON.parse(
          JSON.stringify(node.schema, (_key, value) => (value?.$ref ? resolve(value, []).node : value)),
        );
        assert.equal(meta.validateSchema(schema), true, `${path}/schema: ${JSON.stringify(meta.errors)}`);
        schemas++;
      }
    });
    for (const [name, schema] of Object.entries(openapi.components.schemas)) {
      assert.equal(
        meta.validateSchema(schema as object),
        true,
        `components.schemas.${name}: ${JSON.stringify(meta.errors)}`,
      );
      schemas++;
    }
    assert.ok(schemas > 20, `${schemas} schemas checked`);
  });

  test('info.version is the package version; operationIds are unique', () => {
    assert.equal(openapi.info.version, pkg.version);
    const ids: string[] = [];
    for (const item of Object.values<Json>(openapi.paths))
      for (const m of METHODS) if (item[m]) ids.push(item[m].operationId);
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.every((id) => typeof id === 'string' && id.length > 0));
  });
});

describe('the document covers every status, reason and header (docs/design.md#errors)', () => {
  test('docs/design.md#errors: the Reason enum is exactly the reasons of lib/errors/classes.ts', () => {
    assert.deepEqual([...openapi.components.schemas.Reason.enum].sort(), Object.keys(REASON_STATUS).sort());
  });

  test('docs/design.md#errors: every reason is documented under its own status, and no other status allows it', () => {
    const seen = new Set<string>();
    for (const { where, status, response } of allResponses()) {
      const reasons = reasonsOf(response);
      // HEAD answers carry no body, so no reason.
      if (Number(status) >= 400 && !where.startsWith('HEAD'))
        assert.ok(reasons, `${where} ${status} has the error body`);
      for (const reason of reasons ?? []) {
        assert.equal(
          String(REASON_STATUS[reason as keyof typeof REASON_STATUS]),
          status,
          `${where}: ${reason} under ${status}`,
        );
        seen.add(reason);
      }
    }
    assert.deepEqual([...seen].sort(), Object.keys(REASON_STATUS).sort());
  });

  test('docs/api.md#errors: POST /relay documents every row of the error table', () => {
    const responses = openapi.paths['/relay'].post.responses;
    const table: Array<[string, string]> = [
      ['400', 'invalid_request'],
      ['400', 'message_not_whitelisted'],
      ['400', 'message_blacklisted'],
      ['400', 'unsupported_destination'],
      ['400', 'too_many_messages'],
      ['408', 'timeout'],
      ['429', 'rate_limited'],
      ['429', 'duplicate_tx'],
      ['503', 'cache_full'],
      ['503', 'store_unavailable'],
      ['500', 'internal_error'],
      ['413', 'payload_too_large'],
      ['415', 'unsupported_media_type'],
    ];
    for (const [status, reason] of table) {
      assert.ok(responses[status], `${status} documented`);
      assert.ok(reasonsOf(resolve(responses[status], []).node)?.includes(reason), `${status} ${reason}`);
    }
  });

  test('docs/design.md#errors: the headers the responses require', () => {
    // Every 408/429/503 requires Retry-After; every response requires X-Request-Id; 401 has WWW-Authenticate;
    // 405 has Allow.
    for (const { where, status, response } of allResponses()) {
      const headers = response.headers ?? {};
      const required = (name: string) =>
        headers[name] !== undefined && resolve(headers[name], []).node.required === true;
      assert.ok(required('X-Request-Id'), `${where} ${status}: X-Request-Id`);
      assert.equal(required('Retry-After'), RETRY_STATUSES.has(status), `${where} ${status}: Retry-After`);
      if (status === '401') assert.ok(required('WWW-Authenticate'), `${where} 401: WWW-Authenticate`);
      if (status === '405' || status === '204') assert.ok(required('Allow'), `${where} ${status}: Allow`);
    }
  });

  test('docs/design.md#merkle-tree-insertions: which operations need the bearer token', () => {
    // The merkle operations may need it, GET /messages always does, the others never do.
    assert.deepEqual(openapi.components.securitySchemes.adminToken, {
      ...openapi.components.securitySchemes.adminToken,
      type: 'http',
      scheme: 'bearer',
    });
    for (const [path, item] of Object.entries<Json>(openapi.paths)) {
      for (const method of METHODS.filter((m) => item[m])) {
        const security = item[method].security ?? openapi.security ?? [];
        if ((path === '/merkle_tree_insertions' || path === '/merkle_proofs') && method !== 'options') {
          assert.deepEqual(security, [{ adminToken: [] }, {}], `${method} ${path}`);
          assert.ok(item[method].responses['401'], `${method} ${path} documents 401`);
        } else if (path === '/messages' && method !== 'options') {
          assert.deepEqual(security, [{ adminToken: [] }], `${method} ${path}: never open`);
          assert.ok(item[method].responses['401'], `${method} ${path} documents 401`);
        } else {
          assert.ok(security.length === 0, `${method} ${path} needs no token`);
        }
      }
    }
  });

  test('docs/api.md#post-relay, #post-merkle_tree_insertions: the request schemas agree with lib/relay/validate.ts', () => {
    // On valid and invalid bodies.
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(openapi, 'doc');
    const relaySchema = ajv.compile({ $ref: 'doc#/components/schemas/RelayRequest' });
    const chains = new Map(Object.entries(testConfig().chains));
    const relayCases: unknown[] = [
      { origin_chain: 'ethereum', tx_hash: txHash(1) },
      { origin_chain: 'ethereum', tx_hash: txHash(1).toUpperCase().replace('0X', '0x'), extra: 1 },
      { origin_chain: '', tx_hash: txHash(1) },
      { origin_chain: 'ethereum', tx_hash: '' },
      { origin_chain: 'ethereum', tx_hash: txHash(1) + '0' },
      { origin_chain: 'ethereum', tx_hash: '0X' + txHash(1).slice(2) },
      { origin_chain: 'ethereum' },
      { origin_chain: 1, tx_hash: txHash(1) },
      [],
      null,
    ];
    for (const body of relayCases) {
      const accepted = (() => {
        try {
          validateRelayRequest(body, chains);
          return true;
        } catch {
          return false;
        }
      })();
      assert.equal(relaySchema(body), accepted, JSON.stringify(body));
    }
    const merkleSchema = ajv.compile({ $ref: 'doc#/components/schemas/MerkleInsertRequest' });
    const record = { chain: 1, insertion_block_number: 5, leaf_index: 0, message_id: '0x' + 'ab'.repeat(32) };
    const merkleCases: unknown[] = [
      { merkle_tree_insertions: [record] },
      { merkle_tree_insertions: [{ ...record, message_id: '0x' + 'AB'.repeat(32) }] },
      { merkle_tree_insertions: [] },
      { merkle_tree_insertions: [{ ...record, chain: 2 ** 32 }] },
      { merkle_tree_insertions: [{ ...record, leaf_index: 1.5 }] },
      { merkle_tree_insertions: [{ ...record, insertion_block_number: 2 ** 53 }] },
      { merkle_tree_insertions: [{ ...record, message_id: '0x1234' }] },
      { merkle_tree_insertions: [7] },
      {},
    ];
    for (const body of merkleCases) {
      const accepted = (() => {
        try {
          validateMerkleRequest(body);
          return true;
        } catch {
          return false;
        }
      })();
      assert.equal(merkleSchema(body), accepted, JSON.stringify(body));
    }
  });
});

describe('the document matches the running server', () => {
  let store: SqliteStore;
  before(async () => {
    store = await openSqliteStore(':memory:');
  });
  after(() => store.close());

  function start(t: TestContext, openapiDoc: unknown) {
    return startApi(t, { merkle: store.merkle, openapi: openapiDoc });
  }

  test('docs/design.md#http-surface: each documented path allows exactly the documented methods (OPTIONS Allow)', async (t) => {
    const { url } = await start(t, openapi);
    for (const [path, item] of Object.entries<Json>(openapi.paths)) {
      const res = await httpRequest(url, { method: 'OPTIONS', path });
      assert.equal(res.status, 204);
      const allowed = String(res.headers.allow)
        .split(',')
        .map((m) => m.trim().toLowerCase())
        .sort();
      assert.deepEqual(allowed, METHODS.filter((m) => item[m]).sort(), path);
    }
  });

  test('docs/api.md#http-api: GET /openapi.json serves the document; HEAD has its headers only', async (t) => {
    const { url } = await start(t, openapi);
    const res = await httpRequest(url, { path: '/openapi.json' });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(res.json(), openapi);
    const head = await httpRequest(url, { method: 'HEAD', path: '/openapi.json' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers['content-length'], res.headers['content-length']);
  });

  test('without a document, GET /openapi.json is 404 not_found (as documented)', async (t) => {
    const { url } = await start(t, undefined);
    const res = await httpRequest(url, { path: '/openapi.json' });
    assert.equal(res.status, 404);
    assert.equal(res.json().reason, 'not_found');
  });

  test('docs/api.md#http-api: relayer-server serves docs/openapi.json at GET /openapi.json', async (t) => {
    const { url } = await startRelayerServer(t, ['--db', ':memory:', '--log-level', 'silent']);
    const res = await httpRequest(url, { path: '/openapi.json' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), openapi);
  });
});

describe('the response check of test/helpers/harness/http.ts rejects what the document does not allow', () => {
  const json = { 'content-type': 'application/json', 'x-request-id': 'r-1' };
  const error = (reason: string) => JSON.stringify({ reason, message: 'm' });
  const cases: Array<[string, string, string, CheckedResponse, RegExp]> = [
    [
      'an undocumented status',
      'POST',
      '/relay',
      { status: 418, headers: json, text: error('invalid_request') },
      /status 418 is not documented/,
    ],
    [
      'a 429 without Retry-After',
      'POST',
      '/relay',
      { status: 429, headers: json, text: error('rate_limited') },
      /Retry-After is missing/,
    ],
    [
      'a Retry-After of 0',
      'POST',
      '/relay',
      { status: 429, headers: { ...json, 'retry-after': '0' }, text: error('rate_limited') },
      /Retry-After/,
    ],
    [
      'a reason of another status',
      'POST',
      '/relay',
      { status: 429, headers: { ...json, 'retry-after': '1' }, text: error('timeout') },
      /reason/,
    ],
    ['an unknown reason', 'POST', '/relay', { status: 400, headers: json, text: error('bad') }, /reason/],
    [
      'an extra key in an error body',
      'POST',
      '/relay',
      { status: 400, headers: json, text: JSON.stringify({ reason: 'invalid_request', message: 'm', stack: 'x' }) },
      /additional/,
    ],
    [
      'no X-Request-Id',
      'GET',
      '/metrics',
      { status: 200, headers: { 'content-type': 'text/plain' }, text: '' },
      /X-Request-Id/,
    ],
    [
      'an undocumented Content-Type',
      'POST',
      '/relay',
      { status: 400, headers: { ...json, 'content-type': 'text/plain' }, text: 'Bad request' },
      /Content-Type/,
    ],
    ['a body that is not JSON', 'POST', '/relay', { status: 400, headers: json, text: 'Bad request' }, /not JSON/],
    [
      'a relay answer off its schema',
      'POST',
      '/relay',
      { status: 200, headers: json, text: '{"messages":[{"message_id":"0x12"}]}' },
      /schema/,
    ],
    ['an unknown path answering 200', 'GET', '/igp_rules', { status: 200, headers: json, text: '{}' }, /404/],
    [
      'an undocumented method answering 404',
      'PUT',
      '/relay',
      { status: 404, headers: json, text: error('not_found') },
      /405/,
    ],
    [
      'a 405 without Allow',
      'PUT',
      '/relay',
      { status: 405, headers: json, text: error('method_not_allowed') },
      /Allow/,
    ],
    ['a HEAD answer with a body', 'HEAD', '/relay', { status: 200, headers: json, text: 'up' }, /no body/],
  ];
  for (const [name, method, path, res, message] of cases) {
    test(`refuses ${name}`, () => {
      assert.throws(
        () => checkAgainstOpenApi(method, path, res),
        (e: Error) => e.name === 'AssertionError' && message.test(e.message),
      );
    });
  }

  test('accepts documented answers (the same shapes with the missing parts added)', () => {
    checkAgainstOpenApi('POST', '/relay', {
      status: 429,
      headers: { ...json, 'retry-after': '300' },
      text: error('duplicate_tx'),
    });
    checkAgainstOpenApi('PUT', '/relay', {
      status: 405,
      headers: { ...json, allow: 'GET, HEAD, POST, OPTIONS' },
      text: error('method_not_allowed'),
    });
    checkAgainstOpenApi('GET', '/igp_rules', { status: 404, headers: json, text: error('not_found') });
    checkAgainstOpenApi('HEAD', '/relay', { status: 200, headers: json, text: '' });
  });
});
