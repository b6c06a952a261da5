/**
 * POST /relay's hot path on PostgreSQL (docs/design.md, Storage; lib/store.ts RelayAdmission):
 * two round trips and one durable commit per accepted relay, where the separate stores take four
 * statements and three commits.
 *
 * 1. admit: the token bucket's UPDATE and the dedup reservation's INSERT in one statement (a CTE),
 *    committed with synchronous_commit = off. The capacity count joins it only near the capacity
 *    or once a second per replica (live-rows.ts). A reservation lost in a database crash only lets an
 *    identical request in again, whose messages the outbox keeps once (idempotent by id); tokens
 *    lost the same way were already not worth an fsync (rate-limit.ts). A refusal (rate limit,
 *    live reservation) is decided by this one statement; only a reservation refused for a row
 *    that committed after the statement's snapshot, or for capacity, asks once more why.
 * 2. complete: the outbox rows and the reservation's commit in one statement, durable (the 200
 *    promises the messages are stored).
 * Under concurrency the admits of several relays share one statement, and their completes another,
 * with one commit (coalesce.ts, relay-many.ts, docs/design.md#coalesced-statements).
 * The semantics are dedup.ts's and rate-limit.ts's, statement for statement; the contract suites
 * run the pipeline on both forms.
 *
 * Each is one named statement (pool.ts, prepared): a connection parses and plans it once. Step 1's
 * asynchronous commit is asked for inside the statement, by set_config('synchronous_commit', 'off',
 * true) (SET LOCAL's function form: it lasts until the statement's implicit transaction commits).
 */
import { systemClock, type Clock } from '../clock.ts';
import { createLiveRows, type LiveRows } from './live-rows.ts';
import type { RelayError } from '../errors.ts';
import { validateOutboxBatch, type OutboxMessage } from '../outbox/index.ts';
import { coalesce, DEFAULT_QUEUE_TIMEOUT_MS } from './coalesce.ts';
import { rateLimitedError, refused, UNIT } from '../rate-limit.ts';
import type { AdmittedRelay, RelayAdmission } from '../store.ts';
import { nowSql, prepared, run, type PgPool, type PgQueryConfig } from './pool.ts';
import { admitManySql, completeManySql } from './relay-many.ts';
import { dedupRefusal, dedupReleaseSql, pacedDedupSweep } from './dedup.ts';
import { outboxColumns, outboxInsertSql } from './outbox.ts';
import { duplicateTx } from '../dedup.ts';
import { bucketUpdate, createBucketSql, num } from './rate-limit.ts';
import { OutOfRangeError } from '../errors.ts';

export interface PostgresAdmissionOptions {
  bucket: { burst: number; perMinute: number; name?: string };
  dedup: { windowMs: number; pendingMs: number; capacity: number };
  clock?: Clock;
  /** The replica's estimate of live dedup rows, shared with the dedup store (default: its own). */
  liveRows?: LiveRows;
}

/**
 * How completes are carried together (coalesce.ts): two statements in flight before they wait,
 * then up to 64 relays or 640 rows in one. BENCHMARKS.md, "Coalesced completes", has the figures.
 */
const COMPLETE_BATCHES = { inFlight: 2, maxCalls: 64, maxWeight: 640 };
/** The same for admits that need not count the live rows: up to 64 keys, one per key. */
const ADMIT_BATCHES = { inFlight: 2, maxCalls: 64, maxWeight: 64 };

/** A relay's completing statement, waiting to be sent alone or with others. */
interface Completing {
  at: number | null;
  key: string;
  token: string;
  batch: readonly OutboxMessage[];
}

interface AdmitRow {
  taken: boolean;
  units: number;
  /** The live dedup rows counted, or null when this admit did not count. */
  live: number | null;
  token: string | null;
  live_until: number | null;
  now: number;
}

