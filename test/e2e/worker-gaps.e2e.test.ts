/**
 * Gaps on anvil with the worker's defaults (docs/transactions.md#gaps): no timer of the worker is
 * shortened (replaceAfterBlocks, replaceAfterSeconds, retries, polls are its own); only the chain's
 * block time is the test's (a block every 2 s, mined by the test so that a drop happens between two
 * blocks). The destination is reached through the lying JSON-RPC proxy (test/helpers/chain/lying-rpc.ts):
 * - the signer's lowest pending transaction dropped from the pool (anvil_dropTransaction), again and again;
 * - a send answered "already known" (forwarded), then dropped;
 * - a first broadcast refused below sends that went through;
 * - a base fee spiked above gasPriceCap, then the lowest pending transaction dropped.
 * The chain is the judge (test/helpers/chain/judge.ts): every message delivered once, one nonce per
 * message (and per self-transfer filling a gap), the pool empty and the journal settled at the end;
 * and each gap filled within 2 blocks of the node losing the transaction (for the spike: of the
 * base fee falling under the cap). The worker says so at info and in its metrics.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseTransaction, type Address, type Hex } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import type { Logger } from '../../lib/log.ts';
import type { OutboxMessage } from '../../lib/outbox/index.ts';
import { SAME_BYTES_SENDS } from '../../lib/worker/tx/broadcast.ts';
import { openSqliteStore, type SqliteStore } from '../../lib/sqlite/index.ts';
import { judge, poolOf, sends } from '../helpers/chain/judge.ts';
import type { LyingRpc } from '../helpers/chain/lying-rpc.ts';
import { lyingConfig, startLyingBench, stopLyingBench } from '../helpers/chain/lying-bench.ts';
import {
  DESTINATION,
  devKey,
  startInProcessWorker,
  until,
  type InProcessWorker,
  type WorkerBench,
} from '../helpers/chain/worker-chain.ts';

const GWEI = 1_000_000_000n;
/** The cap on every chain: above what anvil suggests (about 1 gwei), below a spike. */
const CAP = 3n * GWEI;
/** The test's block time. */
const BLOCK_MS = 2_000;

let bench: WorkerBench;
let proxy: LyingRpc;

before(async () => {
  ({ bench, proxy } = await startLyingBench());
});
after(() => stopLyingBench({ bench, proxy }));

/** A config with the worker's defaults (pollMs too), the destination through the proxy, both safety keys stated. */
function config(): string {
  return lyingConfig(
    { bench, proxy },
    join(bench.dir, 'unused.db'),
    { pollMs: 1_000 },
    {
      chain: { transactionOverrides: { gasPriceCap: CAP.toString() } },
      top: { gasPaymentEnforcement: [{ type: 'none' }] },
    },
  );
}

