/**
 * The signer lease's types (docs/transactions.md#one-worker-per-key): one worker per (chain, signer),
 * held in the outbox beside the message leases (lib/outbox/types.ts, Outbox.acquireSignerLease).
 */
/** A signer on a chain: what one signer lease covers (docs/transactions.md#one-worker-per-key). */
export interface SignerKey {
  /** The EVM chain id. */
  chainId: number;
  /** The signer's address, lower-case 0x + 40 hex. */
  signer: string;
}

/** A signer lease as stored: who holds it, until when (ms, the store's clock); lapsed once expiresAt <= now. */
export interface SignerLease extends SignerKey {
  holder: string;
  expiresAt: number;
}

/** acquireSignerLease's answer: the lease, or who holds the signer and until when. */
export type SignerLeaseAnswer =
  | { acquired: true; lease: string; expiresAt: number }
  | { acquired: false; holder: string; expiresAt: number };
