/**
 * Requests per second over loopback, ours against a bare node:http server, with autocannon
 * (50 connections). Every server runs in its own child process (bench/server-child.ts) so the load
 * generator never shares an event loop with it; on a 2-core machine each side gets one core.
 * Rounds alternate between the contenders and the median round counts.
 * Run alone: node bench/http.ts
 */
import { formatOps, printTable, type BenchRow } from './lib.ts';
import {
  allOk,
  GET_UP,
  POST_RELAY,
  relayOnce,
  rounds,
  startServer,
  statusText,
  summarize,
  UNLIMITED,
  type ServerHandle,
  type Summary,
} from './load.ts';

async function checkAnswers(ours: ServerHandle, bare: ServerHandle): Promise<void> {
  for (const server of [ours, bare]) {
    const up = await fetch(`${server.url}/relay`);
    if (up.status !== 200 || (await up.text()) !== 'up') throw new Error('GET /relay did not answer up');
  }
  const messages = await relayOnce(ours.url);
  if (messages.length !== 1) throw new Error(`POST /relay accepted ${messages.length} messages, not 1`);
}

function pct(share: number): string {
  return `${Math.round(share * 100)}%`;
}

export async function run(options: { rounds?: number; seconds?: number } = {}): Promise<BenchRow[]> {
  const count = options.rounds ?? 5;
  const seconds = options.seconds ?? 2;
  const bare = await startServer('bare');
  const ours = await startServer('relay', { relayApi: UNLIMITED });
  const quiet = await startServer('relay', { relayApi: UNLIMITED, log: false });
  const durable = await startServer('relay', { relayApi: UNLIMITED, outbox: 'sqlite', distinctMessages: true });
  const limited = await startServer('relay', {});
  try {
    await checkAnswers(ours, bare);

    const get = await rounds(
      [
        { name: 'ours', server: ours, spec: GET_UP },
        { name: 'bare', server: bare, spec: GET_UP },
      ],
      count,
      seconds,
    );
    const post = await rounds(
      [
        { name: 'ours', server: ours, spec: POST_RELAY },
        { name: 'bare', server: bare, spec: POST_RELAY },
        { name: 'ours, no request log', server: quiet, spec: POST_RELAY },
        { name: 'ours, SQLite outbox', server: durable, spec: POST_RELAY },
        { name: 'ours, default rate limit', server: limited, spec: POST_RELAY },
      ],
      count,
      seconds,
    );

    const g = new Map([...get].map(([name, r]) => [name, summarize(r)]));
    const p = new Map([...post].map(([name, r]) => [name, summarize(r)]));
    const detail = (title: string, table: Map<string, Summary>, base: Summary) => {
      console.log(`\n## ${title}: autocannon, 50 connections, ${count} rounds of ${seconds} s, medians`);
      printTable(
        [
          'server',
          'req/s',
          'vs bare',
          'CPU us/req',
          'p50 ms',
          'p99 ms',
          'server CPU',
          'client CPU',
          'statuses',
          'errors',
        ],
        [...table].map(([name, s]) => [
          name,
          formatOps(s.rps),
          `${(s.rps / base.rps).toFixed(2)}x`,
          s.cpuPerRequest.toFixed(1),
          s.p50,
          s.p99,
          pct(s.serverCpu),
          pct(s.clientCpu),
          statusText(s.statuses),
          s.errors,
        ]),
      );
    };
    detail('GET /relay', g, g.get('bare')!);
    detail('POST /relay, instant in-process RPC, one message per tx', p, p.get('bare')!);

    const ok = allOk;
    const gOurs = g.get('ours')!;
    const gBare = g.get('bare')!;
    const pOurs = p.get('ours')!;
    const pBare = p.get('bare')!;
    const durableS = p.get('ours, SQLite outbox')!;
    const limitedS = p.get('ours, default rate limit')!;
    return [
      {
        what: 'GET /relay req/s',
        ours: `${formatOps(gOurs.rps)} req/s`,
        peer: `${formatOps(gBare.rps)} req/s (bare node:http)`,
        ratio: gOurs.rps / gBare.rps,
        target: '>= 0.9x',
        met: ok(gOurs) && gOurs.rps / gBare.rps >= 0.9,
      },
      {
        what: 'POST /relay req/s (memory outbox)',
        ours: `${formatOps(pOurs.rps)} req/s, p99 ${pOurs.p99} ms`,
        peer: `${formatOps(pBare.rps)} req/s, p99 ${pBare.p99} ms (bare JSON)`,
        ratio: pOurs.rps / pBare.rps,
        target: '>= 0.5x',
        met: ok(pOurs) && pOurs.rps / pBare.rps >= 0.5,
      },
      {
        what: 'POST /relay req/s (SQLite outbox, fsync)',
        ours: `${formatOps(durableS.rps)} req/s, p99 ${durableS.p99} ms`,
        peer: `${formatOps(pBare.rps)} req/s (bare JSON)`,
        ratio: durableS.rps / pBare.rps,
        target: 'info',
      },
      {
        what: 'POST /relay req/s (default limit: 429s)',
        ours: `${formatOps(limitedS.rps)} req/s, p99 ${limitedS.p99} ms`,
        peer: `${formatOps(pBare.rps)} req/s (bare JSON)`,
        ratio: limitedS.rps / pBare.rps,
        target: 'info',
      },
    ];
  } finally {
    await Promise.all([bare, ours, quiet, durable, limited].map((s) => s.stop()));
  }
}

if (import.meta.main) await run();
