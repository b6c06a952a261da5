/**
 * The commands' PostgreSQL wiring (docs/design.md#the-server-binary, #postgresql, docs/replicas.md#how-replicas-agree):
 * a `postgres://` database URL opens a `pg` pool and the shared store on it. `pg` is an optional
 * peer dependency, loaded only here and only for such a URL, so a SQLite-only install never needs
 * it.
 *
 * The URL carries the password; it appears nowhere but in the pool's configuration. What is
 * logged or printed is `redactDatabaseUrl(url)`.
 */
// Only the constants here: the store itself (lib/postgres) is loaded by openPostgresFromUrl, so
// --help, a refused flag or config, and a SQLite database never load it.
import { DEFAULT_LOCK_TIMEOUT_MS, DEFAULT_STATEMENT_TIMEOUT_MS } from '../../lib/postgres/pool.ts';
import type { PostgresStore } from '../../lib/postgres/index.ts';
import type { Logger } from '../../lib/log.ts';
import { redactDatabaseSecrets, redactDatabaseUrl } from '../../lib/redact.ts';
import type { RelayApiConfig } from '../../lib/types.ts';

export const DEFAULT_POOL_SIZE = 10;
/** A connection attempt that takes longer fails: the request answers 503 instead of hanging. */
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * The client gives up on a statement this long after the server's `statement_timeout` would have
 * cancelled it: it only fires when the server cannot answer at all (a partition), since the
 * server-side limits end every statement that runs or waits too long (lib/postgres/pool.ts).
 */
const QUERY_TIMEOUT_MARGIN_MS = 1_000;

export class PostgresSetupError extends Error {
  override name = 'PostgresSetupError';
}

interface PgModule {
  Pool: new (
    config: Record<string, unknown>,
  ) => import('../../lib/postgres/index.ts').PgPool & { end(): Promise<void> };
}

async function loadPg(): Promise<PgModule> {
  try {
    const mod = (await import('pg')) as unknown as { default?: PgModule } & PgModule;
    return mod.default ?? mod;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') {
      throw new PostgresSetupError(
        'the database is a postgres:// URL but the pg package is not installed: install pg (npm install pg) beside relayer-api',
      );
    }
    throw error;
  }
}

export interface OpenedPostgres {
  store: PostgresStore;
  /** Closes the store and ends the pool. */
  close(): Promise<void>;
}

/** Takes the integer parameter `name` (milliseconds or a count) out of the URL's query. */
function takeInteger(url: URL, name: string, min: number, max: number): number | undefined {
  const value = url.searchParams.get(name);
  if (value === null) return undefined;
  if (!/^\d{1,7}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new PostgresSetupError(
      `${name} in the database URL must be an integer from ${min} to ${max}, got ${JSON.stringify(value.slice(0, 16))}`,
    );
  }
  url.searchParams.delete(name);
  return Number(value);
}

export interface PostgresPoolConfigs {
  /** The request pool: server-side statement and lock limits, a client-side safety net. */
  pool: Record<string, unknown>;
  /**
   * The change feed's one LISTEN connection, outside the request pool (`pool_size` counts only
   * the connections that run statements): with the same limits, so its health check cannot hang.
   */
  listen: Record<string, unknown>;
  /** One connection for the migrations, without any limit (a migration or its lock wait may be long). */
  migration: Record<string, unknown>;
}

/**
 * The `pg` pool configurations for a database URL. The URL's own query parameters `pool_size`
 * (default 10), `statement_timeout` (ms, default 5 000) and `lock_timeout` (ms, default 2 000; 0
 * turns a limit off) are taken out of it; everything else goes to `pg` as is (`sslmode=…`,
 * `application_name=…`). Throws PostgresSetupError for a URL that does not parse or a bad value.
 */
export function postgresPoolConfigs(db: string): PostgresPoolConfigs {
  let url: URL;
  try {
    url = new URL(db);
  } catch {
    throw new PostgresSetupError('the database URL does not parse (expected postgres://user:password@host:5432/name)');
  }
  const max = takeInteger(url, 'pool_size', 1, 9999) ?? DEFAULT_POOL_SIZE;
  const statementTimeout = takeInteger(url, 'statement_timeout', 0, 3_600_000) ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const lockTimeout = takeInteger(url, 'lock_timeout', 0, 3_600_000) ?? DEFAULT_LOCK_TIMEOUT_MS;
  const common = {
    connectionString: url.href,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    application_name: 'relayer-server',
  };
  const limits = {
    // Startup parameters: every connection of the pool has them from its first statement on.
    // pg sends nothing for 0, which is the server's "no limit" anyway.
    statement_timeout: statementTimeout,
    lock_timeout: lockTimeout,
    query_timeout: (statementTimeout || DEFAULT_STATEMENT_TIMEOUT_MS) + QUERY_TIMEOUT_MARGIN_MS,
  };
  return {
    pool: { ...common, max, ...limits },
    listen: { ...common, max: 1, ...limits },
    migration: { ...common, max: 1 },
  };
}

/**
 * Opens the pool and the store, after running the migrations on a connection of their own (see
 * postgresPoolConfigs for the URL's parameters).
 */
/** The database has no relayer schema, and the caller wanted an existing one (relayer-worker). */
export class NoRelayerSchemaError extends Error {
  override name = 'NoRelayerSchemaError';
}

export async function openPostgresFromUrl(
  db: string,
  relayApi: RelayApiConfig,
  logger: Logger,
  opts: { existing?: boolean } = {},
): Promise<OpenedPostgres> {
  const configs = postgresPoolConfigs(db);
  const pg = await loadPg();
  const { migrate, openPostgresStore } = await import('../../lib/postgres/index.ts');
  const migrationPool = new pg.Pool(configs.migration);
  migrationPool.on?.('error', () => {}); // its connection is ended below; a drop before is the migration's error
  try {
    // relayer-worker: the server's schema must be there already (a wrong database name is not
    // turned into an empty relayer database).
    if (opts.existing) {
      const { rows } = await migrationPool.query("SELECT to_regclass('relayer.outbox') IS NOT NULL AS found");
      if (!rows[0]?.found)
        throw new NoRelayerSchemaError(
          `database ${redactDatabaseUrl(db)} has no relayer schema: not relayer-server's database (start relayer-server on it once to create it)`,
        );
    }
    await migrate(migrationPool, 'relayer');
  } finally {
    await migrationPool.end().catch(() => {});
  }
  const pool = new pg.Pool(configs.pool);
  // The change feed's LISTEN connection, opened at its first follower: not one of pool_size's
  // (docs/outbox.md#change-feed), so a pool of one still serves requests while a stream listens.
  const listenPool = new pg.Pool(configs.listen);
  // An idle connection the server dropped (a restart, a failover): the pool opens a new one.
  const onPoolError = (error: Error) =>
    logger.warn('database connection lost', {
      error: redactDatabaseSecrets(`${error.name}: ${error.message.split('\n')[0]}`, db),
    });
  listenPool.on?.('error', onPoolError);
  const end = () => Promise.all([pool.end(), listenPool.end()]);
  try {
    const store = await openPostgresStore(pool, {
      relayApi,
      migrate: false,
      listenPool,
      onPoolError,
      // The change feed connects again by itself and has its followers read again.
      onListenLost: (error) =>
        logger.warn('database listening connection lost; listening again', {
          error: redactDatabaseSecrets(`${error.name}: ${error.message.split('\n')[0]}`, db),
        }),
    });
    return {
      store,
      async close() {
        await store.close();
        await end();
      },
    };
  } catch (error) {
    await end().catch(() => {});
    throw error;
  }
}
