/**
 * GET /merkle_proofs (lib/store/merkle-proof.ts, docs/api.md#get-merkle_proofs): the proof of a stored
 * leaf and the root of the stored tree 0..root_index, checked against a top-down recursive
 * computation of the depth-32 tree with viem's keccak256 from Merkle.sol's
 * definition (test/helpers/fixtures/merkle-reference.ts, not the code under test); the query's rules; the admin token.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { keccak256, toHex } from 'viem';
import { merkleNode } from '../../helpers/fixtures/merkle-reference.ts';
import { createMemoryMerkleStore } from '../../../lib/store/merkle.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { httpRequest } from '../../helpers/harness/http.ts';
import { startApi } from '../../helpers/harness/server.ts';

const leaves = Array.from({ length: 11 }, (_, i) => keccak256(toHex(`leaf ${i}`)));

async function start(t: TestContext, adminToken: string | null = null) {
  const merkle = createMemoryMerkleStore();
  merkle.insertMerkle(
    leaves.map((message_id, leaf_index) => ({
      chain: 1,
      insertion_block_number: 100 + leaf_index,
      leaf_index,
      message_id,
    })),
  );
  const api = await startApi(t, { config: testConfig({ server: { adminToken } }), merkle });
  return (path: string, headers: Record<string, string> = {}) => httpRequest(api.url, { path, headers });
}

test('docs/api.md#get-merkle_proofs: the proof and root of every leaf of stored trees match the tree computed top-down', async (t) => {
  const get = await start(t);
  for (const rootIndex of [0, 4, 10]) {
    const tree = leaves.slice(0, rootIndex + 1);
    for (let leaf = 0; leaf <= rootIndex; leaf++) {
      const res = await get(`/merkle_proofs?domain_id=1&leaf_index=${leaf}&root_index=${rootIndex}`);
      assert.equal(res.status, 200);
      const body = res.json() as { proof: { leaf: string; index: number; path: string[] }; root: string };
      assert.equal(body.root, merkleNode(tree, 32, 0), `root of ${rootIndex + 1} leaves`);
      assert.equal(body.proof.leaf, leaves[leaf]);
      assert.equal(body.proof.index, leaf);
      assert.deepEqual(
        body.proof.path,
        body.proof.path.map((_, level) => merkleNode(tree, level, Math.floor(leaf / 2 ** level) ^ 1)),
      );
    }
  }
});

test('docs/api.md#get-merkle_proofs: a missing leaf is not_found, a bad query invalid_request, the admin token required', async (t) => {
  const get = await start(t, 'secret-token-123456');
  const auth = { authorization: 'Bearer secret-token-123456' };
  assert.equal((await get('/merkle_proofs?domain_id=1&leaf_index=0&root_index=0')).status, 401);
  const missing = await get('/merkle_proofs?domain_id=1&leaf_index=0&root_index=11', auth);
  assert.equal(missing.status, 404);
  assert.equal((missing.json() as { reason: string }).reason, 'not_found');
  assert.equal((await get('/merkle_proofs?domain_id=2&leaf_index=0&root_index=0', auth)).status, 404);
  for (const q of [
    'domain_id=1&leaf_index=3&root_index=2',
    'domain_id=1&leaf_index=0',
    'domain_id=1&leaf_index=0&root_index=100000',
  ]) {
    const res = await get(`/merkle_proofs?${q}`, auth);
    assert.equal(res.status, 400, q);
    assert.equal((res.json() as { reason: string }).reason, 'invalid_request');
  }
});
