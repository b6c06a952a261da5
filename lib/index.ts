/** relayer-api: the pure core. Web APIs only: no node:* import anywhere below this file. */
export { keccak256 } from './keccak.ts';
export { bytesToHex, hexToBytes } from './hex.ts';
export {
  BaseError,
  ConfigError,
  DecodeError,
  RelayError,
  RpcError,
  REASON_STATUS,
  retryAfterHeader,
  toRelayError,
  type DecodeCode,
  type ErrorCode,
  type Reason,
  type RpcFailureCode,
} from './errors.ts';
export { systemClock, type Clock } from './clock.ts';
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
} from './abi.ts';
export { parseHyperlaneMessage, type HyperlaneMessage } from './message.ts';
export {
  DEFAULT_CCTP_V2_TRANSMITTER,
  DEFAULT_CCTP_V2_TRANSMITTERS,
  extractMessages,
  parseCctpV2Message,
  type CctpV2Message,
} from './cctp.ts';
export { compileMatchingList, createPolicy, matchesList, parseMatchingList, type MatchingRule } from './policy.ts';
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
} from './gas-policy.ts';
export {
  gasPaymentLogFilter,
  gasPaymentsIn,
  sumGasPayments,
  type GasPayment,
  type PayableMessage,
} from './gas-payment.ts';
export { feesWithinCap, replacementFees, type FeeDecision, type Fees, type FeeWait } from './fee-ceiling.ts';
export { addressRange, isPublicAddress, parseIpAddress, type AddressRange, type IpAddress } from './ip-address.ts';
export { createMemoryDedupStore, createDedupCache, type DedupStore, type Reservation } from './dedup.ts';
export { createTokenBucket, type RateLimiter, type TakeResult } from './rate-limit.ts';
export {
  callStore,
  isStoreUnavailable,
  StoreUnavailableError,
  toStoreError,
  withDeadline,
  STORE_RETRY_AFTER_SECONDS,
  type RelayerStore,
} from './store.ts';
export {
  createReceiptFetcher,
  parseReceipt,
  type Receipt,
  type ReceiptFetchEvent,
  type ReceiptFetcherOptions,
  type ReceiptSource,
} from './receipt.ts';
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
  type ChunkedBody,
  type ChunkedResponse,
  type FetchLike,
  type RpcCall,
  type RpcFetch,
  type RpcOptions,
} from './rpc.ts';
export { createMemoryMerkleStore, type MemoryMerkleStore } from './merkle.ts';
export {
  claimedMessage,
  createMemoryOutbox,
  deadLetterError,
  type Outbox,
  type OutboxMessage,
  type OutboxRecord,
  type ClaimedMessage,
  type MessageStatus,
  type MarkDeliveredOptions,
  type MarkFailedOptions,
  type RelayQueue,
} from './outbox/index.ts';
export { parseConfig, defaultConfig } from './config.ts';
export {
  createRelayPipeline,
  type RelayPipeline,
  type RelayPipelineOptions,
  type RelayCallOptions,
} from './pipeline.ts';
export {
  validateRelayRequest,
  validateMerkleRequest,
  validateMerkleRange,
  MAX_ORIGIN_CHAIN_BYTES,
} from './validate.ts';
export { createLogger, isLogLevel, silentLogger, LOG_LEVELS, type Logger, type LogLevel } from './log.ts';
export type * from './types.ts';
