/**
 * Retention on PostgreSQL (docs/configuration.md#retention): prune() deletes one batch of
 * delivered messages (with their gas payments and gas book rows) and of closed journal rows,
 * oldest first, in one statement. The rows are found through indexes (outbox_status,
 * outbox_journal_closed: schema migration 13) and taken with SKIP LOCKED, so a batch costs the
 * same whatever the table's size, and replicas pruning at once neither wait for each other nor
 * for a row another statement holds. Deletes fire no NOTIFY: the change feed tells what a status
 * shows, and a pruned message's status was final.
 */
import { checkPrune, type PruneOptions, type Pruned } from '../outbox/index.ts';
import { run, type PgPool } from './pool.ts';

/** The statement's parts that pick rows, for their query plans (test/unit/outbox/indexes.test.ts). */
export function pruneSql(s: string): { messages: string; journal: string } {
  return {
    messages: `SELECT id FROM ${s}.outbox WHERE status = 'delivered' AND enqueued_at < $1 AND delivered_at < $1
      ORDER BY enqueued_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED`,
    journal: `SELECT hash FROM ${s}.outbox_journal WHERE closed_at < $1
      ORDER BY closed_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
  };
}

export function createPostgresPrune(pool: PgPool, s: string): (opts: PruneOptions) => Promise<Pruned> {
  const picks = pruneSql(s);
  const sql = `
    WITH picked AS (${picks.messages}),
    payments AS (DELETE FROM ${s}.gas_payments g USING picked WHERE g.message_id = picked.id),
    spent AS (DELETE FROM ${s}.gas_spent g USING picked WHERE g.message_id = picked.id),
    messages AS (DELETE FROM ${s}.outbox o USING picked WHERE o.id = picked.id RETURNING 1),
    closed AS (${picks.journal}),
    journal AS (DELETE FROM ${s}.outbox_journal j USING closed WHERE j.hash = closed.hash RETURNING 1)
    SELECT (SELECT count(*) FROM messages)::integer AS messages, (SELECT count(*) FROM journal)::integer AS journal`;
  return async (opts) => {
    const { before, limit } = checkPrune(opts);
    const { rows } = await run<Pruned>(pool, sql, [before, limit]);
    return rows[0];
  };
}
