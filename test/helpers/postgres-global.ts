/**
 * `npm test`'s global setup (node --test-global-setup): one PostgreSQL server for every test file
 * of the run, its URL passed to the test processes in the environment (test/helpers/postgres.ts).
 */
import type { EmbeddedPostgres } from '../../scripts/embedded-postgres.ts';
import { PG_URL_ENV, startTestPostgres } from './postgres.ts';

let server: EmbeddedPostgres | undefined;

export async function globalSetup(): Promise<void> {
  if (process.env[PG_URL_ENV]) return; // a server given from outside
  server = await startTestPostgres();
  process.env[PG_URL_ENV] = server.url();
}

export async function globalTeardown(): Promise<void> {
  await server?.remove();
}
