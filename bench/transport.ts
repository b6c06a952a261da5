/**
 * POST /relay with the receipt fetched over real HTTP (loopback), against hand-written endpoints
 * that do nothing but that fetch. Four server processes: a JSON-RPC endpoint (`rpc` child, 3 KB
 * receipt per call, keep-alive) that every contender calls, and the contenders:
 * - ours as relayer-server runs it: the keep-alive node:http transport (lib/node/rpc-transport.ts);
 * - ours with the library's default, the global fetch (info);
 * - `fetch-peer`: node:http, parse the body, global fetch of the receipt, JSON.parse, answer;
 * - `agent-peer`: the same with node:http and a keep-alive Agent instead of fetch.
 * Ours does the whole relay besides (validation, receipt and log decoding, keccak, policy, dedup,
 * memory outbox, metrics, request log); the peers do only the fetch. autocannon, 50 connections,
 * rounds alternating between contenders, medians. On a 2-core machine three processes share the
 * cores during a run (autocannon, the contender, the RPC), the same for every contender.
 * Run alone: node bench/transport.ts
 */
import { loadavg } from 'node:os';
import { formatOps, printTable, type BenchRow } from './lib.ts';
import { allOk, POST_RELAY, relayOnce, rounds, startServer, statusText, summarize, UNLIMITED } from './load.ts';

export async function run(options: { rounds?: number; seconds?: number } = {}): Promise<BenchRow[]> {
  const count = options.rounds ?? 5;
  const seconds = options.seconds ?? 2;
  const rpc = await startServer('rpc');
  const ours = await startServer('relay', { relayApi: UNLIMITED, rpc: `${rpc.url}/v3/KEY` });
  const oursFetch = await startServer('relay', { relayApi: UNLIMITED, rpc: `${rpc.url}/v3/KEY`, transport: 'fetch' });
  const fetchPeer = await startServer('fetch-peer', { rpc: `${rpc.url}/v3/KEY` });
  const agentPeer = await startServer('agent-peer', { rpc: `${rpc.url}/v3/KEY` });
  const load0 = loadavg()[0];
  try {
    for (const server of [ours, oursFetch]) {
      const messages = await relayOnce(server.url, '0x' + '12'.repeat(32));
      if (messages.length !== 1) throw new Error(`POST /relay accepted ${messages.length} messages, not 1`);
    }
    const results = await rounds(
      [
        { name: 'ours (node:http keep-alive transport)', server: ours, spec: POST_RELAY },
        { name: 'ours, global fetch', server: oursFetch, spec: POST_RELAY },
        { name: 'peer: node:http + global fetch', server: fetchPeer, spec: POST_RELAY },
        { name: 'peer: node:http + keep-alive Agent', server: agentPeer, spec: POST_RELAY },
      ],
      count,
      seconds,
    );
    const s = new Map([...results].map(([name, r]) => [name, summarize(r)]));
    const load1 = loadavg()[0];
    const oursS = s.get('ours (node:http keep-alive transport)')!;
    const fetchS = s.get('peer: node:http + global fetch')!;
    const agentS = s.get('peer: node:http + keep-alive Agent')!;
    const oursFetchS = s.get('ours, global fetch')!;
    console.log(
      `\n## POST /relay, receipt over loopback HTTP: autocannon, 50 connections, ${count} rounds of ${seconds} s, medians (load average ${load0.toFixed(1)} -> ${load1.toFixed(1)})`,
    );
    printTable(
      ['server', 'req/s', 'vs fetch peer', 'CPU us/req', 'p50 ms', 'p99 ms', 'server CPU', 'statuses', 'errors'],
      [...s].map(([name, r]) => [
        name,
        formatOps(r.rps),
        `${(r.rps / fetchS.rps).toFixed(2)}x`,
        r.cpuPerRequest.toFixed(1),
        r.p50,
        r.p99,
        `${Math.round(r.serverCpu * 100)}%`,
        statusText(r.statuses),
        r.errors,
      ]),
    );
    const ok = allOk;
    return [
      {
        what: 'POST /relay, receipt over HTTP, vs node:http + fetch',
        ours: `${formatOps(oursS.rps)} req/s, p99 ${oursS.p99} ms`,
        peer: `${formatOps(fetchS.rps)} req/s, p99 ${fetchS.p99} ms`,
        ratio: oursS.rps / fetchS.rps,
        target: '>= 1.0x',
        met: ok(oursS) && ok(fetchS) && oursS.rps / fetchS.rps >= 1.0,
      },
      {
        what: 'same, vs node:http + keep-alive Agent',
        ours: `${formatOps(oursS.rps)} req/s`,
        peer: `${formatOps(agentS.rps)} req/s, p99 ${agentS.p99} ms`,
        ratio: oursS.rps / agentS.rps,
        target: 'info',
      },
      {
        what: '(info) ours with the global fetch, vs node:http + fetch',
        ours: `${formatOps(oursFetchS.rps)} req/s, p99 ${oursFetchS.p99} ms`,
        peer: `${formatOps(fetchS.rps)} req/s`,
        ratio: oursFetchS.rps / fetchS.rps,
        target: 'info',
      },
    ];
  } finally {
    await Promise.all([ours, oursFetch, fetchPeer, agentPeer, rpc].map((server) => server.stop()));
  }
}

if (import.meta.main) await run();
