/**
 * The transaction journal of the outbox on PostgreSQL (docs/transactions.md#the-transaction-journal):
 * `outbox_journal`, one row per signed transaction, recorded before its broadcast. The first
 * broadcast of a nonce is recorded in the statement that checks and renews the message's lease;
 * a replacement only beside an open broadcast of the same slot. Checked by the helpers every
 * engine shares (lib/outbox/checks.ts).
 */
import {
  checkBroadcast,
  checkJournalFilter,
  checkNonceSlot,
  checkNonceSlotOutcome,
  type JournalEntry,
  type Outbox,
} from '../outbox/index.ts';
import { nowSql, run, type PgPool } from './pool.ts';
import { signerAllowsSql } from './signer-leases.ts';

type Journal = Pick<Outbox, 'recordBroadcast' | 'forgetBroadcast' | 'closeNonceSlot' | 'openBroadcasts'>;

/** The journal's methods on schema `s` (quoted); `now` is the injected clock's reading or null (the database's). */
export function createPostgresJournal({
  pool,
  schema: s,
  now,
}: {
  pool: PgPool;
  schema: string;
  now: () => number | null;
}): { [K in keyof Journal]: (...args: Parameters<Journal[K]>) => Promise<Awaited<ReturnType<Journal[K]>>> } {
  const journalColumns = `message_id AS "messageId", chain_id::float8 AS "chainId", signer, nonce::float8 AS nonce, hash, raw, sent_at AS "sentAt"`;
  // One statement: the fence (the message delivering under the lease, renewed) or, without a
  // lease ($8 null), an open broadcast of the same slot for the same message; then the insert.
  // A hash already present answers true and changes nothing.
  // The signer lease first ($10, null: none): refused, nothing is renewed nor recorded.
  const recordSql = `
    WITH signer_ok AS (SELECT ${signerAllowsSql(s, 3, 4, 10, 7)} AS ok),
    known AS (SELECT 1 FROM ${s}.outbox_journal WHERE hash = $1 AND (SELECT ok FROM signer_ok)),
    fence AS (
      UPDATE ${s}.outbox SET claimed_until = ${nowSql(7)} + $9
      WHERE (SELECT ok FROM signer_ok) AND $8::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM known)
        AND id = $2 AND status = 'delivering' AND lease = $8
      RETURNING 1
    ),
    slot AS (
      SELECT 1 FROM ${s}.outbox_journal
      WHERE (SELECT ok FROM signer_ok) AND $8::text IS NULL AND chain_id = $3 AND signer = $4 AND nonce = $5 AND message_id = $2 AND closed_at IS NULL
      LIMIT 1
    ),
    inserted AS (
      INSERT INTO ${s}.outbox_journal (hash, message_id, chain_id, signer, nonce, raw, sent_at)
      SELECT $1, $2, $3, $4, $5, $6, ${nowSql(7)}
      WHERE NOT EXISTS (SELECT 1 FROM known) AND (EXISTS (SELECT 1 FROM fence) OR EXISTS (SELECT 1 FROM slot))
      ON CONFLICT (hash) DO NOTHING
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM known) OR EXISTS (SELECT 1 FROM inserted) AS recorded`;
  const closeSql = `
    UPDATE ${s}.outbox_journal SET closed_at = ${nowSql(1)},
      outcome = CASE WHEN $5::text IS NULL THEN 'dropped' WHEN hash = $5 THEN 'mined' ELSE 'replaced' END
    WHERE chain_id = $2 AND signer = $3 AND nonce = $4 AND closed_at IS NULL`;

  return {
    async recordBroadcast(b, f) {
      const { broadcast: x, fence } = checkBroadcast(b, f);
      const { rows } = await run<{ recorded: boolean }>(pool, recordSql, [
        x.hash,
        x.messageId,
        x.chainId,
        x.signer,
        x.nonce,
        x.raw,
        now(),
        fence?.lease ?? null,
        fence?.leaseMs ?? null,
        x.signerLease ?? null,
      ]);
      return rows[0].recorded;
    },
    async forgetBroadcast(hash) {
      const { rowCount } = await run(pool, `DELETE FROM ${s}.outbox_journal WHERE hash = $1 AND closed_at IS NULL`, [
        String(hash).toLowerCase(),
      ]);
      return rowCount === 1;
    },
    async closeNonceSlot(slot, o) {
      const { chainId, signer, nonce } = checkNonceSlot(slot, 'closeNonceSlot');
      const outcome = checkNonceSlotOutcome(o);
      const { rowCount } = await run(pool, closeSql, [
        now(),
        chainId,
        signer,
        nonce,
        outcome.outcome === 'mined' ? outcome.hash : null,
      ]);
      return rowCount ?? 0;
    },
    async openBroadcasts(of) {
      const filter = checkJournalFilter(of);
      const { rows } = await run<JournalEntry>(
        pool,
        'messageId' in filter
          ? `SELECT ${journalColumns} FROM ${s}.outbox_journal WHERE message_id = $1 AND closed_at IS NULL ORDER BY seq`
          : `SELECT ${journalColumns} FROM ${s}.outbox_journal WHERE chain_id = $1 AND signer = $2 AND closed_at IS NULL ORDER BY seq`,
        'messageId' in filter ? [filter.messageId] : [filter.chainId, filter.signer],
      );
      return rows;
    },
  };
}
