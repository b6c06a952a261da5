/**
 * The quorum of validators' checkpoints (lib/worker/ism/checkpoints.ts, docs/isms.md#validators-and-checkpoints):
 * valid checkpoints grouped by root, the first root with `threshold` signatures in validator order;
 * a forgery, another root or an exhausted lookup budget each only take that validator out; too few is
 * a `pending` wait naming each validator's reason; a reorg flag in any validator's bucket refuses the
 * build (as Hyperlane's relayer's MetadataBuildRefused::Reorg). Checkpoints are signed by viem
 * keys with the digest written here from CheckpointLib's formula; storage is an in-memory reader.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodePacked, keccak256, pad, type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createCheckpointReader, type LookupBudget } from '../../../../lib/worker/ism/checkpoints.ts';
import type { ObjectReader } from '../../../../lib/worker/ism/storage.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';

const hook = pad('0x00000000000000000000000000000000000000aa');
const messageId = keccak256('0x01');
const root = keccak256('0x02');
const index = 5;
const keys = [0, 1, 2, 3].map(() => privateKeyToAccount(generatePrivateKey()));
const validators = keys.map((k) => k.address);

async function checkpoint(signer: (typeof keys)[number], over: { root?: Hex } = {}): Promise<string> {
  const r = over.root ?? root;
  const domainHash = keccak256(encodePacked(['uint32', 'bytes32', 'string'], [7, hook, 'HYPERLANE']));
  const payload = keccak256(
    encodePacked(['bytes32', 'bytes32', 'uint32', 'bytes32'], [domainHash, r, index, messageId]),
  );
  const signature = await signer.signMessage({ message: { raw: payload } });
  return JSON.stringify({
    value: { checkpoint: { merkle_tree_hook_address: hook, mailbox_domain: 7, root: r, index }, message_id: messageId },
    serialized_signature: signature,
  });
}

/** Bucket `v{i}` per validator, objects by name. */
function setup(objects: Map<string, string>) {
  const clock = createFakeClock();
  const reads: string[] = [];
  const read: ObjectReader = async (location, name) => {
    const url = location.object(name);
    reads.push(url);
    const text = objects.get(url);
    return text === undefined ? { found: false } : { found: true, text };
  };
  const reader = createCheckpointReader({ read, clock, endpoints: { s3: 'http://store' } });
  const publicClient = {
    readContract: async () => validators.map((_, i) => [`s3://val${i}/us-east-1`]),
  } as unknown as PublicClient;
  const origin = {
    publicClient,
    domain: 7,
    hook,
    validatorAnnounce: '0x00000000000000000000000000000000000000bb' as Address,
  };
  const budget = (objects = 100): LookupBudget => ({ deadline: clock.now() + 30_000, objects });
  return { reader, origin, reads, budget };
}

const at = (i: number, name = `checkpoint_${index}_with_id.json`) => `http://store/val${i}/${name}`;

test('docs/isms.md#validators-and-checkpoints: quorum by root, in validator order; byzantine and forged ones skipped', async () => {
  const objects = new Map([
    [at(0), await checkpoint(keys[0], { root: keccak256('0xbad') })],
    [at(1), await checkpoint(keys[0])],
    [at(2), await checkpoint(keys[2])],
    [at(3), await checkpoint(keys[3])],
  ]);
  const { reader, origin, budget } = setup(objects);
  const q = await reader.messageIdQuorum({ origin, validators, threshold: 2, index, messageId, budget: budget() });
  assert.equal(q.root, root);
  const signers = await Promise.all(q.checkpoints.map((c) => c.signature));
  assert.deepEqual(signers, [
    JSON.parse(objects.get(at(2))!).serialized_signature,
    JSON.parse(objects.get(at(3))!).serialized_signature,
  ]);

  objects.delete(at(3));
  await assert.rejects(
    reader.messageIdQuorum({ origin, validators, threshold: 2, index, messageId, budget: budget() }),
    (e: Error & { code?: string }) => {
      assert.equal(e.code, 'pending');
      assert.match(e.message, /^signatures: 1 of 2; /);
      assert.match(e.message, /validator 2 \(0x[0-9a-fA-F]{40}\): bad signature/);
      assert.match(e.message, /validator 4 \(0x[0-9a-fA-F]{40}\): not signed yet/);
      return true;
    },
  );
});

test('docs/isms.md#validators-and-checkpoints: a reorg flag in one bucket refuses the build though the others reach quorum', async () => {
  const objects = new Map([
    [at(0), await checkpoint(keys[0])],
    [at(1), await checkpoint(keys[1])],
    [at(2), await checkpoint(keys[2])],
    // Validator 4 signed nothing for this index, but reported a reorg of the origin.
    [`http://store/val3/reorg_flag.json`, '{"checkpoint_index":5}'],
  ]);
  const { reader, origin, budget } = setup(objects);
  await assert.rejects(
    reader.messageIdQuorum({ origin, validators, threshold: 2, index, messageId, budget: budget() }),
    (e: Error & { code?: string }) => {
      assert.equal(e.code, 'pending', 'a wait until the flag is cleared, not a counted failure');
      assert.match(e.message, /^validator 4 \(0x[0-9a-fA-F]{40}\) reported a reorg/);
      return true;
    },
  );
  objects.delete(`http://store/val3/reorg_flag.json`);
  const q = await reader.messageIdQuorum({ origin, validators, threshold: 2, index, messageId, budget: budget() });
  assert.equal(q.root, root, 'built once the flag is cleared');
});

test('docs/isms.md#checkpoint-storage: reads stop at the lookup budget; the validators left count as not read', async () => {
  const objects = new Map([
    [at(0), await checkpoint(keys[0])],
    [at(1), await checkpoint(keys[1])],
  ]);
  const { reader, origin, reads, budget } = setup(objects);
  await assert.rejects(
    reader.messageIdQuorum({ origin, validators, threshold: 2, index, messageId, budget: budget(3) }),
    /lookup budget ran out/,
  );
  assert.equal(reads.length, 3, 'three objects allowed, three read');
});
