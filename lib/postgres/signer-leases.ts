/**
 * Signer leases on PostgreSQL (docs/transactions.md#one-worker-per-key): `signer_leases` (migration
 * 12), one row per (chain, signer), kept after a release (lapsed, with its last holder). acquire
 * is one INSERT … ON CONFLICT DO UPDATE … WHERE: the row's lock serialises workers of every
 * replica, and only a lapsed lease, or the holder's own, is taken. Time is the database's clock
 * read while the statement runs (clock_timestamp(), after any wait for the row), or the injected
 * clock's reading.
 */
import {
  checkAcquireSigner,
  checkSignerLease,
  newLease,
  type Asynchronous,
  type Outbox,
  type SignerLease,
} from '../outbox/index.ts';
import { run, type PgPool } from './pool.ts';

type SignerMethods = 'acquireSignerLease' | 'renewSignerLease' | 'releaseSignerLease' | 'signerLeases';

/** "now" in ms at evaluation: `$n` (the injected clock) or the database's clock (volatile, read after lock waits). */
export function signerNowSql(n: number): string {
  return `coalesce($${n}::double precision, extract(epoch from clock_timestamp()) * 1000)`;
}

/**
 * The journal's check of a broadcast's signer lease (chain $c, signer $s, lease $l, now $n): under a
 * lease only while it is the row's; without one only while no live lease holds the signer. FOR
 * SHARE waits for an acquire in progress and reads the row it leaves.
 */
export function signerAllowsSql(schema: string, c: number, sgn: number, l: number, n: number): string {
  return `(CASE WHEN $${l}::text IS NOT NULL
      THEN EXISTS (SELECT 1 FROM ${schema}.signer_leases WHERE chain_id = $${c} AND signer = $${sgn} AND lease = $${l} FOR SHARE)
      ELSE NOT EXISTS (SELECT 1 FROM ${schema}.signer_leases WHERE chain_id = $${c} AND signer = $${sgn}
        AND expires_at > ${signerNowSql(n)} FOR SHARE) END)`;
}

export function createPostgresSignerLeases(
  pool: PgPool,
  s: string,
  now: () => number | null,
): Pick<Asynchronous<Outbox>, SignerMethods> {
  const acquireSql = `
    INSERT INTO ${s}.signer_leases AS l (chain_id, signer, holder, lease, expires_at)
    VALUES ($1, $2, $3, $4, ${signerNowSql(6)} + $5)
    ON CONFLICT (chain_id, signer) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
      lease = CASE WHEN l.expires_at > ${signerNowSql(6)} THEN l.lease ELSE excluded.lease END
    WHERE l.expires_at <= ${signerNowSql(6)} OR l.holder = excluded.holder
    RETURNING l.lease, l.expires_at AS "expiresAt"`;
  const holderSql = `SELECT holder, expires_at AS "expiresAt" FROM ${s}.signer_leases WHERE chain_id = $1 AND signer = $2`;
  const renewSql = `UPDATE ${s}.signer_leases SET expires_at = ${signerNowSql(4)} + $5
    WHERE chain_id = $1 AND signer = $2 AND lease = $3`;
  // Lapsed now, under a lease nobody knows: the old one can neither renew nor record.
  const releaseSql = `UPDATE ${s}.signer_leases SET lease = $5, expires_at = least(expires_at, ${signerNowSql(4)})
    WHERE chain_id = $1 AND signer = $2 AND lease = $3`;
  const allSql = `SELECT chain_id::float8 AS "chainId", signer, holder, expires_at AS "expiresAt"
    FROM ${s}.signer_leases ORDER BY chain_id, signer`;
  return {
    async acquireSignerLease(key, h, leaseMs) {
      const { chainId, signer, holder } = checkAcquireSigner(key, h, leaseMs);
      const taken = await run<{ lease: string; expiresAt: number }>(pool, acquireSql, [
        chainId,
        signer,
        holder,
        newLease(),
        leaseMs,
        now(),
      ]);
      if (taken.rows.length === 1) return { acquired: true, ...taken.rows[0] };
      const { rows } = await run<{ holder: string; expiresAt: number }>(pool, holderSql, [chainId, signer]);
      // Lapsed between the two statements (rare): the caller asks again at its next look.
      return { acquired: false, holder: rows[0]?.holder ?? 'unknown', expiresAt: rows[0]?.expiresAt ?? 0 };
    },
    async renewSignerLease(key, l, leaseMs) {
      const { chainId, signer, lease } = checkSignerLease(key, l, 'renewSignerLease', leaseMs);
      const { rowCount } = await run(pool, renewSql, [chainId, signer, lease, now(), leaseMs]);
      return rowCount === 1;
    },
    async releaseSignerLease(key, l) {
      const { chainId, signer, lease } = checkSignerLease(key, l, 'releaseSignerLease');
      const { rowCount } = await run(pool, releaseSql, [chainId, signer, lease, now(), newLease()]);
      return rowCount === 1;
    },
    async signerLeases() {
      return (await run<SignerLease>(pool, allSql, [])).rows;
    },
  };
}

/** Migration 12 (lib/postgres/schema.ts): the same columns and CHECKs as the SQLite table's migration 11. */
export function signerLeasesMigration(s: string): string {
  return `
  CREATE TABLE ${s}.signer_leases (
    chain_id bigint NOT NULL CHECK (chain_id BETWEEN 0 AND 9007199254740991),
    signer text NOT NULL CHECK (signer ~ '^0x[0-9a-f]{40}$'),
    holder text NOT NULL CHECK (char_length(holder) BETWEEN 1 AND 200),
    lease text NOT NULL CHECK (char_length(lease) BETWEEN 1 AND 200),
    expires_at double precision NOT NULL,
    PRIMARY KEY (chain_id, signer)
  );`;
}
