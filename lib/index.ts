/** relayer-api: the pure core. Web APIs only: no node:* import anywhere below this file. */
export { keccak256 } from './codec/keccak.ts';
export { bytesToHex, hexToBytes } from './codec/hex.ts';
export * from './errors/family.ts';
export {
  REASON_STATUS,
  retryAfterHeader,
  toRelayError,
  type CcipReadFailureCode,
  type ClientFailureCode,
  type DecodeCode,
  type DeliveryFailureCode,
  type ErrorCode,
  type Reason,
  type RelayApiErrorOptions,
  type RelayErrorOptions,
  type RpcFailureCode,
  type TransactionFailureCode,
  type UsageCode,
} from './errors/classes.ts';
export { systemClock, type Clock, type TimerOptions } from './clock.ts';
export {
  DISPATCH_TOPIC,
  GAS_PAYMENT_TOPIC,
  MESSAGE_SENT_TOPIC,
  decodeDispatchLog,
  decodeGasPaymentLog,
  decodeMessageSentLog,
  type DispatchEvent,
  type GasPaymentEvent,
  type Log,
} from './codec/abi.ts';
export { parseHyperlaneMessage, type HyperlaneMessage } from './codec/message.ts';
export {
  DEFAULT_CCTP_V2_TRANSMITTER,
  DEFAULT_CCTP_V2_TRANSMITTERS,
  extractMessages,
  parseCctpV2Message,
  type CctpV2Message,
} from './codec/cctp.ts';
export {
  compileMatchingList,
  createPolicy,
  matchesList,
  parseMatchingList,
  type CompiledMatchingList,
  type MatchingRule,
  type PolicyConfig,
} from './relay/policy.ts';
export {
  checkGasPayment,
  checkGasPaymentForEstimate,
  createGasPolicySelector,
  parseGasPaymentEnforcement,
  processGasLimit,
  requiredGas,
  type GasPaid,
  type GasPaymentCheck,
  type GasPaymentShortfall,
  type GasPolicySelector,
} from './gas/policy.ts';
export {
  gasPaymentLogFilter,
  gasPaymentsIn,
  sumGasPayments,
  type GasBookStore,
  type GasPayment,
  type GasPaymentStore,
  type GasSpend,
  type PayableMessage,
} from './gas/payment.ts';
export { feesWithinCap, replacementFees, type FeeDecision, type Fees, type FeeWait } from './gas/fee-ceiling.ts';
export { addressRange, isPublicAddress, parseIpAddress, type AddressRange, type IpAddress } from './net/ip-address.ts';
export {
  createMemoryDedupStore,
  type DedupCacheOptions,
  type DedupStore,
  type MemoryDedupStore,
  type MemoryReservation,
  type Reservation,
} from './relay/dedup.ts';
export {
  createTokenBucket,
  type RateLimiter,
  type TakeResult,
  type TokenBucket,
  type TokenBucketOptions,
} from './relay/rate-limit.ts';
export type { ClientRateLimiter } from './relay/client-rate-limit.ts';
export type { ChangeFeed, ChangeHub, ChangeListener, OutboxChange } from './outbox/change-feed.ts';
export {
  callStore,
  isStoreUnavailable,
  StoreUnavailableError,
  toStoreError,
  withDeadline,
  STORE_RETRY_AFTER_SECONDS,
  type AdmittedRelay,
  type RelayAdmission,
  type RelayerStore,
} from './store/bundle.ts';
export {
  createReceiptFetcher,
  parseReceipt,
  type Receipt,
  type ReceiptFetchEvent,
  type ReceiptFetcherOptions,
  type ReceiptSource,
} from './rpc/receipt.ts';
export {
  hideUrls,
  redactDatabaseSecrets,
  redactDatabaseUrl,
  redactEndpoint,
  redactUrl,
  redactUrls,
  urlForLog,
} from './redact.ts';
export {
  createRpcClient,
  type BodySink,
  type ChunkedBody,
  type ChunkedResponse,
  type FetchLike,
  type RpcCall,
  type RpcFetch,
  type RpcOptions,
  type RpcResponse,
} from './rpc/client.ts';
export type { RpcFailureClass } from './rpc/diagnostics.ts';
export type { GasPaymentJson, MessagesOfTxJson, MessageStatusJson } from './relay/message-status.ts';
export { createMemoryMerkleStore, type MemoryMerkleStore } from './store/merkle.ts';
export {
  claimedMessage,
  createMemoryOutbox,
  deadLetterError,
  type Asynchronous,
  type AttemptState,
  type Broadcast,
  type BroadcastFence,
  type ClaimedMessage,
  type ClaimOptions,
  type JournalEntry,
  type ListOptions,
  type MarkDeliveredOptions,
  type MarkFailedOptions,
  type MemoryOutbox,
  type MemoryOutboxOptions,
  type MessageStatus,
  type Outbox,
  type OutboxMessage,
  type OutboxRecord,
  type Pruned,
  type PruneOptions,
  type RelayQueue,
  type RequeueFailedOptions,
  type SignerKey,
  type SignerLease,
  type SignerLeaseAnswer,
  type NonceSlot,
  type NonceSlotOutcome,
  type Synchronous,
  type VersionedReads,
  type VersionedRecord,
} from './outbox/index.ts';
export { parseConfig, defaultConfig } from './config/parse.ts';
export {
  createRelayPipeline,
  type RelayPipeline,
  type RelayPipelineOptions,
  type RelayCallOptions,
} from './relay/pipeline.ts';
export {
  validateRelayRequest,
  validateMerkleRequest,
  validateMerkleRange,
  MAX_ORIGIN_CHAIN_BYTES,
  type MerkleRange,
  type ValidRelayRequest,
} from './relay/validate.ts';
export {
  createLogger,
  fromPinoLogger,
  isLogLevel,
  silentLogger,
  LOG_LEVELS,
  type FieldsFirstLogger,
  type Logger,
  type LoggerOptions,
  type LogLevel,
} from './log.ts';
export type * from './types.ts';
export {
  DEFAULT_TRANSACTION_GAS_LIMIT,
  effectivePolicies,
  policyOptOuts,
  unstatedPolicy,
  type DestinationPolicy,
} from './config/stated-policy.ts';
