/**
 * relayer-server's PostgreSQL wiring (DESIGN.md §6, §7, §8): a `postgres://` database URL opens a
 * `pg` pool and the shared store on it. `pg` is an optional peer dependency, loaded only here and
 * only for such a URL, so a SQLite-only install never needs it.
 *
 * The URL carries the password; it appears nowhere but in the pool's configuration. What is
 * logged or printed is `redactDatabaseUrl(url)`.
 */
import { openPostgresStore, type PostgresStore } from '../lib/postgres/index.ts';
import type { Logger } from '../lib/log.ts';
import type { RelayApiConfig } from '../lib/types.ts';

export const DEFAULT_POOL_SIZE = 10;
/** A store call (connect or query) that takes longer fails: the request answers 503 instead of hanging. */
const CONNECT_TIMEOUT_MS = 5_000;
const QUERY_TIMEOUT_MS = 5_000;

export function isPostgresUrl(db: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(db);
}

/** The URL with its password replaced by `***` (and nothing at all if it does not parse). */
export function redactDatabaseUrl(db: string): string {
  if (!isPostgresUrl(db)) return db;
  let url: URL;
  try {
    url = new URL(db);
  } catch {
    return 'postgres://(unparsable URL)';
  }
  if (url.password !== '') url.password = '***';
  return url.href;
}

export class PostgresSetupError extends Error {
  override name = 'PostgresSetupError';
}

interface PgModule {
  Pool: new (config: Record<string, unknown>) => import('../lib/postgres/index.ts').PgPool & { end(): Promise<void> };
}

async function loadPg(): Promise<PgModule> {
  try {
    const mod = (await import('pg')) as unknown as { default?: PgModule } & PgModule;
    return mod.default ?? mod;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') {
      throw new PostgresSetupError('the database is a postgres:// URL but the pg package is not installed: install pg (npm install pg) beside relayer-api');
    }
    throw error;
  }
}

export interface OpenedPostgres {
  store: PostgresStore;
  /** Closes the store and ends the pool. */
  close(): Promise<void>;
}

/**
 * Opens the pool and the store (running migrations). The URL's own query parameter `pool_size`
 * (default 10) sizes the pool and is not passed to the server; everything else goes to `pg` as is
 * (`sslmode=…`, `application_name=…`).
 */
export async function openPostgresFromUrl(db: string, relayApi: RelayApiConfig, logger: Logger): Promise<OpenedPostgres> {
  let url: URL;
  try {
    url = new URL(db);
  } catch {
    throw new PostgresSetupError('the database URL does not parse (expected postgres://user:password@host:5432/name)');
  }
  let max = DEFAULT_POOL_SIZE;
  const size = url.searchParams.get('pool_size');
  if (size !== null) {
    if (!/^[1-9]\d{0,3}$/.test(size)) throw new PostgresSetupError(`pool_size in the database URL must be an integer from 1 to 9999, got ${JSON.stringify(size.slice(0, 16))}`);
    max = Number(size);
    url.searchParams.delete('pool_size');
  }
  const pg = await loadPg();
  const pool = new pg.Pool({
    connectionString: url.href,
    max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    application_name: 'relayer-server',
  });
  try {
    const store = await openPostgresStore(pool, {
      relayApi,
      // An idle connection the server dropped (a restart, a failover): the pool opens a new one.
      onPoolError: (error) => logger.warn('database connection lost', { error: `${error.name}: ${error.message.split('\n')[0]}` }),
    });
    return {
      store,
      async close() {
        await store.close();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
}
