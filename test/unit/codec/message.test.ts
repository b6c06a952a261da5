import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { keccak256 as viemKeccak, slice as viemSlice, toHex } from 'viem/utils';
import type { Hex } from 'viem';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { DecodeError } from '../../../lib/errors/classes.ts';
import {
  parseHyperlaneMessage,
  parseMessageHeader,
  messageFromDispatch,
  wordToAddress,
} from '../../../lib/codec/message.ts';
import { bytesToHex, hexToBytes } from '../../../lib/codec/hex.ts';
import { decodeCode } from '../../helpers/harness/decode-error.ts';
import { hyperlaneMessage } from '../../helpers/fixtures/builders.ts';
import { BOUNDED, outcome, RUNS, tally, u32, word } from '../../helpers/fixtures/properties.ts';

interface Vector {
  nonce: number;
  version: number;
  origin: number;
  sender: Hex;
  destination: number;
  recipient: Hex;
  body: number[];
  id: Hex;
}
const file = JSON.parse(readFileSync(new URL('../../vectors/hyperlane-message.json', import.meta.url), 'utf8')) as {
  sets: { commit: string; vectors: Vector[] }[];
};
const [v3Set, v0Set] = file.sets;

function fromVector(v: Vector): Uint8Array {
  return hexToBytes(hyperlaneMessage({ ...v, body: toHex(new Uint8Array(v.body)) }))!;
}

test('message id: keccak256 of the packed message equals the monorepo vectors/message.json id (v3)', () => {
  assert.ok(v3Set.vectors.length > 0);
  for (const v of v3Set.vectors) {
    const raw = fromVector(v);
    const m = parseHyperlaneMessage(raw);
    assert.equal(m.id, v.id);
    assert.equal(m.id, viemKeccak(raw));
    assert.equal(m.version, v.version);
    assert.equal(m.nonce, v.nonce);
    assert.equal(m.origin, v.origin);
    assert.equal(m.sender, v.sender);
    assert.equal(m.destination, v.destination);
    assert.equal(m.recipient, v.recipient);
    assert.deepEqual([...m.body], v.body);
    assert.deepEqual(m.raw, raw);
  }
});

test('message layout: the older version-0 vector hashes to its published id, yet only version 3 is accepted', () => {
  for (const v of v0Set.vectors) {
    const raw = fromVector(v);
    assert.equal(bytesToHex(keccak_256(raw)), v.id, 'our packing reproduces the published id');
    assert.equal(
      decodeCode(() => parseHyperlaneMessage(raw)),
      'version',
    );
  }
});

test('docs/design.md#extraction-and-eligibility: a message shorter than the 77-byte header is refused', () => {
  // Exactly 77 bytes has an empty body.
  const raw = fromVector({ ...v3Set.vectors[0], body: [] });
  assert.equal(raw.length, 77);
  assert.equal(parseHyperlaneMessage(raw).body.length, 0);
  assert.equal(
    decodeCode(() => parseHyperlaneMessage(raw.subarray(0, 76))),
    'short',
  );
  assert.equal(
    decodeCode(() => parseHyperlaneMessage(new Uint8Array())),
    'short',
  );
});

test('docs/design.md#extraction-and-eligibility: message versions other than 3 are refused with code version', () => {
  for (const version of [0, 1, 2, 4, 255]) {
    const raw = fromVector({ ...v3Set.vectors[0], version });
    assert.equal(
      decodeCode(() => parseHyperlaneMessage(raw)),
      'version',
      `version ${version}`,
    );
  }
});

test('message fields and id agree with viem packing and keccak on random messages', () => {
  fc.assert(
    fc.property(
      u32,
      u32,
      word,
      u32,
      word,
      fc.uint8Array({ maxLength: 300 }),
      (nonce, origin, sender, destination, recipient, body) => {
        const raw = hexToBytes(hyperlaneMessage({ nonce, origin, sender, destination, recipient, body: toHex(body) }))!;
        const m = parseHyperlaneMessage(raw);
        assert.equal(m.id, viemKeccak(raw));
        assert.deepEqual(
          [m.nonce, m.origin, m.sender, m.destination, m.recipient, toHex(m.body)],
          [nonce, origin, sender, destination, recipient, toHex(body)],
        );
      },
    ),
    { ...BOUNDED, numRuns: 300 },
  );
});

