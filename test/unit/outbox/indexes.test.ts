/**
 * The outbox's statements that must not grow with the table (BENCHMARKS.md#growth-node-benchgrowthts
 * holds the figures): their query plans on a freshly migrated SQLite file and on the suite's real
 * PostgreSQL read an index in the statement's order and stop at the limit, with no scan of the
 * table and no sort of everything that matched. A plan is the database's own answer, so each
 * test fails when the index or the statement's shape that lets the planner use it is gone.
 */
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { describe, test } from 'node:test';
import { listSql as postgresListSql } from '../../../lib/postgres/outbox-listing.ts';
import { migrate as migratePostgres } from '../../../lib/postgres/schema.ts';
import { pruneSql } from '../../../lib/postgres/retention.ts';
import { listSql as sqliteListSql } from '../../../lib/sqlite/outbox-listing.ts';
import { PRUNE_SQL } from '../../../lib/sqlite/retention.ts';
import { migrate as migrateSqlite } from '../../../lib/sqlite/schema.ts';
import { testSchema } from '../../helpers/harness/postgres.ts';

function sqlitePlan(db: DatabaseSync, sql: string): string {
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[];
  return rows.map((r) => r.detail).join('\n');
}

describe('SQLite outbox query plans', () => {
  const db = new DatabaseSync(':memory:');
  migrateSqlite(db);

  test('docs/outbox.md#listing-and-bulk-requeue: list by a status reads outbox_status in order, no scan, no sort', () => {
    const plan = sqlitePlan(db, sqliteListSql('id').status);
    assert.match(plan, /SEARCH outbox USING INDEX outbox_status \(status=\?\)/, plan);
    assert.doesNotMatch(plan, /TEMP B-TREE/, plan);
  });

  test('docs/outbox.md#listing-and-bulk-requeue: list of every status not delivered reads outbox_undelivered in order', () => {
    const plan = sqlitePlan(db, sqliteListSql('id').undelivered);
    assert.match(plan, /SCAN outbox USING INDEX outbox_undelivered/, plan);
    assert.doesNotMatch(plan, /TEMP B-TREE/, plan);
  });

  test('docs/configuration.md#retention: prune finds the oldest delivered messages through outbox_status, no sort', () => {
    const plan = sqlitePlan(db, PRUNE_SQL.messages);
    assert.match(plan, /SEARCH outbox USING INDEX outbox_status \(status=\? AND enqueued_at<\?\)/, plan);
    assert.doesNotMatch(plan, /TEMP B-TREE/, plan);
  });

  test('docs/configuration.md#retention: prune finds the oldest closed journal rows through outbox_journal_closed', () => {
    const plan = sqlitePlan(db, PRUNE_SQL.journal);
    assert.match(
      plan,
      /SEARCH outbox_journal USING COVERING INDEX outbox_journal_closed \(closed_at>\? AND closed_at<\?\)/,
      plan,
    );
    assert.doesNotMatch(plan, /TEMP B-TREE|SCAN outbox_journal/, plan);
  });
});

describe('PostgreSQL outbox query plans', () => {
  /**
   * The plan of the statement `build` makes for a freshly migrated schema, run with `params`
   * (types `types`), scans that return rows out of order priced out (on a table this small the planner takes them).
   */
  async function postgresPlan(build: (s: string) => string, types: string, params: string): Promise<string> {
    const t = await testSchema({ max: 1 });
    try {
      await migratePostgres(t.pool, t.schema);
      const client = await t.pool.connect();
      try {
        await client.query('SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off');
        await client.query(`PREPARE q(${types}) AS ${build(`"${t.schema}"`)}`);
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE q(${params})`);
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      } finally {
        client.release(true);
      }
    } finally {
      await t.close();
    }
  }

  test('docs/outbox.md#listing-and-bulk-requeue: list by a status reads outbox_status in order, no sort', async () => {
    const plan = await postgresPlan(
      (s) => postgresListSql(s, 'o.id').status,
      'bigint, integer, text',
      "NULL, 100, 'failed'",
    );
    assert.match(plan, /Index Scan using outbox_status/, plan);
    assert.doesNotMatch(plan, /Sort|Seq Scan/, plan);
  });

  test('docs/outbox.md#listing-and-bulk-requeue: list of every status not delivered reads outbox_undelivered, no sort', async () => {
    const plan = await postgresPlan((s) => postgresListSql(s, 'o.id').undelivered, 'bigint, integer', 'NULL, 100');
    assert.match(plan, /Index Scan using outbox_undelivered/, plan);
    assert.doesNotMatch(plan, /Sort|Seq Scan/, plan);
  });

  test('docs/configuration.md#retention: prune finds the oldest delivered messages through outbox_status, no sort', async () => {
    const plan = await postgresPlan((s) => pruneSql(s).messages, 'float8, integer', '1e12, 1000');
    assert.match(plan, /Index Scan using outbox_status/, plan);
    assert.doesNotMatch(plan, /Sort|Seq Scan/, plan);
  });

  test('docs/configuration.md#retention: prune finds the oldest closed journal rows through outbox_journal_closed', async () => {
    const plan = await postgresPlan((s) => pruneSql(s).journal, 'float8, integer', '1e12, 1000');
    assert.match(plan, /Index Scan using outbox_journal_closed/, plan);
    assert.doesNotMatch(plan, /Sort|Seq Scan/, plan);
  });
});
