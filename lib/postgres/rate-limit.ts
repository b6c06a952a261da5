/**
 * The global POST /relay token bucket shared by every replica (docs/design.md#rate-limit,
 * #replicas): one row, refilled and taken from in one UPDATE. PostgreSQL's row lock serialises
 * concurrent takes, and each UPDATE re-reads the row as the previous one left it, so N replicas
 * together pass at most `burst` requests plus the refill — the limit configured, not N times it.
 *
 * Same arithmetic as lib/relay/rate-limit.ts (tokens in 1/60 000ths, refill per ms = perMinute units),
 * in double precision; a clock that steps backwards neither drains nor refills the bucket.
 */
import type { Clock } from '../clock.ts';
import { checkBucket, refused, UNIT, type TakeResult } from '../relay/rate-limit.ts';
import { DATABASE_NOW_SQL, nowSql, run, type PgPool, type PgQueryResult } from './pool.ts';
import { InvalidArgumentError, OutOfRangeError } from '../errors/classes.ts';

export interface PostgresTokenBucketOptions {
  burst: number;
  perMinute: number;
  /** Row name, so several buckets can share the table. Default 'relay'. */
  name?: string;
  clock?: Clock;
}

export interface PostgresRateLimiter {
  take(): Promise<TakeResult>;
}

/** A finite number as an SQL numeric literal. */
export function num(value: number): string {
  if (!Number.isFinite(value)) throw new OutOfRangeError(`not a finite number: ${value}`);
  return String(value);
}

/**
 * The bucket's UPDATE for one take at SQL time `at` (a numeric expression), returning `taken` and
 * the `units` left; shared with the hot path (relay.ts), which runs it inside its CTE. `name` is
 * checked by the caller; every number is spliced as a literal (see num()). `join` adds a FROM
 * item whose value the UPDATE returns too: it is computed before the row is locked.
 */
export function bucketUpdate(
  s: string,
  name: string,
  burst: number,
  perMinute: number,
  at: string,
  join?: { from: string; returning: string },
): string {
  const refilled = bucketRefill(burst, perMinute, at);
  return `UPDATE ${s}.token_buckets SET
        units = ${refilled} - CASE WHEN ${refilled} >= ${UNIT} THEN ${UNIT} ELSE 0 END,
        taken = ${refilled} >= ${UNIT},
        updated_at = greatest(updated_at, ${at})
      ${join ? `FROM ${join.from} ` : ''}WHERE name = '${name}'
      RETURNING taken, units${join ? `, ${join.returning}` : ''}`;
}

/** The bucket row's units refilled up to SQL time `at`, from its columns `units` and `updated_at`. */
export function bucketRefill(burst: number, perMinute: number, at: string): string {
  return `least(${num(burst * UNIT)}::double precision, units + greatest(0, ${at} - updated_at) * ${num(perMinute)})`;
}

/** Creates the bucket row, full ($1 now, $2 name, $3 capacity in units); nothing if it exists. */
export function createBucketSql(s: string): string {
  return `
    INSERT INTO ${s}.token_buckets (name, units, updated_at) VALUES ($2, $3, ${nowSql(1)})
    ON CONFLICT (name) DO NOTHING`;
}

export function createPostgresTokenBucket(
  pool: PgPool,
  s: string,
  opts: PostgresTokenBucketOptions,
): PostgresRateLimiter {
  const { burst, perMinute, clock } = opts;
  const name = opts.name ?? 'relay';
  checkBucket(burst, perMinute);
  const capacity = burst * UNIT;

  if (!/^[a-z0-9_]{1,64}$/.test(name)) throw new InvalidArgumentError('name must be 1-64 of a-z, 0-9, _');

  // Every replica's take() goes through this one row, and a row lock is held until its
  // transaction commits. With synchronous_commit on, that is until the WAL reaches the disk: takes
  // would queue behind one fsync each. The bucket is not worth an fsync (a database crash can at
  // worst hand out again the tokens of its last few hundred milliseconds), so the UPDATE runs with
  // SET LOCAL synchronous_commit = off, in the same round trip: a query string of two statements
  // is one implicit transaction. Such a string cannot carry parameters, so the values are spliced
  // in as numeric literals (all finite numbers, checked above) and the validated name.
  const sql = (now: number | null) => {
    const at = now === null ? DATABASE_NOW_SQL : num(now);
    return `SET LOCAL synchronous_commit = off;
      ${bucketUpdate(s, name, burst, perMinute, at)}`;
  };
  const createSql = createBucketSql(s);

  async function update(now: number | null): Promise<{ taken: boolean; units: number }[]> {
    const result = (await run(pool, sql(now))) as unknown as
      | PgQueryResult<{ taken: boolean; units: number }>
      | PgQueryResult<never>[];
    // pg answers a multi-statement string with one result per statement; take the UPDATE's.
    return (Array.isArray(result) ? result[result.length - 1] : result).rows;
  }

  return {
    async take() {
      const now = clock?.now() ?? null;
      if (now !== null && !Number.isFinite(now)) throw new OutOfRangeError('the clock gave a non-finite time');
      let rows = await update(now);
      if (rows.length === 0) {
        // First take on this database: the bucket starts full.
        await run(pool, createSql, [now, name, capacity]);
        rows = await update(now);
      }
      const { taken, units } = rows[0];
      return taken ? { ok: true } : refused(units, perMinute);
    },
  };
}
