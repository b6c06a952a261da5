/**
 * The delivery worker against a node whose replies lie or get lost, and against a worker killed
 * with a transaction pending (docs/transactions.md#the-transaction-journal, #transactions, #nonces),
 * judged by the chain: each message delivered once and sent under one nonce (every signed
 * transaction that reached the node is decoded back to its message), no reverted transaction,
 * the signer's nonces used without a gap, its pool empty and the journal settled at the end.
 *
 * The destination chain is reached through a lying JSON-RPC proxy
 * (test/helpers/chain/lying-rpc.ts): "already known" after forwarding, the connection cut after
 * forwarding, a refusal; anvil itself drops a transaction (anvil_dropTransaction). The store
 * fails too: its SQLite file locked by another connection the moment a transaction is mined.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import type { Address, Hash, Hex } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import type { OutboxMessage } from '../../lib/outbox/index.ts';
import { systemClock, type Clock } from '../../lib/clock.ts';
import { openSqliteStore, type OpenSqliteStoreOptions, type SqliteStore } from '../../lib/sqlite/index.ts';
import { MAILBOX_ABI } from '../../lib/worker/ism/metadata.ts';
import { SAME_BYTES_SENDS } from '../../lib/worker/tx/broadcast.ts';
import type { LyingRpc, SendFault } from '../helpers/chain/lying-rpc.ts';
import { lyingConfig, startLyingBench, stopLyingBench } from '../helpers/chain/lying-bench.ts';
import { devKey, startInProcessWorker, startWorker, until, type WorkerBench } from '../helpers/chain/worker-chain.ts';
import { processTransactions } from '../helpers/chain/hyperlane.ts';
import { judge, poolOf as pool, sends as signedSends } from '../helpers/chain/judge.ts';

/** The worker's default lease (docs/worker-configuration.md#the-worker-section). */
const DEFAULT_LEASE_SECONDS = 60;

let bench: WorkerBench;
let proxy: LyingRpc;

before(async () => {
  ({ bench, proxy } = await startLyingBench());
});
after(() => stopLyingBench({ bench, proxy }));

/** A config whose destination chain is reached through the lying proxy. */
function config(db: string, worker: Record<string, unknown>): string {
  return lyingConfig({ bench, proxy }, db, { retryBaseSeconds: 1, retryMaxSeconds: 2, ...worker });
}

const sends = (signer: Address) => signedSends(proxy, signer);
/** A refusal the worker takes for one: each send of the same bytes refused (lib/worker/tx/broadcast.ts). */
const refusal: SendFault[] = Array.from({ length: SAME_BYTES_SENDS }, () => 'refuse');
const poolOf = (address: Address) => pool(bench, address);
const deliveries = (id: string): Promise<Hash[]> => processTransactions(bench.chain, bench.destination.mailbox, id);

interface Scenario {
  store: SqliteStore;
  signer: Address;
  messages: OutboxMessage[];
}

/**
 * One scenario: a SQLite file, `count` messages dispatched, the worker signing with dev account
 * `keyIndex`; `run` drives it (mining held when `holdMining`: automine off until `run` turns it
 * on); then the chain judges.
 */
async function scenario(
  file: string,
  keyIndex: number,
  count: number,
  holdMining: boolean,
  run: (s: Scenario) => Promise<void>,
  storeOptions: OpenSqliteStoreOptions = {},
): Promise<void> {
  const store = await openSqliteStore(join(bench.dir, file), storeOptions);
  const s: Scenario = { store, signer: privateKeyToAddress(devKey(keyIndex)), messages: await bench.dispatch(count) };
  if (holdMining) await bench.chain.setAutomine(false);
  try {
    await run(s);
    assert.deepEqual(await judge(bench, proxy, store, s.messages, s.signer), [], 'no gap to fill');
  } finally {
    await bench.chain.setAutomine(true);
    await store.close();
  }
}

/** Waits until every one of `messages` is recorded delivered. */
function allDelivered(s: Scenario, what: string): Promise<void> {
  return until(
    async () => {
      for (const m of s.messages) if ((await s.store.outbox.get(m.id))?.status !== 'delivered') return false;
      return true;
    },
    what,
    60_000,
  );
}

