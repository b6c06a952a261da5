/**
 * BENCH_DELIVERY_FAULTS=1 (bench/delivery.ts): one more contender, 1 relayer-worker with its
 * defaults behind a JSON-RPC proxy that misbehaves at fixed rates on `eth_sendRawTransaction`, as a
 * flaky provider does (docs/transactions.md#transactions):
 * - 15 %: forwarded to the node, then answered `already known` (an error) instead of the hash;
 * - 10 %: forwarded, then the connection is cut before the answer;
 * - 5 %: refused (a JSON-RPC error) without being forwarded;
 * and, while the load is offered, every BENCH_DELIVERY_DROP_EVERY_S seconds (default 3) when no
 * earlier gap is open, the signer's lowest pending transaction is removed from anvil's pool with `anvil_dropTransaction` (a node restart, a load
 * balancer switching nodes, txpool eviction). Each drop opens a gap; it is healed once the node
 * holds a transaction at that nonce again, or has mined one there. Heal times are in blocks: the
 * head when healed minus the head at the drop.
 *
 * The draws come from a seeded generator (BENCH_DELIVERY_SEED, default 1), so two runs fault the
 * same share of sends; which sends depends on their order. BENCH_DELIVERY_FAULT_SCALE (default 1)
 * multiplies the three rates, and BENCH_DELIVERY_DROP_EVERY_S=0 makes no drops: 0 and 0 measure the
 * proxy alone. With BENCH_DELIVERY_LOG_DIR, every request through the proxy is written to
 * proxy-faults.log (proxy-clean.log: the proxy without faults) there (method, start and duration
 * in ms, the fault applied), for timelines.
 *
 * The proxy runs in a child process of its own (BENCH_DELIVERY_PROXY=inline: in the bench's
 * process, as before), and the same proxy faulting nothing is a contender too: the fair floor for
 * what the faults cost is the same worker through the same hop without them.
 */
import { fork } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerBench } from '../test/helpers/chain/worker-chain.ts';
import { mulberry32 } from '../test/helpers/fixtures/random.ts';

const SCALE = Number(process.env.BENCH_DELIVERY_FAULT_SCALE ?? 1);
export const FAULT_RATES = { alreadyKnown: 0.15 * SCALE, cut: 0.1 * SCALE, refused: 0.05 * SCALE } as const;
const DROP_EVERY_MS = Number(process.env.BENCH_DELIVERY_DROP_EVERY_S ?? 3) * 1000;
const LOG_DIR = process.env.BENCH_DELIVERY_LOG_DIR;
/** BENCH_DELIVERY_PROXY=inline runs the proxy in the bench's own process, as before (for an A/B). */
const INLINE = process.env.BENCH_DELIVERY_PROXY === 'inline';
const CHILD = 'lying-proxy-child';

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export interface FaultCounts {
  sends: number;
  alreadyKnown: number;
  cut: number;
  refused: number;
}

export interface HealSummary {
  drops: number;
  healed: number;
  /** Blocks from the drop to the heal, of the healed ones, sorted. */
  blocks: number[];
}

export interface FaultMode {
  /** The bench's config with every chain's RPC URL pointed at the proxy. */
  writeConfig(db: string, section: Record<string, unknown>): string;
  /** Starts the drops of `signer`'s lowest pending transaction (one gap open at a time). */
  startDrops(signer: string): void;
  /** No more drops (the offered load has been enqueued); the gaps still open are watched until stop(). */
  endDrops(): void;
  /** Stops the drops and says how the gaps healed, and what the proxy did. */
  stop(): Promise<{ faults: FaultCounts; heal: HealSummary }>;
}

interface Rates {
  alreadyKnown: number;
  cut: number;
  refused: number;
}

/** The lying proxy itself, in this process: forwards to `target`, faulting eth_sendRawTransaction at `rates`. */
async function startProxy(
  target: string,
  rates: Rates,
  seed: number,
  logPath: string | undefined,
): Promise<{ port: number; faults: FaultCounts; close(): void }> {
  const random = mulberry32(seed);
  const faults: FaultCounts = { sends: 0, alreadyKnown: 0, cut: 0, refused: 0 };
  const forward = (text: string) =>
    fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
  const log = logPath ? createWriteStream(logPath) : undefined;
  const server: Server = createServer(async (req, res) => {
    const start = Date.now();
    let fault = '';
    let call: { id?: unknown; method?: unknown } | undefined;
    if (log) res.once('close', () => log.write(`${start} ${Date.now() - start} ${String(call?.method)} ${fault}\n`));
    try {
      const text = await body(req);
      try {
        const parsed = JSON.parse(text);
        if (!Array.isArray(parsed)) call = parsed;
      } catch {}
      if (call?.method === 'eth_sendRawTransaction') {
        faults.sends++;
        const r = random();
        const error = (message: string) =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: call?.id, error: { code: -32000, message } }));
        if (r < rates.refused) {
          faults.refused++;
          fault = 'refused';
          return error('transaction refused by the proxy');
        }
        if (r < rates.refused + rates.cut) {
          faults.cut++;
          fault = 'cut';
          await (await forward(text)).text();
          res.socket?.destroy();
          return;
        }
        if (r < rates.refused + rates.cut + rates.alreadyKnown) {
          faults.alreadyKnown++;
          fault = 'already-known';
          await (await forward(text)).text();
          return error('already known');
        }
      }
      const upstream = await forward(text);
      res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
    } catch {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    faults,
    close() {
      server.closeAllConnections();
      server.close();
      log?.end();
    },
  };
}

