/**
 * Types shared across the core and its adapters: the HTTP request and response bodies and the
 * configuration. Addresses and ids are lower-case 0x hex. A type one module owns lives there.
 */
import type { MatchingRule } from './relay/policy.ts';

/** POST /relay request body (docs/api.md#post-relay). */
export interface RelayRequest {
  origin_chain: string;
  tx_hash: string;
}

/** One accepted message in the POST /relay response (docs/api.md#post-relay). */
export interface MessageSummary {
  message_id: string;
  origin: number;
  destination: number;
  nonce: number;
}

/** POST /relay success body (docs/api.md#post-relay). */
export interface RelayResponse {
  messages: MessageSummary[];
}

/** A chain as the relayer knows it (normalised from the config file). */
export interface ChainConfig {
  name: string;
  domainId: number;
  chainId?: number;
  /** Mailbox address, 20 bytes, lower-case. */
  mailbox: string;
  /** CCTP V2 MessageTransmitter address(es), 20 bytes, lower-case. */
  cctpMessageTransmitters: string[];
  rpcUrls: string[];
  /**
   * The InterchainGasPaymaster whose `GasPayment` logs pay for messages from this chain (gas payment
   * enforcement), 20 bytes, lower-case.
   */
  interchainGasPaymaster?: string;
  /** Limits on the transactions the worker signs on this chain. */
  transactionOverrides?: TransactionOverrides;
  /** `index.chunk`: blocks per eth_getLogs request when the worker searches this chain for gas payment top-ups. */
  index?: { chunk?: number };
  /** The MerkleTreeHook of this chain's Mailbox (multisig ISMs of messages from it), 20 bytes, lower-case. */
  merkleTreeHook?: string;
  /** The ValidatorAnnounce naming its validators' checkpoint storage, 20 bytes, lower-case. */
  validatorAnnounce?: string;
}

/** `chains.NAME.transactionOverrides` (Hyperlane's key names). */
export interface TransactionOverrides {
  /**
   * No transaction is signed with `maxFeePerGas` (or `gasPrice`) above this many wei; null: no
   * ceiling, stated (`"none"`). A worker refuses to start without it (docs/worker-configuration.md#stated-gas-policy).
   */
  gasPriceCap?: bigint | null;
}

export interface RateLimitConfig {
  burst: number;
  perMinute: number;
}

export interface RelayApiConfig {
  rateLimit: RateLimitConfig;
  /** Each client's own bucket in front of the global one (docs/api.md#per-client-limits); null: none. */
  clientRateLimit: RateLimitConfig | null;
  dedupWindowSeconds: number;
  dedupCapacity: number;
  receiptTimeoutSeconds: number;
  maxMessagesPerTx: number;
}

export interface ServerConfig {
  host: string;
  port: number;
  adminToken: string | null;
  corsOrigins: string[];
  maxRelayBodyBytes: number;
  maxMerkleBodyBytes: number;
  /** Proxies whose X-Forwarded-For names the client (addresses or CIDR blocks). */
  trustedProxies: string[];
  /** Each client's budget of status reads and stream openings; null: none (default 600, 1 200 a minute). */
  readRateLimit: RateLimitConfig | null;
  /** Status event streams open at once, in all and per client. */
  maxSubscribers: number;
  maxSubscribersPerClient: number;
  /** Seconds a status stream stays open at most; the client reconnects with Last-Event-ID. */
  streamMaxSeconds: number;
  /** Seconds a transaction's status stream waits for its first message before it ends. */
  txStreamWaitSeconds: number;
  /** Days a delivered message and a closed journal row are kept; null: forever (docs/configuration.md#retention). */
  retentionDays: number | null;
}

