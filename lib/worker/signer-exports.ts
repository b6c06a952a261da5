/** The signer-lease and signer-view types relayer-api/worker exports (docs/transactions.md#one-worker-per-key). */
export type { NamedSignerKey, SignerHolds, SignerLeaseStore } from './signer-lease.ts';
export type { NonceSlotNodeState } from './signers-view.ts';
