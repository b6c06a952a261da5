import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, RelayError } from '../../../lib/errors/classes.ts';
import { hexToBytes } from '../../../lib/codec/hex.ts';
import { parseConfig } from '../../../lib/config/parse.ts';
import { compileMatchingList, createPolicy, matchesList, type MatchingRule } from '../../../lib/relay/policy.ts';
import type { HyperlaneMessage } from '../../../lib/codec/message.ts';
import type { ChainConfig, RelayerConfig } from '../../../lib/types.ts';

// Address used by the Hyperlane relayer's own MatchingList tests (matching_list.rs), checksummed.
const ADDR = '0x9d4454B023096f34B160D6B654540c56A1F81688';
const ADDR_WORD = '0x0000000000000000000000009d4454b023096f34b160d6b654540c56a1f81688';
const OTHER = '0x6AD4DEBA8A147d000C09de6465267a9047d1c217';
const OTHER_WORD = '0x0000000000000000000000006ad4deba8a147d000c09de6465267a9047d1c217';
// A 32-byte (non-EVM) sender: its low 20 bytes equal ADDR, but it is not ADDR's word.
const WIDE_WORD = '0x1111111111111111111111119d4454b023096f34b160d6b654540c56a1f81688';
const ID = '0x' + 'a1'.repeat(32);

function message(overrides: Partial<HyperlaneMessage> = {}): HyperlaneMessage {
  return {
    id: ID,
    version: 3,
    nonce: 7,
    origin: 34,
    sender: ADDR_WORD,
    destination: 5456,
    recipient: OTHER_WORD,
    body: new Uint8Array([0xde, 0xad, 0xbe, 0xef]),
    raw: new Uint8Array(0),
    ...overrides,
  };
}

function bodyFromHex(hex: string): Uint8Array {
  const bytes = hexToBytes('0x' + hex);
  assert.ok(bytes, 'vector is hex');
  return bytes;
}

