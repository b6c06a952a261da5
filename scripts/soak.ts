#!/usr/bin/env node
/**
 * Soak run (RELIABILITY.md#4-load): 60 s of mixed requests at 100 concurrent connections against
 * relayer-server (SQLite file, fake JSON-RPC endpoint), with the server's RSS sampled every
 * second. Prints the figures recorded in RELIABILITY.md and exits 1 if any invariant broke:
 * an answer outside its kind's allowed outcomes (the only 429s allowed are rate_limited and
 * duplicate_tx), a transport error, a reservation left in the dedup cache, an acknowledged
 * message missing from the outbox, memory still growing in the second half, or an unclean stop.
 *
 * With --probe (the default) the server runs with test/helpers/harness/memory-probe.ts, which forces a
 * full collection every 5 s and reports the heap left: the leak indicator. --no-probe runs the
 * server untouched, for RSS figures as an operator would see them.
 *
 *   node scripts/soak.ts [--duration SECONDS] [--connections N] [--seed N] [--no-probe]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { gauge, LOAD_RELAY_API, runLoad, startLoadTarget } from '../test/helpers/harness/load.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    connections: { type: 'string', default: '100' },
    seed: { type: 'string', default: '20261123' },
    probe: { type: 'boolean', default: true },
  },
  allowNegative: true,
});
const durationMs = Number(values.duration) * 1000;
const connections = Number(values.connections);
const seed = Number(values.seed);

const MB = 2 ** 20;
const mb = (bytes: number | undefined) => (bytes === undefined ? 'n/a' : `${Math.round(bytes / MB)} MB`);

const dir = mkdtempSync(join(tmpdir(), 'relayer-soak-'));
const target = await startLoadTarget(dir, { probeMemory: values.probe });
const failures: string[] = [];
let code = 1;
try {
  await delay(500);
  const idle = target.rss();
  const samples: Array<{ t: number; rss: number }> = [];
  process.stdout.write(
    `soak: ${durationMs / 1000} s, ${connections} connections, seed ${seed}, server pid ${target.pid}, idle RSS ${mb(idle)}\n`,
  );
  const report = await runLoad({
    url: target.url,
    durationMs,
    connections,
    seed,
    sampleEveryMs: 1_000,
    onSample: (t) => {
      const rss = target.rss();
      if (rss === undefined) return;
      samples.push({ t, rss });
      if (samples.length % 10 === 0) process.stdout.write(`  t=${Math.round(t / 1000)} s RSS ${mb(rss)}\n`);
    },
  });

  // Let the last requests finish (the scrape itself is in flight), then read the server's state.
  let metrics = await target.metrics();
  for (let i = 0; i < 200 && gauge(metrics, 'hyperlane_relay_api_in_flight_requests') > 1; i++) {
    await delay(20);
    metrics = await target.metrics();
  }
  const dedup = gauge(metrics, 'hyperlane_relay_api_dedup_cache_size');
  const depth = gauge(metrics, 'hyperlane_relay_api_outbox_depth');
  await delay(5_000);
  const after = target.rss();

  const half = samples.filter((s) => s.t >= durationMs / 2).map((s) => s.rss);
  const firstHalf = samples.filter((s) => s.t < durationMs / 2).map((s) => s.rss);
  const peakFirst = firstHalf.length > 0 ? Math.max(...firstHalf) : undefined;
  const peakSecond = half.length > 0 ? Math.max(...half) : undefined;

  if (report.errors.length > 0) failures.push(`${report.errors.length} transport errors, first: ${report.errors[0]}`);
  if (report.unexpected.length > 0)
    failures.push(`${report.unexpected.length} unexpected answers, first: ${report.unexpected[0]}`);
  if (dedup !== report.committedPairs)
    failures.push(`dedup cache holds ${dedup} entries, ${report.committedPairs} pairs were answered 200`);
  if (depth !== report.messagesAcknowledged)
    failures.push(`outbox depth ${depth}, ${report.messagesAcknowledged} messages acknowledged`);
  if (peakFirst !== undefined && peakSecond !== undefined && peakSecond > peakFirst * 1.25 + 32 * MB) {
    failures.push(`RSS still growing: peak ${mb(peakFirst)} in the first half, ${mb(peakSecond)} in the second`);
  }
  // Heap after a full collection, from 10 s in (warmed up) to the end of the load.
  const live = target.probes.filter((p) => p.t >= 10_000 && p.t <= durationMs + 2_000);
  const early = live.slice(0, Math.max(1, Math.floor(live.length / 3))).map((p) => p.heapUsed);
  const late = live.slice(-Math.max(1, Math.floor(live.length / 3))).map((p) => p.heapUsed);
  if (values.probe && live.length >= 3 && Math.max(...late) > Math.min(...early) * 1.5 + 16 * MB) {
    failures.push(`live heap grew: ${mb(Math.min(...early))} early, ${mb(Math.max(...late))} late`);
  }

  const out = {
    durationMs: report.durationMs,
    connections,
    requests: report.requests,
    perSecond: report.perSecond,
    relayApi: LOAD_RELAY_API,
    committedPairs: report.committedPairs,
    messagesAcknowledged: report.messagesAcknowledged,
    dedupCacheAfter: dedup,
    outboxDepthAfter: depth,
    probe: values.probe,
    rss: { idle: mb(idle), peakFirstHalf: mb(peakFirst), peakSecondHalf: mb(peakSecond), fiveSecondsAfter: mb(after) },
    serverLoopDelayMaxMs: target.probes.map((p) => p.loopDelayMaxMs).join(' '),
    clientLoopDelayMaxMs: report.clientLoopDelayMaxMs,
    connectionsOpened: report.connectionsOpened,
    // t: heap used / heap total / external (Buffers) / RSS, in MB, right after a full collection.
    heapAfterFullGc: target.probes
      .map(
        (p) =>
          `${Math.round(p.t / 1000)}s:${[p.heapUsed, p.heapTotal, p.external, p.rss].map((v) => Math.round(v / MB)).join('/')}`,
      )
      .join(' '),
    rssTimeline: samples
      .filter((_, i) => i % 5 === 4)
      .map((s) => `${Math.round(s.t / 1000)}s:${Math.round(s.rss / MB)}`)
      .join(' '),
    errors: report.errors.length,
    unexpected: report.unexpected.length,
  };
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
  process.stdout.write('\n| kind | requests | outcomes | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n');
  for (const [kind, k] of Object.entries(report.kinds)) {
    const outcomes = Object.entries(k.outcomes)
      .map(([o, n]) => `${o}: ${n}`)
      .join(', ');
    process.stdout.write(`| ${kind} | ${k.count} | ${outcomes} | ${k.p50} | ${k.p99} | ${k.max} |\n`);
  }
  code = failures.length === 0 ? 0 : 1;
} finally {
  const stopped = await target.stop();
  if (stopped !== 0) failures.push(`the server did not stop cleanly (exit ${stopped})`);
  rmSync(dir, { recursive: true, force: true });
}
for (const f of failures) process.stderr.write(`soak: FAILED: ${f}\n`);
process.stdout.write(failures.length === 0 ? 'soak: all invariants held\n' : '');
process.exit(failures.length === 0 ? code : 1);
