/**
 * `npm run bench:delivery`: delivery throughput on a real chain (BENCHMARKS.md, "Delivery").
 *
 * One anvil node with the real Mailbox (domains 1 and 2, NoopIsm: NULL ISM metadata) and a
 * TestRecipient. Every message is dispatched on domain 1 first (automine), then anvil switches to
 * one block a second (evm_setIntervalMining 1, as `--block-time 1`). Each contender gets its own
 * fresh messages, offered at a fixed rate (default 20/s, 200 messages):
 * - `floor`: the chain's own floor, a minimal viem script: each message as it is offered is sent as
 *   `Mailbox.process('0x', message)` signed locally with the next nonce of one key (sequential
 *   nonces, a fixed gas limit, fees read once), never waiting for a receipt before the next send;
 *   delivered = the block holding it was seen (eth_blockNumber polled every 50 ms).
 * - `N worker(s)`: N real `relayer-worker` processes (bin/relayer-worker.ts, each its own key)
 *   with the DEFAULT configuration (the config file sets only the chains, the database and an
 *   ops port of 0), on one SQLite outbox into which the bench enqueues each message as it is
 *   offered (as relayer-server would); delivered = the outbox's delivered_at (what GET /relay tells).
 *
 * Prints, per contender: messages/s delivered (count / (last delivered - first offered)), the
 * ratio to the floor, enqueue->delivered p50/p99. Bounded: each contender stops after
 * BENCH_DELIVERY_TIMEOUT_S (default 120 s); what was not delivered by then is counted.
 *
 * BENCH_DELIVERY_DB=postgres puts the outbox on PostgreSQL (an embedded server, one database per
 * contender; the workers then wake on LISTEN/NOTIFY instead of SQLite's data_version).
 *
 * BENCH_DELIVERY_HOSTILE=N adds a contender: 1 worker given N hostile messages first (their
 * recipient's CCIP-read ISM names a gateway on loopback that accepts and never answers, allowed in
 * worker.ccipReadAllowOrigins), then the same offered load; its p50/p99 are of the others only,
 * and the ratio of its p50 to the plain 1 worker's is printed (docs/hostile-recipients.md#time-budget).
 *
 * BENCH_DELIVERY_CCIP=1 sends every contender's messages to a recipient whose ISM is a CCIP-read
 * ISM too (the same stand-in, which accepts any metadata), naming a loopback gateway that answers
 * at once: the honest CCIP-read traffic of a CCTP route, each message a gateway lookup.
 *
 * BENCH_DELIVERY_GAS=1 adds a contender: 1 worker under gasPaymentEnforcement onChainFeeQuoting,
 * its messages paid on Hyperlane's real InterchainGasPaymaster (bench/delivery-gas.ts); the ratios
 * of its msg/s and p50 to the plain 1 worker's are printed.
 *
 * BENCH_DELIVERY_FAULTS=1 adds a contender: 1 worker with its defaults behind a proxy that answers
 * 15 % of its eth_sendRawTransaction "already known" after forwarding, cuts 10 % after forwarding
 * and refuses 5 % without forwarding, while the signer's lowest pending transaction is dropped from
 * anvil's pool every BENCH_DELIVERY_DROP_EVERY_S seconds (default 3; bench/delivery-faults.ts); its
 * msg/s against the floor, and how many blocks each gap took to heal (p50, max). It comes with one
 * more contender, the same worker through the same proxy (its own process) faulting nothing: the
 * ratio of the two is what the faults cost, apart from the proxy's hop.
 *
 * Environment: BENCH_DELIVERY_COUNT (200), BENCH_DELIVERY_RATE (20 per second),
 * BENCH_DELIVERY_WORKERS (1,2), BENCH_DELIVERY_TIMEOUT_S (120), BENCH_DELIVERY_WORKER_CONFIG
 * (JSON merged into the worker section, to try a setting; the default run sets none),
 * BENCH_DELIVERY_LOG_DIR (unset: none; a folder: each worker's output, its info log lines, goes to
 * worker-ROUND-K.log there, for per-message timelines).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { createPublicClient, encodeFunctionData, http, type Hash, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { OutboxMessage } from '../lib/outbox/index.ts';
import { openSqliteStore, type SqliteStore } from '../lib/sqlite/index.ts';
import { DEFAULTS } from '../lib/config/parse.ts';
import { openPostgresStore } from '../lib/postgres/index.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../scripts/embedded-postgres.ts';
import { MAILBOX_ABI } from '../lib/worker/ism/metadata.ts';
import { bytesToHex } from '../lib/codec/hex.ts';
import { installExitCleanup } from '../test/helpers/harness/processes.ts';
import { devKey, startWorker, startWorkerBench, type WorkerBench } from '../test/helpers/chain/worker-chain.ts';
import { deployTestRecipient } from '../test/helpers/chain/isms.ts';
import { compiledContract } from '../test/helpers/chain/solidity.ts';
import { GAS, setUpGasMode, type GasMode } from './delivery-gas.ts';
import { setUpFaultMode, type FaultMode } from './delivery-faults.ts';
import { printTable, provenance } from './lib.ts';

const COUNT = Number(process.env.BENCH_DELIVERY_COUNT ?? 200);
const RATE = Number(process.env.BENCH_DELIVERY_RATE ?? 20);
const WORKERS = (process.env.BENCH_DELIVERY_WORKERS ?? '1,2').split(',').map(Number);
const TIMEOUT_MS = Number(process.env.BENCH_DELIVERY_TIMEOUT_S ?? 120) * 1000;
const POSTGRES = process.env.BENCH_DELIVERY_DB === 'postgres';
const HOSTILE = Number(process.env.BENCH_DELIVERY_HOSTILE ?? 0);
const CCIP = process.env.BENCH_DELIVERY_CCIP === '1';
const FAULTS = process.env.BENCH_DELIVERY_FAULTS === '1';
const LOG_DIR = process.env.BENCH_DELIVERY_LOG_DIR;
const WORKER_CONFIG = JSON.parse(process.env.BENCH_DELIVERY_WORKER_CONFIG ?? '{}') as Record<string, unknown>;

interface Result {
  name: string;
  offered: number;
  delivered: number;
  /** Messages per second: delivered / (last delivered - first offered). */
  rate: number;
  seconds: number;
  p50: number;
  p99: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function result(name: string, offered: number, spans: { offeredAt: number; deliveredAt: number }[]): Result {
  const latencies = spans.map((s) => s.deliveredAt - s.offeredAt).sort((a, b) => a - b);
  const first = Math.min(...spans.map((s) => s.offeredAt));
  const last = Math.max(...spans.map((s) => s.deliveredAt));
  const seconds = spans.length === 0 ? Number.NaN : (last - first) / 1000;
  return {
    name,
    offered,
    delivered: spans.length,
    rate: spans.length / seconds,
    seconds,
    p50: percentile(latencies, 50) / 1000,
    p99: percentile(latencies, 99) / 1000,
  };
}

