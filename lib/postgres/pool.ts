/**
 * What the PostgreSQL store needs from a driver: the `pg` package's Pool shape (`query`,
 * `connect()` → client with `query` and `release`), so `pg`, `pg-native` or a wrapper with the
 * same surface plugs in and the library itself has no runtime dependency.
 *
 * Every call goes through `run`, which maps the driver's failure as lib/store/bundle.ts's callStore does: a
 * database that cannot be used right now (by SQLSTATE, or a lost connection) is RelayError
 * `store_unavailable` (HTTP 503 with Retry-After), anything else (a CHECK violation, a bug)
 * `internal_error` (500). The driver's error is kept as `cause` for the logs; drivers do not put
 * the password in their messages, and the store never puts the connection string anywhere.
 */
import { StoreUnavailableError, toStoreError } from '../store/bundle.ts';

export interface PgQueryResult<Row> {
  rows: Row[];
  rowCount: number | null;
}

/** A named statement (pg's query config): the connection parses and plans it once, then reuses it. */
export interface PgQueryConfig {
  name: string;
  text: string;
  values?: unknown[];
}

export interface PgQueryable {
  query<Row = Record<string, unknown>>(query: string | PgQueryConfig, values?: unknown[]): Promise<PgQueryResult<Row>>;
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

/**
 * The server-side limits every connection of the store's pool carries (docs/operations.md, "Several
 * replicas on PostgreSQL"): a statement running longer than `statement_timeout`, or waiting longer
 * than `lock_timeout` for a lock, is cancelled by the server, so a request that answered 503 leaves
 * nothing running that could still commit (a reservation that would refuse the retry). With `pg`:
 * `new pg.Pool({ ..., statement_timeout: DEFAULT_STATEMENT_TIMEOUT_MS, lock_timeout: DEFAULT_LOCK_TIMEOUT_MS })`.
 * Migrations lift both for their own session (schema.ts).
 */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5_000;
export const DEFAULT_LOCK_TIMEOUT_MS = 2_000;

/** One query; its failure is store_unavailable or internal_error (see above). */
export function run<Row>(
  db: PgQueryable,
  query: string | PgQueryConfig,
  values?: unknown[],
): Promise<PgQueryResult<Row>> {
  // The mapping of callStore, without its async wrapper: one promise reaction per statement on
  // the hot path instead of three.
  let answer: Promise<PgQueryResult<Row>>;
  try {
    answer = Promise.resolve(db.query<Row>(query, values));
  } catch (error) {
    return Promise.reject(toStoreError(error));
  }
  return answer.then(undefined, (error: unknown) => {
    throw toStoreError(unavailableWithoutSqlState(error));
  });
}

const statementNames = new Map<string, string>();

/**
 * `text` as a named statement, for the statements of every relay: parsing and planning them was
 * about half of their database CPU (BENCHMARKS.md, "How the PostgreSQL hot path got here"). The
 * name is one per distinct text in this process, so stores on other schemas sharing the pool never collide; a
 * connection keeps at most one prepared statement per such text.
 */
export function prepared(text: string): (values: unknown[]) => PgQueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `relayer_api_${statementNames.size}`;
    statementNames.set(text, name);
  }
  const fixed = name;
  return (values) => ({ name: fixed, text, values });
}

/**
 * An error from the database carries a SQLSTATE (`code`), classified by lib/store/bundle.ts. A plain Error
 * without one is the driver's own word that the connection is gone or never came: `pg`'s
 * "Connection terminated unexpectedly", its client-side `query_timeout` ("Query read timeout") and
 * a pool out of connections ("timeout exceeded when trying to connect"). Those are unavailability;
 * a TypeError or RangeError (a value the driver cannot send) stays a fault.
 */
function unavailableWithoutSqlState(error: unknown): unknown {
  if (
    error instanceof Error &&
    Object.getPrototypeOf(error) === Error.prototype &&
    (error as { code?: unknown }).code === undefined
  ) {
    return new StoreUnavailableError(error.message, { cause: error });
  }
  return error;
}

/** The database's clock in milliseconds: one value per statement. */
export const DATABASE_NOW_SQL = 'extract(epoch from statement_timestamp()) * 1000';

/**
 * "now" in milliseconds: the SQL value `time` (the injected clock's time, or null), else the
 * database's clock. Without an injected clock replicas whose clocks differ still agree on when a
 * reservation expires and how full the bucket is.
 */
export function timeOrDatabaseNow(time: string): string {
  return `coalesce(${time}, ${DATABASE_NOW_SQL})`;
}

/** timeOrDatabaseNow of the statement's parameter `$n`. */
export function nowSql(n: number): string {
  return timeOrDatabaseNow(`$${n}::double precision`);
}
