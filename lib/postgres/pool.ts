/**
 * What the PostgreSQL store needs from a driver: the `pg` package's Pool shape (`query`,
 * `connect()` → client with `query` and `release`), so `pg`, `pg-native` or a wrapper with the
 * same surface plugs in and the library itself has no runtime dependency.
 *
 * Every call goes through `run`, which turns a failure to reach or use the database into
 * RelayError `store_unavailable` (lib/store.ts's callStore: HTTP 503 with Retry-After). The driver's
 * error is kept as `cause` for the logs; drivers do not put the password in their messages, and
 * the store never puts the connection string anywhere.
 */
import { callStore } from '../store.ts';

export interface PgQueryResult<Row> {
  rows: Row[];
  rowCount: number | null;
}

export interface PgQueryable {
  query<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PgQueryResult<Row>>;
}

export interface PgPoolClient extends PgQueryable {
  /** Returns the connection to the pool; with an error, the pool discards it. */
  release(error?: Error | boolean): void;
}

export interface PgPool extends PgQueryable {
  connect(): Promise<PgPoolClient>;
  /** pg.Pool emits 'error' when an idle connection dies (the database restarted, for one). */
  on?(event: 'error', listener: (error: Error) => void): unknown;
}

/** One query; any failure is store_unavailable. */
export function run<Row>(db: PgQueryable, text: string, values?: unknown[]): Promise<PgQueryResult<Row>> {
  return callStore(() => db.query<Row>(text, values));
}

/**
 * "now" in milliseconds inside a statement whose parameter `$n` is the injected clock's time or
 * null. Without an injected clock the database's clock is used (one value per statement), so replicas whose clocks differ
 * still agree on when a reservation expires and how full the bucket is.
 */
export function nowSql(n: number): string {
  return `coalesce($${n}::double precision, extract(epoch from statement_timestamp()) * 1000)`;
}
