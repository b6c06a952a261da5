/**
 * The argument checks every outbox engine shares (memory, SQLite, PostgreSQL), so they refuse the
 * same calls with the same errors (lib/outbox/types.ts re-exports them).
 */
import { InvalidArgumentError, OutOfRangeError } from '../errors/classes.ts';
import { isHexOfLength, isUint } from '../codec/hex.ts';
import { checkGasPayments } from './gas-checks.ts';
import type {
  AttemptState,
  Broadcast,
  BroadcastFence,
  ClaimedMessage,
  ClaimOptions,
  MarkDeliveredOptions,
  MarkFailedOptions,
  OutboxMessage,
  OutboxRecord,
  NonceSlot,
  NonceSlotOutcome,
  ListOptions,
  MessageStatus,
  RequeueFailedOptions,
  SignerKey,
} from './types.ts';

/** last_error is shown by GET /relay/{id}: a worker's multi-kilobyte RPC error is cut here. */
export const MAX_ERROR_LENGTH = 1000;
/** Longer than any chain's transaction id (EVM 66, Solana ~88 base58, Cosmos 64). */
export const MAX_DESTINATION_TX_HASH_LENGTH = 256;
/** A signed transaction in the journal, as hex: 256 KiB of bytes, far above a Mailbox delivery with CCIP-read metadata. */
export const MAX_RAW_TRANSACTION_LENGTH = 2 + 2 * 256 * 1024;

/** Checks claim()'s arguments (shared by every engine); returns maxLeaseExpiries or null. */
export function checkClaim(limit: number, leaseMs: number, opts?: ClaimOptions): number | null {
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw new OutOfRangeError(`claim(limit): expected a non-negative integer, got ${limit}`);
  checkLeaseMs('claim', leaseMs);
  if (opts !== undefined && (typeof opts !== 'object' || opts === null))
    throw new InvalidArgumentError('claim(opts): expected an object');
  const max = opts?.maxLeaseExpiries;
  if (max === undefined) return null;
  if (!Number.isSafeInteger(max) || max < 1 || max > 2 ** 31 - 1) {
    throw new OutOfRangeError(`claim(maxLeaseExpiries): expected a positive integer, got ${max}`);
  }
  return max;
}

/** list() answers at most this many messages by default, requeueFailed() this many at most. */
export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1000;
const STATUSES: readonly MessageStatus[] = ['queued', 'delivering', 'delivered', 'failed'];

/** Checks list()'s options (shared by every engine); null for what is not filtered on. */
export function checkList(opts?: ListOptions): {
  status: MessageStatus | null;
  destination: number | null;
  limit: number;
} {
  const { destination, limit } = checkSelection('list', opts, DEFAULT_LIST_LIMIT);
  const status = opts?.status;
  if (status !== undefined && !STATUSES.includes(status))
    throw new InvalidArgumentError(`list(status): expected one of ${STATUSES.join(', ')}, got ${String(status)}`);
  return { status: status ?? null, destination, limit };
}

/** Checks requeueFailed()'s options (shared by every engine). */
export function checkRequeueFailed(opts?: RequeueFailedOptions): { destination: number | null; limit: number } {
  return checkSelection('requeueFailed', opts, MAX_LIST_LIMIT);
}

function checkSelection(
  method: string,
  opts: { destination?: number; limit?: number } | undefined,
  defaultLimit: number,
): { destination: number | null; limit: number } {
  if (opts !== undefined && (typeof opts !== 'object' || opts === null))
    throw new InvalidArgumentError(`${method}(opts): expected an object`);
  const { destination, limit = defaultLimit } = opts ?? {};
  if (destination !== undefined && !isUint(destination, 0xffff_ffff))
    throw new OutOfRangeError(`${method}(destination): expected a uint32 domain, got ${destination}`);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
    throw new OutOfRangeError(`${method}(limit): expected an integer from 1 to ${MAX_LIST_LIMIT}, got ${limit}`);
  return { destination: destination ?? null, limit };
}