describe('MatchingList semantics (docs/design.md#configuration, hyperlane matching_list.rs)', () => {
  const table: [string, MatchingRule[], Partial<HyperlaneMessage>, boolean][] = [
    ['an empty list matches nothing (callers pick the default)', [], {}, false],
    ['an empty rule {} matches every message', [{}], {}, true],
    [
      '"*" in every field matches',
      [{ originDomain: '*', destinationDomain: '*', senderAddress: '*', recipientAddress: '*', messageId: '*' }],
      {},
      true,
    ],
    ['one origin domain, equal', [{ originDomain: 34 }], {}, true],
    ['one origin domain, different', [{ originDomain: 35 }], {}, false],
    ['a domain list contains it', [{ destinationDomain: [1, 5456, 8453] }], {}, true],
    ['a domain list lacks it', [{ destinationDomain: [1, 8453] }], {}, false],
    ['an empty array matches nothing', [{ destinationDomain: [] }], {}, false],
    [
      'domains as decimal strings (Hyperlane config style)',
      [{ destinationDomain: ['9913372', '5456'] as unknown as number[] }],
      {},
      true,
    ],
    ['messageId compared case-insensitively', [{ messageId: ID.toUpperCase().replace('0X', '0x') }], {}, true],
    ['messageId differs', [{ messageId: '0x' + 'a2'.repeat(32) }], {}, false],
    ['a checksummed 20-byte sender equals its left-padded word', [{ senderAddress: ADDR }], {}, true],
    [
      'a 32-byte sender word in upper case matches',
      [{ senderAddress: ADDR_WORD.toUpperCase().replace('0X', '0x') }],
      {},
      true,
    ],
    ['a 20-byte rule does not match a wide 32-byte sender', [{ senderAddress: ADDR }], { sender: WIDE_WORD }, false],
    ['recipient list', [{ recipientAddress: [ADDR, OTHER] }], {}, true],
    ['recipient is not the sender', [{ recipientAddress: ADDR }], {}, false],
    ['every named field must match (AND)', [{ originDomain: 34, destinationDomain: 1 }], {}, false],
    ['any rule may match (OR)', [{ originDomain: 1 }, { destinationDomain: 5456 }], {}, true],
    ['bodyRegex is an unanchored search', [{ bodyRegex: 'adbe' }], {}, true],
    ['bodyRegex sees lower-case hex', [{ bodyRegex: 'ADBE' }], {}, false],
    ['bodyRegex sees no 0x prefix', [{ bodyRegex: '^0x' }], {}, false],
    ['bodyRegex anchored on the whole body', [{ bodyRegex: '^deadbeef$' }], {}, true],
    ['bodyRegex on an empty body', [{ bodyRegex: '^$' }], { body: new Uint8Array(0) }, true],
    ['bodyRegex and a field both required', [{ bodyRegex: 'dead', originDomain: 1 }], {}, false],
  ];
  for (const [name, rules, overrides, expected] of table) {
    it(name, () => assert.equal(matchesList(rules, message(overrides)), expected));
  }

  // Vectors from hyperlane-monorepo matching_list.rs `test_ica_body_matching_list_regex`
  // (ICA COMMITMENT owner pattern, app-contexts/mainnet_config.json superswap_ica_v2).
  describe('bodyRegex on the reference ICA vectors', () => {
    const pattern = '^01000000000000000000000001d40099fcd87c018969b0e8d4ab1633fb34763c.{64}';
    const commitment =
      '01000000000000000000000001d40099fcd87c018969b0e8d4ab1633fb34763c000000000000000000000000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa0000000000000000000000000000000000000000000000000000000000000001abcdef1234567890abcdef1234567890abcdef1234567890abcdef1234567890';
    const calls =
      '00000000000000000000000001d40099fcd87c018969b0e8d4ab1633fb34763c000000000000000000000000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa0000000000000000000000000000000000000000000000000000000000000001deadbeef';
    const reveal =
      '020000000000000000000000000000000000000000000000000000000000000000002cd4f1bbd58a9c7fc481e3b8d319cea8795011b9dde770fa122c2e585fa01f69';
    const otherOwner =
      '01000000000000000000000002d40099fcd87c018969b0e8d4ab1633fb34763c000000000000000000000000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa0000000000000000000000000000000000000000000000000000000000000001abcdef';
    const cases: [string, string, string, boolean][] = [
      ['COMMITMENT with the owner matches', pattern, commitment, true],
      ['CALLS does not match the COMMITMENT pattern', pattern, calls, false],
      ['REVEAL does not match the COMMITMENT pattern', pattern, reveal, false],
      ['COMMITMENT with another owner does not match', pattern, otherOwner, false],
      ['REVEAL matches ^02.{64}', '^02.{64}', reveal, true],
      ['CALLS does not match ^02.{64}', '^02.{64}', calls, false],
      ['COMMITMENT does not match ^02.{64}', '^02.{64}', commitment, false],
    ];
    for (const [name, regex, body, expected] of cases) {
      it(name, () => assert.equal(matchesList([{ bodyRegex: regex }], message({ body: bodyFromHex(body) })), expected));
    }
  });

  it('a compiled list can be reused across messages (regex without global state)', () => {
    const list = compileMatchingList([{ bodyRegex: 'beef' }]);
    for (let i = 0; i < 3; i++) assert.equal(list.matches(message()), true);
  });

  const invalid: [string, MatchingRule, RegExp][] = [
    ['a bad regex', { bodyRegex: '(' }, /^whitelist\[0\]\.bodyRegex: does not compile: /],
    ['a short address', { senderAddress: '0x1234' }, /^whitelist\[0\]\.senderAddress: expected a 20-byte 0x address/],
    [
      'a bad entry in an address list',
      { recipientAddress: [ADDR, 'nope'] },
      /^whitelist\[0\]\.recipientAddress\[1\]: expected a 20-byte 0x address/,
    ],
    ['a negative domain', { originDomain: -1 }, /^whitelist\[0\]\.originDomain: must be between 0 and 4294967295/],
    [
      'a domain above uint32',
      { destinationDomain: [2 ** 32] },
      /^whitelist\[0\]\.destinationDomain\[0\]: must be between 0 and 4294967295/,
    ],
    ['a bad message id', { messageId: 'abc' }, /^whitelist\[0\]\.messageId: expected a 32-byte message id/],
  ];
  for (const [name, rule, error] of invalid) {
    it(`compiling rejects ${name}, naming the rule and field`, () => {
      assert.throws(
        () => compileMatchingList([rule], 'whitelist'),
        (e) => e instanceof ConfigError && error.test(e.message),
      );
    });
  }
});

