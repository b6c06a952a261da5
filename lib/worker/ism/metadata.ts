/**
 * The metadata a message's ISM wants (docs/isms.md#the-metadata-builder): the recursive builder
 * of lib/worker/ism/, re-exported here under the names the worker entry has always had.
 */
export { ISM_ABI, ISM_TYPE, MAILBOX_ABI } from './abi.ts';
export {
  buildMetadata,
  MAX_ISM_DEPTH,
  MAX_ISMS_PER_MESSAGE,
  type MessageSource,
  type MetadataOptions,
  type MultisigBuilder,
  type MultisigIsmType,
  type MultisigRequest,
} from './build.ts';
export type { LookupBudget } from './checkpoints.ts';
export { offchainLookupRevert, revertData, type OffchainReader } from './offchain.ts';
