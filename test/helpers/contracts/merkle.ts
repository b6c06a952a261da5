/**
 * The MerkleStore contract (lib/types.ts, docs/design.md#http-surface, #merkle-tree-insertions),
 * one suite run against every engine through the asynchronous interface
 * (test/unit/store/contracts.test.ts): memory, SQLite (answered by its worker thread) and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { MerkleInsertion, MerkleStore } from '../../../lib/types.ts';

export interface MerkleHarness {
  merkle: MerkleStore;
  /** Rows stored, read independently of listMerkle. */
  count(): Promise<number>;
  close(): void | Promise<void>;
}

export function id(n: number): string {
  return '0x' + n.toString(16).padStart(64, '0');
}

export function record(
  chain: number,
  leaf: number,
  block = 1_000 + leaf,
  messageId = id(chain * 1_000_000 + leaf),
): MerkleInsertion {
  return { chain, insertion_block_number: block, leaf_index: leaf, message_id: messageId };
}

export function merkleContract(name: string, make: () => Promise<MerkleHarness>): void {
  describe(`MerkleStore contract: ${name}`, () => {
    let h: MerkleHarness;
    const insert = async (records: MerkleInsertion[]) => h.merkle.insertMerkle(records);
    const list = async (domain: number, start: number, end: number) => h.merkle.listMerkle(domain, start, end);
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.close();
    });

    test('docs/design.md#merkle-tree-insertions: insertMerkle writes every record and returns the rows written', async () => {
      assert.equal(await insert([record(1, 0), record(1, 1), record(8453, 0)]), 3);
      assert.equal(await h.count(), 3);
      assert.equal(await insert([]), 0);
    });

    test('docs/design.md#merkle-tree-insertions: a repeated (chain, leaf_index) replaces the stored row', async () => {
      await insert([record(1, 7, 100, id(1)), record(8453, 7, 100, id(2))]);
      assert.equal(await insert([record(1, 7, 205, id(3))]), 1);
      assert.equal(await h.count(), 2);
      assert.deepEqual(await list(1, 7, 7), [record(1, 7, 205, id(3))]);
      assert.deepEqual(await list(8453, 7, 7), [record(8453, 7, 100, id(2))], 'same leaf on another chain untouched');
    });

    test('docs/design.md#merkle-tree-insertions: within one batch the last record for a key wins', async () => {
      // Each record counts as written.
      assert.equal(await insert([record(1, 3, 10, id(10)), record(1, 4), record(1, 3, 11, id(11))]), 3);
      assert.deepEqual(await list(1, 3, 3), [record(1, 3, 11, id(11))]);
      assert.equal(await h.count(), 2);
    });

    for (const [what, bad] of [
      ['a negative leaf_index', { leaf_index: -1 }],
      ['a chain above uint32', { chain: 2 ** 32 }],
      ['a fractional insertion_block_number', { insertion_block_number: 1.5 }],
      ['a message_id of 31 bytes', { message_id: '0x' + 'ab'.repeat(31) }],
      ['a message_id that is not hex', { message_id: '0x' + 'zz'.repeat(32) }],
      ['a message_id whose last digit is not hex', { message_id: '0x' + 'ab'.repeat(31) + 'ag' }],
      ['a message_id without its 0x', { message_id: '00' + 'ab'.repeat(32) }],
      ['a message_id that is not a string', { message_id: 42 as unknown as string }],
      ['a missing field', { insertion_block_number: undefined as unknown as number }],
    ] as const) {
      test(`docs/design.md#merkle-tree-insertions: one transaction per request: ${what} midway writes nothing`, async () => {
        await insert([record(1, 0, 1, id(100))]);
        const batch = [record(1, 0, 2, id(200)), record(1, 1), { ...record(1, 2), ...bad }, record(1, 3)];
        await assert.rejects(async () => insert(batch));
        assert.equal(await h.count(), 1);
        assert.deepEqual(await list(1, 0, 10), [record(1, 0, 1, id(100))], 'the replaced row is back');
        assert.equal(await insert([record(1, 1)]), 1);
      });
    }

    test('docs/design.md#merkle-tree-insertions: listing is inclusive of both ends, ordered by leaf_index, one domain only', async () => {
      await insert([5, 1, 9, 3, 2, 8, 4].map((leaf) => record(1, leaf)));
      await insert([2, 3, 4].map((leaf) => record(10, leaf)));
      assert.deepEqual(
        (await list(1, 2, 8)).map((r) => r.leaf_index),
        [2, 3, 4, 5, 8],
      );
      assert.deepEqual(await list(1, 9, 9), [record(1, 9)]);
      assert.deepEqual(await list(1, 10, 20), []);
      assert.deepEqual(await list(99, 0, 100), [], 'an unknown domain lists nothing');
    });

    test('docs/design.md#merkle-tree-insertions: listed records are plain objects with exactly the API fields', async () => {
      // message_id is lower-case.
      await insert([record(1, 0, 12, '0x' + 'AB'.repeat(32))]);
      const [row] = await list(1, 0, 0);
      assert.deepEqual(Object.keys(row), ['chain', 'insertion_block_number', 'leaf_index', 'message_id']);
      assert.equal(Object.getPrototypeOf(row), Object.prototype);
      assert.equal(row.message_id, '0x' + 'ab'.repeat(32));
    });

    test('docs/design.md#merkle-tree-insertions: bounds: uint32 leaf and chain, block up to 2^53-1 are stored exactly', async () => {
      const edge = record(0xffffffff, 0xffffffff, Number.MAX_SAFE_INTEGER);
      await insert([edge, record(0, 0, 0)]);
      assert.deepEqual(await list(0xffffffff, 0xffffffff, 0xffffffff), [edge]);
      assert.deepEqual(await list(0, 0, 0), [record(0, 0, 0)]);
    });

    test('docs/design.md#merkle-tree-insertions: a batch of 10 000 records is written whole, in one fast transaction', async (t) => {
      const batch = Array.from({ length: 10_000 }, (_, i) => record(5, i));
      const started = performance.now();
      assert.equal(await insert(batch), 10_000);
      const ms = performance.now() - started;
      t.diagnostic(`10 000 merkle rows in ${ms.toFixed(1)} ms`);
      assert.ok(ms < 5_000, `took ${ms} ms`); // observed ~30 ms; a row-per-transaction store takes seconds
      const listed = await list(5, 0, 9_999);
      assert.equal(listed.length, 10_000);
      assert.deepEqual(listed[9_999], record(5, 9_999));
    });

    test('docs/design.md#storage: concurrent batches are each all or nothing', async () => {
      // A failing batch among good ones writes nothing of itself.
      const good = Array.from({ length: 20 }, (_, k) => Array.from({ length: 50 }, (_, i) => record(2, k * 50 + i)));
      const bad = [record(3, 0), record(3, 1), { ...record(3, 2), leaf_index: -1 }];
      const results = await Promise.allSettled([...good.slice(0, 10), bad, ...good.slice(10)].map((b) => insert(b)));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 20);
      assert.equal(results[10].status, 'rejected');
      assert.equal((await list(2, 0, 999)).length, 1_000);
      assert.deepEqual(await list(3, 0, 10), []);
    });
  });
}
