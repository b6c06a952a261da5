/**
 * The delivery worker on a real anvil node with the real Hyperlane Mailbox
 * (docs/design.md#delivery): messages dispatched with Mailbox.dispatch on domain 1, enqueued into
 * the relayer's outbox, delivered with Mailbox.process on domain 2.
 *
 * Where the scenario is about the process, the worker is bin/relayer-worker.ts spawned: its ops
 * port, SIGTERM exit and output (the NULL-ISM test), one of the two processes on one SQLite file
 * (the test process is the other), SIGKILL between sending and recording, the requeue command.
 * Where it is about delivery (ISM metadata,
 * two workers on one PostgreSQL database, the next worker after a crash, replacing a stuck
 * transaction), it is the same lib/worker createRelayerWorker the bin runs, from the same config
 * file, in this process: a spawned worker costs its own Node start and viem load.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import pg from 'pg';
import { privateKeyToAddress } from 'viem/accounts';
import type { Hash, Hex } from 'viem';
import { openPostgresFromUrl } from '../../bin/lib/postgres.ts';
import { silentLogger, type Logger } from '../../lib/log.ts';
import type { Outbox, OutboxMessage } from '../../lib/outbox/index.ts';
import { openSqliteStore, type SqliteStore } from '../../lib/sqlite/index.ts';
import { MAILBOX_ABI } from '../../lib/worker/ism/metadata.ts';
import { DEFAULTS } from '../../lib/config/parse.ts';
import { sharedPostgresUrl } from '../helpers/harness/postgres.ts';
import {
  deployMessageIdMultisigIsm,
  deployNoopIsm,
  deployRoutingIsm,
  deployTestRecipient,
} from '../helpers/chain/isms.ts';
import { REPO_ROOT, spawnTracked } from '../helpers/harness/processes.ts';
import {
  devKey,
  killWorkers,
  startInProcessWorker,
  startWorker,
  startWorkerBench,
  until,
  WORKER_BIN,
  type WorkerBench,
} from '../helpers/chain/worker-chain.ts';
import { processTransactions } from '../helpers/chain/hyperlane.ts';

let bench: WorkerBench;

before(async () => {
  bench = await startWorkerBench();
});
after(async () => {
  await killWorkers();
  await bench?.stop();
});

/**
 * A check for `until`: are all `messages` delivered? Delivered is final here, so each poll reads
 * only from the first message not yet seen delivered, not the whole list again.
 */
function allDelivered(outbox: Pick<Outbox, 'get'>, messages: readonly OutboxMessage[]): () => Promise<boolean> {
  let seen = 0;
  return async () => {
    while (seen < messages.length && (await outbox.get(messages[seen].id))?.status === 'delivered') seen++;
    return seen === messages.length;
  };
}

/** Runs `relayer-worker requeue <id>` to its end. */
async function requeueCli(config: string, id: string, db?: string): Promise<{ code: number | null; output: string }> {
  const child = spawnTracked(
    process.execPath,
    [WORKER_BIN, 'requeue', id, '--config', config, ...(db ? ['--db', db] : [])],
    { cwd: REPO_ROOT },
  );
  const [code] = (await once(child.child, 'exit')) as [number | null];
  return { code, output: child.output() };
}

async function pending(address: Hex): Promise<number> {
  const [latest, inPool] = await Promise.all([
    bench.chain.publicClient.getTransactionCount({ address, blockTag: 'latest' }),
    bench.chain.publicClient.getTransactionCount({ address, blockTag: 'pending' }),
  ]);
  return inPool - latest;
}

/** The pool's transactions from `address`: hash and maxFeePerGas by nonce. */
async function poolOf(address: Hex): Promise<Map<number, { hash: string; maxFeePerGas: bigint }>> {
  const content = (await bench.chain.rpc('txpool_content')) as {
    pending: Record<string, Record<string, { hash: string; maxFeePerGas: string }>>;
  };
  const mine =
    Object.entries(content.pending).find(([from]) => from.toLowerCase() === address.toLowerCase())?.[1] ?? {};
  return new Map(
    Object.entries(mine).map(([nonce, tx]) => [
      Number(nonce),
      { hash: tx.hash, maxFeePerGas: BigInt(tx.maxFeePerGas) },
    ]),
  );
}

