/**
 * Status push and fairness (docs/api.md#status-events, #per-client-limits), three parts:
 *
 * - `latency`: delivery-to-browser. A page in headless Chromium (test/helpers/harness/browser.ts) follows a
 *   message with relayer-api/client's watch() (EventSource), or polls GET /relay/{id} every 3 s as
 *   UIs do today; a stand-in worker on its own store connection (SQLite: another connection to the
 *   file; PostgreSQL: another pool) marks it delivered at a random moment. Latency = the page's
 *   Date.now() when it sees `delivered` minus the worker's when its commit returned.
 * - `streams`: 10 000 idle streams open on one server (a child process): its memory per stream
 *   (after a full GC), and POST /relay's throughput with them open against without (rounds before
 *   and after, medians).
 * - `fairness`: nine clients at 50 requests/s each and one at 10x its own limit (1 000/s against
 *   `clientRateLimit` 100/s), told apart by X-Forwarded-For from a trusted proxy, against a global
 *   bucket of 1 000/s: the nine's success and p99 with the flood against alone, and with the flood
 *   but no per-client limit (what the limit prevents).
 *
 * Run alone: node bench/status-push.ts [latency|streams|fairness ...] (default: all three).
 */
import { fork } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import { createReadStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createRelayServer } from '../lib/http/server.ts';
import { openPostgresStore } from '../lib/postgres/index.ts';
import { openSqliteStore } from '../lib/sqlite/index.ts';
import type { RelayerStore } from '../lib/store/bundle.ts';
import { startEmbeddedPostgres } from '../scripts/embedded-postgres.ts';
import { launchBrowser } from '../test/helpers/harness/browser.ts';
import { testConfig } from '../test/helpers/fixtures/config.ts';
import { outboxMessage } from '../lib/testing/index.ts';
import { formatOps, median, printTable } from './lib.ts';
import { freshTxHash, POST_RELAY, relayOnce, rounds, startServer, UNLIMITED } from './load.ts';

const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load1 = () => loadavg()[0].toFixed(2);

// ---------------------------------------------------------------------------------------------
// Delivery-to-browser latency

async function pageServer(): Promise<{ origin: string; close(): void }> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const file = new URL(`..${path}`, import.meta.url);
    if (path === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><p>ui');
    if (!path.startsWith('/dist/lib/') || !existsSync(file)) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/javascript' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => server.close() };
}

async function latency(samples: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'relayer-push-'));
  const db = await startEmbeddedPostgres({ password: 'bench' });
  const pages = await pageServer();
  const browser = await launchBrowser();
  const rows: (string | number)[][] = [];
  try {
    for (const engine of ['SQLite', 'PostgreSQL'] as const) {
      let server: RelayerStore;
      let worker: RelayerStore;
      const closers: (() => Promise<unknown>)[] = [];
      if (engine === 'SQLite') {
        server = await openSqliteStore(join(dir, 'push.db'));
        worker = await openSqliteStore(join(dir, 'push.db'));
      } else {
        const pools = [new pg.Pool({ connectionString: db.url() }), new pg.Pool({ connectionString: db.url() })];
        const relayApi = testConfig().relayApi;
        server = await openPostgresStore(pools[0], { relayApi, schema: 'push' });
        worker = await openPostgresStore(pools[1], { relayApi, schema: 'push', migrate: false });
        closers.push(() => Promise.all(pools.map((p) => p.end())));
      }
      const relay = createRelayServer({
        config: testConfig({ server: { corsOrigins: [pages.origin] } }),
        store: server,
      });
      const { url } = await relay.listen(0, '127.0.0.1');
      const page = await browser.open(`${pages.origin}/`);
      await page.evaluate(`import('/dist/lib/client/index.js').then((m) => {
        window.client = m.createRelayClient({ baseUrl: ${JSON.stringify(url)} });
      })`);
      for (const how of ['watch() over EventSource', 'poll every 3 s'] as const) {
        const latencies: number[] = [];
        for (let i = 0; i < samples; i++) {
          const m = outboxMessage(Math.floor(Math.random() * 1e9));
          await worker.outbox.enqueue([m]);
          const watch =
            how === 'poll every 3 s'
              ? `client.watch(${JSON.stringify(m.id)}, { EventSource: null, pollIntervalMs: 3000 })`
              : `client.watch(${JSON.stringify(m.id)})`;
          await page.evaluate(`window.seenAt = (async () => {
            for await (const s of ${watch}) if (s.status === 'delivered') return Date.now();
          })(); 1`);
          // Delivered at a random moment once the page follows it (a poll's phase is random too).
          await pause(300 + Math.random() * 3_000);
          const [claimed] = await worker.outbox.claim(1, 60_000);
          await worker.outbox.markDelivered(claimed.id, {
            lease: claimed.lease,
            destinationTxHash: `0x${'de'.repeat(32)}`,
          });
          const written = Date.now();
          latencies.push((await page.evaluate<number>('window.seenAt')) - written);
        }
        rows.push([
          engine,
          how,
          samples,
          Math.round(median(latencies)),
          Math.round(percentile(latencies, 90)),
          Math.round(Math.max(...latencies)),
        ]);
        console.log(`  ${engine}, ${how}: p50 ${Math.round(median(latencies))} ms (load ${load1()})`);
      }
      await relay.close(1_000);
      await server.close();
      await worker.close();
      for (const close of closers) await close();
    }
  } finally {
    await browser.close();
    pages.close();
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log('\nDelivery to the browser: from the worker commit to the page seeing "delivered" (ms)');
  printTable(['store', 'page', 'samples', 'p50', 'p90', 'max'], rows);
}

