/**
 * Runs the Outbox contract (test/outbox-contract.ts) against every store, plus what only a
 * persistent store promises: DESIGN.md §7, "restarting the server loses nothing that was
 * acknowledged".
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createMemoryOutbox } from '../lib/outbox.ts';
import { openStore } from '../lib/sqlite/index.ts';
import { outboxContract, outboxMessage } from './outbox-contract.ts';

const dir = mkdtempSync(join(tmpdir(), 'relayer-outbox-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(dir, `outbox-${++files}.db`);

outboxContract('memory (lib/outbox.ts)', async () => ({ outbox: createMemoryOutbox(), close() {} }));

outboxContract('SQLite :memory:', async () => {
  const store = openStore(':memory:');
  return { outbox: store.outbox, close: () => store.close() };
});

outboxContract('SQLite file (WAL)', async () => {
  const store = openStore(freshFile());
  return { outbox: store.outbox, close: () => store.close() };
});

describe('SQLite outbox persistence', () => {
  test('DESIGN 7: enqueued and delivered messages survive close and reopen', () => {
    const file = freshFile();
    const first = openStore(file);
    const batch = [outboxMessage(1), outboxMessage(2), outboxMessage(3)];
    assert.equal(first.outbox.enqueue(batch), 3);
    assert.equal(first.outbox.markDelivered([batch[1].id], 1_700_000_009_000), 1);
    first.close();

    const second = openStore(file);
    try {
      assert.equal(second.outbox.depth(), 2);
      assert.deepEqual(
        second.outbox.pending().map((m) => m.id),
        [batch[0].id, batch[2].id],
      );
      assert.deepEqual(second.outbox.get(batch[0].id), { ...batch[0], deliveredAt: null });
      assert.equal(second.outbox.get(batch[1].id)?.deliveredAt, 1_700_000_009_000);
      // Idempotence holds across restarts: the same messages are not stored twice.
      assert.equal(second.outbox.enqueue(batch), 0);
    } finally {
      second.close();
    }
  });

  test('DESIGN 3: a batch the table refuses midway (CHECK on origin chain length) stores nothing', () => {
    const store = openStore(freshFile());
    try {
      store.outbox.enqueue([outboxMessage(9)]);
      // validateOutboxBatch lets a 129-byte chain name through; the table's CHECK does not, so
      // the failure happens inside the transaction, after message 1 was inserted.
      const batch = [outboxMessage(1), outboxMessage(2, 0, { originChain: 'x'.repeat(129) }), outboxMessage(3)];
      assert.throws(() => store.outbox.enqueue(batch), /CHECK constraint failed/);
      assert.equal(store.outbox.depth(), 1);
      assert.equal(store.outbox.get(batch[0].id), undefined);
      assert.equal(store.outbox.enqueue([batch[0], batch[2]]), 2);
    } finally {
      store.close();
    }
  });

  test('DESIGN 7: a batch refused before a restart left nothing behind after it', () => {
    const file = freshFile();
    const first = openStore(file);
    assert.throws(() => first.outbox.enqueue([outboxMessage(1), outboxMessage(2, 0, { nonce: -1 })]));
    first.close();
    const second = openStore(file);
    try {
      assert.equal(second.outbox.depth(), 0);
    } finally {
      second.close();
    }
  });
});
