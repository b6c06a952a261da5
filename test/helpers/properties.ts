/**
 * What the property-based tests (fast-check, fixed seed, bounded runs) share. Each property on an
 * input read from outside (the log decoder, the message parser, the receipt parser, request
 * validation, the config loader, the relay pipeline) lives in its module's test file and checks
 * that the code returns a correct value or its own typed error, never anything else; where a simple
 * independent model of the rule exists (viem's canonical ABI encoding, a DataView read, a regular
 * expression), acceptance is checked against that model exactly.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeAbiParameters, hexToBytes, toHex } from 'viem/utils';

const SEED = 0x7e1a_b1e;

/** How long a failing property may shrink its counterexample before it is reported as it stands. */
export const SHRINK_MS = 5_000;

/**
 * A fast-check plugin bounding shrinking, not the search: once a run has failed, the runs that
 * shrink its counterexample may go on for `ms`, then the property fails with the smallest
 * counterexample found so far (fast-check's own time limits also cut short a search that has found
 * nothing, which on a loaded machine would pass a property after fewer runs than asked). A
 * property that fails is thus reported in seconds with a counterexample (CONTRIBUTING.md#properties).
 */
export function shrinkTimeLimit<Ts>(ms: number, now: () => number = () => performance.now()): fc.Plugin<Ts> {
  return () => {
    let failedAt: number | undefined;
    const failed = <T>(out: T): T => {
      if (failedAt === undefined && out !== null && typeof out === 'object' && !fc.PreconditionFailure.isFailure(out))
        failedAt = now();
      return out;
    };
    return {
      decorateRun: (nestedRun) => (value) => {
        if (failedAt !== undefined && now() - failedAt > ms) return new fc.PreconditionFailure(true);
        const out = nestedRun(value);
        if (out !== null && typeof out === 'object' && 'then' in out) return out.then(failed);
        return failed(out);
      },
    };
  };
}

/** The bound every property carries: `{ ...BOUNDED, numRuns }` where the seed is left random. */
export const BOUNDED = { plugins: [shrinkTimeLimit(SHRINK_MS)] };
export const RUNS = { ...BOUNDED, numRuns: 300, seed: SEED };

/** Runs `fn`; a throw of one of `allowed` is returned as the error, anything else fails the property. */
export function outcome<T>(
  fn: () => T,
  ...allowed: Array<abstract new (...args: never[]) => Error>
): { ok: true; value: T } | { ok: false; error: Error } {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    if (allowed.some((type) => error instanceof type)) return { ok: false, error: error as Error };
    throw error;
  }
}

/** Counts accepted and refused inputs, so a property whose generator never reaches one side fails. */
export function tally() {
  let accepted = 0;
  let refused = 0;
  return {
    add(ok: boolean) {
      if (ok) accepted++;
      else refused++;
    },
    expectBoth(min: number) {
      assert.ok(
        accepted >= min && refused >= min,
        `generator reach: ${accepted} accepted, ${refused} refused (want >= ${min} each)`,
      );
    },
  };
}

export const bytes = (max: number) => fc.uint8Array({ maxLength: max, size: 'max' });
export const word = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => toHex(b));
export const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => toHex(b));
export const u32 = fc.integer({ min: 0, max: 0xffffffff });

/** Breaks a byte array a little: flip, truncate, extend, or overwrite a word. */
export const mutation = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.noBias(fc.nat()), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.noBias(fc.nat()) }),
  fc.record({ kind: fc.constant('extend' as const), extra: bytes(40) }),
  fc.record({
    kind: fc.constant('word' as const),
    at: fc.noBias(fc.nat()),
    value: fc.uint8Array({ minLength: 32, maxLength: 32 }),
  }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

export function mutate(data: Uint8Array, m: Mutation): Uint8Array {
  const out = data.slice();
  if (m.kind === 'flip') {
    if (out.length > 0) out[m.at % out.length] ^= 1 << m.bit;
    return out;
  }
  if (m.kind === 'truncate') return out.slice(0, out.length === 0 ? 0 : m.at % out.length);
  if (m.kind === 'extend') return Uint8Array.from([...out, ...m.extra]);
  const words = Math.floor(out.length / 32);
  if (words > 0) out.set(m.value, (m.at % words) * 32);
  return out;
}

/** The canonical ABI encoding of `bytes` (viem): what a real event's data field holds. */
export function canonicalBytesData(message: Uint8Array): Uint8Array {
  return hexToBytes(encodeAbiParameters([{ type: 'bytes' }], [toHex(message)]));
}