describe('docs/design.md#configuration: the config loader and the policy accept exactly the same rules', () => {
  /** The error key, or 'ok'; anything but a ConfigError fails the test. */
  function verdict(fn: () => unknown): string {
    try {
      fn();
      return 'ok';
    } catch (e) {
      assert.ok(e instanceof ConfigError, String(e));
      return `${e.key} (${e.message})`;
    }
  }
  const BAD_CHECKSUM = OTHER.replace('A', 'a');
  // [what, rule, 'ok' or the key both must name]; the starred rows are where the two used to disagree.
  const rules: [string, unknown, string][] = [
    ['an empty rule', {}, 'ok'],
    [
      '"*" everywhere',
      { messageId: '*', originDomain: '*', senderAddress: '*', destinationDomain: '*', recipientAddress: '*' },
      'ok',
    ],
    ['a domain number', { originDomain: 7 }, 'ok'],
    ['a domain decimal string', { originDomain: '9913372' }, 'ok'],
    ['the largest uint32 domain as a string', { destinationDomain: ['4294967295'] }, 'ok'],
    ['* a domain string with a leading zero', { originDomain: '007' }, 'whitelist[0].originDomain'],
    ['an empty domain string', { originDomain: '' }, 'whitelist[0].originDomain'],
    ['a domain string above uint32', { destinationDomain: ['4294967296'] }, 'whitelist[0].destinationDomain[0]'],
    ['a fractional domain', { destinationDomain: 1.5 }, 'whitelist[0].destinationDomain'],
    ['"*" inside a list', { destinationDomain: ['*'] }, 'whitelist[0].destinationDomain[0]'],
    ['a message id in upper case', { messageId: ID.toUpperCase().replace('0X', '0x') }, 'ok'],
    ['* a 20-byte message id', { messageId: ADDR.toLowerCase() }, 'whitelist[0].messageId'],
    ['a checksummed address', { senderAddress: ADDR }, 'ok'],
    ['an all-lower-case address', { senderAddress: ADDR.toLowerCase() }, 'ok'],
    ['a 32-byte address word', { recipientAddress: [ADDR_WORD, WIDE_WORD] }, 'ok'],
    ['an empty address list', { recipientAddress: [] }, 'ok'],
    [
      '* a mixed-case address with a bad checksum',
      { senderAddress: [ADDR, BAD_CHECKSUM] },
      'whitelist[0].senderAddress[1]',
    ],
    ['a 21-byte address', { senderAddress: '0x' + '1'.repeat(42) }, 'whitelist[0].senderAddress'],
    ['an address without 0x', { senderAddress: ADDR.slice(2) }, 'whitelist[0].senderAddress'],
    ['a regex', { bodyRegex: '^00+(ab|cd)' }, 'ok'],
    ['a regex invalid under the u flag', { bodyRegex: '\\a' }, 'whitelist[0].bodyRegex'],
    ['* a regex that is not a string', { bodyRegex: 5 }, 'whitelist[0].bodyRegex'],
    ['* an unknown field', { originChain: 'ethereum' }, 'whitelist[0].originChain'],
    ['* a rule that is not an object', '*', 'whitelist[0]'],
    ['* a rule that is null', null, 'whitelist[0]'],
  ];
  for (const [what, rule, expected] of rules) {
    it(what, () => {
      const loader = verdict(() => parseConfig({ whitelist: [rule] }));
      const policy = verdict(() => compileMatchingList([rule as MatchingRule], 'whitelist'));
      assert.equal(loader, policy);
      assert.equal(loader.split(' ')[0], expected, loader);
    });
  }

  const addresses: [string, unknown, string][] = [
    ['a checksummed address', ADDR, 'ok'],
    ['* a 32-byte word', ADDR_WORD, 'addressBlacklist[0]'],
    ['* a bad checksum', BAD_CHECKSUM, 'addressBlacklist[0]'],
  ];
  for (const [what, address, expected] of addresses) {
    it(`addressBlacklist: ${what}`, () => {
      const loader = verdict(() => parseConfig({ addressBlacklist: [address] }));
      const config = {
        whitelist: [],
        blacklist: [],
        addressBlacklist: [address as string],
        relayChains: [],
        chains: {},
      };
      assert.equal(
        loader,
        verdict(() => createPolicy(config)),
      );
      assert.equal(loader.split(' ')[0], expected, loader);
    });
  }
});

const CHAINS: Record<string, ChainConfig> = {
  origin: { name: 'origin', domainId: 34, mailbox: '0x' + '01'.repeat(20), cctpMessageTransmitters: [], rpcUrls: [] },
  dest: { name: 'dest', domainId: 5456, mailbox: '0x' + '02'.repeat(20), cctpMessageTransmitters: [], rpcUrls: [] },
  other: { name: 'other', domainId: 8453, mailbox: '0x' + '03'.repeat(20), cctpMessageTransmitters: [], rpcUrls: [] },
};

type PolicyConfig = Pick<RelayerConfig, 'whitelist' | 'blacklist' | 'addressBlacklist' | 'relayChains' | 'chains'>;

