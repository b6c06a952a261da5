import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeEventLog, encodeAbiParameters, parseAbi, toHex } from 'viem/utils';
import type { Hex } from 'viem';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { DecodeError } from '../../../lib/errors/classes.ts';
import {
  DISPATCH_TOPIC,
  MESSAGE_SENT_TOPIC,
  decodeDispatchLog,
  decodeMessageSentLog,
  decodeBytesData,
  type Log,
} from '../../../lib/codec/abi.ts';
import { bytesToHex, hexToBytes, joinBytes } from '../../../lib/codec/hex.ts';
import { decodeCode } from '../../helpers/harness/decode-error.ts';
import {
  CCTP_V2_TRANSMITTER,
  dispatchLog,
  libraryLog,
  MAILBOX,
  messageSentLog,
} from '../../helpers/fixtures/builders.ts';
import {
  address,
  BOUNDED,
  bytes,
  canonicalBytesData,
  mutate,
  mutation,
  outcome,
  RUNS,
  tally,
  u32,
  word,
} from '../../helpers/fixtures/properties.ts';

const abi = parseAbi([
  'event Dispatch(address indexed sender, uint32 indexed destination, bytes32 indexed recipient, bytes message)',
  'event MessageSent(bytes message)',
]);
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

test('event topics: DISPATCH_TOPIC and MESSAGE_SENT_TOPIC are keccak256 of the signatures (noble, known hex)', () => {
  assert.equal(DISPATCH_TOPIC, bytesToHex(keccak_256(utf8('Dispatch(address,uint32,bytes32,bytes)'))));
  assert.equal(MESSAGE_SENT_TOPIC, bytesToHex(keccak_256(utf8('MessageSent(bytes)'))));
  assert.equal(DISPATCH_TOPIC, '0x769f711d20c679153d382254f59892613b58a97cc876b249134ac25c80f9c814');
  assert.equal(MESSAGE_SENT_TOPIC, '0x8c5261668696ce22758910d05bab8f186d6eb247ceac2af2e82c7dc17669b036');
});

// Any length up to 600, with word multiples (no padding at all) drawn often on purpose.
const messageBytes = fc
  .oneof(
    fc.integer({ min: 0, max: 600 }),
    fc.integer({ min: 0, max: 18 }).map((n) => n * 32),
  )
  .chain((length) => fc.uint8Array({ minLength: length, maxLength: length }))
  .map((b) => toHex(b));

test('docs/design.md#extraction-and-eligibility: decodeDispatchLog agrees with viem decodeEventLog', () => {
  // On random valid Dispatch logs.
  fc.assert(
    fc.property(address, u32, word, messageBytes, (sender, destination, recipient, message) => {
      const log = libraryLog(dispatchLog(MAILBOX, message, { sender, destination, recipient }));
      const ours = decodeDispatchLog(log);
      const viem = decodeEventLog({ abi, topics: log.topics as [Hex], data: toHex(log.data) });
      assert.equal(viem.eventName, 'Dispatch');
      const args = viem.args as { sender: Hex; destination: number; recipient: Hex; message: Hex };
      assert.equal(ours.sender, args.sender.toLowerCase());
      assert.equal(ours.sender, sender);
      assert.equal(ours.destination, args.destination);
      assert.equal(ours.recipient, args.recipient);
      assert.equal(toHex(ours.message), args.message);
      assert.equal(toHex(ours.message), message);
    }),
    { ...BOUNDED, numRuns: 400 },
  );
});

test('docs/design.md#extraction-and-eligibility: decodeMessageSentLog agrees with viem decodeEventLog', () => {
  // On random valid MessageSent logs.
  fc.assert(
    fc.property(messageBytes, (message) => {
      const log = libraryLog(messageSentLog(CCTP_V2_TRANSMITTER, message));
      const viem = decodeEventLog({ abi, topics: log.topics as [Hex], data: toHex(log.data) });
      assert.equal(viem.eventName, 'MessageSent');
      assert.equal(toHex(decodeMessageSentLog(log)), (viem.args as { message: Hex }).message);
      assert.equal(toHex(decodeMessageSentLog(log)), message);
    }),
    { ...BOUNDED, numRuns: 300 },
  );
});

