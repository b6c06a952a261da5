/**
 * Signer leases of the in-memory outbox (docs/transactions.md#one-worker-per-key): one row per
 * (chain, signer), kept after a release (lapsed, with its last holder) so the view still lists it.
 */
import type { Clock } from '../../clock.ts';
import { checkAcquireSigner, checkSignerLease, newLease, signerLeaseAllows } from '../checks.ts';
import type { Broadcast, Outbox, SignerLease, Synchronous } from '../types.ts';

type SignerMethods = 'acquireSignerLease' | 'renewSignerLease' | 'releaseSignerLease' | 'signerLeases';

interface Row extends SignerLease {
  lease: string;
}

export function createMemorySignerLeases(clock: Clock): Pick<Synchronous<Outbox>, SignerMethods> & {
  /** recordBroadcast's check of `b`'s signer lease, now. */
  allows(b: Broadcast): boolean;
} {
  const rows = new Map<string, Row>();
  const keyOf = (k: { chainId: number; signer: string }) => `${k.chainId}:${k.signer}`;
  return {
    allows: (b) => signerLeaseAllows(rows.get(keyOf(b)), b.signerLease, clock.now()),
    acquireSignerLease(key, h, leaseMs) {
      const { chainId, signer, holder } = checkAcquireSigner(key, h, leaseMs);
      const now = clock.now();
      const row = rows.get(keyOf({ chainId, signer }));
      if (row && row.expiresAt > now && row.holder !== holder)
        return { acquired: false, holder: row.holder, expiresAt: row.expiresAt };
      const lease = row && row.expiresAt > now ? row.lease : newLease();
      const taken: Row = { chainId, signer, holder, lease, expiresAt: now + leaseMs };
      rows.set(keyOf(taken), taken);
      return { acquired: true, lease, expiresAt: taken.expiresAt };
    },
    renewSignerLease(key, l, leaseMs) {
      const { lease, ...k } = checkSignerLease(key, l, 'renewSignerLease', leaseMs);
      const row = rows.get(keyOf(k));
      if (row?.lease !== lease) return false;
      row.expiresAt = clock.now() + leaseMs;
      return true;
    },
    releaseSignerLease(key, l) {
      const { lease, ...k } = checkSignerLease(key, l, 'releaseSignerLease');
      const row = rows.get(keyOf(k));
      if (row?.lease !== lease) return false;
      // Lapsed now, under a lease nobody knows: the old one can neither renew nor record.
      row.lease = newLease();
      row.expiresAt = Math.min(row.expiresAt, clock.now());
      return true;
    },
    signerLeases: () =>
      [...rows.values()]
        .sort((a, b) => a.chainId - b.chainId || (a.signer < b.signer ? -1 : a.signer > b.signer ? 1 : 0))
        .map(({ chainId, signer, holder, expiresAt }) => ({ chainId, signer, holder, expiresAt })),
  };
}