/** Calls `offer(i)` for each message at its slot of the fixed rate (no drift: slot i at start + i/RATE). */
async function offerAtRate(count: number, offer: (i: number) => void): Promise<void> {
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    await sleep(start + (i * 1000) / RATE - performance.now());
    offer(i);
  }
}

/** The minimal sender: one key, sequential nonces, a fixed gas limit, blocks watched for its hashes. */
async function floor(bench: WorkerBench, messages: OutboxMessage[]): Promise<Result> {
  const client = createPublicClient({ transport: http(bench.anvil.rpcUrl) });
  const account = privateKeyToAccount(devKey(9));
  const chainId = bench.anvil.chainId;
  const calls = messages.map((m) =>
    encodeFunctionData({ abi: MAILBOX_ABI, functionName: 'process', args: ['0x', bytesToHex(m.raw) as Hex] }),
  );
  const estimate = await client.estimateGas({ account, to: bench.destination.mailbox, data: calls[0] });
  const gas = (estimate * 3n) / 2n;
  const fees = await client.estimateFeesPerGas();
  let nonce = await client.getTransactionCount({ address: account.address, blockTag: 'pending' });
  const open = new Map<string, number>();
  const spans: { offeredAt: number; deliveredAt: number }[] = [];
  let seen = await client.getBlockNumber({ cacheTime: 0 });
  const deadline = Date.now() + TIMEOUT_MS;
  let offering = true;
  const watcher = (async () => {
    while ((offering || open.size > 0) && Date.now() < deadline) {
      const head = await client.getBlockNumber({ cacheTime: 0 });
      for (let b = seen + 1n; b <= head; b++) {
        const block = await client.getBlock({ blockNumber: b });
        const now = Date.now();
        for (const hash of block.transactions) {
          const offeredAt = open.get(hash);
          if (offeredAt === undefined) continue;
          open.delete(hash);
          spans.push({ offeredAt, deliveredAt: now });
        }
      }
      seen = head;
      await sleep(50);
    }
  })();
  const sends: Promise<unknown>[] = [];
  await offerAtRate(messages.length, (i) => {
    const offeredAt = Date.now();
    const tx = {
      chainId,
      type: 'eip1559' as const,
      to: bench.destination.mailbox,
      data: calls[i],
      gas,
      nonce: nonce++,
    };
    sends.push(
      account
        .signTransaction({
          ...tx,
          maxFeePerGas: fees.maxFeePerGas * 2n,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        })
        .then(async (raw) => {
          const hash: Hash = await client.sendRawTransaction({ serializedTransaction: raw });
          open.set(hash, offeredAt);
        }),
    );
  });
  await Promise.all(sends);
  offering = false;
  await watcher;
  // Counted only if the Mailbox says delivered (a transaction in a block could have reverted).
  let processed = 0;
  for (const m of messages) {
    const at = await client.readContract({
      address: bench.destination.mailbox,
      abi: MAILBOX_ABI,
      functionName: 'processedAt',
      args: [m.id as Hex],
    });
    if (at !== 0) processed++;
  }
  if (processed !== spans.length)
    throw new Error(`the floor's transactions: ${spans.length} mined, ${processed} messages delivered`);
  return result('floor: minimal viem sender', messages.length, spans);
}

