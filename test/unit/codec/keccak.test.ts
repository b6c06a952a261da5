/**
 * keccak256 (docs/design.md#package: the package root exports `keccak256(data: Uint8Array):
 * Uint8Array`, Ethereum's Keccak-256). Expected digests come from the Keccak team's known answers
 * (test/vectors/keccak/) or from an independent implementation (@noble/hashes), never from the
 * code under test.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { keccak256 } from '../../../lib/codec/keccak.ts';
import { InvalidArgumentError } from '../../../lib/errors/classes.ts';
import { mulberry32 } from '../../helpers/fixtures/random.ts';

const RATE = 136; // Keccak-256 absorbs 136-byte blocks; most bugs sit at multiples of it

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const fromHex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'hex'));

function randomBytes(random: () => number, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = Math.floor(random() * 256);
  return bytes;
}

interface Kat {
  bits: number;
  msg: Uint8Array;
  md: string;
}

/** Parses the Len / Msg / MD triples of a Keccak team KAT file. */
function readKat(path: string): Kat[] {
  const text = readFileSync(new URL(path, import.meta.url), 'utf8');
  const kats: Kat[] = [];
  for (const [, len, msg, md] of text.matchAll(/^Len = (\d+)\r?\nMsg = ([0-9A-F]+)\r?\nMD = ([0-9A-F]{64})$/gm)) {
    const bits = Number(len);
    assert.equal(bits % 8, 0, `Len = ${bits} is not byte-aligned`);
    kats.push({ bits, msg: fromHex(msg).subarray(0, bits / 8), md: md.toLowerCase() });
  }
  return kats;
}

test('docs/design.md#package, keccak256: digests of the Keccak team KAT ShortMsgKAT_256 (r=1088, c=512), byte-aligned entries', () => {
  const kats = readKat('../../vectors/keccak/ShortMsgKAT_256.txt');
  // The parser must have found every stored entry, including the ones around the 136-byte rate.
  assert.equal(kats.length, 33);
  assert.deepEqual(
    [1064, 1072, 1080, 1088, 1096, 2040].filter((bits) => !kats.some((k) => k.bits === bits)),
    [],
  );
  for (const { bits, msg, md } of kats) {
    assert.equal(msg.length, bits / 8);
    assert.equal(hex(keccak256(msg)), md, `Len = ${bits}`);
  }
});

test('docs/design.md#package, keccak256: original Keccak padding, not SHA3-256 (empty input and "abc")', () => {
  // Published Ethereum Keccak-256 digests; SHA3-256 of the same inputs differs (a7ffc6f8..., 3a985da7...).
  assert.equal(hex(keccak256(new Uint8Array(0))), 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
  assert.equal(
    hex(keccak256(new TextEncoder().encode('abc'))),
    '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45',
  );
});

test('docs/design.md#package, keccak256: every length 0..300 (across the 136-byte rate twice) matches @noble/hashes', () => {
  const random = mulberry32(0x6b656363);
  for (let length = 0; length <= 300; length++) {
    const data = randomBytes(random, length);
    assert.equal(hex(keccak256(data)), hex(keccak_256(data)), `length ${length}`);
  }
});

test('docs/design.md#package, keccak256: 10 000 random inputs up to 2 KiB, at random byte offsets, match @noble/hashes', () => {
  const seed = 20240601;
  const random = mulberry32(seed);
  for (let n = 0; n < 10_000; n++) {
    const length = Math.floor(random() * 2049);
    const offset = Math.floor(random() * 8); // aligned and unaligned views of a larger buffer
    const data = randomBytes(random, offset + length).subarray(offset);
    assert.equal(
      hex(keccak256(data)),
      hex(keccak_256(data)),
      `seed ${seed}, case ${n}, length ${length}, offset ${offset}`,
    );
  }
});

test('docs/design.md#package, keccak256: a subarray at any byte offset hashes like a copy of its bytes and is not modified', () => {
  const random = mulberry32(7);
  const parent = randomBytes(random, 2 * RATE + 64);
  const before = parent.slice();
  for (let offset = 0; offset < 12; offset++) {
    for (const length of [0, 1, 3, 4, 5, 31, 32, 33, RATE - 1, RATE, RATE + 1, 2 * RATE, 2 * RATE + 3]) {
      const view = parent.subarray(offset, offset + length);
      assert.equal(view.byteOffset, offset);
      assert.equal(hex(keccak256(view)), hex(keccak_256(view.slice())), `offset ${offset}, length ${length}`);
    }
  }
  assert.deepEqual(parent, before);
});

test('docs/design.md#package, keccak256: each call returns a fresh 32-byte array that later calls do not overwrite', () => {
  const first = keccak256(new Uint8Array(0));
  const second = keccak256(new Uint8Array(RATE).fill(0xff));
  assert.equal(first.length, 32);
  assert.notEqual(first.buffer, second.buffer);
  assert.equal(hex(first), 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
  assert.equal(hex(second), hex(keccak_256(new Uint8Array(RATE).fill(0xff))));
});

test('docs/design.md#package, keccak256: input that is not a Uint8Array is rejected, not hashed as garbage', () => {
  assert.throws(() => keccak256('abc' as unknown as Uint8Array), InvalidArgumentError);
  assert.throws(() => keccak256([1, 2, 3] as unknown as Uint8Array), InvalidArgumentError);
  assert.throws(() => keccak256(new Uint32Array(4) as unknown as Uint8Array), InvalidArgumentError);
});

test('docs/design.md#package, keccak256: lib/codec/keccak-f.generated.ts is what scripts/gen-keccak.ts derives', () => {
  // Exactly what it derives from the reference definitions.
  const script = fileURLToPath(new URL('../../../scripts/gen-keccak.ts', import.meta.url));
  const run = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
});