// A valid base log to break one rule at a time: a 40-byte message = offset, length, 2 words.
const BASE_MESSAGE = toHex(Uint8Array.from({ length: 40 }, (_, i) => i + 1));
const base = libraryLog(
  dispatchLog(MAILBOX, BASE_MESSAGE, {
    sender: `0x${'11'.repeat(20)}`,
    destination: 42,
    recipient: `0x${'22'.repeat(32)}`,
  }),
);
const uintWord = (n: bigint): Uint8Array => hexToBytes(encodeAbiParameters([{ type: 'uint256' }], [n]))!;
const withData = (data: Uint8Array): Log => ({ ...base, data });
const withWord = (index: number, value: Uint8Array): Log => {
  const data = base.data.slice();
  data.set(value, index * 32);
  return withData(data);
};
const dirtyTopic = (index: number, byte: number): Log => {
  const topic = hexToBytes(base.topics[index])!;
  topic[byte] = 1;
  return { ...base, topics: base.topics.map((t, i) => (i === index ? bytesToHex(topic) : t)) };
};

const malformed: [string, Log, string][] = [
  [
    'wrong topic0 (Mailbox DispatchId)',
    { ...base, topics: [bytesToHex(keccak_256(utf8('DispatchId(bytes32)'))), ...base.topics.slice(1)] },
    'topic0',
  ],
  ['3 topics', { ...base, topics: base.topics.slice(0, 3) }, 'topic_count'],
  ['5 topics', { ...base, topics: [...base.topics, base.topics[3]] }, 'topic_count'],
  ['no topics', { ...base, topics: [] }, 'topic_count'],
  ['dirty high byte in the address topic', dirtyTopic(1, 0), 'topic'],
  ['dirty byte 11 in the address topic', dirtyTopic(1, 11), 'topic'],
  ['dirty high byte in the uint32 topic', dirtyTopic(2, 0), 'topic'],
  ['dirty byte 27 in the uint32 topic', dirtyTopic(2, 27), 'topic'],
  ['a topic that is not 32 bytes', { ...base, topics: [...base.topics.slice(0, 3), '0x1234'] }, 'topic'],
  ['a topic that is not hex', { ...base, topics: [...base.topics.slice(0, 3), '0x' + 'zz'.repeat(32)] }, 'topic'],
  ['offset 64 instead of 32', withWord(0, uintWord(64n)), 'offset'],
  ['offset 0', withWord(0, uintWord(0n)), 'offset'],
  ['offset huge (2^255 + 32)', withWord(0, uintWord(2n ** 255n + 32n)), 'offset'],
  ['offset 2^32 + 32 (would wrap in 32 bits)', withWord(0, uintWord(2n ** 32n + 32n)), 'offset'],
  ['length past the end', withWord(1, uintWord(65n)), 'length'],
  ['length with high bits (2^255)', withWord(1, uintWord(2n ** 255n)), 'length'],
  ['length 2^32 + 40 (would wrap to the right length)', withWord(1, uintWord(2n ** 32n + 40n)), 'length'],
  ['non-zero padding', withWord(3, uintWord(1n)), 'padding'],
  ['padding cut short', withData(base.data.subarray(0, base.data.length - 1)), 'padding'],
  ['a whole word after the padding', withData(joinBytes([base.data, new Uint8Array(32)])), 'trailing'],
  ['one byte after the padding', withData(joinBytes([base.data, new Uint8Array(1)])), 'trailing'],
  ['data shorter than 64 bytes', withData(base.data.subarray(0, 63)), 'short'],
  ['empty data', withData(new Uint8Array()), 'short'],
];

test('docs/design.md#extraction-and-eligibility: malformed Dispatch logs are refused with the right DecodeError code', () => {
  assert.equal(decodeDispatchLog(base).message.length, 40, 'the base log itself is valid');
  for (const [name, log, code] of malformed) {
    assert.equal(
      decodeCode(() => decodeDispatchLog(log)),
      code,
      name,
    );
  }
});

test('docs/design.md#extraction-and-eligibility: malformed MessageSent logs are refused with the right DecodeError code', () => {
  const good = libraryLog(messageSentLog(CCTP_V2_TRANSMITTER, BASE_MESSAGE));
  assert.equal(decodeMessageSentLog(good).length, 40, 'the base log itself is valid');
  const table: [string, Log, string][] = [
    ['Dispatch topic0', { ...good, topics: [DISPATCH_TOPIC] }, 'topic0'],
    ['no topics', { ...good, topics: [] }, 'topic_count'],
    ['2 topics', { ...good, topics: [MESSAGE_SENT_TOPIC, base.topics[1]] }, 'topic_count'],
    ...malformed
      .filter(([, log]) => log.topics === base.topics)
      .map(([name, log, code]): [string, Log, string] => [name, { ...good, data: log.data }, code]),
  ];
  assert.ok(table.length >= 15);
  for (const [name, log, code] of table) {
    assert.equal(
      decodeCode(() => decodeMessageSentLog(log)),
      code,
      name,
    );
  }
});