interface BenchOutbox {
  outbox: Pick<SqliteStore['outbox'], 'enqueue' | 'depth' | 'get'>;
  close(): Promise<void>;
}

/** A fresh outbox for one contender: a SQLite file, or a new database on the PostgreSQL server. */
async function freshOutbox(bench: WorkerBench, pgServer: EmbeddedPostgres | undefined, name: string) {
  if (!pgServer) {
    const db = join(bench.dir, `${name}.db`);
    return { db, store: (await openSqliteStore(db)) as BenchOutbox };
  }
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: pgServer.url() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name.replaceAll('-', '_')}`);
  await admin.end();
  const db = pgServer.url(name.replaceAll('-', '_'));
  // As an embedder opens it: a pool of its own and the package's store on it.
  const pool = new pg.Pool({ connectionString: db });
  const store = await openPostgresStore(pool, { relayApi: DEFAULTS.relayApi });
  const close = async () => {
    await store.close();
    await pool.end();
  };
  return { db, store: { outbox: store.outbox, close } as BenchOutbox };
}

async function workers(
  bench: WorkerBench,
  pgServer: EmbeddedPostgres | undefined,
  n: number,
  messages: OutboxMessage[],
  round: number,
  hostile?: { messages: OutboxMessage[]; origin: string },
  allowOrigins: string[] = [],
  gas?: GasMode,
  faults?: FaultMode,
  proxied = false,
): Promise<Result> {
  const { db, store } = await freshOutbox(bench, pgServer, `delivery-${n}-${round}`);
  const origins = [...allowOrigins, ...(hostile ? [hostile.origin] : [])];
  const allow = origins.length > 0 ? { ccipReadAllowOrigins: origins } : {};
  const section = { pollMs: undefined, ...allow, ...WORKER_CONFIG };
  const config = gas
    ? gas.writeConfig(db, section)
    : faults
      ? faults.writeConfig(db, section)
      : bench.writeConfig(db, section);
  // Keys 1..8 (9 is the floor's): a fresh pair of signers for each contender.
  const keys = Array.from({ length: n }, (_, k) => 1 + ((round * 2 + k) % 8));
  const procs = await Promise.all(keys.map((keyIndex) => startWorker(config, { keyIndex })));
  if (LOG_DIR)
    for (const [k, p] of procs.entries()) {
      const out = createWriteStream(join(LOG_DIR, `worker-${round}-${k}.log`));
      p.child.stdout?.pipe(out);
      p.child.stderr?.pipe(out);
    }
  try {
    faults?.startDrops(privateKeyToAccount(devKey(keys[0])).address);
    if (hostile) await store.outbox.enqueue(hostile.messages.map((m) => ({ ...m, enqueuedAt: Date.now() })));
    const enqueues: Promise<unknown>[] = [];
    await offerAtRate(messages.length, (i) => {
      enqueues.push(Promise.resolve(store.outbox.enqueue([{ ...messages[i], enqueuedAt: Date.now() }])));
    });
    await Promise.all(enqueues);
    faults?.endDrops();
    const deadline = Date.now() + TIMEOUT_MS;
    const done = async () => {
      if (!hostile) return (await store.outbox.depth()) === 0;
      // The hostile messages never finish: wait for the others only.
      for (const m of messages) if ((await store.outbox.get(m.id))?.status !== 'delivered') return false;
      return true;
    };
    while (Date.now() < deadline && !(await done())) await sleep(200);
    const spans: { offeredAt: number; deliveredAt: number }[] = [];
    for (const m of messages) {
      const r = await store.outbox.get(m.id);
      if (r?.status === 'delivered' && r.deliveredAt !== null)
        spans.push({ offeredAt: r.enqueuedAt, deliveredAt: r.deliveredAt });
    }
    if (gas) console.log(await gas.checked(store.outbox, messages));
    if (faults) {
      const { faults: f, heal } = await faults.stop();
      const p = (q: number) => heal.blocks[Math.min(heal.blocks.length - 1, Math.ceil(q * heal.blocks.length) - 1)];
      if (!proxied)
        console.log(
          `faults: ${f.sends} eth_sendRawTransaction, ${f.alreadyKnown} "already known" after forwarding, ${f.cut} cut after forwarding, ${f.refused} refused unforwarded; ` +
            `${heal.drops} lowest pending dropped, ${heal.healed} healed, in blocks p50 ${p(0.5) ?? '-'}, max ${heal.blocks.at(-1) ?? '-'}`,
        );
    }
    const settings = Object.keys(WORKER_CONFIG).length === 0 ? 'defaults' : JSON.stringify(WORKER_CONFIG);
    const on = pgServer ? ', PostgreSQL' : '';
    if (hostile) {
      const states = await Promise.all(hostile.messages.map((m) => store.outbox.get(m.id)));
      const by = new Map<string, number>();
      for (const r of states) by.set(r?.status ?? 'missing', (by.get(r?.status ?? 'missing') ?? 0) + 1);
      console.log(`hostile messages at the end: ${[...by].map(([k, v]) => `${v} ${k}`).join(', ')}`);
    }
    const with_ = hostile
      ? `, ${hostile.messages.length} hostile messages first`
      : gas
        ? `, onChainFeeQuoting (paid ${gas.paid} gas each on the IGP)`
        : proxied
          ? ', through the proxy, no faults'
          : faults
            ? ', faults at the proxy rates + drops'
            : '';
    return result(`${n} relayer-worker${n === 1 ? '' : 's'}, ${settings}${on}${with_}`, messages.length, spans);
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await store.close();
  }
}

let gateway: Server | undefined;
let answering: Server | undefined;

/** A gateway on loopback that answers every request at once with empty metadata. */
async function answeringAtOnce(): Promise<Server> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":"0x"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** A gateway on loopback that accepts every request and never answers. */
async function neverAnswering(): Promise<Server> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

async function main(): Promise<void> {
  installExitCleanup();
  console.log(`delivery benchmark: ${provenance('npm run bench:delivery')}`);
  console.log(
    `${COUNT} messages per contender offered at ${RATE}/s; anvil, 1 s blocks, real Mailbox, ${CCIP ? 'CCIP-read ISM (a gateway answering at once)' : 'NULL ISM'}` +
      (Object.keys(WORKER_CONFIG).length > 0 ? `; worker config ${JSON.stringify(WORKER_CONFIG)}` : ''),
  );
  const bench = await startWorkerBench();
  let cleanProxy: FaultMode | undefined;
  const pgServer = POSTGRES ? await startEmbeddedPostgres({ password: 'bench' }) : undefined;
  try {
    const rounds: {
      kind: 'floor' | 'workers';
      n?: number;
      hostile?: boolean;
      gas?: boolean;
      faults?: boolean;
      proxied?: boolean;
    }[] = [
      { kind: 'floor' },
      ...WORKERS.map((n) => ({ kind: 'workers' as const, n })),
      ...(HOSTILE > 0 ? [{ kind: 'workers' as const, n: 1, hostile: true }] : []),
      ...(GAS ? [{ kind: 'workers' as const, n: 1, gas: true }] : []),
      ...(FAULTS
        ? [
            { kind: 'workers' as const, n: 1, proxied: true },
            { kind: 'workers' as const, n: 1, faults: true },
          ]
        : []),
    ];
    // The messages' recipient: the TestRecipient behind the NULL ISM, or (BENCH_DELIVERY_CCIP) one
    // behind a CCIP-read ISM whose gateway answers at once.
    let recipient: Hex | undefined;
    const honestOrigins: string[] = [];
    if (CCIP) {
      answering = await answeringAtOnce();
      const origin = `http://127.0.0.1:${(answering.address() as AddressInfo).port}`;
      const ismC = compiledContract('HangingCcipReadIsm');
      const ism = await bench.chain.deploy(ismC.abi, ismC.bytecode, [[`${origin}/{sender}/{data}.json`]]);
      recipient = await deployTestRecipient(bench.chain, ism);
      honestOrigins.push(origin);
    }
    const sets: OutboxMessage[][] = [];
    for (const _ of rounds) sets.push(await bench.dispatch(COUNT, recipient));
    let hostile: { messages: OutboxMessage[]; origin: string } | undefined;
    if (HOSTILE > 0) {
      gateway = await neverAnswering();
      const origin = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
      const ismC = compiledContract('HangingCcipReadIsm');
      const ism = await bench.chain.deploy(ismC.abi, ismC.bytecode, [[`${origin}/{sender}/{data}.json`]]);
      const recipient = await deployTestRecipient(bench.chain, ism);
      hostile = { messages: await bench.dispatch(HOSTILE, recipient), origin };
    }
    // Paid while anvil still automines.
    const gas = GAS ? await setUpGasMode(bench, sets[0][0]) : undefined;
    for (const [i, r] of rounds.entries()) if (r.gas && gas) sets[i] = await gas.pay(sets[i]);
    // From now on one block a second, as anvil --block-time 1 (dispatching 600 messages at one
    // block a second would take minutes).
    await bench.chain.rpc('evm_setAutomine', [false]);
    await bench.chain.rpc('evm_setIntervalMining', [1]);
    const faultMode = FAULTS ? await setUpFaultMode(bench) : undefined;
    cleanProxy = FAULTS ? await setUpFaultMode(bench, false) : undefined;
    const results: Result[] = [];
    for (const [i, r] of rounds.entries()) {
      const res =
        r.kind === 'floor'
          ? await floor(bench, sets[i])
          : await workers(
              bench,
              pgServer,
              r.n ?? 1,
              sets[i],
              i,
              r.hostile ? hostile : undefined,
              honestOrigins,
              r.gas ? gas : undefined,
              r.faults ? faultMode : r.proxied ? cleanProxy : undefined,
              r.proxied,
            );
      console.log(
        `${res.name}: ${res.delivered}/${res.offered} delivered in ${res.seconds.toFixed(1)} s, ` +
          `${res.rate.toFixed(2)} msg/s, p50 ${res.p50.toFixed(2)} s, p99 ${res.p99.toFixed(2)} s`,
      );
      results.push(res);
    }
    const floorRate = results[0].rate;
    if (HOSTILE > 0) {
      const plain = results.find((_r, i) => rounds[i].kind === 'workers' && rounds[i].n === 1 && !rounds[i].hostile);
      const withHostile = results[results.length - 1];
      if (plain)
        console.log(
          `p50 with ${HOSTILE} hostile messages / without: ${(withHostile.p50 / plain.p50).toFixed(2)}x (target at most 2x)`,
        );
    }
    const plainOne = results.find(
      (_r, i) =>
        rounds[i].kind === 'workers' &&
        rounds[i].n === 1 &&
        !rounds[i].hostile &&
        !rounds[i].gas &&
        !rounds[i].faults &&
        !rounds[i].proxied,
    );
    const paid = results.find((_r, i) => rounds[i].gas);
    const viaProxy = results.find((_r, i) => rounds[i].proxied);
    const faulted = results.find((_r, i) => rounds[i].faults);
    if (viaProxy && faulted)
      console.log(
        `faults + drops / the same proxy without faults: msg/s ${(faulted.rate / viaProxy.rate).toFixed(2)}x; ` +
          `the proxy without faults / 1 worker direct: ${plainOne ? (viaProxy.rate / plainOne.rate).toFixed(2) : '-'}x`,
      );
    if (plainOne && paid)
      console.log(
        `onChainFeeQuoting / plain 1 worker: msg/s ${(paid.rate / plainOne.rate).toFixed(2)}x, p50 ${(paid.p50 / plainOne.p50).toFixed(2)}x`,
      );
    console.log('');
    printTable(
      ['contender', 'delivered', 'msg/s', 'ratio to floor', 'p50 s', 'p99 s'],
      results.map((r) => [
        r.name,
        `${r.delivered}/${r.offered}`,
        r.rate.toFixed(2),
        `${(r.rate / floorRate).toFixed(2)}x`,
        r.p50.toFixed(2),
        r.p99.toFixed(2),
      ]),
    );
  } finally {
    gateway?.closeAllConnections();
    gateway?.close();
    answering?.close();
    await cleanProxy?.stop();
    await bench.stop();
    await pgServer?.remove();
  }
  console.log(`load average at the end: ${provenance('npm run bench:delivery').split('load average ')[1]}`);
}

await main();