/** Blocks mined by the test every BLOCK_MS while not paused (automine off meanwhile). */
function miner() {
  let paused = true;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async () => {
    if (!paused) await bench.chain.mineBlock().catch(() => undefined);
    if (!stopped) timer = setTimeout(tick, BLOCK_MS);
  };
  timer = setTimeout(tick, BLOCK_MS);
  return {
    pause: () => void (paused = true),
    resume: () => void (paused = false),
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

const head = () => bench.chain.publicClient.getBlockNumber({ cacheTime: 0 });
const minedCount = (signer: Address) => bench.chain.publicClient.getTransactionCount({ address: signer });

/** The block that mined the signer's transaction at `nonce` (any of the ones sent there). */
async function minedAt(signer: Address, nonce: number): Promise<bigint> {
  for (const s of await sends(proxy, signer)) {
    if (s.nonce !== nonce) continue;
    const receipt = await bench.chain.publicClient.getTransactionReceipt({ hash: s.hash }).catch(() => undefined);
    if (receipt) return receipt.blockNumber;
  }
  throw new Error(`nothing of ${signer} mined at nonce ${nonce}`);
}

interface Run {
  store: SqliteStore;
  signer: Address;
  messages: OutboxMessage[];
  worker: InProcessWorker;
  mining: ReturnType<typeof miner>;
  /** The worker's info lines: [message, fields]. */
  lines: [string, Record<string, unknown>][];
}

/** One scenario: its own SQLite file and signer, `count` messages dispatched, mining by the test; then the judge. */
async function scenario(file: string, keyIndex: number, count: number, body: (r: Run) => Promise<void>) {
  const store = await openSqliteStore(join(bench.dir, file));
  const messages = await bench.dispatch(count);
  const lines: Run['lines'] = [];
  const info = (msg: string, fields: Record<string, unknown> = {}) => void lines.push([msg, fields]);
  const logger: Logger = { debug: () => {}, info, warn: info, error: info };
  await bench.chain.setAutomine(false);
  const mining = miner();
  const worker = await startInProcessWorker(config(), store.outbox, { keyIndex, logger });
  const r: Run = { store, signer: privateKeyToAddress(devKey(keyIndex)), messages, worker, mining, lines };
  try {
    await body(r);
    mining.resume();
    await until(
      async () => {
        for (const m of messages) if ((await store.outbox.get(m.id))?.status !== 'delivered') return false;
        return Object.keys(await poolOf(bench, r.signer)).length === 0;
      },
      'every message delivered, the pool empty',
      120_000,
    );
    assert.equal(await worker.stop(), 0);
    return { ...r, fillers: await judge(bench, proxy, store, messages, r.signer) };
  } finally {
    mining.stop();
    await worker.stop();
    await bench.chain.setAutomine(true);
    await store.close();
  }
}

/** Waits until the signer's pool holds every one of `nonces`. */
const inPool = (signer: Address, nonces: number[]) =>
  until(async () => {
    const pool = await poolOf(bench, signer);
    return nonces.every((n) => pool[String(n)] !== undefined);
  }, `nonces ${nonces} in the pool`);

const metric = (w: InProcessWorker, name: string) =>
  w
    .metrics()
    .split('\n')
    .filter((l) => l.startsWith(name))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);

describe('e2e: gaps healed with the worker defaults, the chain as the judge (docs/transactions.md#gaps)', {
  timeout: 600_000,
}, () => {
  test('the lowest pending transaction dropped three times: each gap filled within 2 blocks by the same bytes', async () => {
    const r = await scenario('dropped-again.db', 1, 9, async ({ store, signer, messages, mining, worker }) => {
      for (let round = 0; round < 3; round++) {
        const nonces = [3 * round, 3 * round + 1, 3 * round + 2];
        await store.outbox.enqueue(messages.slice(3 * round, 3 * round + 3));
        await inPool(signer, nonces);
        const gauge = `relayer_worker_lowest_open_nonce_age_seconds{destination="${DESTINATION.name}",signer="${signer.toLowerCase()}"}`;
        assert.ok(worker.metrics().includes(gauge), `the age of the lowest open nonce is a metric: ${gauge}`);
        const lowest = (await poolOf(bench, signer))[String(nonces[0])].hash;
        await bench.chain.rpc('anvil_dropTransaction', [lowest]);
        const dropped = await head();
        mining.resume();
        await until(async () => (await minedCount(signer)) > nonces[2], `round ${round} mined`, 60_000);
        mining.pause();
        const at = await minedAt(signer, nonces[0]);
        assert.ok(at - dropped <= 2n, `round ${round}: dropped after block ${dropped}, mined in ${at}`);
        // anvil drops the transactions queued behind the dropped one too: they come back at the same head.
        const last = await minedAt(signer, nonces[2]);
        assert.ok(last - dropped <= 2n, `round ${round}: nonce ${nonces[2]} mined in ${last}, not a block per nonce`);
        const again = (await sends(proxy, signer)).filter((s) => s.nonce === nonces[0]);
        assert.equal(new Set(again.map((s) => s.hash)).size, 1, 'the same signed bytes again, not a replacement');
      }
    });
    assert.deepEqual(r.fillers, [], 'nothing to fill: the dropped transactions came back');
    const rebroadcasts = r.lines.filter(([msg]) => msg === 're-broadcast');
    assert.ok(rebroadcasts.length >= 3, `a re-broadcast line per drop: ${JSON.stringify(rebroadcasts)}`);
    for (const [, f] of rebroadcasts) {
      assert.equal(f.signer, r.signer.toLowerCase());
      assert.equal(f.destination, DESTINATION.name);
      assert.ok(
        typeof f.tx_hash === 'string' && typeof f.max_fee_per_gas === 'string' && f.message_id,
        'hash, fees, message',
      );
    }
    assert.ok(
      r.lines.some(([msg, f]) => msg === 'gap' && f.nonce === 0),
      'the gap is logged',
    );
    assert.equal(r.lines.filter(([msg]) => msg === 'broadcast').length, 9, 'one broadcast line per message');
    assert.ok(metric(r.worker, 'relayer_worker_rebroadcasts_total') >= 3);
    assert.ok(metric(r.worker, 'relayer_worker_gaps_healed_total') >= 3);
    assert.equal(metric(r.worker, 'relayer_worker_lowest_open_nonce_age_seconds'), 0, 'nothing open at the end');
  });

  test('"already known" then dropped: sent again within 2 blocks', async () => {
    await scenario('known-dropped.db', 2, 2, async ({ store, signer, messages, mining }) => {
      proxy.fault('already-known');
      await store.outbox.enqueue(messages);
      await inPool(signer, [0, 1]);
      assert.equal(proxy.pendingFaults(), 0, 'the first send was answered "already known"');
      const [known] = await sends(proxy, signer);
      await bench.chain.rpc('anvil_dropTransaction', [known.hash]);
      const dropped = await head();
      mining.resume();
      await until(async () => (await minedCount(signer)) >= 2, 'both mined', 60_000);
      const at = await minedAt(signer, known.nonce);
      assert.ok(at - dropped <= 2n, `dropped after block ${dropped}, mined in ${at}`);
    });
  });

  test('a first broadcast refused below sends that went through: the free nonce filled within 2 blocks', async () => {
    const r = await scenario('refused.db', 3, 3, async ({ store, signer, messages, mining }) => {
      // Refused at every send of the same bytes: certainly not sent, the nonce is free.
      proxy.refuseNonce(1, SAME_BYTES_SENDS);
      await store.outbox.enqueue(messages);
      await until(() => proxy.pendingFaults() === 0, 'the refusal served');
      await inPool(signer, [0, 2]);
      const refused = await head();
      mining.resume();
      await until(async () => (await minedCount(signer)) >= 3, 'nonces 0-2 mined', 60_000);
      const at = await minedAt(signer, 1);
      assert.ok(at - refused <= 2n, `refused at block ${refused}, nonce 1 mined in ${at}`);
    });
    // Nonce 1 went to a self-transfer (or to the refused message, had its retry come first).
    if (r.fillers.length > 0) {
      assert.deepEqual(r.fillers, [1]);
      assert.ok(r.lines.some(([msg, f]) => msg === 'gap filled' && f.nonce === 1));
      assert.equal(metric(r.worker, 'relayer_worker_gaps_healed_total{by="self-transfer"'), 1);
    }
  });

  test('a base fee above the cap, then the lowest dropped: nothing above the cap, filled within 2 blocks of the fee falling', async () => {
    await scenario('spike.db', 4, 2, async ({ store, signer, messages, mining }) => {
      await store.outbox.enqueue(messages);
      await inPool(signer, [0, 1]);
      // The next block's base fee above the cap (and above what the two offer): neither can be mined.
      await bench.chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${(CAP + GWEI).toString(16)}`]);
      await bench.chain.mineBlock();
      assert.equal(await minedCount(signer), 0, 'neither mined under the spike');
      // anvil evicts what cannot pay the base fee when it mines; what it kept is dropped now.
      const left = (await poolOf(bench, signer))['0'];
      if (left) await bench.chain.rpc('anvil_dropTransaction', [left.hash]);
      const spike = await head();
      mining.resume();
      await until(async () => (await minedCount(signer)) >= 1, 'nonce 0 mined', 60_000);
      const at = await minedAt(signer, 0);
      // The first block after the spike whose base fee is back under the cap.
      let under: bigint | undefined;
      for (let n = spike; n <= at && under === undefined; n++) {
        const block = await bench.chain.publicClient.getBlock({ blockNumber: n });
        if ((block.baseFeePerGas ?? 0n) <= CAP) under = n;
      }
      assert.ok(under !== undefined && under > spike, `mined only once the base fee fell under the cap (${under})`);
      assert.ok(at - under <= 2n, `base fee under the cap at block ${under}, nonce 0 mined in ${at}`);
    });
    for (const s of proxy.forwarded()) {
      const fee = parseTransaction(s as Hex).maxFeePerGas ?? 0n;
      assert.ok(fee <= CAP, `nothing signed above the cap: ${fee}`);
    }
  });
});
