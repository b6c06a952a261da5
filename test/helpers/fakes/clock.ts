/** The fake clock lives in the package's test tooling (lib/testing/clock.ts, `relayer-api/testing`). */
export * from '../../../lib/testing/clock.ts';

/** The instant the tests' fake clocks start at (`createFakeClock(T0)`): 2026-11-25 12:00 UTC. */
export const T0 = Date.UTC(2026, 10, 25, 12, 0, 0);
