/**
 * Preloaded into relayer-server (`node --expose-gc --import`) by the load runs: every
 * `RELAYER_PROBE_MS` (default 5 000) it forces a full garbage collection and writes one stderr line
 * `{"probe":"memory","heapUsed":…,"rss":…,"loopDelayMaxMs":…}`. The heap left after a full
 * collection is what the process really holds, so a leak shows as a rising series whatever the
 * collector's mood; the event-loop delay shows whether the server itself ever stalled.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

const every = Number(process.env.RELAYER_PROBE_MS ?? 5_000);
const gc = (globalThis as { gc?: () => void }).gc;
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

setInterval(() => {
  // Read the loop delay before the forced collection, which would count in it.
  const loopDelayMaxMs = Math.round(loop.max / 1e6);
  const loopDelayP99Ms = Math.round(loop.percentile(99) / 1e6);
  loop.reset();
  gc?.();
  const { heapUsed, heapTotal, rss, external, arrayBuffers } = process.memoryUsage();
  process.stderr.write(
    JSON.stringify({
      probe: 'memory',
      gc: gc !== undefined,
      heapUsed,
      heapTotal,
      rss,
      external,
      arrayBuffers,
      loopDelayMaxMs,
      loopDelayP99Ms,
    }) + '\n',
  );
}, every).unref();
