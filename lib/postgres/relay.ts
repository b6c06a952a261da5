/**
 * POST /relay's hot path on PostgreSQL: admit and complete, two statements and one durable commit
 * per accepted relay (docs/design.md#postgresql; shared by concurrent relays: docs/replicas.md#coalesced-statements).
 */
import { systemClock, type Clock } from '../clock.ts';
import { RelayError } from '../errors/classes.ts';
import { validateOutboxBatch, type OutboxMessage } from '../outbox/index.ts';
import { coalesce, DEFAULT_QUEUE_TIMEOUT_MS } from './coalesce.ts';
import { rateLimitedError, refused, UNIT } from '../relay/rate-limit.ts';
import type { AdmittedRelay, RelayAdmission } from '../store/bundle.ts';
import { nowSql, prepared, run, type PgPool, type PgQueryConfig } from './pool.ts';
import { admitManySql, completeManySql, outboxWriteCtes } from './relay-many.ts';
import { dedupRefusal, dedupReleaseSql, dedupSweepSql, pacedDedupSweep } from './dedup.ts';
import { batchPaymentColumns } from './gas-payments.ts';
import { outboxColumns } from './outbox.ts';
import { duplicateTx } from '../relay/dedup.ts';
import { bucketUpdate, createBucketSql, num } from './rate-limit.ts';
import { OutOfRangeError } from '../errors/classes.ts';

export interface PostgresAdmissionOptions {
  bucket: { burst: number; perMinute: number; name?: string };
  dedup: { windowMs: number; pendingMs: number; capacity: number };
  clock?: Clock;
}

/**
 * How completes are carried together (coalesce.ts): two statements in flight before they wait,
 * then up to 64 relays or 640 rows in one. The figures:
 * BENCHMARKS.md, "How the PostgreSQL hot path got here".
 */
const COMPLETE_BATCHES = { inFlight: 2, maxCalls: 64, maxWeight: 640 };
/** The same for admits: up to 64 keys, one per key. */
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
  token: string | null;
  live_until: number | null;
  now: number;
}

export function createPostgresAdmission(pool: PgPool, s: string, opts: PostgresAdmissionOptions): RelayAdmission {
  const { bucket, dedup, clock } = opts;
  const name = bucket.name ?? 'relay';
  const now = () => clock?.now() ?? null;

  // $1 now (or null), $2 key. The capacity check reads the dedup row count, as the statement's
  // snapshot has it (racing admits may pass the capacity by their number, as in dedup.ts).
  const t = nowSql(1);
  const admitStatement = prepared(`
      WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
      room AS (SELECT n FROM ${s}.dedup_rows, async),
      b AS (${bucketUpdate(s, name, bucket.burst, bucket.perMinute, t, { from: 'room', returning: 'room.n' })}),
      r AS (
        INSERT INTO ${s}.dedup AS d (key, token, committed, expires_at)
        SELECT $2::text, gen_random_uuid(), false, ${t} + ${num(dedup.pendingMs)}
        FROM b
        WHERE b.taken AND b.n < ${num(dedup.capacity)}
        ON CONFLICT (key) DO UPDATE SET token = excluded.token, committed = false, expires_at = excluded.expires_at
          WHERE d.expires_at <= ${t}
        RETURNING token
      )
      SELECT b.taken, b.units, r.token,
        CASE WHEN r.token IS NULL THEN (SELECT expires_at FROM ${s}.dedup WHERE key = $2::text AND expires_at > ${t}) END AS live_until,
        ${t} AS now
      FROM b LEFT JOIN r ON true`);
  // $1 now, $2 key, $3 token, $4 window; then the outbox columns as in outbox.ts's insert.
  const writeRows = outboxWriteCtes(s, 5);
  const completeSql = prepared(`
    WITH ${writeRows}
    UPDATE ${s}.dedup SET committed = true, expires_at = ${nowSql(1)} + $4 WHERE key = $2 AND token = $3`);
  const completeMany = completeManySql(s, writeRows);
  const complete = coalesce<Completing, unknown>({
    ...COMPLETE_BATCHES,
    weight: (c) => c.batch.length,
    clock: clock ?? systemClock,
    queueTimeoutMs: DEFAULT_QUEUE_TIMEOUT_MS,
    one: (c) =>
      run(
        pool,
        completeSql([c.at, c.key, c.token, dedup.windowMs, ...outboxColumns(c.batch), ...batchPaymentColumns(c.batch)]),
      ),
    many: async (cs) => {
      const columns = [cs.map((c) => c.key), cs.map((c) => c.token), cs.map((c) => c.at), dedup.windowMs];
      const batch = cs.flatMap((c) => c.batch);
      await run(pool, completeMany([...columns, ...outboxColumns(batch), ...batchPaymentColumns(batch)]));
      return [];
    },
  });
  // As dedup.ts: the release, why a reservation was refused, and the paced sweep of expired rows.
  const releaseSql = dedupReleaseSql(s);
  const pacedSweep = pacedDedupSweep(pool, s, now);
  const sweepSql = dedupSweepSql(s);
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
  const admitOne = async (at: number | null, key: string) => (await withBucket(at, admitStatement([at, key])))[0];
  // Admits coalesced as the completes are; a batch takes its latest reading of the clock (with
  // the database's clock, the statement's time, as alone).
  const admitManyStatement = admitManySql(s, name, bucket, dedup);
  const admitQueued = coalesce<{ at: number | null; key: string }, AdmitRow>({
    ...ADMIT_BATCHES,
    weight: () => 1,
    key: (a) => a.key,
    clock: clock ?? systemClock,
    queueTimeoutMs: DEFAULT_QUEUE_TIMEOUT_MS,
    one: (a) => admitOne(a.at, a.key),
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
      /** The reservation's token, or the refusal the statement's row means. */
      const decide = async (row: AdmitRow): Promise<string | RelayError> => {
        if (!row.taken) {
          const taken = refused(row.units, bucket.perMinute);
          return rateLimitedError(taken.ok ? 1 : taken.retryAfterSeconds);
        }
        if (row.token !== null) return row.token;
        if (row.live_until !== null) return duplicateTx(row.live_until - row.now);
        // Refused for a row committed after this statement's snapshot, or for capacity: ask why.
        return refusal(key);
      };
      let token = await decide(await admitQueued({ at, key }));
      if (token instanceof RelayError && token.code === 'cache_full') {
        // The row count holds expired rows until a sweep deletes them: sweep now and ask once
        // more (a second token; a full table is rare, and refuses anyway).
        await run(pool, sweepSql([at]));
        token = await decide(await admitOne(at, key));
      }
      if (token instanceof RelayError) throw token;
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