export function createPostgresAdmission(pool: PgPool, s: string, opts: PostgresAdmissionOptions): RelayAdmission {
  const { bucket, dedup, clock } = opts;
  const name = bucket.name ?? 'relay';
  const now = () => clock?.now() ?? null;
  const liveRows = opts.liveRows ?? createLiveRows(dedup.capacity, clock ?? systemClock);

  // $1 now (or null), $2 key. `counting`: the capacity check counts the live dedup rows
  // (live-rows.ts says when). The count is joined into the bucket's UPDATE so that it runs before
  // the bucket row is locked, which every relay of every replica waits for.
  const admitSql = (counting: boolean) => {
    const t = nowSql(1);
    const room = counting
      ? `room AS (SELECT count(*)::integer AS live FROM ${s}.dedup, async WHERE expires_at > ${t})`
      : 'room AS (SELECT NULL::integer AS live FROM async)';
    return prepared(`
      WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
      ${room},
      b AS (${bucketUpdate(s, name, bucket.burst, bucket.perMinute, t, { from: 'room', returning: 'room.live' })}),
      r AS (
        INSERT INTO ${s}.dedup AS d (key, token, committed, expires_at)
        SELECT $2::text, gen_random_uuid(), false, ${t} + ${num(dedup.pendingMs)}
        FROM b
        WHERE b.taken${counting ? ` AND b.live < ${num(dedup.capacity)}` : ''}
        ON CONFLICT (key) DO UPDATE SET token = excluded.token, committed = false, expires_at = excluded.expires_at
          WHERE d.expires_at <= ${t}
        RETURNING token
      )
      SELECT b.taken, b.units, b.live, r.token,
        CASE WHEN r.token IS NULL THEN (SELECT expires_at FROM ${s}.dedup WHERE key = $2::text AND expires_at > ${t}) END AS live_until,
        ${t} AS now
      FROM b LEFT JOIN r ON true`);
  };
  const [countingAdmit, bareAdmit] = [admitSql(true), admitSql(false)];
  // $1 now, $2 key, $3 token, $4 window; then the outbox columns as in outbox.ts's insert.
  const insertRows = outboxInsertSql(s, 5);
  const completeSql = prepared(`
    WITH ins AS (${insertRows})
    UPDATE ${s}.dedup SET committed = true, expires_at = ${nowSql(1)} + $4 WHERE key = $2 AND token = $3`);
  const completeMany = completeManySql(s, insertRows);
  const complete = coalesce<Completing, unknown>({
    ...COMPLETE_BATCHES,
    weight: (c) => c.batch.length,
    clock: clock ?? systemClock,
    queueTimeoutMs: DEFAULT_QUEUE_TIMEOUT_MS,
    one: (c) => run(pool, completeSql([c.at, c.key, c.token, dedup.windowMs, ...outboxColumns(c.batch)])),
    many: async (cs) => {
      const columns = [cs.map((c) => c.key), cs.map((c) => c.token), cs.map((c) => c.at), dedup.windowMs];
      await run(pool, completeMany([...columns, ...outboxColumns(cs.flatMap((c) => c.batch))]));
      return [];
    },
  });
  // As dedup.ts: the release, why a reservation was refused, and the paced sweep of expired rows.
  const releaseSql = dedupReleaseSql(s);
  const pacedSweep = pacedDedupSweep(pool, s, now);
  /** Beside the request (not in its round trips); reads ignore expired rows, so a failed sweep waits for the next. */
  const sweep = () => void pacedSweep().catch(() => {});

  const refusal = (key: string): Promise<RelayError> => dedupRefusal(pool, s, now(), key);

  /** `statement`'s rows; on a database without the bucket row, creates it full first (as rate-limit.ts). */
  const withBucket = async (at: number | null, statement: PgQueryConfig): Promise<AdmitRow[]> => {
    const { rows } = await run<AdmitRow>(pool, statement);
    if (rows.length > 0) return rows;
    await run(pool, createBucketSql(s), [at, name, bucket.burst * UNIT]);
    return (await run<AdmitRow>(pool, statement)).rows;
  };
  const admitOne = async (at: number | null, key: string, counting: boolean) =>
    (await withBucket(at, (counting ? countingAdmit : bareAdmit)([at, key])))[0];
  // Admits that need not count, coalesced as the completes are; a batch takes its latest reading
  // of the clock (with the database's clock, the statement's time, as alone).
  const admitManyStatement = admitManySql(s, name, bucket, dedup.pendingMs);
  const admitQueued = coalesce<{ at: number | null; key: string }, AdmitRow>({
    ...ADMIT_BATCHES,
    weight: () => 1,
    key: (a) => a.key,
    clock: clock ?? systemClock,
    queueTimeoutMs: DEFAULT_QUEUE_TIMEOUT_MS,
    one: (a) => admitOne(a.at, a.key, false),
    many: (as) => {
      const at = as.some((a) => a.at === null) ? null : Math.max(...as.map((a) => a.at as number));
      return withBucket(at, admitManyStatement([at, as.map((a) => a.key)]));
    },
  });

  return {
    async admit(key) {
      const at = now();
      if (at !== null && !Number.isFinite(at)) throw new OutOfRangeError('the clock gave a non-finite time');
      sweep();
      const counting = liveRows.mustCount();
      // Near the capacity (or for its periodic count) an admit counts the live rows: alone, exact.
      const row = counting ? await admitOne(at, key, true) : await admitQueued({ at, key });
      liveRows.record(row.live, row.token !== null);
      if (!row.taken) {
        const taken = refused(row.units, bucket.perMinute);
        throw rateLimitedError(taken.ok ? 1 : taken.retryAfterSeconds);
      }
      if (row.token === null) {
        if (row.live_until !== null) throw duplicateTx(row.live_until - row.now);
        // Refused for a row committed after this statement's snapshot, or for capacity: ask why.
        throw await refusal(key);
      }
      const token = row.token;
      let settled = false;
      const admitted: AdmittedRelay = {
        async complete(batch) {
          validateOutboxBatch(batch);
          if (settled) return;
          await complete({ at: now(), key, token, batch });
          // Settled only once stored: after a failed statement (rolled back whole) the pipeline's
          // release still frees the key, as dedup.ts's commit.
          settled = true;
        },
        async release() {
          if (settled) return;
          settled = true;
          await run(pool, releaseSql([key, token]));
        },
      };
      return admitted;
    },
  };
}
