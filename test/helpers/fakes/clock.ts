/** The fake clock lives in the package's test tooling (lib/testing/clock.ts, `relayer-api/testing`). */
export * from '../../../lib/testing/clock.ts';
