/**
 * POST /relay deduplication shared by every replica, one row per key in the `dedup` table, its
 * capacity read from a row count kept by triggers (docs/replicas.md#how-replicas-agree, #capacity-on-postgresql).
 */
import type { Clock } from '../clock.ts';
import { cacheFull, checkDedupLimits, duplicateTx } from '../relay/dedup.ts';
import type { RelayError } from '../errors/classes.ts';
import { nowSql, prepared, run, type PgPool } from './pool.ts';
import { OutOfRangeError } from '../errors/classes.ts';

/**
 * Why a reservation was refused, asked after the fact: the key's live row (`duplicate_tx` until it
 * ends) or, with none, a full table (`cache_full` until its oldest live row ends). Shared by the
 * dedup store and the one-statement admission of the relay hot path.
 */
export async function dedupRefusal(pool: PgPool, s: string, nowMs: number | null, key: string): Promise<RelayError> {
  const liveSql = `SELECT expires_at, ${nowSql(1)} AS now FROM ${s}.dedup WHERE key = $2 AND expires_at > ${nowSql(1)}`;
  const oldestSql = `SELECT min(expires_at) AS expires_at, ${nowSql(1)} AS now FROM ${s}.dedup WHERE expires_at > ${nowSql(1)}`;
  const live = await run<{ expires_at: number; now: number }>(pool, liveSql, [nowMs, key]);
  if (live.rows.length > 0) return duplicateTx(live.rows[0].expires_at - live.rows[0].now);
  const oldest = await run<{ expires_at: number | null; now: number }>(pool, oldestSql, [nowMs]);
  const { expires_at, now: at } = oldest.rows[0];
  // No live row left (they expired since the insert was refused): any wait will do.
  return cacheFull(expires_at === null ? 0 : expires_at - at);
}

export interface PostgresDedupOptions {
  /** How long a committed key stays (the dedup window). */
  windowMs: number;
  /** How long an uncommitted reservation lives at most (receipt timeout + margin). */
  pendingMs: number;
  capacity: number;
  /** Time source; default the database's clock (see nowSql). */
  clock?: Clock;
}

export interface PostgresReservation {
  commit(): Promise<void>;
  release(): Promise<void>;
}

export interface PostgresDedupStore {
  reserve(key: string): Promise<PostgresReservation>;
  size(): Promise<number>;
}

/** Expired rows are deleted at most this often per replica (reads ignore them anyway). */
const SWEEP_INTERVAL_MS = 60_000;

/** Statement-local asynchronous commit, for a DELETE's USING (see the top of the file). */
const ASYNC_COMMIT = "(SELECT set_config('synchronous_commit', 'off', true)) AS async";

/** Deletes the expired rows ($1 now, or null for the database's clock). */
export const dedupSweepSql = (s: string) =>
  prepared(`DELETE FROM ${s}.dedup USING ${ASYNC_COMMIT} WHERE expires_at <= ${nowSql(1)}`);

/**
 * The paced sweep of expired dedup rows: the returned function deletes them at most once a
 * minute (paced by the system clock; the statement itself uses the store's time, `now()`) and
 * resolves at once when no sweep is due. Shared by the dedup store and the relay hot path.
 */
export function pacedDedupSweep(pool: PgPool, s: string, now: () => number | null): () => Promise<void> {
  const sweepSql = dedupSweepSql(s);
  let lastSweep = -Infinity;
  return async () => {
    const at = Date.now();
    if (at - lastSweep < SWEEP_INTERVAL_MS) return;
    lastSweep = at;
    await run(pool, sweepSql([now()]));
  };
}

/** Frees a reservation that still holds its token ($1 key, $2 token). */
export const dedupReleaseSql = (s: string) =>
  prepared(`DELETE FROM ${s}.dedup USING ${ASYNC_COMMIT} WHERE key = $1 AND token = $2`);

export function createPostgresDedupStore(pool: PgPool, s: string, opts: PostgresDedupOptions): PostgresDedupStore {
  const { windowMs, pendingMs, capacity, clock } = opts;
  checkDedupLimits(windowMs, capacity);
  if (!(pendingMs > 0)) throw new OutOfRangeError('pendingMs must be positive');
  const now = () => clock?.now() ?? null;

  // $1 now, $2 key, $3 pendingMs, $4 capacity. ON CONFLICT takes over an expired row and leaves
  // a live one alone, in which case no token is returned; nothing is inserted while the row count
  // is at the capacity.
  const reserveSql = prepared(`
    WITH t AS (SELECT ${nowSql(1)} AS now),
    r AS (
      INSERT INTO ${s}.dedup AS d (key, token, committed, expires_at)
      SELECT $2, gen_random_uuid(), false, t.now + $3
      FROM t, ${s}.dedup_rows AS room WHERE room.n < $4
      ON CONFLICT (key) DO UPDATE SET token = excluded.token, committed = false, expires_at = excluded.expires_at
        WHERE d.expires_at <= ${nowSql(1)}
      RETURNING token
    )
    SELECT (SELECT token FROM r) AS token`);
  const sweepSql = dedupSweepSql(s);
  const commitSql = prepared(
    `UPDATE ${s}.dedup SET committed = true, expires_at = ${nowSql(1)} + $4 WHERE key = $2 AND token = $3`,
  );
  const releaseSql = dedupReleaseSql(s);
  const sweep = pacedDedupSweep(pool, s, now);

  const refusal = (key: string): Promise<RelayError> => dedupRefusal(pool, s, now(), key);

  return {
    async reserve(key) {
      await sweep();
      const insert = async () =>
        (await run<{ token: string | null }>(pool, reserveSql([now(), key, pendingMs, capacity]))).rows[0].token;
      let token = await insert();
      if (token === null) {
        const why = await refusal(key);
        if (why.code !== 'cache_full') throw why;
        // The row count holds expired rows until a sweep deletes them: sweep, and try once more.
        await run(pool, sweepSql([now()]));
        token = await insert();
        if (token === null) throw await refusal(key);
      }
      // Settled only once a statement succeeded: a commit whose UPDATE failed (the pipeline then
      // answers 503) leaves the release able to free the key, so the retry is not duplicate_tx.
      let settled = false;
      return {
        async commit() {
          if (settled) return;
          await run(pool, commitSql([now(), key, token, windowMs]));
          settled = true;
        },
        async release() {
          if (settled) return;
          await run(pool, releaseSql([key, token]));
          settled = true;
        },
      };
    },
    async size() {
      const { rows } = await run<{ n: number }>(
        pool,
        `SELECT count(*)::integer AS n FROM ${s}.dedup WHERE expires_at > ${nowSql(1)}`,
        [now()],
      );
      return rows[0].n;
    },
  };
}
