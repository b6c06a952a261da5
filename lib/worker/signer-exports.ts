/** The signer-lease and signer-view types relayer-api/worker exports (docs/transactions.md#one-worker-per-key). */
export type { NamedSignerKey, SignerHolds, SignerLeaseStore } from './chain/signer-lease.ts';
export type { NonceSlotNodeState } from './ops/signers-view.ts';
