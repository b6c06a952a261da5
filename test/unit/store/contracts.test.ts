/**
 * The dedup, rate-limit and merkle contracts on every engine of test/helpers/harness/engines.ts that has
 * them: the per-process memory engines, SQLite, and PostgreSQL on a real server.
 * The outbox contract runs from test/process/outbox.test.ts.
 */
import { dedupContract } from '../../helpers/contracts/dedup.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { ENGINES, relayApiSettings } from '../../helpers/harness/engines.ts';
import { merkleContract } from '../../helpers/contracts/merkle.ts';
import { rateLimitContract } from '../../helpers/contracts/rate-limit.ts';

const WINDOW_MS = 300_000;
const CAPACITY = 20;

function relayApi(burst = 100, perMinute = 100) {
  return relayApiSettings({
    rateLimit: { burst, perMinute },
    dedupWindowSeconds: WINDOW_MS / 1000,
    dedupCapacity: CAPACITY,
    receiptTimeoutSeconds: 10,
  });
}

for (const engine of ENGINES) {
  merkleContract(engine.name, async () => {
    const opened = await engine.open(createFakeClock());
    return { merkle: opened.merkle, count: () => opened.merkleRowCount(), close: () => opened.close() };
  });
  // Only the engines with a dedup store and rate limiter of their own (SQLite uses the per-process ones).
  if (!engine.limits) continue;
  dedupContract(
    engine.name,
    { windowMs: WINDOW_MS, pendingMs: engine.dedupPendingMs(relayApi()), capacity: CAPACITY },
    async () => {
      const clock = createFakeClock();
      const opened = await engine.open(clock, relayApi());
      return { dedup: opened.dedup!, clock, close: () => opened.close() };
    },
  );
  rateLimitContract(engine.name, async (burst, perMinute) => {
    const clock = createFakeClock();
    const opened = await engine.open(clock, relayApi(burst, perMinute));
    return { limiter: opened.rateLimiter!, clock, close: () => opened.close() };
  });
}
