/**
 * Validators' signed checkpoints (lib/worker/ism/checkpoint.ts): the domain hash against the
 * Hyperlane monorepo's vector (vectors/domainHash.json, as cited in docs/isms.md), checkpoints
 * signed by viem with the digest of test/helpers/chain/validators.ts (CheckpointLib's formula, not the code
 * under test), and every field of a checkpoint checked against what was expected.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keccak256, pad, type Hex } from 'viem';
import {
  checkpointDomainHash,
  normalizeSignature,
  parseCheckpoint,
  verifyCheckpoint,
} from '../../../../lib/worker/ism/checkpoint.ts';
import { Validator } from '../../../helpers/chain/validators.ts';

const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const;
const validator = new Validator(KEY);
const root = keccak256('0x01');
const messageId = keccak256('0x02');

const ADDRESS = '0x2222222222222222222222222222222222222222' as const;
const hook = pad(ADDRESS);

/** The checkpoint JSON a Hyperlane validator writes, signed by the test helper's validator (viem). */
function signed(over: { domain?: number; root?: Hex; index?: number; messageId?: Hex } = {}): Promise<string> {
  return validator.sign({ domain: 1000, hook: ADDRESS, root, index: 7, messageId, ...over });
}

const expected = { validator: validator.address, domain: 1000, hook, index: 7, messageId };

test('docs/isms.md#validators-and-checkpoints: the domain hash matches the Hyperlane monorepo vector', () => {
  assert.equal(checkpointDomainHash(1, hook), '0xbbca56eb98960a4637eb40486d9a069550dd70d9c185ed138516e8e33cf3d7e7');
});

test('docs/isms.md#validators-and-checkpoints: a checkpoint signed by the validator for this message is accepted', async () => {
  const c = parseCheckpoint(await signed());
  assert.ok(typeof c !== 'string', String(c));
  assert.equal(await verifyCheckpoint(c, expected), null);
  assert.equal(c.root, root);
});

test('docs/isms.md#validators-and-checkpoints: another signer, domain, index, message or hook is refused', async () => {
  const c = parseCheckpoint(await signed());
  assert.ok(typeof c !== 'string');
  const other = new Validator('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a');
  assert.equal(await verifyCheckpoint(c, { ...expected, validator: other.address }), 'bad signature');
  assert.equal(await verifyCheckpoint(c, { ...expected, domain: 1001 }), 'another domain');
  assert.equal(await verifyCheckpoint(c, { ...expected, index: 8 }), 'another index');
  assert.equal(await verifyCheckpoint(c, { ...expected, messageId: root }), 'another message');
  assert.equal(await verifyCheckpoint(c, { ...expected, hook: pad('0x01') }), 'another merkle tree hook');
  // Signed for index 8 but claiming 7: the recovered signer is someone else.
  const lying = parseCheckpoint((await signed({ index: 8 })).replace('"index":8', '"index":7'));
  assert.ok(typeof lying !== 'string');
  assert.equal(await verifyCheckpoint(lying, expected), 'bad signature');
});

test('docs/isms.md#validators-and-checkpoints: malformed checkpoints are refused by shape', async () => {
  assert.equal(parseCheckpoint('{'), 'not JSON');
  assert.equal(parseCheckpoint('{"value":1}'), 'not a checkpoint');
  const good = JSON.parse(await signed());
  good.serialized_signature = '0x1234';
  assert.equal(parseCheckpoint(JSON.stringify(good)), 'bad signature');
  good.value.checkpoint.index = -1;
  assert.equal(parseCheckpoint(JSON.stringify(good)), 'bad index');
});

test('docs/isms.md#validators-and-checkpoints: a high-s signature becomes the low-s one of the same signer', async () => {
  const text = await signed();
  const low = JSON.parse(text).serialized_signature as Hex;
  const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const s = BigInt(`0x${low.slice(66, 130)}`);
  const v = Number.parseInt(low.slice(130), 16);
  const high = `${low.slice(0, 66)}${(n - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}`;
  assert.equal(normalizeSignature(high), low);
  assert.equal(normalizeSignature(`${low.slice(0, 130)}00`), `${low.slice(0, 130)}1b`, 'v 0 is v 27');
  assert.equal(normalizeSignature(`${low.slice(0, 130)}05`), undefined);
});