// ---------------------------------------------------------------------------------------------
// 10 000 idle streams

function openStream(url: string, path: string): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const target = new URL(path, url);
    const req = request({ host: target.hostname, port: target.port, path: target.pathname, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      res.once('data', () => resolve(() => req.destroy()));
      res.resume();
    });
    req.on('error', reject);
    req.end();
  });
}

async function streams(count: number, roundCount: number, seconds: number): Promise<void> {
  // Two servers alike: one holds the streams, the other none; rounds alternate between them, so
  // the machine's other load falls on both.
  const options = {
    relayApi: UNLIMITED,
    // The read budget off too: every stream opens from this one address.
    server: { maxSubscribers: count + 10, maxSubscribersPerClient: count + 10, readRateLimit: null },
    log: false,
  };
  const held = await startServer('relay', options);
  const bare = await startServer('relay', options);
  try {
    const [{ message_id }] = await relayOnce(held.url, freshTxHash());
    await relayOnce(bare.url, freshTxHash());
    const base = await held.memory(true);
    const closers: (() => void)[] = [];
    for (let i = 0; i < count; i += 200) {
      closers.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(200, count - i) }, () => openStream(held.url, `/relay/${message_id}/events`)),
        )),
      );
    }
    const withStreams = await held.memory(true);
    const results = await rounds(
      [
        { name: 'streams', server: held, spec: POST_RELAY },
        { name: 'none', server: bare, spec: POST_RELAY },
      ],
      roundCount,
      seconds,
    );
    for (const [name, runs] of results)
      console.log(`  POST /relay, ${name}: ${runs.map((r) => formatOps(r.rps)).join(', ')} (load ${load1()})`);
    for (const close of closers) close();
    const rps = (name: string) => median(results.get(name)!.map((r) => r.rps));
    const perStream = (field: keyof NodeJS.MemoryUsage) => (withStreams[field] - base[field]) / count;
    console.log(`\n${count} idle status streams on one server (memory outbox), load ${load1()}`);
    printTable(
      ['', 'value'],
      [
        ['memory per stream: rss', `${(perStream('rss') / 1024).toFixed(1)} KiB`],
        ['memory per stream: JS heap', `${(perStream('heapUsed') / 1024).toFixed(1)} KiB`],
        ['POST /relay, the same server without streams (median)', formatOps(rps('none'))],
        [`POST /relay beside ${count} open streams (median)`, formatOps(rps('streams'))],
        ['ratio (goal >= 0.9)', (rps('streams') / rps('none')).toFixed(2)],
      ],
    );
  } finally {
    await held.stop();
    await bare.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Fairness

interface ClientRun {
  ok: number;
  total: number;
  p99: number;
}

/**
 * One client sending POST /relay at `rate` a second for `seconds`, evenly spaced (every 10 ms the
 * requests due so far go out; autocannon's overallRate sends each second's requests in one burst
 * at its start, which measured the burst, not the load), over a keep-alive agent. Latencies of
 * every request are kept.
 */
async function client(url: string, address: string, rate: number, seconds: number): Promise<ClientRun> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const target = new URL('/relay', url);
  const latencies: number[] = [];
  let ok = 0;
  let total = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify({ origin_chain: 'ethereum', tx_hash: freshTxHash() });
      const started = performance.now();
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          path: '/relay',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'x-forwarded-for': address, 'content-length': body.length },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            total++;
            if (res.statusCode === 200) ok++;
            latencies.push(performance.now() - started);
            resolve();
          });
        },
      );
      req.on('error', () => {
        total++;
        resolve();
      });
      req.end(body);
    });
  const pending: Promise<void>[] = [];
  const begin = performance.now();
  let sent = 0;
  while (performance.now() - begin < seconds * 1_000) {
    const due = Math.floor(((performance.now() - begin) / 1_000) * rate);
    for (; sent < due; sent++) pending.push(one());
    await pause(10);
  }
  await Promise.all(pending);
  agent.destroy();
  return { ok, total, p99: Math.round(percentile(latencies, 99)) };
}