/** Checks extend()'s arguments (shared by every engine). */
export function checkExtend(lease: unknown, leaseMs: number): string {
  checkLeaseMs('extend', leaseMs);
  return checkLease(lease, 'extend');
}

function checkLeaseMs(method: string, leaseMs: unknown): asserts leaseMs is number {
  if (typeof leaseMs !== 'number' || !Number.isSafeInteger(leaseMs) || leaseMs <= 0)
    throw new OutOfRangeError(`${method}(leaseMs): expected a positive integer, got ${leaseMs}`);
}

/**
 * The last look (docs/delivery.md#retries-pending-proofs-dead-letters): a message claimed with
 * `leaseExpiries` >= maxLeaseExpiries is handed out flagged `lastChance`; claim() dead-letters only an
 * expired lease of such a claim. Every engine returns its claimed rows through this.
 */
export function claimedMessage(record: OutboxRecord, lease: string, maxLeaseExpiries: number | null): ClaimedMessage {
  return maxLeaseExpiries !== null && record.leaseExpiries >= maxLeaseExpiries
    ? { ...record, lease, lastChance: true }
    : { ...record, lease };
}

/** The last_error of a message claim() dead-lettered after `expiries` expired leases. */
export function deadLetterError(expiries: number, maxLeaseExpiries: number): string {
  return `dead letter: its lease expired ${expiries} times with no outcome recorded (maxLeaseExpiries ${maxLeaseExpiries})`;
}

/** Throws on an invalid markDelivered call; returns the options to store. */
export function checkMarkDelivered(opts: MarkDeliveredOptions): { destinationTxHash: string; lease: string } {
  const hash = opts?.destinationTxHash;
  if (typeof hash !== 'string' || hash.length === 0 || hash.length > MAX_DESTINATION_TX_HASH_LENGTH) {
    throw new InvalidArgumentError(
      `markDelivered: destinationTxHash must be a string of 1..${MAX_DESTINATION_TX_HASH_LENGTH} characters`,
    );
  }
  return { destinationTxHash: hash, lease: checkLease(opts.lease, 'markDelivered') };
}

/** What markFailed stores: retryAt null when final, state null when the columns stay as they are. */
export interface CheckedFailure {
  error: string | null;
  retryAt: number | null;
  lease: string;
  state: AttemptState | null;
}

/** Throws on an invalid markFailed call; returns what to store. */
export function checkMarkFailed(opts: MarkFailedOptions): CheckedFailure {
  const given = opts?.error;
  if (typeof given !== 'string' && given !== null)
    throw new InvalidArgumentError('markFailed: error must be a string, or null with retryAt');
  let error = given === null ? null : given.slice(0, MAX_ERROR_LENGTH);
  // Do not keep half of a surrogate pair cut at the limit.
  if (error !== null && /[\ud800-\udbff]$/.test(error)) error = error.slice(0, -1);
  const lease = checkLease(opts.lease, 'markFailed');
  const state = opts.state === undefined ? null : checkAttemptState(opts.state);
  if ('final' in opts) {
    if (opts.final !== true) throw new InvalidArgumentError('markFailed: final must be true');
    // A final failure always says why.
    if (error === null) throw new InvalidArgumentError('markFailed: error must be a string when final');
    return { error, retryAt: null, lease, state };
  }
  const retryAt = (opts as { retryAt?: unknown }).retryAt;
  if (typeof retryAt !== 'number' || !Number.isFinite(retryAt))
    throw new InvalidArgumentError('markFailed: retryAt must be a finite number (ms) or final: true');
  return { error, retryAt, lease, state };
}

function checkAttemptState(state: AttemptState): AttemptState {
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0 && (n as number) <= 2 ** 31 - 1;
  if (typeof state !== 'object' || state === null)
    throw new InvalidArgumentError('markFailed: state must be an object');
  if (!count(state.failures)) throw new OutOfRangeError('markFailed: state.failures must be a non-negative integer');
  if (!count(state.polls)) throw new OutOfRangeError('markFailed: state.polls must be a non-negative integer');
  const since = state.pendingSince;
  if (since !== null && (typeof since !== 'number' || !Number.isFinite(since)))
    throw new InvalidArgumentError('markFailed: state.pendingSince must be a finite number (ms) or null');
  return { failures: state.failures, pendingSince: since, polls: state.polls };
}

