/**
 * The transaction journal's types (docs/transactions.md#the-transaction-journal): what the outbox
 * keeps of each signed transaction and how a nonce slot ends (lib/outbox/types.ts, the Outbox's
 * journal methods).
 */
/**
 * One signed transaction of the journal (docs/transactions.md#the-transaction-journal): recorded
 * before it is broadcast, so the next holder of the message, or the same signer after a restart,
 * knows what may still land. A nonce of a signer on a chain is a slot; a replacement adds a
 * broadcast to the same slot.
 */
export interface Broadcast {
  /** The message this transaction delivers (lower-case 0x + 64 hex). */
  messageId: string;
  /** The EVM chain id. */
  chainId: number;
  /** The signer's address, lower-case 0x + 40 hex. */
  signer: string;
  nonce: number;
  /** The transaction hash, lower-case 0x + 64 hex. */
  hash: string;
  /** The signed transaction (0x-hex), to broadcast again as it is. */
  raw: string;
  /**
   * The signer lease (acquireSignerLease) it is sent under (docs/transactions.md#one-worker-per-key):
   * recorded only while that lease is the signer's on this chain (lapsed or not, as long as nobody
   * took it over). Without one, recorded only while no live lease holds the signer.
   */
  signerLease?: string;
}

/** A journal entry as stored: when it was recorded, and whether its slot is settled. */
export interface JournalEntry extends Broadcast {
  /** When it was recorded (ms, the store's clock). */
  sentAt: number;
}

/** A signer's nonce on a chain: what closeNonceSlot settles. */
export interface NonceSlot {
  chainId: number;
  signer: string;
  nonce: number;
}

/**
 * How a slot ended: `mined` (one of its transactions is in a block: `hash`), `dropped` (the
 * nonce was used by a transaction not in the slot: none of its transactions can land).
 */
export type NonceSlotOutcome = { outcome: 'mined'; hash: string } | { outcome: 'dropped' };

/** The lease a first broadcast is recorded under (recordBroadcast): renewed by the record. */
export interface BroadcastFence {
  lease: string;
  leaseMs: number;
}
