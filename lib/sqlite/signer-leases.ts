/**
 * Signer leases on node:sqlite (docs/transactions.md#one-worker-per-key): `signer_leases` (migration
 * 11), one row per (chain, signer), kept after a release (lapsed, with its last holder). acquire
 * reads and writes in one IMMEDIATE transaction, which holds the database's write lock, so two
 * workers on one file never both take a signer; renew and release are single conditional UPDATEs
 * naming the lease.
 */
import type { DatabaseSync } from 'node:sqlite';
import type { Clock } from '../clock.ts';
import {
  checkAcquireSigner,
  checkSignerLease,
  newLease,
  signerLeaseAllows,
  type Broadcast,
  type Outbox,
  type SignerLease,
  type Synchronous,
} from '../outbox/index.ts';
import type { Transaction } from './transaction.ts';

type SignerMethods = 'acquireSignerLease' | 'renewSignerLease' | 'releaseSignerLease' | 'signerLeases';

export function createSqliteSignerLeases(
  db: DatabaseSync,
  transaction: Transaction,
  clock: Clock,
): Pick<Synchronous<Outbox>, SignerMethods> & {
  /** recordBroadcast's check of `b`'s signer lease at `now`, inside its transaction. */
  allows(b: Broadcast, now: number): boolean;
} {
  const one = db.prepare(
    'SELECT holder, lease, expires_at AS expiresAt FROM signer_leases WHERE chain_id = ? AND signer = ?',
  );
  const upsert = db.prepare(
    'INSERT INTO signer_leases (chain_id, signer, holder, lease, expires_at) VALUES (:chainId, :signer, :holder, :lease, :until) ' +
      'ON CONFLICT (chain_id, signer) DO UPDATE SET holder = excluded.holder, lease = excluded.lease, expires_at = excluded.expires_at',
  );
  const renew = db.prepare(
    'UPDATE signer_leases SET expires_at = :until WHERE chain_id = :chainId AND signer = :signer AND lease = :lease',
  );
  // Lapsed now, under a lease nobody knows: the old one can neither renew nor record.
  const release = db.prepare(
    'UPDATE signer_leases SET lease = :fresh, expires_at = min(expires_at, :now) ' +
      'WHERE chain_id = :chainId AND signer = :signer AND lease = :lease',
  );
  const all = db.prepare(
    'SELECT chain_id AS chainId, signer, holder, expires_at AS expiresAt FROM signer_leases ORDER BY chain_id, signer',
  );
  type Row = { holder: string; lease: string; expiresAt: number };
  return {
    allows: (b, now) => signerLeaseAllows(one.get(b.chainId, b.signer) as Row | undefined, b.signerLease, now),
    acquireSignerLease(key, h, leaseMs) {
      const { chainId, signer, holder } = checkAcquireSigner(key, h, leaseMs);
      return transaction(() => {
        const now = clock.now();
        const row = one.get(chainId, signer) as Row | undefined;
        if (row && row.expiresAt > now && row.holder !== holder)
          return { acquired: false as const, holder: row.holder, expiresAt: row.expiresAt };
        const lease = row && row.expiresAt > now ? row.lease : newLease();
        upsert.run({ chainId, signer, holder, lease, until: now + leaseMs });
        return { acquired: true as const, lease, expiresAt: now + leaseMs };
      });
    },
    renewSignerLease(key, l, leaseMs) {
      const { lease, chainId, signer } = checkSignerLease(key, l, 'renewSignerLease', leaseMs);
      return Number(renew.run({ chainId, signer, lease, until: clock.now() + leaseMs }).changes) === 1;
    },
    releaseSignerLease(key, l) {
      const { lease, chainId, signer } = checkSignerLease(key, l, 'releaseSignerLease');
      return Number(release.run({ chainId, signer, lease, fresh: newLease(), now: clock.now() }).changes) === 1;
    },
    signerLeases: () => (all.all() as unknown as SignerLease[]).map((r) => ({ ...r, chainId: Number(r.chainId) })),
  };
}
