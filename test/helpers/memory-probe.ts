/**
 * Preloaded into relayer-server (`node --expose-gc --import`) by scripts/soak.ts: every
 * `RELAYER_PROBE_MS` (default 5 000) it forces a full garbage collection and writes one stderr line
 * `{"probe":"memory","heapUsed":…,"rss":…}`. The heap left after a full collection is what the
 * process really holds, so a leak shows as a rising series, whatever the collector's mood.
 */
const every = Number(process.env.RELAYER_PROBE_MS ?? 5_000);
const gc = (globalThis as { gc?: () => void }).gc;

setInterval(() => {
  gc?.();
  const { heapUsed, heapTotal, rss, external, arrayBuffers } = process.memoryUsage();
  process.stderr.write(JSON.stringify({ probe: 'memory', gc: gc !== undefined, heapUsed, heapTotal, rss, external, arrayBuffers }) + '\n');
}, every).unref();
