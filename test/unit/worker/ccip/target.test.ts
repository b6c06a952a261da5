/**
 * Where a CCIP-read gateway URL may lead (lib/worker/ccip/target.ts,
 * docs/hostile-recipients.md#hostile-recipients): an origin in `worker.ccipReadAllowOrigins` is that origin
 * exactly, after URL normalisation. A host that merely begins with an allowed one
 * (`127.0.0.10`, `127.0.0.1.attacker.example`) or the same host on another port is held to the
 * public-address rule like any stranger's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  checkGatewayTarget,
  normalizeOrigins,
  ownAddresses,
  systemLocalAddresses,
  systemResolver,
  type Resolver,
} from '../../../../lib/worker/ccip/target.ts';

/** A resolver from a table; a name not in it does not resolve. */
function resolverOf(table: Record<string, string[]>): Resolver {
  return async (name) => {
    const answers = table[name];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const resolve = resolverOf({
  '127.0.0.1.attacker.example': ['127.0.0.1'],
  'gw.internal': ['10.0.0.8'],
  'gw.internal.attacker.example': ['10.0.0.8'],
  'gw.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
});

describe('worker.ccipReadAllowOrigins (docs/hostile-recipients.md#hostile-recipients)', () => {
  test('an allowed origin admits exactly itself: its host and port as written, in any spelling', async () => {
    const allowOrigins = normalizeOrigins(['http://127.0.0.1', 'http://gw.internal:8080/']);
    for (const url of ['http://127.0.0.1/x', 'http://2130706433:80/y', 'http://GW.internal:8080/z']) {
      const check = await checkGatewayTarget(new URL(url), { resolve, allowOrigins });
      assert.ok(check.ok, url);
      assert.equal(check.target.allowed, true, url);
    }
  });

  test('a host or port an allowed origin is a prefix of is not that origin: the public-address rule applies', async () => {
    const allowOrigins = normalizeOrigins(['http://127.0.0.1', 'http://gw.internal']);
    const refused: [string, string][] = [
      ['http://127.0.0.10/x', '127.0.0.10'],
      ['http://127.0.0.1.attacker.example/x', '127.0.0.1'],
      ['http://127.0.0.1:8080/x', '127.0.0.1'],
      ['http://gw.internal.attacker.example/x', '10.0.0.8'],
      ['http://gw.internal:8080/x', '10.0.0.8'],
    ];
    for (const [url, address] of refused) {
      const check = await checkGatewayTarget(new URL(url), { resolve, allowOrigins });
      assert.ok(!check.ok && 'refusal' in check, `${url}: ${JSON.stringify(check)}`);
      assert.equal(check.refusal.address, address, url);
    }
    // A public host is asked, allowed or not, and says it was not allowed.
    const open = await checkGatewayTarget(new URL('http://gw.example/x'), { resolve, allowOrigins });
    assert.ok(open.ok);
    assert.equal(open.target.allowed, false);
  });
});

describe('gateway targets (docs/hostile-recipients.md#hostile-recipients)', () => {
  const allowOrigins = normalizeOrigins([]);
  const texts = (check: Awaited<ReturnType<typeof checkGatewayTarget>>) =>
    check.ok ? check.target.addresses.map((a) => a.text) : check;

  test('the addresses to connect to: an IP literal as written, a name as resolved, in the order resolved', async () => {
    assert.deepEqual(texts(await checkGatewayTarget(new URL('http://93.184.215.14/x'), { resolve, allowOrigins })), [
      '93.184.215.14',
    ]);
    assert.deepEqual(texts(await checkGatewayTarget(new URL('https://gw.example/x'), { resolve, allowOrigins })), [
      '93.184.215.14',
      '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
    ]);
  });

  test('localhost names are refused as localhost; answers that are not addresses, or none, are unresolved', async () => {
    for (const host of ['localhost', 'api.localhost', 'localhost.']) {
      assert.deepEqual(await checkGatewayTarget(new URL(`http://${host}/x`), { resolve, allowOrigins }), {
        ok: false,
        refusal: { address: host, range: 'localhost' },
      });
    }
    const answering =
      (answers: unknown[]): Resolver =>
      async () =>
        answers as never;
    assert.deepEqual(await checkGatewayTarget(new URL('http://nowhere.example/x'), { resolve, allowOrigins }), {
      ok: false,
      unresolved: 'did not resolve',
    });
    const url = new URL('http://gw.example/x');
    assert.deepEqual(await checkGatewayTarget(url, { resolve: answering([]), allowOrigins }), {
      ok: false,
      unresolved: 'did not resolve',
    });
    for (const answers of [[null], [{ address: 'gw.example' }], [{ address: '93.184.215.14' }, {}]]) {
      assert.deepEqual(
        await checkGatewayTarget(url, { resolve: answering(answers), allowOrigins }),
        { ok: false, unresolved: 'resolved to something other than an address' },
        JSON.stringify(answers),
      );
    }
  });

  test('the system resolver lists every address of a name (an IP literal resolves to itself, no DNS asked)', async () => {
    assert.deepEqual(await systemResolver('127.0.0.1'), [{ address: '127.0.0.1', family: 4 }]);
    assert.deepEqual(await systemResolver('::1'), [{ address: '::1', family: 6 }]);
  });

  test("this host's addresses: every interface's, loopback included; as connection addresses, what is not one skipped", () => {
    const local = [...systemLocalAddresses()];
    assert.ok(local.includes('127.0.0.1'), `loopback among ${local.join(', ')}`);
    assert.ok(
      local.every((a) => typeof a === 'string' && a !== ''),
      'addresses only',
    );
    assert.ok(ownAddresses(local).has('127.0.0.1'));
    // An IPv4-mapped spelling is where a connection to its IPv4 address goes; a name is skipped.
    assert.deepEqual(
      [...ownAddresses(['::ffff:10.0.0.1', 'gw.example', '', '2001:db8::1'])],
      ['10.0.0.1', '2001:db8::1'],
    );
  });
});