const isAddress = (value: unknown): value is string => typeof value === 'string' && /^0x[0-9a-f]{40}$/.test(value);

/** Throws on an invalid slot (chain id, lower-case signer address, nonce). */
export function checkNonceSlot(slot: NonceSlot, method: string): NonceSlot {
  if (typeof slot !== 'object' || slot === null) throw new InvalidArgumentError(`${method}: expected an object`);
  if (!Number.isSafeInteger(slot.chainId) || slot.chainId < 0)
    throw new OutOfRangeError(`${method}: chainId must be a non-negative integer`);
  if (!isAddress(slot.signer)) throw new InvalidArgumentError(`${method}: signer must be a lower-case 0x address`);
  if (!Number.isSafeInteger(slot.nonce) || slot.nonce < 0)
    throw new OutOfRangeError(`${method}: nonce must be a non-negative integer`);
  return { chainId: slot.chainId, signer: slot.signer, nonce: slot.nonce };
}

/** Throws on an invalid recordBroadcast call; returns the broadcast and fence to store. */
export function checkBroadcast(
  b: Broadcast,
  fence: BroadcastFence | undefined,
): { broadcast: Broadcast; fence: BroadcastFence | null } {
  const slot = checkNonceSlot(b, 'recordBroadcast');
  if (!isHexOfLength(b.messageId, 32) || b.messageId !== b.messageId.toLowerCase())
    throw new InvalidArgumentError('recordBroadcast: messageId must be lower-case 0x + 64 hex');
  if (!isHexOfLength(b.hash, 32) || b.hash !== b.hash.toLowerCase())
    throw new InvalidArgumentError('recordBroadcast: hash must be lower-case 0x + 64 hex');
  if (typeof b.raw !== 'string' || !/^0x(?:[0-9a-f]{2})+$/.test(b.raw) || b.raw.length > MAX_RAW_TRANSACTION_LENGTH)
    throw new InvalidArgumentError(
      `recordBroadcast: raw must be the signed transaction as lower-case 0x-hex, at most ${MAX_RAW_TRANSACTION_LENGTH} characters`,
    );
  const broadcast: Broadcast = { ...slot, messageId: b.messageId, hash: b.hash, raw: b.raw };
  if (b.signerLease !== undefined) broadcast.signerLease = checkLease(b.signerLease, 'recordBroadcast(signerLease)');
  if (fence === undefined) return { broadcast, fence: null };
  checkLeaseMs('recordBroadcast', fence?.leaseMs);
  return { broadcast, fence: { lease: checkLease(fence.lease, 'recordBroadcast'), leaseMs: fence.leaseMs } };
}

/** Throws on an invalid signer key (chain id, lower-case signer address). */
export function checkSignerKey(key: SignerKey, method: string): SignerKey {
  const { chainId, signer } = checkNonceSlot({ ...key, nonce: 0 }, method);
  return { chainId, signer };
}

/** Throws on invalid acquireSignerLease arguments: the holder is printable ASCII, 1..200 characters (it is logged). */
export function checkAcquireSigner(key: SignerKey, holder: unknown, leaseMs: number): SignerKey & { holder: string } {
  const checked = checkSignerKey(key, 'acquireSignerLease');
  checkLeaseMs('acquireSignerLease', leaseMs);
  if (typeof holder !== 'string' || !/^[\x20-\x7e]{1,200}$/.test(holder))
    throw new InvalidArgumentError('acquireSignerLease: holder must be printable ASCII, 1 to 200 characters');
  return { ...checked, holder };
}

/** Throws on invalid renewSignerLease / releaseSignerLease arguments (leaseMs for a renewal). */
export function checkSignerLease(
  key: SignerKey,
  lease: unknown,
  method: string,
  leaseMs?: number,
): SignerKey & { lease: string } {
  const checked = checkSignerKey(key, method);
  if (leaseMs !== undefined || method === 'renewSignerLease') checkLeaseMs(method, leaseMs);
  return { ...checked, lease: checkLease(lease, method) };
}