/** The flooder, in a process of its own: its load generator must not slow the nine's. */
function floodFromChild(url: string, address: string, rate: number, seconds: number): Promise<ClientRun> {
  const child = fork(fileURLToPath(import.meta.url), ['flood-child', url, address, String(rate), String(seconds)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m: ClientRun) => resolve(m));
    child.once('exit', (code) => code !== 0 && reject(new Error(`flood child exited with ${code}`)));
  });
}

async function fairness(seconds: number, repeats: number): Promise<void> {
  const global = { burst: 500, perMinute: 30_000 }; // 500 a second
  const perClient = { burst: 50, perMinute: 3_000 }; // 50 a second
  const server = { trustedProxies: ['127.0.0.0/8'] };
  const withLimit = await startServer('relay', {
    relayApi: { ...UNLIMITED, rateLimit: global, clientRateLimit: perClient },
    server,
    log: false,
  });
  const withoutLimit = await startServer('relay', {
    relayApi: { ...UNLIMITED, rateLimit: global },
    server,
    log: false,
  });
  const rows: (string | number)[][] = [];
  try {
    const scenario = async (name: string, url: string, flood: boolean) => {
      const nine = Array.from({ length: 9 }, (_, i) => client(url, `198.51.100.${i + 1}`, 40, seconds));
      const flooder = flood ? floodFromChild(url, '203.0.113.66', 500, seconds) : undefined;
      const runs = await Promise.all(nine);
      const f = await flooder;
      const ok = runs.reduce((n, r) => n + r.ok, 0);
      const total = runs.reduce((n, r) => n + r.total, 0);
      // The nine's p99 is the median of their nine p99s (one client's p99 is its few slowest
      // requests of the run: one stall of the machine moves it); the worst is shown beside it.
      const p99 = median(runs.map((r) => r.p99));
      const worst = Math.max(...runs.map((r) => r.p99));
      console.log(`  ${name}: nine ${ok}/${total}, p99 ${p99} ms, worst ${worst} ms (load ${load1()})`);
      return { ok, total, p99, worst, flooder: f };
    };
    await client(withLimit.url, '192.0.2.1', 200, 1); // warm-up
    await client(withoutLimit.url, '192.0.2.1', 200, 1);
    // The three runs alternate, `repeats` times; each row gives the nine's total success and the
    // median over the repeats of their worst p99.
    const names = [
      'nine clients alone',
      'nine + one at 10x, clientRateLimit 50/s',
      'nine + one at 10x, no clientRateLimit',
    ];
    const runs = new Map<string, Awaited<ReturnType<typeof scenario>>[]>(names.map((n) => [n, []]));
    for (let r = 0; r < repeats; r++) {
      runs.get(names[0])!.push(await scenario(names[0], withLimit.url, false));
      runs.get(names[1])!.push(await scenario(names[1], withLimit.url, true));
      runs.get(names[2])!.push(await scenario(names[2], withoutLimit.url, true));
    }
    const p99 = (name: string) => median(runs.get(name)!.map((x) => x.p99));
    for (const name of names) {
      const list = runs.get(name)!;
      const ok = list.reduce((n, x) => n + x.ok, 0);
      const total = list.reduce((n, x) => n + x.total, 0);
      const flood = list.filter((x) => x.flooder).map((x) => x.flooder!);
      rows.push([
        name,
        `${((100 * ok) / total).toFixed(2)} %`,
        `${p99(name)} (${list.map((x) => x.p99).join(', ')})`,
        `${median(list.map((x) => x.worst))} (${list.map((x) => x.worst).join(', ')})`,
        flood.length === 0 ? '' : `${flood.reduce((n, x) => n + x.ok, 0)} of ${flood.reduce((n, x) => n + x.total, 0)}`,
      ]);
    }
    console.log(
      `\nFairness: nine clients at 40/s, one at 500/s (10x its 50/s); global bucket 500/s; ${repeats} x ${seconds} s each (p99 with the flood / alone: ${(p99(names[1]) / p99(names[0])).toFixed(2)}, goal <= 1.5)`,
    );
    printTable(
      [
        'run',
        "the nine's success",
        'their p99, median (each run), ms',
        'the worst p99 of the nine, ms',
        "the flooder's 200s",
      ],
      rows,
    );
  } finally {
    await withLimit.stop();
    await withoutLimit.stop();
  }
}

export async function run(parts: string[] = ['latency', 'streams', 'fairness']): Promise<void> {
  if (parts.includes('latency')) await latency(12);
  if (parts.includes('streams')) await streams(10_000, 6, 2);
  if (parts.includes('fairness')) await fairness(6, 5);
}

if (import.meta.main) {
  const [part, ...args] = process.argv.slice(2);
  if (part === 'flood-child') {
    const [url, address, rate, seconds] = args;
    process.send!(await client(url, address, Number(rate), Number(seconds)));
    process.disconnect();
  } else await run(part === undefined ? undefined : [part, ...args]);
}