function policy(overrides: Partial<PolicyConfig> = {}) {
  return createPolicy({
    whitelist: [],
    blacklist: [],
    addressBlacklist: [],
    relayChains: ['origin', 'dest', 'other'],
    chains: CHAINS,
    ...overrides,
  });
}

function reasonOf(check: (m: HyperlaneMessage) => void, m: HyperlaneMessage): string {
  try {
    check(m);
    return 'ok';
  } catch (e) {
    assert.ok(e instanceof RelayError, `threw ${e}`);
    assert.equal(e.status, 400);
    return e.code;
  }
}

describe('policy order (docs/design.md#check-order, docs/api.md#errors)', () => {
  const table: [string, Partial<PolicyConfig>, Partial<HyperlaneMessage>, string][] = [
    ['no lists, configured destination: accepted', {}, {}, 'ok'],
    ['empty whitelist lets everything through', { whitelist: [] }, {}, 'ok'],
    ['a whitelist with a matching rule', { whitelist: [{ originDomain: 34 }] }, {}, 'ok'],
    [
      'a whitelist with no matching rule → message_not_whitelisted',
      { whitelist: [{ originDomain: 1 }] },
      {},
      'message_not_whitelisted',
    ],
    [
      'whitelist of an empty-array rule → message_not_whitelisted',
      { whitelist: [{ originDomain: [] }] },
      {},
      'message_not_whitelisted',
    ],
    ['a blacklist match → message_blacklisted', { blacklist: [{ senderAddress: ADDR }] }, {}, 'message_blacklisted'],
    ['a blacklist with no match', { blacklist: [{ senderAddress: OTHER }] }, {}, 'ok'],
    ['blacklist {} blocks everything', { blacklist: [{}] }, {}, 'message_blacklisted'],
    [
      'whitelist comes before blacklist',
      { whitelist: [{ originDomain: 1 }], blacklist: [{}] },
      {},
      'message_not_whitelisted',
    ],
    [
      'whitelisted and blacklisted → message_blacklisted',
      { whitelist: [{}], blacklist: [{ originDomain: 34 }] },
      {},
      'message_blacklisted',
    ],
    ['address blacklist hits the sender', { addressBlacklist: [ADDR.toLowerCase()] }, {}, 'message_blacklisted'],
    ['address blacklist hits the recipient', { addressBlacklist: [OTHER.toLowerCase()] }, {}, 'message_blacklisted'],
    ['address blacklist given checksummed', { addressBlacklist: [OTHER] }, {}, 'message_blacklisted'],
    [
      'address blacklist ignores a wide word with equal low bytes',
      { addressBlacklist: [ADDR.toLowerCase()] },
      { sender: WIDE_WORD },
      'ok',
    ],
    ['address blacklist with other addresses', { addressBlacklist: ['0x' + '00'.repeat(19) + '01'] }, {}, 'ok'],
    ['destination not configured → unsupported_destination', {}, { destination: 1 }, 'unsupported_destination'],
    [
      'destination a chain but not in relayChains → unsupported_destination',
      { relayChains: ['origin'] },
      {},
      'unsupported_destination',
    ],
    ['relayChains naming an unknown chain is ignored', { relayChains: ['nosuch', 'dest'] }, {}, 'ok'],
    ['blacklist comes before destination', { blacklist: [{}] }, { destination: 1 }, 'message_blacklisted'],
    [
      'address blacklist comes before destination',
      { addressBlacklist: [ADDR] },
      { destination: 1 },
      'message_blacklisted',
    ],
    [
      'whitelist comes before destination',
      { whitelist: [{ originDomain: 1 }] },
      { destination: 1 },
      'message_not_whitelisted',
    ],
  ];
  for (const [name, config, overrides, expected] of table) {
    it(name, () => assert.equal(reasonOf(policy(config), message(overrides)), expected));
  }

  it('a malformed list fails at construction, not per message', () => {
    assert.throws(() => policy({ blacklist: [{ bodyRegex: '[' }] }), /^ConfigError: blacklist\[0\]\.bodyRegex/);
    assert.throws(() => policy({ addressBlacklist: ['0x12'] }), /^ConfigError: addressBlacklist\[0\]/);
  });

  it('error messages name the message id and the destination, nothing else', () => {
    assert.throws(() => policy({ relayChains: [] })(message()), {
      message: 'destination domain 5456 is not configured',
    });
    assert.throws(() => policy({ blacklist: [{}] })(message()), { message: `message ${ID} matches the blacklist` });
  });
});