const deliveries = (id: string): Promise<Hash[]> => processTransactions(bench.chain, bench.destination.mailbox, id);

/** Every ProcessId on the destination Mailbox, by message id: one eth_getLogs for a batch of checks. */
async function deliveriesById(): Promise<Map<string, Hash[]>> {
  const logs = await bench.chain.publicClient.getContractEvents({
    address: bench.destination.mailbox,
    abi: MAILBOX_ABI,
    eventName: 'ProcessId',
    fromBlock: 0n,
  });
  const byId = new Map<string, Hash[]>();
  for (const l of logs) {
    const id = (l.args as { messageId: Hex }).messageId.toLowerCase();
    byId.set(id, [...(byId.get(id) ?? []), l.transactionHash]);
  }
  return byId;
}

describe('e2e: relayer-worker', { timeout: 600_000 }, () => {
  test('a NULL-ISM recipient: queued → delivered on chain, recorded with the ProcessId transaction', async () => {
    // Also /metrics and /ready answer, SIGTERM exits 0, and the key is never printed.
    const db = join(bench.dir, 'null-ism.db');
    const store: SqliteStore = await openSqliteStore(db);
    try {
      const messages = await bench.dispatch(3);
      assert.equal(await store.outbox.enqueue(messages), 3);
      const worker = await startWorker(bench.writeConfig(db), { args: ['--log-level', 'debug'] });
      await until(async () => {
        for (const m of messages) if ((await store.outbox.get(m.id))?.status !== 'delivered') return false;
        return true;
      }, 'three deliveries');
      for (const m of messages) {
        const record = await store.outbox.get(m.id);
        assert.equal(record?.status, 'delivered');
        assert.equal(record?.attempts, 1);
        const onChain = await deliveries(m.id);
        assert.deepEqual(onChain, [record?.destinationTxHash], 'exactly one delivery, the recorded transaction');
        assert.equal(
          await bench.chain.publicClient.readContract({
            address: bench.destination.mailbox,
            abi: MAILBOX_ABI,
            functionName: 'delivered',
            args: [m.id as Hex],
          }),
          true,
        );
      }
      const ready = await fetch(`${worker.opsUrl}/ready`);
      assert.equal(ready.status, 200);
      assert.equal(await ready.text(), 'ready\n');
      const metrics = await (await fetch(`${worker.opsUrl}/metrics`)).text();
      assert.match(metrics, /^relayer_worker_delivered_total\{already="false",destination="anvil2"\} 3$/m);
      assert.match(metrics, /^relayer_worker_enqueue_to_delivered_seconds_count\{destination="anvil2"\} 3$/m);
      assert.match(metrics, /^relayer_worker_in_flight 0$/m);
      assert.match(metrics, /^relayer_worker_outbox_depth 0$/m);
      const code = await worker.stop();
      assert.equal(code, 0, worker.output());
      const output = worker.output();
      assert.ok(!output.includes(devKey(1).slice(2)), 'the signer key is never printed');
      for (const line of output
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('{')))
        JSON.parse(line);
      assert.match(output, /"msg":"delivered"/);
    } finally {
      await store.close();
    }
  });

  test('a ROUTING ISM in front of a NoopIsm is followed and delivered; an unsupported ISM type is failed at once', async () => {
    // route(message) is followed; relayer-worker requeue puts the failed message back.
    const db = join(bench.dir, 'routing.db');
    const store = await openSqliteStore(db);
    const noop = await deployNoopIsm(bench.chain);
    const routing = await deployRoutingIsm(bench.chain, new Map([[1, noop]]));
    const routed = await deployTestRecipient(bench.chain, routing);
    const multisig = await deployMessageIdMultisigIsm(bench.chain);
    const guarded = await deployTestRecipient(bench.chain, multisig);
    const config = bench.writeConfig(db);
    try {
      const [viaRouting] = await bench.dispatch(1, routed);
      const [unsupported] = await bench.dispatch(1, guarded);
      await store.outbox.enqueue([viaRouting, unsupported]);
      const worker = await startInProcessWorker(config, store.outbox, { keyIndex: 3 });
      try {
        await until(
          async () =>
            (await store.outbox.get(viaRouting.id))?.status === 'delivered' &&
            (await store.outbox.get(unsupported.id))?.status === 'failed',
          'both outcomes',
        );
        assert.equal((await deliveries(viaRouting.id)).length, 1);
        const failed = await store.outbox.get(unsupported.id);
        // No chain names a merkleTreeHook and validatorAnnounce: multisig ISMs cannot be built (docs/isms.md#multisig).
        assert.equal(failed?.lastError, 'unsupported ISM type 5 (validator checkpoints are not configured)');
        assert.equal(failed?.attempts, 1, 'final at once: no retry');
        assert.deepEqual(await deliveries(unsupported.id), []);
      } finally {
        assert.equal(await worker.stop(), 0, 'nothing held after stop');
      }
      const requeued = await requeueCli(config, unsupported.id);
      assert.equal(requeued.code, 0, requeued.output);
      assert.match(requeued.output, new RegExp(`requeued ${unsupported.id}`));
      assert.equal((await store.outbox.get(unsupported.id))?.status, 'queued');
      const again = await requeueCli(config, unsupported.id);
      assert.equal(again.code, 1, 'a queued message is not requeued');
      assert.match(again.output, /is queued, not failed/);
    } finally {
      await store.close();
    }
  });

  /** A worker's log line, as the bin prints it (a JSON object a line): its `msg` and fields. */
  interface LogLine {
    msg: string;
    message_id?: string;
    error?: string;
    recorded?: boolean;
  }

  /** A running worker as twoWorkersExactlyOnce stops it: stop() resolves with 0 when it stopped cleanly. */
  interface Stoppable {
    stop(): Promise<number | null>;
    output(): string;
    /** Its log lines so far: the bin's output, or what an in-process worker logged. */
    lines(): LogLine[];
  }

  /** The JSON lines of a spawned worker's output (anything else it printed left out). */
  function jsonLines(output: string): LogLine[] {
    const lines: LogLine[] = [];
    for (const line of output.split('\n'))
      if (line.startsWith('{'))
        try {
          lines.push(JSON.parse(line) as LogLine);
        } catch {}
    return lines;
  }

  /** A logger that keeps every line (debug included) for the checks of twoWorkersExactlyOnce. */
  function keptLines(): { logger: Logger; lines: LogLine[] } {
    const lines: LogLine[] = [];
    const keep = (msg: string, fields?: Record<string, unknown>) => lines.push({ ...fields, msg });
    return { logger: { debug: keep, info: keep, warn: keep, error: keep }, lines };
  }

  /**
   * 50 messages, two workers (dev accounts 4 and 5, started by `start` on the config file) on one
   * database: each delivered exactly once, and never held by two workers at once.
   */
  async function twoWorkersExactlyOnce(
    t: TestContext,
    db: string,
    outbox: Pick<Outbox, 'enqueue' | 'get'>,
    start: (config: string, keyIndex: number) => Promise<Stoppable>,
  ): Promise<void> {
    const messages = await bench.dispatch(50);
    assert.equal(await outbox.enqueue(messages), 50);
    const config = bench.writeConfig(db, { concurrency: 4, batch: 5 });
    // One after the other: a spawned worker is ready only after its Node start, and an in-process
    // one started beside it could take every message before it.
    const workers = [await start(config, 4)];
    workers.push(await start(config, 5));
    try {
      await until(allDelivered(outbox, messages), '50 deliveries', 90_000);
    } finally {
      for (const w of workers) assert.equal(await w.stop(), 0, w.output());
    }
    const lines = workers.flatMap((w) => w.lines());
    const delivered = await deliveriesById();
    const hashes: Hash[] = [];
    for (const m of messages) {
      const record = await outbox.get(m.id);
      const onChain = delivered.get(m.id.toLowerCase()) ?? [];
      assert.equal(onChain.length, 1, `${m.id} delivered once on chain`);
      assert.equal(record?.destinationTxHash, onChain[0]);
      // `attempts` counts claims, so a second claim is either a retry its holder recorded (on a
      // loaded machine a node call may fail and that attempt is counted: docs/delivery.md#retries-pending-proofs-dead-letters)
      // or a claim that took it from a holder whose lease had lapsed, which counts a lease expiry
      // (docs/outbox.md#leases): two workers may then have held it at once.
      const own = lines.filter((l) => l.message_id === m.id);
      const story = `${m.id}: attempts ${record?.attempts}, lease expiries ${record?.leaseExpiries}; its lines: ${JSON.stringify(own)}`;
      assert.equal(record?.leaseExpiries, 0, `no lease lapsed, no two workers held it: ${story}`);
      const retries = own.filter((l) => l.msg === 'retry');
      for (const line of retries)
        assert.match(
          line.error ?? '',
          /^rpc: [\w ]+: node unreachable or failing /,
          `only a failing node call is retried: ${story}`,
        );
      // A retry requeues the message only when its holder recorded it (recorded: true).
      const requeued = retries.filter((l) => l.recorded === true).length;
      assert.equal(record?.failures, requeued, `each counted attempt has its retry line: ${story}`);
      assert.equal(record?.attempts, 1 + requeued, `claimed once, again only after a recorded retry: ${story}`);
      if (retries.length > 0) t.diagnostic(`retried after a failing node call: ${story}`);
      hashes.push(onChain[0]);
    }
    // The 50 delivering transactions in one JSON-RPC batch, not 50 requests.
    const txs = (await bench.chain.rpcBatch(
      hashes.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })),
    )) as ({ from: string } | null)[];
    const signers = new Set(txs.map((tx) => tx?.from.toLowerCase()));
    assert.deepEqual(
      [...signers].sort(),
      [privateKeyToAddress(devKey(4)), privateKeyToAddress(devKey(5))].map((a) => a.toLowerCase()).sort(),
      'both workers delivered some',
    );
  }

  test('two workers on one SQLite file: 50 messages, each delivered exactly once', { timeout: 150_000 }, async (t) => {
    const db = join(bench.dir, 'two-workers.db');
    const store = await openSqliteStore(db);
    try {
      // Two processes on the file, the spawned bin (dev account 4) and this one (5, on the test's
      // own connection): the SQLite file's locks are what keeps them apart.
      await twoWorkersExactlyOnce(t, db, store.outbox, async (config, keyIndex) => {
        if (keyIndex === 4) {
          const spawned = await startWorker(config, { keyIndex });
          return { ...spawned, lines: () => jsonLines(spawned.output()) };
        }
        const { logger, lines } = keptLines();
        const worker = await startInProcessWorker(config, store.outbox, { keyIndex, logger });
        return {
          stop: () => worker.stop(),
          output: () => `in-process worker (dev account ${keyIndex})`,
          lines: () => lines,
        };
      });
    } finally {
      await store.close();
    }
  });

  test('two workers on one PostgreSQL database: 50 messages, each delivered exactly once', {
    timeout: 150_000,
  }, async (t) => {
    const shared = await sharedPostgresUrl();
    const admin = new pg.Pool({ connectionString: shared, max: 1 });
    const name = `workers_${randomBytes(6).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(shared);
    url.pathname = `/${name}`;
    const opened = await openPostgresFromUrl(url.href, DEFAULTS.relayApi, silentLogger);
    const pools: { close(): Promise<void> }[] = [];
    try {
      // In this process, each worker on a pool of its own (as each process has): the database's
      // row locks are what keeps them apart, whichever process holds the connections.
      await twoWorkersExactlyOnce(t, url.href, opened.store.outbox, async (config, keyIndex) => {
        const own = await openPostgresFromUrl(url.href, DEFAULTS.relayApi, silentLogger);
        pools.push(own);
        const { logger, lines } = keptLines();
        const worker = await startInProcessWorker(config, own.store.outbox, { keyIndex, logger });
        return {
          stop: () => worker.stop(),
          output: () => `in-process worker (dev account ${keyIndex})`,
          lines: () => lines,
        };
      });
    } finally {
      await Promise.all(pools.map((p) => p.close()));
      await opened.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  test('a worker SIGKILLed after sending, before recording: the next worker finds it delivered and records the one transaction', async () => {
    const db = join(bench.dir, 'killed.db');
    const store = await openSqliteStore(db);
    const signer = privateKeyToAddress(devKey(6));
    try {
      const [m] = await bench.dispatch(1);
      await store.outbox.enqueue([m]);
      const config = bench.writeConfig(db, { leaseSeconds: 1 });
      await bench.chain.setAutomine(false);
      const first = await startWorker(config, { keyIndex: 6 });
      try {
        await until(async () => (await pending(signer)) === 1, 'the process() transaction in the pool');
        await first.stop('SIGKILL');
      } finally {
        await bench.chain.mineBlock();
        await bench.chain.setAutomine(true);
      }
      const [sent] = await deliveries(m.id);
      assert.ok(sent, "the killed worker's transaction landed");
      assert.equal((await store.outbox.get(m.id))?.status, 'delivering', 'not recorded by the killed worker');
      const second = await startInProcessWorker(config, store.outbox, { keyIndex: 7 });
      try {
        await until(async () => (await store.outbox.get(m.id))?.status === 'delivered', 'the second worker records it');
      } finally {
        assert.equal(await second.stop(), 0, 'nothing held after stop');
      }
      const record = await store.outbox.get(m.id);
      assert.equal(record?.destinationTxHash, sent, 'recorded with the transaction that delivered it');
      assert.deepEqual(await deliveries(m.id), [sent], 'exactly one delivery');
      assert.equal(await pending(privateKeyToAddress(devKey(7))), 0);
      assert.equal(
        await bench.chain.publicClient.getTransactionCount({ address: privateKeyToAddress(devKey(7)) }),
        0,
        'the second worker sent nothing',
      );
    } finally {
      await bench.chain.setAutomine(true);
      await store.close();
    }
  });

  test('a stuck transaction (mining held) is replaced with higher fees, same nonce; the replacement is mined and recorded', async () => {
    const db = join(bench.dir, 'stuck.db');
    const store = await openSqliteStore(db);
    const signer = privateKeyToAddress(devKey(8));
    try {
      const [m] = await bench.dispatch(1);
      await store.outbox.enqueue([m]);
      await bench.chain.setAutomine(false);
      const worker = await startInProcessWorker(bench.writeConfig(db, { replaceAfterSeconds: 1 }), store.outbox, {
        keyIndex: 8,
      });
      let original: { hash: string; maxFeePerGas: bigint } | undefined;
      let replacement: { hash: string; maxFeePerGas: bigint } | undefined;
      try {
        await until(
          async () => (original = (await poolOf(signer)).get(0)) !== undefined,
          'the first process() in the pool',
        );
        await until(async () => {
          const now = (await poolOf(signer)).get(0);
          if (now && now.hash !== original!.hash) replacement = now;
          return replacement !== undefined;
        }, 'its replacement');
        assert.ok(replacement!.maxFeePerGas > original!.maxFeePerGas, 'fees bumped');
        await bench.chain.mineBlock();
        await bench.chain.setAutomine(true);
        await until(async () => (await store.outbox.get(m.id))?.status === 'delivered', 'delivery recorded');
      } finally {
        await bench.chain.setAutomine(true);
        assert.equal(await worker.stop(), 0, 'nothing held after stop');
      }
      const record = await store.outbox.get(m.id);
      const [delivered] = await deliveries(m.id);
      assert.equal(record?.destinationTxHash, delivered);
      const tx = await bench.chain.publicClient.getTransaction({ hash: delivered });
      assert.equal(tx.nonce, 0);
      assert.ok(tx.maxFeePerGas! > original!.maxFeePerGas, 'the mined one is a replacement');
      assert.equal(
        await bench.chain.publicClient.getTransactionCount({ address: signer }),
        1,
        'one transaction landed',
      );
    } finally {
      await store.close();
    }
  });
});