/**
 * The proxy in a child process of its own (the default), so that it does not share an event loop
 * with the bench's offering, polling and drops: on a loaded machine a shared loop delays every
 * request of the worker through it. The child answers 'stop' with its counts and exits.
 */
async function startProxyChild(
  target: string,
  rates: Rates,
  seed: number,
  logPath: string | undefined,
): Promise<{ port: number; stop(): Promise<FaultCounts> }> {
  const child = fork(
    fileURLToPath(import.meta.url),
    [CHILD, target, JSON.stringify(rates), String(seed), logPath ?? ''],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the proxy child exited with ${code}`)));
    child.once('message', (m: { port: number }) => resolve(m.port));
  });
  return {
    port,
    stop: () =>
      new Promise<FaultCounts>((resolve) => {
        child.once('message', (m: { faults: FaultCounts }) => resolve(m.faults));
        child.send('stop');
      }),
  };
}

if (process.argv[2] === CHILD) {
  const [target, rates, seed, logPath] = process.argv.slice(3);
  const proxy = await startProxy(target, JSON.parse(rates), Number(seed), logPath || undefined);
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m) => {
    if (m !== 'stop') return;
    proxy.close();
    process.send?.({ faults: proxy.faults }, () => process.disconnect());
  });
  process.send?.({ port: proxy.port });
}

/**
 * A proxy in front of the bench's anvil; `faulty` false: the same proxy (its own process, the
 * same hop) faulting nothing and dropping nothing, the fair floor for what the faults cost.
 */
export async function setUpFaultMode(
  bench: WorkerBench,
  faulty = true,
  seed = Number(process.env.BENCH_DELIVERY_SEED ?? 1),
): Promise<FaultMode> {
  const rates = faulty ? FAULT_RATES : { alreadyKnown: 0, cut: 0, refused: 0 };
  const dropEveryMs = faulty ? DROP_EVERY_MS : 0;
  const target = bench.anvil.rpcUrl;
  const logPath = LOG_DIR ? join(LOG_DIR, `proxy-${faulty ? 'faults' : 'clean'}.log`) : undefined;
  let faults: FaultCounts | undefined;
  let stopProxy: () => Promise<FaultCounts>;
  let port: number;
  if (INLINE) {
    const proxy = await startProxy(target, rates, seed, logPath);
    port = proxy.port;
    stopProxy = async () => (proxy.close(), { ...proxy.faults });
  } else {
    const proxy = await startProxyChild(target, rates, seed, logPath);
    port = proxy.port;
    stopProxy = proxy.stop;
  }
  const proxyUrl = `http://127.0.0.1:${port}`;

  const open = new Map<number, bigint>(); // dropped nonce -> head at the drop
  const heal: HealSummary = { drops: 0, healed: 0, blocks: [] };
  let timer: ReturnType<typeof setInterval> | undefined;
  let watcher: Promise<void> | undefined;
  let stopped = false;

  async function pool(signer: string): Promise<Map<number, string>> {
    const content = (await bench.chain.rpc('txpool_content')) as {
      pending: Record<string, Record<string, { hash: string }>>;
      queued: Record<string, Record<string, { hash: string }>>;
    };
    const out = new Map<number, string>();
    for (const part of [content.pending, content.queued])
      for (const [from, txs] of Object.entries(part ?? {}))
        if (from.toLowerCase() === signer) for (const [n, tx] of Object.entries(txs)) out.set(Number(n), tx.hash);
    return out;
  }

  async function drop(signer: string): Promise<void> {
    const held = await pool(signer);
    const lowest = Math.min(...held.keys());
    // One gap at a time: a drop while another is open measures nothing more.
    if (!Number.isFinite(lowest) || open.size > 0) return;
    const head = await bench.chain.publicClient.getBlockNumber({ cacheTime: 0 });
    await bench.chain.rpc('anvil_dropTransaction', [held.get(lowest)]);
    open.set(lowest, head);
    heal.drops++;
  }

  async function watch(signer: string): Promise<void> {
    while (!stopped) {
      if (open.size > 0) {
        const [head, mined, held] = await Promise.all([
          bench.chain.publicClient.getBlockNumber({ cacheTime: 0 }),
          bench.chain.publicClient.getTransactionCount({ address: signer as `0x${string}`, blockTag: 'latest' }),
          pool(signer),
        ]);
        for (const [nonce, at] of open) {
          if (nonce < mined || held.has(nonce)) {
            open.delete(nonce);
            heal.healed++;
            heal.blocks.push(Number(head - at));
          }
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  return {
    writeConfig(db, section) {
      const path = bench.writeConfig(db, section);
      const config = JSON.parse(readFileSync(path, 'utf8'));
      for (const chain of Object.values(config.chains) as { rpcUrls: unknown }[]) chain.rpcUrls = [{ http: proxyUrl }];
      writeFileSync(path, JSON.stringify(config));
      return path;
    },
    startDrops(signer) {
      const s = signer.toLowerCase();
      if (dropEveryMs > 0) timer = setInterval(() => void drop(s).catch(() => {}), dropEveryMs);
      watcher = watch(s);
    },
    endDrops() {
      clearInterval(timer);
    },
    async stop() {
      clearInterval(timer);
      stopped = true;
      await watcher;
      faults ??= await stopProxy();
      heal.blocks.sort((a, b) => a - b);
      return { faults, heal };
    },
  };
}
