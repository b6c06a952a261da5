/**
 * `relayer-api/worker`: the delivery worker, the outbox's consumer (docs/design.md#delivery).
 * `viem` is its one dependency, an optional peer dependency of the package: only this entry point
 * loads it. What it exports: createRelayerWorker (lib/worker/wiring.ts wires a worker from a relayer
 * config), the loop, the destinations, the transaction sender, CCIP-read, the metadata builder and
 * its ISM types (docs/isms.md#the-metadata-builder), the signers' view, the watch and the ops server.
 */
export {
  createRelayerWorker,
  gatewayForLog,
  isPrivateKey,
  type RelayerWorker,
  type RelayerWorkerOptions,
} from './wiring.ts';
export { createDeliveryWorker, type DeliveryWorker, type DeliveryWorkerOptions } from './loop/worker.ts';
export { createGasGate, type GasGateOptions, type OriginLog, type PaymentOrigin } from './gas/gate.ts';
export type { RelayerWorkerOutbox } from './gas/config.ts';
export { formatAttemptState, type AttemptState } from './loop/record.ts';
export { type DeliveryLoopConfig, WORKER_DEFAULTS } from './types.ts';
export {
  DEFAULT_TRANSACTION_GAS_LIMIT,
  effectivePolicies,
  policyOptOuts,
  unstatedPolicy,
  type DestinationPolicy,
} from '../config/stated-policy.ts';
export type {
  DeliveryEvents,
  DeliveryOutbox,
  DeliveryResult,
  DeliveryPolicy,
  Destination,
  Processed,
  ProcessOptions,
  Resumed,
} from './types.ts';
export { createNonceBook, type NonceBook, type NonceBookStart } from './tx/nonces.ts';
export type { TransactionJournal } from './tx/journal.ts';
export { openNonceSlots, type OpenNonceSlot } from './tx/slots.ts';
export { createMailboxDestination, type MailboxDestinationOptions } from './chain/destination.ts';
export {
  ccipRead,
  CcipReadError,
  decodeOffchainLookup,
  type CcipReadOptions,
  type CcipReadRefusal,
  type OffchainLookup,
  type ResolvedAddress,
  type Resolver,
} from './ccip/read.ts';
export {
  createTransactionSender,
  TransactionError,
  type SendOptions,
  type SendResult,
  type SimulateResult,
  type NonceSlotState,
  type TransactionRequest,
  type TransactionSender,
  type TransactionSenderOptions,
  type TxEvent,
  DEFAULT_REPLACE_AFTER_BLOCKS,
} from './tx/sender.ts';
export { DeliveryError, type DeliveryFailureCode } from './errors.ts';
export * from '../errors/family.ts';
export type { CcipReadAttempt } from './ccip/read.ts';
export type { LocalAddresses, TargetRefusal } from './ccip/target.ts';
export type { Hex } from './ccip/offchain-lookup.ts';
export type { TopUpSearchOptions } from './gas/top-ups.ts';
export { formatSignerView, reportSigners, signerView } from './ops/signers-view.ts';
export type {
  BroadcastView,
  SignerView,
  SignerViewChain,
  SignerViewOutbox,
  NonceSlotView,
} from './ops/signers-view.ts';
export type { SignerHolds, NamedSignerKey, SignerLeaseStore, NonceSlotNodeState } from './signer-exports.ts';
export {
  createWorkerWatch,
  type ChainState,
  type WatchedChain,
  type WorkerWatch,
  type WorkerWatchOptions,
} from './chain/watch.ts';
export {
  buildMetadata,
  ISM_TYPE,
  MAILBOX_ABI,
  type LookupBudget,
  type MessageSource,
  type MetadataOptions,
  type MultisigBuilder,
  type MultisigIsmType,
  type MultisigRequest,
  type OffchainReader,
} from './ism/metadata.ts';
export { createIsmReads, ISM_FRESH_MS, type IsmReads } from './ism/head-reads.ts';
export {
  createOpsServer,
  createWorkerMetrics,
  DELIVERY_BUCKETS,
  type OpsServer,
  type OpsServerOptions,
  type WorkerMetrics,
  type WorkerMetricSources,
} from './ops/server.ts';
