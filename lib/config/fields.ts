/**
 * Readers for configuration values (docs/design.md#configuration), shared by the loader
 * (lib/config/parse.ts) and the MatchingList grammar (lib/relay/policy.ts). Each takes a value and its dotted
 * key path and returns the normalised value or throws a ConfigError naming that key.
 */
import { ConfigError } from '../errors/classes.ts';
import { hasValidChecksum, isHexOfLength, isPlainObject } from '../codec/hex.ts';

export type Obj = Record<string, unknown>;

export function join(parent: string, child: string): string {
  return parent === '' ? child : `${parent}.${child}`;
}

export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/**
 * A key refused where only `allowed` may be (docs/configuration.md#the-configuration-file): the
 * message names the nearest allowed key or lists them all; test/unit/config/schema.test.ts reads
 * `allowed` to hold docs/config.schema.json to the parser.
 */
export class UnknownKeyError extends ConfigError {
  readonly allowed: readonly string[];
  constructor(key: string, allowed: readonly string[], problem: string) {
    super(key, problem);
    this.allowed = allowed;
  }
}

/** Edit distance of two strings: insertions, deletions, substitutions and swaps of neighbours count one each. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0].push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2][j - 2] + 1);
      rows[i].push(d);
    }
  }
  return rows[a.length][b.length];
}

/**
 * The candidate `input` most likely meant: the nearest by edit distance ignoring case, when it is
 * near enough to be a typo (at most a third of the input's length, between 1 and 3 edits).
 */
export function nearest(input: string, candidates: readonly string[]): string | undefined {
  if (input.length > 128) return undefined;
  const lower = input.toLowerCase();
  const limit = Math.max(1, Math.min(3, Math.floor(input.length / 3)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    const d = editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** `a, b, c`: at most `max` names, then how many in all. */
export function listNames(names: readonly string[], max = 12): string {
  const shown = names.slice(0, max).join(', ');
  return names.length > max ? `${shown}, … (${names.length} in all)` : shown;
}

/**
 * A JSON object; with `allowed`, a key outside it is refused (a typo must not be ignored) with the
 * key it is nearest to. `shape` is what the error says is expected instead of "an object"
 * (`{"http": URL}`).
 */
export function object(value: unknown, key: string, allowed?: readonly string[], shape?: string): Obj {
  if (!isPlainObject(value)) {
    const what = key === '' ? 'the configuration must be a JSON object' : `expected ${shape ?? 'an object'}`;
    throw new ConfigError(key, `${what}, got ${typeName(value)}`);
  }
  if (allowed === undefined) return value;
  for (const k of Object.keys(value)) {
    if (allowed.includes(k)) continue;
    const near = nearest(k, allowed);
    throw new UnknownKeyError(
      join(key, k),
      allowed,
      near === undefined
        ? `unknown key; the keys here: ${listNames(allowed, 40)}`
        : `unknown key; did you mean "${near}"?`,
    );
  }
  return value;
}

export function array(value: unknown, key: string): unknown[] {
  if (!Array.isArray(value)) throw new ConfigError(key, `expected an array, got ${typeName(value)}`);
  return value;
}

export function string(value: unknown, key: string): string {
  if (typeof value !== 'string') throw new ConfigError(key, `expected a string, got ${typeName(value)}`);
  return value;
}

export function nonEmptyString(value: unknown, key: string): string {
  const s = string(value, key);
  if (s.trim() === '') throw new ConfigError(key, 'must not be empty');
  return s;
}

export function integer(value: unknown, key: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new ConfigError(key, `expected an integer, got ${typeof value === 'number' ? value : typeName(value)}`);
  }
  if (value < min || value > max) throw new ConfigError(key, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function required(obj: Obj, name: string, key: string): unknown {
  if (!Object.hasOwn(obj, name)) throw new ConfigError(join(key, name), 'required');
  return obj[name];
}

/** 20-byte address, any case; mixed case must be a valid EIP-55 checksum. Returns lower-case. */
export function address20(value: unknown, key: string): string {
  const s = string(value, key);
  if (!s.startsWith('0x') || !isHexOfLength(s, 20))
    throw new ConfigError(key, `expected a 20-byte 0x address, got ${JSON.stringify(s)}`);
  if (!hasValidChecksum(s)) throw new ConfigError(key, `bad EIP-55 checksum in ${s}`);
  return s.toLowerCase();
}

/** 32-byte word (0x + 64 hex, any case), lower-case. */
export function word32(value: unknown, key: string, what: string): string {
  const s = string(value, key);
  if (!s.startsWith('0x') || !isHexOfLength(s, 32))
    throw new ConfigError(key, `expected ${what} (0x + 64 hex), got ${JSON.stringify(s)}`);
  return s.toLowerCase();
}

const UINT256_MAX = 2n ** 256n - 1n;

/**
 * A uint256 amount (wei, gas): a JSON integer, or a decimal string for values past 2^53 (no sign,
 * no leading zeros, no exponent), at least `min`. Hyperlane's agent config takes both forms.
 */
export function uint256(value: unknown, key: string, min = 0n): bigint {
  let amount: bigint;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new ConfigError(key, `expected an integer (a decimal string beyond 2^53), got ${value}`);
    }
    amount = BigInt(value);
  } else if (typeof value === 'string' && /^(0|[1-9][0-9]{0,77})$/.test(value)) {
    amount = BigInt(value);
  } else {
    const got = typeof value === 'string' ? JSON.stringify(value) : typeName(value);
    throw new ConfigError(key, `expected an integer or a decimal string, got ${got}`);
  }
  if (amount < min || amount > UINT256_MAX) throw new ConfigError(key, `must be between ${min} and 2^256 - 1`);
  return amount;
}