/** relayer-worker's section (docs/worker-configuration.md#the-worker-section). Durations in the unit their name says. */
export interface WorkerConfig {
  /** The ops server (/metrics, /ready). */
  host: string;
  port: number;
  /** Messages per claim. */
  batch: number;
  /** Messages delivered at once by one worker. */
  concurrency: number;
  leaseSeconds: number;
  /** Failed attempts (pending polls not counted) before a message is failed for good. */
  maxAttempts: number;
  /** Expired leases (its worker died mid-delivery) before the outbox gives a message up. */
  maxLeaseExpiries: number;
  /** Blocks on top of the one with the transaction, plus one, before it counts as delivered. */
  confirmations: number;
  pendingDeadlineHours: number;
  /** First poll of a proof that is not ready, doubling up to pendingRetryMaxSeconds. */
  pendingRetrySeconds: number;
  pendingRetryMaxSeconds: number;
  retryBaseSeconds: number;
  retryMaxSeconds: number;
  /** Wait after a claim that found nothing. */
  pollMs: number;
  gasMarginPercent: number;
  /**
   * A transaction not mined within this is re-sent with the same nonce and higher fees (whichever
   * of this and replaceAfterBlocks comes first).
   */
  replaceAfterSeconds: number;
  /** A transaction not mined this many blocks after it was sent is re-sent with the same nonce and higher fees. */
  replaceAfterBlocks: number;
  /** Per CCIP-read gateway URL. */
  ccipReadTimeoutSeconds: number;
  /** Per message and attempt: all of its CCIP-read gateway requests together. */
  ccipReadBudgetSeconds: number;
  /**
   * How long one message's CCIP-read lookup may hold its delivery slot; past it the lookup goes on
   * in the background and the message is given back (not counted) until it ends.
   */
  ccipReadHoldSeconds: number;
  /**
   * Origins (`http://host:port`, normalised) of CCIP-read gateways asked although their address is
   * not public: gateways in your own network. Default none.
   */
  ccipReadAllowOrigins: string[];
  /**
   * Base URLs replacing the public S3 and GCS hosts for validators' checkpoints (path-style
   * `{endpoint}/{bucket}/{key}`): S3-compatible stores, tests. Default: the public hosts.
   */
  checkpointEndpoints?: { s3?: string; gcs?: string };
  /** How long a message may wait for its gas payment before it is failed. */
  gasPaymentDeadlineHours: number;
  /** On SIGTERM, how long transactions already sent are followed before the worker exits. */
  stopGraceSeconds: number;
  /** Between heartbeat log lines, each with a check of the destinations' chain ids and balances. */
  heartbeatSeconds: number;
  /** Below this balance (gwei) on a destination, the signer's balance is logged at warn. */
  minSignerBalanceGwei: number;
}

/** The whole configuration after validation and defaults (docs/design.md#configuration). */
export interface RelayerConfig {
  chains: Record<string, ChainConfig>;
  /** Names of the chains messages may be relayed to. */
  relayChains: string[];
  whitelist: MatchingRule[];
  blacklist: MatchingRule[];
  /** 20-byte addresses, lower-case. */
  addressBlacklist: string[];
  relayApi: RelayApiConfig;
  server: ServerConfig;
  worker: WorkerConfig;
  /**
   * Who pays for delivery gas (docs/gas.md#gas-payment-enforcement): the first entry whose
   * matching list matches decides. Absent or empty: a worker refuses to start
   * (docs/worker-configuration.md#stated-gas-policy); the server then shows every message as payable.
   */
  gasPaymentEnforcement?: GasPaymentEnforcement[];
  /** No `process` transaction above this much gas; absent: 3 000 000; null: no limit (`"none"`). */
  transactionGasLimit?: bigint | null;
  /**
   * Whether validators' `file://` checkpoint locations are read (docs/isms.md#what-a-recipient-can-make-us-read):
   * a recipient chooses its ISM, hence the validators and the locations. Default false.
   */
  allowLocalCheckpointSyncers?: boolean;
  /** SQLite file path or ":memory:". */
  db: string;
}

export type GasPolicyType = 'none' | 'minimum' | 'onChainFeeQuoting';

/**
 * One entry of `gasPaymentEnforcement`, normalised (lib/gas/policy.ts reads and applies them).
 * `matchingList` empty = every message.
 */
export type GasPaymentEnforcement =
  | { type: 'none'; matchingList: MatchingRule[] }
  | { type: 'minimum'; payment: bigint; matchingList: MatchingRule[] }
  | { type: 'onChainFeeQuoting'; gasFraction: GasFraction; matchingList: MatchingRule[] };

/** `gasFraction: "n/d"`. */
export interface GasFraction {
  numerator: bigint;
  denominator: bigint;
}

/** A merkle tree insertion record (docs/api.md#post-merkle_tree_insertions). */
export interface MerkleInsertion {
  chain: number;
  insertion_block_number: number;
  leaf_index: number;
  message_id: string;
}

/** Where merkle tree insertions are kept (the memory, SQLite and PostgreSQL stores implement it). */
export interface MerkleStore {
  /** Writes all records in one transaction (a repeated (chain, leaf_index) replaces); returns rows written. */
  insertMerkle(records: readonly MerkleInsertion[]): number | Promise<number>;
  /** Records of `domain` with start <= leaf_index <= end, ordered by leaf_index. */
  listMerkle(domain: number, start: number, end: number): MerkleInsertion[] | Promise<MerkleInsertion[]>;
}

/** The global fetch's shape as the library calls it (JSON-RPC in the core, the API in relayer-api/client). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;
