/**
 * IP addresses a stranger may name (docs/hostile-recipients.md, Hostile recipients): every spelling a URL
 * host accepts, classified by the IANA special-purpose registries. Spellings are cross-checked
 * against Node's WHATWG URL parser, ranges against ipaddr.js (an independent implementation of the
 * same registries), on the table and on random addresses.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import {
  addressRange,
  connectionAddress,
  isPublicAddress,
  parseIpAddress,
  type AddressRange,
} from '../../../lib/net/ip-address.ts';
import { BOUNDED } from '../../helpers/fixtures/properties.ts';

/** [spelling, canonical text, range]. */
const TABLE: readonly (readonly [string, string, AddressRange])[] = [
  // IPv4 loopback in every spelling a URL host takes
  ['127.0.0.1', '127.0.0.1', 'loopback'],
  ['2130706433', '127.0.0.1', 'loopback'],
  ['0x7f000001', '127.0.0.1', 'loopback'],
  ['0x7f.1', '127.0.0.1', 'loopback'],
  ['0X7F.0.0.1', '127.0.0.1', 'loopback'],
  ['127.1', '127.0.0.1', 'loopback'],
  ['127.0.1', '127.0.0.1', 'loopback'],
  ['0177.0.0.1', '127.0.0.1', 'loopback'],
  ['017700000001', '127.0.0.1', 'loopback'],
  ['127.0.0.1.', '127.0.0.1', 'loopback'],
  ['0x7f.0x.0.1', '127.0.0.1', 'loopback'], // "0x" alone is 0
  ['0x', '0.0.0.0', 'unspecified'],
  ['127.255.255.254', '127.255.255.254', 'loopback'],
  // RFC 1918, shared, link-local (the metadata service), "this network"
  ['10.0.0.1', '10.0.0.1', 'private'],
  ['012.0.0.1', '10.0.0.1', 'private'],
  ['167772161', '10.0.0.1', 'private'],
  ['172.16.0.1', '172.16.0.1', 'private'],
  ['172.31.255.255', '172.31.255.255', 'private'],
  ['192.168.1.1', '192.168.1.1', 'private'],
  ['0xc0.0xa8.1.1', '192.168.1.1', 'private'],
  ['100.64.0.1', '100.64.0.1', 'shared'],
  ['100.127.255.255', '100.127.255.255', 'shared'],
  ['169.254.169.254', '169.254.169.254', 'link-local'],
  ['2852039166', '169.254.169.254', 'link-local'],
  ['0xa9.0xfe.0xa9.0xfe', '169.254.169.254', 'link-local'],
  ['169.254.43518', '169.254.169.254', 'link-local'],
  ['0.0.0.0', '0.0.0.0', 'unspecified'],
  ['0', '0.0.0.0', 'unspecified'],
  ['0.1.2.3', '0.1.2.3', 'unspecified'],
  // multicast, broadcast, reserved, documentation, benchmarking
  ['224.0.0.1', '224.0.0.1', 'multicast'],
  ['239.255.255.250', '239.255.255.250', 'multicast'],
  ['255.255.255.255', '255.255.255.255', 'broadcast'],
  ['4294967295', '255.255.255.255', 'broadcast'],
  ['240.0.0.1', '240.0.0.1', 'reserved'],
  ['192.0.0.8', '192.0.0.8', 'reserved'],
  ['192.88.99.1', '192.88.99.1', 'reserved'],
  ['192.0.2.1', '192.0.2.1', 'documentation'],
  ['198.51.100.7', '198.51.100.7', 'documentation'],
  ['203.0.113.9', '203.0.113.9', 'documentation'],
  ['198.18.0.1', '198.18.0.1', 'benchmarking'],
  ['198.19.255.255', '198.19.255.255', 'benchmarking'],
  // public IPv4, also right next to the ranges
  ['8.8.8.8', '8.8.8.8', 'public'],
  ['134744072', '8.8.8.8', 'public'],
  ['1.256', '1.0.1.0', 'public'],
  ['172.32.0.1', '172.32.0.1', 'public'],
  ['172.15.255.255', '172.15.255.255', 'public'],
  ['100.128.0.1', '100.128.0.1', 'public'],
  ['100.63.255.255', '100.63.255.255', 'public'],
  ['169.253.255.255', '169.253.255.255', 'public'],
  ['11.0.0.1', '11.0.0.1', 'public'],
  ['223.255.255.255', '223.255.255.255', 'public'],
  ['198.20.0.1', '198.20.0.1', 'public'],
  // IPv6 loopback and unspecified
  ['::1', '::1', 'loopback'],
  ['[::1]', '::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', '::1', 'loopback'],
  ['0000:0000:0000:0000:0000:0000:0000:0001', '::1', 'loopback'],
  ['::', '::', 'unspecified'],
  ['[::]', '::', 'unspecified'],
  // IPv4-mapped and NAT64: what their IPv4 address is
  ['::ffff:127.0.0.1', '::ffff:7f00:1', 'loopback'],
  ['[::ffff:127.0.0.1]', '::ffff:7f00:1', 'loopback'],
  ['::ffff:7f00:1', '::ffff:7f00:1', 'loopback'],
  ['0:0:0:0:0:ffff:127.0.0.1', '::ffff:7f00:1', 'loopback'],
  ['::FFFF:7F00:0001', '::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', '::ffff:a9fe:a9fe', 'link-local'],
  ['::ffff:10.1.2.3', '::ffff:a01:203', 'private'],
  ['::ffff:0.0.0.0', '::ffff:0:0', 'unspecified'],
  ['::ffff:8.8.8.8', '::ffff:808:808', 'public'],
  ['::ffff:255.255.255.255', '::ffff:ffff:ffff', 'broadcast'],
  ['64:ff9b::127.0.0.1', '64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::8.8.8.8', '64:ff9b::808:808', 'public'],
  // IPv6 special blocks
  ['fc00::1', 'fc00::1', 'unique-local'],
  ['fd12:3456:789a::1', 'fd12:3456:789a::1', 'unique-local'],
  ['fe80::1', 'fe80::1', 'link-local'],
  ['fe80::1%eth0', 'fe80::1', 'link-local'],
  ['febf:ffff::1', 'febf:ffff::1', 'link-local'],
  ['fec0::1', 'fec0::1', 'reserved'],
  ['ff02::1', 'ff02::1', 'multicast'],
  ['ff05::1:3', 'ff05::1:3', 'multicast'],
  ['::127.0.0.1', '::7f00:1', 'reserved'],
  ['::2', '::2', 'reserved'],
  ['100::1', '100::1', 'reserved'],
  ['4000::1', '4000::1', 'reserved'],
  ['2001:db8::1', '2001:db8::1', 'documentation'],
  ['3fff::1', '3fff::1', 'documentation'],
  ['2001::1', '2001::1', 'reserved'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
  ['2002:7f00:1::1', '2002:7f00:1::1', 'reserved'],
  ['2001:2::1', '2001:2::1', 'benchmarking'],
  // public IPv6
  ['2606:4700:4700::1111', '2606:4700:4700::1111', 'public'],
  ['2001:4860:4860::8888', '2001:4860:4860::8888', 'public'],
  ['[2a00:1450:4001:80b::200e]', '2a00:1450:4001:80b::200e', 'public'],
  ['2001:200::1', '2001:200::1', 'public'],
  ['2001:0db7:ffff::1', '2001:db7:ffff::1', 'public'],
  ['2600:0:0:1:0:0:0:1', '2600:0:0:1::1', 'public'],
  ['2600:0:0:1:2:0:0:3', '2600::1:2:0:0:3', 'public'], // two equal zero runs: the first is `::`
  ['2600:1:2:3:4:5::6', '2600:1:2:3:4:5:0:6', 'public'], // `::` for one group; not written so
];

/** Not IP addresses: names (resolved elsewhere) and malformed spellings. */
const NOT_ADDRESSES = [
  '',
  'localhost',
  'example.com',
  'gateway.example',
  '0x7f.example',
  '256.0.0.1',
  '1.2.3.256',
  '1.2.3.4.5',
  '1.2.3.4.0', // five parts, even when the fifth would add nothing
  '1.2.3.4a', // a name: its last label is not a number
  '1.2.3.1a1',
  '0191.0.0.1', // 9 is not an octal digit
  '0x1g1.0.0.1',
  '08.0.0.1',
  '0x1g.0.0.1',
  '4294967296',
  '99999999999999999999999',
  '1..2',
  '.',
  '::1::',
  ':::',
  '1:2:3:4:5:6:7:8:9',
  '1:2:3:4:5:6:7',
  '12345::',
  '::ffff:01.2.3.4',
  '::ffff:1.2.3',
  '::ffff:1.2.3.4:5',
  '::ffff:256.0.0.1',
  '1:2:3:4:5:6:7::8', // `::` stands for one group at least
  '1:2:3:4:5:6:7:8::1::2',
  `fe80::1%${'e'.repeat(121)}`, // 129 characters
  '[::1',
  '::1]',
  'fe80::1%',
  'g::1',
];

describe('parseIpAddress: every spelling of a URL host', () => {
  for (const [spelling, canonical, range] of TABLE) {
    test(`${spelling} is ${canonical} (${range})`, () => {
      const address = parseIpAddress(spelling);
      assert.ok(address, `${spelling} parses`);
      assert.equal(address.text, canonical);
      assert.equal(addressRange(address), range);
      assert.equal(isPublicAddress(address), range === 'public');
    });
  }

  test('names and malformed spellings are not addresses', () => {
    for (const text of NOT_ADDRESSES) assert.equal(parseIpAddress(text), null, JSON.stringify(text));
  });

  test('at most 128 characters are read, and a value that is not a string is not an address', () => {
    assert.equal(parseIpAddress(`fe80::1%${'e'.repeat(120)}`)?.text, 'fe80::1', '128 characters');
    assert.equal(parseIpAddress(`fe80::1%${'e'.repeat(121)}`), null, '129 characters');
    // A JSON value (a config file's, an answer's) reaches the parser unchecked: null, never a TypeError.
    for (const value of [undefined, null, 2130706433, ['127.0.0.1'], { toString: () => '127.0.0.1' }])
      assert.equal(parseIpAddress(value as unknown as string), null, String(value));
  });

  test('spellings read as the WHATWG URL parser reads a host (Node’s URL)', () => {
    for (const [spelling, canonical] of TABLE) {
      if (spelling.includes('%')) continue; // a zone is a resolver's, never a URL's
      const ipv6 = spelling.includes(':');
      const host = ipv6 && !spelling.startsWith('[') ? `[${spelling}]` : spelling;
      assert.equal(new URL(`http://${host}:8080/`).hostname, ipv6 ? `[${canonical}]` : canonical, spelling);
    }
    for (const text of NOT_ADDRESSES) {
      if (text === '' || /[a-z]{2}/.test(text) || text === '.') continue; // names are hosts too
      const host = text.includes(':') && !text.startsWith('[') ? `[${text}]` : text;
      let parsed: string | undefined;
      try {
        parsed = new URL(`http://${host}/`).hostname;
      } catch {
        // refused by the URL parser too
      }
      // Where the URL parser takes the text at all, it is as a name, never as an address.
      if (parsed !== undefined) assert.equal(parseIpAddress(parsed), null, `${text} → ${parsed}`);
    }
  });
});

/** ipaddr.js's names for what is globally reachable (AS112 and AMT are public anycast services). */
const IPADDR_PUBLIC = new Set(['unicast', 'as112', 'amt']);

function ipaddrRange(text: string): string {
  const parsed = ipaddr.parse(text);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range();
  }
  return parsed.range();
}

