/**
 * docs/api.md#get-chains: a client that names an unknown origin_chain learns which name it sent
 * and where the known ones are listed; GET /chains lists them (name, Hyperlane domain, EVM chain
 * id), never an RPC URL.
 */
import assert from 'node:assert/strict';
import { before, describe, test, type TestContext } from 'node:test';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { httpRequest, postJson } from '../../helpers/harness/http.ts';
import { txHash } from '../../helpers/fixtures/builders.ts';
import { startApi } from '../../helpers/harness/server.ts';

let url: string;

// A top-level `before` runs in the file's root test, whose after hooks run once the file is done.
before(async (root) => {
  const config = testConfig();
  // A chain without an EVM chain id, and RPC URLs with a key in them that must never be shown.
  config.chains.ethereum.rpcUrls = ['https://user:SECRETUSER@rpc.example/v2/SECRETKEY?key=SECRETQ'];
  delete config.chains.base.chainId;
  ({ url } = await startApi(root as TestContext, { config }));
});

describe('GET /chains (docs/api.md#get-chains)', () => {
  test('lists every configured chain in configuration order: name, domain_id, chain_id (null when not configured)', async () => {
    const res = await httpRequest(url, { path: '/chains' });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(res.json(), {
      chains: [
        { name: 'ethereum', domain_id: 1, chain_id: 1 },
        { name: 'base', domain_id: 8453, chain_id: null },
      ],
    });
    assert.doesNotMatch(res.text, /SECRET|rpc\.example|https?:/, 'no RPC URL');
  });

  test('HEAD has the headers only; OPTIONS and a wrong method say which methods are allowed', async () => {
    const head = await httpRequest(url, { method: 'HEAD', path: '/chains' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    const options = await httpRequest(url, { method: 'OPTIONS', path: '/chains' });
    assert.equal(options.status, 204);
    assert.equal(options.headers.allow, 'GET, HEAD, OPTIONS');
    const post = await postJson(url, '/chains', {});
    assert.equal(post.status, 405);
    assert.equal(post.json().reason, 'method_not_allowed');
    assert.equal(post.headers.allow, 'GET, HEAD, OPTIONS');
  });
});

describe('POST /relay with an unknown origin_chain (docs/api.md#get-chains)', () => {
  const relay = (originChain: string) => postJson(url, '/relay', { origin_chain: originChain, tx_hash: txHash(1) });

  test('the message echoes the name and says how to list the known chains', async () => {
    const res = await relay('etherium');
    assert.equal(res.status, 400);
    assert.deepEqual(res.json(), {
      reason: 'invalid_request',
      message: 'origin_chain "etherium" is not a chain known to this relayer; GET /chains lists the chains it knows',
    });
  });

  test('the echoed name is bounded (64 characters) and escaped (quotes, control, bidi and non-ASCII characters)', async () => {
    const long = await relay('x'.repeat(128));
    assert.equal(long.status, 400);
    assert.ok(long.json().message.startsWith(`origin_chain "${'x'.repeat(64)}\\u2026" is not`), long.json().message);
    const hostile = await relay('a"b\\c\n\u202e\u0000é😀');
    const message: string = hostile.json().message;
    assert.ok(message.startsWith('origin_chain "a\\"b\\\\c\\n\\u202e\\u0000\\u00e9\\ud83d\\ude00" is not'), message);
    assert.match(message, /^[\x20-\x7e]+$/, 'printable ASCII only');
  });
});