test('docs/design.md#extraction-and-eligibility: topic0 and topics are compared as bytes', () => {
  // So upper-case hex topics decode the same.
  const upper = { ...base, topics: base.topics.map((t) => '0x' + t.slice(2).toUpperCase()) };
  assert.deepEqual(decodeDispatchLog(upper), decodeDispatchLog(base));
});

test('decoders throw only DecodeError on arbitrary topics and data', () => {
  const topic = fc.oneof(
    word,
    fc.constant(DISPATCH_TOPIC),
    fc.constant(MESSAGE_SENT_TOPIC),
    fc.string(),
    fc.anything(),
  );
  const data = fc.oneof(
    fc.uint8Array({ maxLength: 200 }),
    fc.anything(),
    // Data that starts like a real encoding and then goes wrong, to reach the deeper checks.
    fc
      .tuple(fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }), fc.uint8Array({ maxLength: 200 }))
      .map(([len, rest]) => joinBytes([uintWord(32n), uintWord(len % 300n), rest])),
  );
  fc.assert(
    fc.property(fc.array(topic, { maxLength: 6 }), data, (topics, bytes) => {
      for (const decode of [decodeDispatchLog, decodeMessageSentLog]) {
        try {
          decode({ address: MAILBOX, topics, data: bytes } as Log);
        } catch (error) {
          assert.ok(error instanceof DecodeError, String(error));
        }
      }
      try {
        decodeBytesData(bytes as Uint8Array);
      } catch (error) {
        assert.ok(error instanceof DecodeError, String(error));
      }
    }),
    { ...BOUNDED, numRuns: 500 },
  );
});

describe('log decoder (docs/design.md#extraction-and-eligibility: strict decoding)', () => {
  test('a mutated Dispatch log decodes only if its data is the canonical ABI encoding of what was decoded', () => {
    // The canonical encoding is viem's; any other data is a DecodeError.
    const seen = tally();
    fc.assert(
      fc.property(
        address,
        u32,
        word,
        bytes(300),
        fc.option(fc.array(mutation, { minLength: 1, maxLength: 2 })),
        (sender, destination, recipient, message, mutations) => {
          const rpc = dispatchLog(MAILBOX, { sender, destination, recipient: ('0x' + recipient.slice(26)) as Hex });
          const canonical = canonicalBytesData(message);
          const data = mutations === null ? canonical : mutations.reduce(mutate, canonical);
          const log: Log = { address: MAILBOX, topics: rpc.topics, data };
          const result = outcome(() => decodeDispatchLog(log), DecodeError);
          if (mutations === null) assert.ok(result.ok, 'a canonical log decodes');
          else seen.add(result.ok);
          if (!result.ok) return;
          assert.deepEqual(data, canonicalBytesData(result.value.message), 'accepted data is canonical');
          assert.equal(result.value.sender, sender.toLowerCase());
          assert.equal(result.value.destination, destination);
        },
      ),
      RUNS,
    );
    seen.expectBoth(20);
  });

  test('a valid MessageSent log always decodes to its message; a mutated one decodes only when canonical', () => {
    const seen = tally();
    fc.assert(
      fc.property(bytes(400), fc.option(fc.array(mutation, { minLength: 1, maxLength: 2 })), (message, mutations) => {
        const canonical = canonicalBytesData(message);
        const data = mutations === null ? canonical : mutations.reduce(mutate, canonical);
        const result = outcome(
          () => decodeMessageSentLog({ address: CCTP_V2_TRANSMITTER, topics: [MESSAGE_SENT_TOPIC], data }),
          DecodeError,
        );
        if (mutations === null)
          assert.ok(result.ok && toHex(result.value) === toHex(message), 'a valid log decodes to its message');
        if (mutations !== null) seen.add(result.ok);
        if (result.ok) assert.deepEqual(data, canonicalBytesData(result.value));
      }),
      RUNS,
    );
    seen.expectBoth(10);
  });

  test('logs of arbitrary shape (any JSON in every field) give a value or DecodeError, never another exception', () => {
    const field = fc.oneof(fc.anything(), fc.constant(DISPATCH_TOPIC), word, bytes(100));
    fc.assert(
      fc.property(field, fc.oneof(fc.array(field, { maxLength: 5 }), fc.anything()), field, (addr, topics, data) => {
        const log = { address: addr, topics, data } as unknown as Log;
        outcome(() => decodeDispatchLog(log), DecodeError);
        outcome(() => decodeMessageSentLog(log), DecodeError);
      }),
      RUNS,
    );
  });
});