/** Outside 2000::/3 and not special to ipaddr.js: unassigned, so never public to us. */
const STRICTER = new Set(['::2', '::7f00:1', '4000::1']);

describe('addressRange agrees with ipaddr.js', () => {
  test('on the table', () => {
    for (const [spelling, canonical, range] of TABLE) {
      if (canonical.startsWith('64:ff9b:')) continue; // NAT64: ipaddr.js names the prefix, not the target
      const theirs = ipaddrRange(canonical);
      if (range === 'public') assert.equal(theirs, 'unicast', spelling);
      else if (!STRICTER.has(canonical))
        assert.notEqual(theirs, 'unicast', `${spelling}: ours ${range}, theirs ${theirs}`);
    }
  });

  test('on random IPv4 addresses: public exactly when ipaddr.js says globally reachable', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), (bytes) => {
        const text = Array.from(bytes).join('.');
        const ours = parseIpAddress(text)!;
        assert.equal(ours.text, text);
        assert.equal(isPublicAddress(ours), IPADDR_PUBLIC.has(ipaddrRange(text)), text);
      }),
      { ...BOUNDED, numRuns: 20_000 },
    );
  });

  test('on random IPv6 addresses: what ipaddr.js calls special is never public; ours is stricter only in known ranges', () => {
    // Stricter only outside 2000::/3 and in 2001::/23, 2002::/16.
    const prefixes = fc.constantFrom(
      [],
      [0x20],
      [0x20, 0x01],
      [0x20, 0x01, 0x0d, 0xb8],
      [0x20, 0x02],
      [0x3f, 0xff],
      [0xfc],
      [0xfd],
      [0xfe, 0x80],
      [0xfe, 0xc0],
      [0xff],
      [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff],
      [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    );
    fc.assert(
      fc.property(prefixes, fc.uint8Array({ minLength: 16, maxLength: 16 }), (prefix, random) => {
        const bytes = random.slice();
        bytes.set(prefix);
        const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16));
        const ours = parseIpAddress(groups.join(':'))!;
        assert.equal(ours.text, ipaddr.IPv6.parse(groups.join(':')).toRFC5952String(), 'canonical text');
        const theirs = ipaddrRange(ours.text);
        const mine = addressRange(ours);
        if (mine === 'public') assert.ok(IPADDR_PUBLIC.has(theirs), `${ours.text}: theirs ${theirs}`);
        if (!IPADDR_PUBLIC.has(theirs) && theirs !== 'rfc6145') assert.notEqual(mine, 'public', ours.text);
        if (mine !== 'public' && theirs === 'unicast') {
          const global = (bytes[0] & 0xe0) === 0x20;
          const ietf = bytes[0] === 0x20 && (bytes[1] === 0x02 || (bytes[1] === 0x01 && bytes[2] < 2));
          assert.ok(!global || ietf, `${ours.text}: ours ${mine}, theirs unicast`);
        }
      }),
      { ...BOUNDED, numRuns: 20_000 },
    );
  });
});

describe('connectionAddress: where a connection goes', () => {
  test('the IPv4 address inside an IPv4-mapped or NAT64 one; any other address as it is', () => {
    for (const [text, to] of [
      ['::ffff:127.0.0.1', '127.0.0.1'],
      ['64:ff9b::a00:1', '10.0.0.1'],
    ]) {
      assert.deepEqual(connectionAddress(parseIpAddress(text)!), parseIpAddress(to), text);
    }
    // 0.100.255.155 spells NAT64's first bytes: an IPv4 address is never unwrapped.
    for (const text of ['1.2.3.4', '0.100.255.155', '2001:4860::1', '::1', '::ffff:0:7f00:1']) {
      const address = parseIpAddress(text)!;
      assert.deepEqual(connectionAddress(address), address, text);
    }
  });
});
