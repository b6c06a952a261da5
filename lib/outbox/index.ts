/**
 * The relay outbox (docs/design.md#enqueue, #storage, docs/outbox.md#message-lifecycle): its types
 * (lib/outbox/types.ts), the argument checks every engine shares (lib/outbox/checks.ts) and the
 * in-memory engine (lib/outbox/memory/outbox.ts). The parts import each other directly, never this index.
 */
export * from './types.ts';
export * from './rows.ts';
export type * from './versioned.ts';
export {
  MAX_ERROR_LENGTH,
  MAX_DESTINATION_TX_HASH_LENGTH,
  MAX_RAW_TRANSACTION_LENGTH,
  checkClaim,
  checkExtend,
  checkList,
  checkRequeueFailed,
  DEFAULT_LIST_LIMIT,
  MAX_LIST_LIMIT,
  claimedMessage,
  deadLetterError,
  checkMarkDelivered,
  checkMarkFailed,
  checkBroadcast,
  checkJournalFilter,
  checkNonceSlot,
  checkNonceSlotOutcome,
  checkSignerKey,
  checkAcquireSigner,
  checkSignerLease,
  signerLeaseAllows,
  type CheckedFailure,
  newLease,
  validateOutboxBatch,
} from './checks.ts';
export {
  checkPrune,
  MAX_PRUNE_LIMIT,
  PRUNE_BATCH,
  PRUNE_EVERY_MS,
  startRetention,
  type PruneOptions,
  type Pruned,
  type Retention,
  type RetentionOptions,
} from './retention.ts';
export { checkGasPayments, checkGasSpent, checkRequiredGas } from './gas-checks.ts';
export { createMemoryOutbox, type MemoryOutbox, type MemoryOutboxOptions } from './memory/outbox.ts';
