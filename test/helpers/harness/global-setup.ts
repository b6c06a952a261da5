/**
 * `npm test`'s global setup (node --test-global-setup), for every test file of the run:
 * - one PostgreSQL server, its URL passed to the test processes in the environment
 *   (test/helpers/harness/postgres.ts);
 * - Node's compile cache, also through the environment: each test file, SQLite worker thread and
 *   spawned relayer-server strips and compiles the same TypeScript (and viem, pg) again, which is
 *   most of the CPU of a short test file. The cache is keyed by the source's hash, so an edited
 *   file is compiled afresh;
 * - a file where the first test process that needs `npm pack --dry-run`'s list keeps it for the
 *   others, and a directory where the first that needs the packed tarball packs it for the others
 *   (test/helpers/harness/packed.ts).
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EmbeddedPostgres } from '../../../scripts/embedded-postgres.ts';
import { PACKED_FILE_ENV, TARBALL_DIR_ENV } from './packed.ts';
import { PG_URL_ENV, startTestPostgres } from './postgres.ts';

let server: EmbeddedPostgres | undefined;

export async function globalSetup(): Promise<void> {
  process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'node-compile-cache');
  process.env[PACKED_FILE_ENV] ??= join(tmpdir(), `relayer-test-packed-${process.pid}.json`);
  process.env[TARBALL_DIR_ENV] ??= join(tmpdir(), `relayer-test-tarball-${process.pid}`);
  if (process.env[PG_URL_ENV]) return; // a server given from outside
  server = await startTestPostgres();
  process.env[PG_URL_ENV] = server.url();
}

export async function globalTeardown(): Promise<void> {
  const packed = process.env[PACKED_FILE_ENV];
  if (packed) rmSync(packed, { force: true });
  const tarball = process.env[TARBALL_DIR_ENV];
  if (tarball) rmSync(tarball, { recursive: true, force: true });
  await server?.remove();
}
