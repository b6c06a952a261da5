/**
 * One PostgreSQL schema (and pool) of the shared test server, shared by the tests of a test file
 * that each want empty tables: creating a schema, migrating it and dropping it again for every
 * test cost the server more CPU than the tests themselves. Tests that are about migrating or the
 * schema itself take their own (testSchema, test/helpers/harness/postgres.ts).
 *
 * Sharing is safe, whatever the order of the tests:
 * - node:test runs the tests of a file one at a time, and lease() refuses a second lease while
 *   one is held, so two tests never use the schema at once;
 * - lease() first waits until the pool has no query running or waiting (the previous holder's
 *   last writes are done), then deletes the rows of every table of the schema but its version,
 *   so each test starts as on a freshly migrated schema (only the outbox's arrival sequence goes
 *   on counting, and it is only ever compared);
 * - each test opens its own store on the schema, with its own clock and settings.
 */
import { after } from 'node:test';
import type pg from 'pg';
import { testSchema, type TestSchema } from './postgres.ts';

export interface PostgresLease {
  pool: pg.Pool;
  schema: string;
  /** Ends the lease; the schema stays for the next test. */
  release(): void;
}

export interface SharedPostgres {
  lease(): Promise<PostgresLease>;
}

/** Bound on the event-loop turns lease() waits for the previous holder's queries. */
const IDLE_TURNS = 100_000;

/**
 * A schema shared by the tests of this file, dropped after them. Call it when the test file loads
 * (not inside a test or hook, whose after() would end it with that test); the schema itself is
 * made at the first lease.
 */
export function sharedPostgres(): SharedPostgres {
  let made: Promise<TestSchema> | undefined;
  let held = false;

  after(async () => {
    if (made !== undefined) await (await made).close();
  });

  return {
    async lease() {
      if (held) throw new Error('the shared PostgreSQL schema is already leased: release it first');
      held = true;
      let pool: pg.Pool;
      let schema: string;
      try {
        made ??= testSchema();
        ({ pool, schema } = await made);
        for (let turn = 0; pool.waitingCount > 0 || pool.idleCount < pool.totalCount; turn++) {
          if (turn === IDLE_TURNS) throw new Error('the previous test left queries running on the shared schema');
          await new Promise((resolve) => setImmediate(resolve));
        }
        const { rows } = await pool.query<{ name: string }>(
          // Not the migrations' own rows: the version, and the dedup row count (whose triggers
          // bring it to 0 as the dedup rows are deleted).
          "SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename NOT IN ('schema_version', 'dedup_rows')",
          [schema],
        );
        // DELETE, not TRUNCATE: a few rows are cheaper to delete than tables and indexes to recreate.
        if (rows.length > 0) await pool.query(rows.map((r) => `DELETE FROM "${schema}"."${r.name}";`).join(' '));
        // Each store opened on the pool adds an 'error' listener (lib/postgres/index.ts); one is enough.
        pool.removeAllListeners('error');
        pool.on('error', () => {});
      } catch (error) {
        // This test fails with the reason; the next one may lease again.
        held = false;
        throw error;
      }
      return {
        pool,
        schema,
        release() {
          held = false;
        },
      };
    },
  };
}