/** Mining back on, one block mined, then every message delivered. */
async function mineAndDeliver(s: Scenario): Promise<void> {
  await bench.chain.setAutomine(true);
  await bench.chain.mineBlock();
  await allDelivered(s, `${s.messages.length} deliveries`);
}

const inProcess = (s: Scenario, keyIndex: number, worker: Record<string, unknown>) =>
  startInProcessWorker(config(join(bench.dir, 'unused.db'), worker), s.store.outbox, { keyIndex });

/** A transaction in the node's pool: its hash and fee cap. */
interface Pending {
  hash: string;
  maxFeePerGas: string;
}

/**
 * The killed worker with a stuck transaction: the first message enqueued, `start`'s worker SIGKILLed
 * once its transaction is in the pool, the next block's base fee set just above what it offers (it
 * cannot be mined), then the other messages enqueued. Returns the stuck transaction.
 */
async function stuckByKill(s: Scenario, start: () => ReturnType<typeof startWorker>): Promise<Pending> {
  await s.store.outbox.enqueue(s.messages.slice(0, 1));
  const first = await start();
  let stuck: Pending | undefined;
  try {
    await until(async () => (stuck = (await poolOf(s.signer))['0']) !== undefined, 'the first transaction pending');
  } finally {
    await first.stop('SIGKILL');
  }
  await bench.chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${(BigInt(stuck!.maxFeePerGas) + 1n).toString(16)}`]);
  await s.store.outbox.enqueue(s.messages.slice(1));
  return stuck!;
}

/** Waits for another transaction than `stuck` at nonce 0, then mines and waits for every delivery. */
async function replacedThenDelivered(s: Scenario, stuck: Pending): Promise<void> {
  await until(async () => {
    const now = (await poolOf(s.signer))['0'];
    return now !== undefined && now.hash !== stuck.hash;
  }, 'the stuck transaction replaced at nonce 0');
  await mineAndDeliver(s);
}

/** The first message landed at the nonce it was first sent under, by a replacement of `stuck`. */
async function assertLandedByReplacement(s: Scenario, stuck: Pending): Promise<void> {
  const [delivered] = await deliveries(s.messages[0].id);
  const tx = await bench.chain.publicClient.getTransaction({ hash: delivered });
  assert.equal(tx.nonce, 0, 'the first message landed at the nonce it was first sent under');
  assert.ok(tx.maxFeePerGas! > BigInt(stuck.maxFeePerGas), 'by a replacement with higher fees');
}

describe('e2e: the worker against a lying node and a killed worker (the chain is the judge)', {
  timeout: 240_000,
}, () => {
  test('forwarded-then-failed sends and refusals: each message is sent under one nonce, delivered once, no gap', async () => {
    // The faults: "already known" after forwarding, a connection cut after forwarding, a refusal
    // (of every send of the same bytes: certainly not sent).
    await scenario('lies.db', 2, 6, false, async (s) => {
      await s.store.outbox.enqueue(s.messages);
      proxy.fault('already-known', 'cut', ...refusal);
      const worker = await inProcess(s, 2, { concurrency: 1, batch: 1 });
      try {
        await allDelivered(s, 'six deliveries');
      } finally {
        assert.equal(await worker.stop(), 0);
      }
      assert.equal(proxy.pendingFaults(), 0, 'every fault was served');
    });
  });

  test('a nonce dropped from the pool is sent again, not handed to another message', async () => {
    // A transaction is dropped while later ones wait, then a send is answered "nonce too low".
    await scenario('dropped.db', 3, 4, true, async (s) => {
      await s.store.outbox.enqueue(s.messages.slice(0, 3));
      const worker = await inProcess(s, 3, { concurrency: 4 });
      try {
        await until(async () => Object.keys(await poolOf(s.signer)).length === 3, 'three transactions in the pool');
        await bench.chain.rpc('anvil_dropTransaction', [(await poolOf(s.signer))['0'].hash]);
        // The next send is answered "nonce too low" (not forwarded): a worker that re-reads the
        // pending count (it stops at the gap at nonce 0) hands nonce 0 to the fourth message.
        proxy.fault('nonce-too-low');
        await s.store.outbox.enqueue(s.messages.slice(3));
        await until(async () => proxy.pendingFaults() === 0, 'the refusal served');
        await until(async () => (await poolOf(s.signer))['0'] !== undefined, 'nonce 0 sent again');
        await mineAndDeliver(s);
      } finally {
        assert.equal(await worker.stop(), 0);
      }
    });
  });

  test('replacements that fail do not end the send: the message stays under its one nonce and lands', async () => {
    // The replacements are refused, or their connection is cut.
    await scenario('replacements.db', 5, 2, true, async (s) => {
      await s.store.outbox.enqueue(s.messages.slice(0, 1));
      const worker = await inProcess(s, 5, { replaceAfterSeconds: 1 });
      try {
        await until(async () => (await poolOf(s.signer))['0'] !== undefined, 'the first transaction pending');
        // Its first two replacements fail: one refused (each send of its bytes), one whose connection is cut after it was sent.
        proxy.fault(...refusal, 'cut');
        await until(async () => proxy.pendingFaults() === 0, 'both failed replacements');
        const seen = (await sends(s.signer)).length;
        await until(async () => (await sends(s.signer)).length > seen, 'a later replacement');
        await s.store.outbox.enqueue(s.messages.slice(1));
        await until(async () => (await poolOf(s.signer))['1'] !== undefined, 'the second message sent');
        await mineAndDeliver(s);
      } finally {
        assert.equal(await worker.stop(), 0);
      }
    });
  });

  test('a worker SIGKILLed with a transaction stuck pending replaces it at the same nonce once restarted', async () => {
    // The transaction's fee is too low to mine; restarted with the same key, the worker replaces it instead of
    // queueing new ones behind it.
    await scenario('killed.db', 4, 2, true, async (s) => {
      const stuck = await stuckByKill(s, () =>
        startWorker(config(join(bench.dir, 'killed.db'), { leaseSeconds: 1 }), { keyIndex: 4 }),
      );
      const second = await inProcess(s, 4, { leaseSeconds: 1, replaceAfterSeconds: 1 });
      try {
        await replacedThenDelivered(s, stuck);
      } finally {
        assert.equal(await second.stop(), 0);
      }
      await assertLandedByReplacement(s, stuck);
    });
  });

  test("the same on the defaults: the killed worker's 60 s lease lapses, the restart replaces at the next head", async () => {
    // No timer shortened: the worker's default lease (60 s) and replacement rules (below the base fee:
    // replaced at the next head). The lapse of the lease is time injected: the restarted worker's store
    // reads a clock one default lease (and a second) ahead of the killed worker's.
    const ahead = (DEFAULT_LEASE_SECONDS + 1) * 1_000;
    const later: Clock = { ...systemClock, now: () => systemClock.now() + ahead };
    await scenario(
      'killed-defaults.db',
      9,
      2,
      true,
      async (s) => {
        const stuck = await stuckByKill(s, () =>
          startWorker(lyingConfig({ bench, proxy }, join(bench.dir, 'killed-defaults.db'), {}), { keyIndex: 9 }),
        );
        const second = await startInProcessWorker(
          lyingConfig({ bench, proxy }, join(bench.dir, 'unused.db'), {}),
          s.store.outbox,
          { keyIndex: 9 },
        );
        try {
          // A head whose base fee the stuck transaction cannot pay: the next head's move replaces it.
          await bench.chain.mineBlock();
          await replacedThenDelivered(s, stuck);
        } finally {
          assert.equal(await second.stop(), 0);
        }
        await assertLandedByReplacement(s, stuck);
      },
      { clock: later },
    );
  });

  test('a store that fails right after a mined send: delivered with that transaction, sent once, no failure counted', async () => {
    // The write lock of the SQLite file is taken by another connection (an operator's sqlite3
    // shell, a backup) while the process transaction waits in the pool; then it is mined, and the
    // worker's markDelivered (and its lease renewals) answer SQLITE_BUSY. The worker records it
    // again once the store answers, in the same attempt, without counting a failure
    // (docs/transactions.md#the-transaction-journal).
    await scenario(
      'store-locked.db',
      6,
      1,
      true,
      async (s) => {
        const [m] = s.messages;
        await s.store.outbox.enqueue(s.messages);
        const refused: string[] = [];
        const outbox = new Proxy(s.store.outbox, {
          get(target, key, receiver) {
            const value = Reflect.get(target, key, receiver);
            if (key !== 'markDelivered') return value;
            // Observed, not faked: the refusal is the real store's.
            return (...args: Parameters<typeof target.markDelivered>) =>
              Promise.resolve(target.markDelivered(...args)).catch((error: Error) => {
                refused.push(error.message);
                throw error;
              });
          },
        });
        const worker = await startInProcessWorker(config(join(bench.dir, 'unused.db'), { leaseSeconds: 10 }), outbox, {
          keyIndex: 6,
        });
        try {
          await until(async () => (await poolOf(s.signer))['0'] !== undefined, 'the process transaction pending');
          // It waits for the worker's own write of the moment (a lease renewal), if any.
          const lock = new DatabaseSync(join(bench.dir, 'store-locked.db'), { timeout: 5_000 });
          try {
            lock.exec('BEGIN IMMEDIATE');
            await bench.chain.setAutomine(true);
            await bench.chain.mineBlock();
            await until(() => refused.length > 0, 'markDelivered refused by the locked store');
            assert.match(refused[0], /database is locked/);
            assert.equal(
              await bench.chain.publicClient.readContract({
                address: bench.destination.mailbox,
                abi: MAILBOX_ABI,
                functionName: 'delivered',
                args: [m.id as Hex],
              }),
              true,
              'the Mailbox says delivered while the store could not record it',
            );
            assert.equal((await s.store.outbox.get(m.id))?.status, 'delivering', 'nothing recorded yet');
          } finally {
            if (lock.isTransaction) lock.exec('ROLLBACK');
            lock.close();
          }
          await allDelivered(s, 'the delivery recorded once the store answers');
        } finally {
          assert.equal(await worker.stop(), 0);
        }
        const record = await s.store.outbox.get(m.id);
        assert.equal(record?.failures, 0, `no failure counted: ${record?.lastError}`);
        assert.equal(record?.lastError, null, 'no error recorded against the message');
        assert.deepEqual(
          [record?.attempts, record?.leaseExpiries],
          [1, 0],
          'recorded by the attempt that sent it: no second claim, no lease lapse',
        );
        assert.equal(record?.destinationTxHash, (await deliveries(m.id))[0], 'recorded with the mined transaction');
      },
      { busyTimeoutMs: 200 },
    );
  });
  test('a signer that cannot pay for gas: the message waits, not counted, its balance named; delivered once topped up', async () => {
    // The node refuses the send "insufficient funds for gas * price + value": certainly not sent.
    await scenario('broke.db', 1, 1, false, async (s) => {
      const [m] = s.messages;
      const funded = await bench.chain.publicClient.getBalance({ address: s.signer });
      await bench.chain.rpc('anvil_setBalance', [s.signer, '0x3e8']);
      const lines: [string, Record<string, unknown>][] = [];
      const info = (msg: string, fields: Record<string, unknown> = {}) => void lines.push([msg, fields]);
      const logger = { debug: () => {}, info, warn: info, error: info };
      await s.store.outbox.enqueue(s.messages);
      const worker = await startInProcessWorker(
        config(join(bench.dir, 'unused.db'), { maxAttempts: 1 }),
        s.store.outbox,
        {
          keyIndex: 1,
          logger,
        },
      );
      try {
        await until(async () => (await s.store.outbox.get(m.id))?.lastError != null, 'the refused send recorded');
        const record = await s.store.outbox.get(m.id);
        assert.equal(record?.status, 'queued', `waits, not failed (maxAttempts 1): ${record?.lastError}`);
        assert.equal(record?.failures, 0, 'not counted');
        const signer = s.signer.toLowerCase();
        assert.match(
          record?.lastError ?? '',
          new RegExp(`^insufficient_funds: .*signer ${signer} cannot pay for gas: balance 1000 wei`),
        );
        const line = lines.find(([msg]) => msg === 'waiting');
        assert.ok(
          line && String(line[1].error).includes(signer),
          `a log line names the signer: ${JSON.stringify(lines)}`,
        );
        assert.deepEqual(await sends(s.signer), [], 'nothing reached the node');
        await bench.chain.rpc('anvil_setBalance', [s.signer, `0x${funded.toString(16)}`]);
        await allDelivered(s, 'delivered once the signer can pay');
      } finally {
        assert.equal(await worker.stop(), 0);
      }
    });
  });

  test('a send mined after its worker was killed, its lease lapsing maxLeaseExpiries times: delivered by the last look', async () => {
    // worker.maxLeaseExpiries 1: the first lapse would have been the dead letter; the outbox hands
    // the message out once more flagged, and that worker finds the mined transaction in the journal
    // (docs/delivery.md#retries-pending-proofs-dead-letters).
    await scenario('last-look-mined.db', 7, 1, true, async (s) => {
      const [m] = s.messages;
      await s.store.outbox.enqueue(s.messages);
      const work = { leaseSeconds: 1, maxLeaseExpiries: 1 };
      const first = await startWorker(config(join(bench.dir, 'last-look-mined.db'), work), { keyIndex: 7 });
      try {
        await until(async () => (await poolOf(s.signer))['0'] !== undefined, 'the process transaction pending');
      } finally {
        await first.stop('SIGKILL');
      }
      await bench.chain.setAutomine(true);
      await bench.chain.mineBlock();
      const [hash] = await deliveries(m.id);
      assert.ok(hash, 'mined after its worker died');
      assert.equal((await s.store.outbox.get(m.id))?.status, 'delivering', 'nothing recorded');
      const second = await inProcess(s, 7, work);
      try {
        await until(
          async () => ['delivered', 'failed'].includes((await s.store.outbox.get(m.id))?.status ?? ''),
          'an outcome',
        );
      } finally {
        assert.equal(await second.stop(), 0);
      }
      const record = await s.store.outbox.get(m.id);
      assert.deepEqual(
        [record?.status, record?.destinationTxHash, record?.lastError],
        ['delivered', hash, null],
        'delivered with the mined transaction, not dead-lettered',
      );
      assert.deepEqual([record?.attempts, record?.leaseExpiries], [2, 1], 'one lapse, then the last look');
    });
  });

  test('a send still pending when its lease lapsed maxLeaseExpiries times is followed by the last look, then delivered', async () => {
    await scenario('last-look-pending.db', 8, 1, true, async (s) => {
      const [m] = s.messages;
      await s.store.outbox.enqueue(s.messages);
      const work = { leaseSeconds: 1, maxLeaseExpiries: 1 };
      const first = await startWorker(config(join(bench.dir, 'last-look-pending.db'), work), { keyIndex: 8 });
      try {
        await until(async () => (await poolOf(s.signer))['0'] !== undefined, 'the process transaction pending');
      } finally {
        await first.stop('SIGKILL');
      }
      const second = await inProcess(s, 8, work);
      try {
        await until(async () => {
          const r = await s.store.outbox.get(m.id);
          return r?.attempts === 2 || r?.status === 'failed';
        }, 'the next claim');
        const held = await s.store.outbox.get(m.id);
        assert.equal(held?.status, 'delivering', `handed out for a last look, not dead-lettered: ${held?.lastError}`);
        await mineAndDeliver(s);
      } finally {
        // Mined whatever happened: nothing is left following a pending transaction of the signer.
        await bench.chain.setAutomine(true);
        await bench.chain.mineBlock();
        assert.equal(await second.stop(), 0);
      }
      const record = await s.store.outbox.get(m.id);
      assert.equal(record?.failures, 0, `no failure counted: ${record?.lastError}`);
      assert.equal(record?.leaseExpiries, 1);
    });
  });
});