test('message header: the fields of the monorepo vectors without hashing, refused where the whole message is', () => {
  for (const v of v3Set.vectors) {
    const raw = fromVector(v);
    const { id: _id, body: _body, raw: _raw, ...fields } = parseHyperlaneMessage(raw);
    assert.deepEqual(parseMessageHeader(raw), fields);
    assert.deepEqual(parseMessageHeader(raw), {
      version: v.version,
      nonce: v.nonce,
      origin: v.origin,
      sender: v.sender,
      destination: v.destination,
      recipient: v.recipient,
    });
  }
  const raw = fromVector(v3Set.vectors[0]);
  assert.equal(
    decodeCode(() => parseMessageHeader(raw.subarray(0, 76))),
    'short',
  );
  assert.equal(
    decodeCode(() => parseMessageHeader(fromVector({ ...v3Set.vectors[0], version: 0 }))),
    'version',
  );
  assert.equal(
    decodeCode(() => parseMessageHeader('0x03' as unknown as Uint8Array)),
    'data',
  );
});

test('wordToAddress: the low 20 bytes of the word, as the Mailbox casts a recipient (viem slice as the reference)', () => {
  fc.assert(
    fc.property(word, (w) => {
      assert.equal(wordToAddress(w), viemSlice(w as Hex, 12).toLowerCase());
    }),
    { ...BOUNDED, numRuns: 200 },
  );
  // A word whose high 12 bytes are not zero still names the address of its low 20 (the Mailbox
  // does not refuse it either); upper-case hex reads the same.
  const w = `0x${'ff'.repeat(12)}${'AB'.repeat(20)}`;
  assert.equal(wordToAddress(w), `0x${'ab'.repeat(20)}`);
  for (const bad of [
    '0x',
    `0x${'00'.repeat(31)}`,
    `0x${'00'.repeat(33)}`,
    `${'00'.repeat(32)}`,
    `0x${'zz'.repeat(32)}`,
  ]) {
    assert.equal(
      decodeCode(() => wordToAddress(bad)),
      'data',
      bad,
    );
  }
});

test('docs/design.md#extraction-and-eligibility: the Dispatch topics must agree with the message they index', () => {
  // And origin must be the chain's domain.
  const v = v3Set.vectors[0];
  const message = fromVector(v);
  const event = {
    sender: '0x' + v.sender.slice(26),
    destination: v.destination,
    recipient: v.recipient,
    message,
  };
  assert.equal(messageFromDispatch(event, 1000).id, v.id);
  assert.equal(
    decodeCode(() => messageFromDispatch(event, 1001)),
    'origin',
  );
  assert.equal(
    decodeCode(() => messageFromDispatch({ ...event, sender: '0x' + '33'.repeat(20) }, 1000)),
    'mismatch',
  );
  assert.equal(
    decodeCode(() => messageFromDispatch({ ...event, destination: 2001 }, 1000)),
    'mismatch',
  );
  assert.equal(
    decodeCode(() => messageFromDispatch({ ...event, recipient: '0x' + '22'.repeat(32) }, 1000)),
    'mismatch',
  );
});

describe('message parser (Hyperlane v3)', () => {
  test('arbitrary bytes: accepted exactly when >= 77 bytes and version 3; fields equal a DataView read, id equals viem keccak256', () => {
    const seen = tally();
    // Lengths drawn evenly (not biased to short), half of them stamped with version 3.
    const raw = fc
      .tuple(fc.boolean(), fc.uint8Array({ maxLength: 200, size: 'max' }))
      .map(([v3, b]) => (v3 && b.length > 0 ? Uint8Array.from([3, ...b.subarray(1)]) : b));
    fc.assert(
      fc.property(raw, (input) => {
        const result = outcome(() => parseHyperlaneMessage(input), DecodeError);
        assert.equal(result.ok, input.length >= 77 && input[0] === 3);
        seen.add(result.ok);
        if (!result.ok) return;
        const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
        const m = result.value;
        assert.equal(m.id, viemKeccak(input));
        assert.equal(m.nonce, view.getUint32(1));
        assert.equal(m.origin, view.getUint32(5));
        assert.equal(m.sender, toHex(input.subarray(9, 41)));
        assert.equal(m.destination, view.getUint32(41));
        assert.equal(m.recipient, toHex(input.subarray(45, 77)));
        assert.equal(toHex(m.body), toHex(input.subarray(77)));
      }),
      { ...RUNS, numRuns: 500 },
    );
    seen.expectBoth(50);
  });
});