/**
 * Whether a broadcast may be recorded given the signer's lease row (docs/transactions.md#one-worker-per-key):
 * under a lease, only while that lease is the row's; without one, only while no live lease holds the signer.
 */
export function signerLeaseAllows(
  row: { lease: string; expiresAt: number } | undefined,
  lease: string | undefined,
  now: number,
): boolean {
  if (lease !== undefined) return row !== undefined && row.lease === lease;
  return row === undefined || row.expiresAt <= now;
}

/** Throws on an invalid closeNonceSlot outcome. */
export function checkNonceSlotOutcome(outcome: NonceSlotOutcome): NonceSlotOutcome {
  if (outcome?.outcome === 'dropped') return { outcome: 'dropped' };
  if (outcome?.outcome === 'mined' && isHexOfLength(outcome.hash, 32) && outcome.hash === outcome.hash.toLowerCase())
    return { outcome: 'mined', hash: outcome.hash };
  throw new InvalidArgumentError(
    "closeNonceSlot: outcome must be { outcome: 'mined', hash } or { outcome: 'dropped' }",
  );
}

/** Throws on an invalid openBroadcasts filter. */
export function checkJournalFilter(
  of: { messageId: string } | { chainId: number; signer: string },
): { messageId: string } | { chainId: number; signer: string } {
  if (typeof of !== 'object' || of === null) throw new InvalidArgumentError('openBroadcasts: expected an object');
  if ('messageId' in of) {
    if (typeof of.messageId !== 'string') throw new InvalidArgumentError('openBroadcasts: messageId must be a string');
    return { messageId: of.messageId.toLowerCase() };
  }
  const { chainId, signer } = checkNonceSlot({ ...of, nonce: 0 }, 'openBroadcasts');
  return { chainId, signer };
}

/**
 * The lease is required (docs/embedding.md#delivery-workers-the-outbox-lifecycle): a call without one is a programming
 * error, thrown, never a silent `false` that a worker might read as "someone else has it".
 */
function checkLease(lease: unknown, method: string): string {
  if (typeof lease !== 'string' || lease.length === 0)
    throw new InvalidArgumentError(`${method}: lease must be the string claim() returned`);
  return lease;
}

/** Unique per claim across processes and replicas (a counter would repeat after a restart). */
export function newLease(): string {
  return crypto.randomUUID();
}

/** Throws an InvalidArgumentError naming the first invalid message and field; a batch is all valid or refused. */
export function validateOutboxBatch(batch: readonly OutboxMessage[]): void {
  if (!Array.isArray(batch)) throw new InvalidArgumentError('batch must be an array');
  batch.forEach((m, i) => {
    const bad = (field: string) => new InvalidArgumentError(`batch[${i}].${field} is invalid`);
    if (typeof m !== 'object' || m === null) throw new InvalidArgumentError(`batch[${i}] is not an object`);
    if (!isHexOfLength(m.id, 32) || m.id !== m.id.toLowerCase()) throw bad('id');
    if (typeof m.originChain !== 'string' || m.originChain.length === 0) throw bad('originChain');
    if (!isHexOfLength(m.txHash, 32) || m.txHash !== m.txHash.toLowerCase()) throw bad('txHash');
    if (!isUint(m.origin)) throw bad('origin');
    if (!isUint(m.destination)) throw bad('destination');
    if (!isUint(m.nonce)) throw bad('nonce');
    if (!(m.raw instanceof Uint8Array)) throw bad('raw');
    if (!Number.isSafeInteger(m.enqueuedAt) || m.enqueuedAt < 0) throw bad('enqueuedAt');
    if (m.gasPayments !== undefined) {
      if (!Array.isArray(m.gasPayments)) throw bad('gasPayments');
      checkGasPayments(m.gasPayments, `batch[${i}].gasPayments`);
    }
  });
}
