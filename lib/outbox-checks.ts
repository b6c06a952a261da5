/**
 * The argument checks every outbox engine shares (memory, SQLite, PostgreSQL), so they refuse the
 * same calls with the same errors (lib/outbox.ts re-exports them).
 */
import { InvalidArgumentError, OutOfRangeError } from './errors.ts';
import { isHexOfLength, isUint } from './hex.ts';
import type { ClaimOptions, MarkDeliveredOptions, MarkFailedOptions, OutboxMessage } from './outbox.ts';

/** last_error is shown by GET /relay/{id}: a worker's multi-kilobyte RPC error is cut here. */
export const MAX_ERROR_LENGTH = 1000;
/** Longer than any chain's transaction id (EVM 66, Solana ~88 base58, Cosmos 64). */
export const MAX_DESTINATION_TX_HASH_LENGTH = 256;

/** Checks claim()'s arguments (shared by every engine); returns maxAttempts or null. */
export function checkClaim(limit: number, leaseMs: number, opts?: ClaimOptions): number | null {
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw new OutOfRangeError(`claim(limit): expected a non-negative integer, got ${limit}`);
  checkLeaseMs('claim', leaseMs);
  if (opts !== undefined && (typeof opts !== 'object' || opts === null))
    throw new InvalidArgumentError('claim(opts): expected an object');
  const max = opts?.maxAttempts;
  if (max === undefined) return null;
  if (!Number.isSafeInteger(max) || max < 1 || max > 2 ** 31 - 1) {
    throw new OutOfRangeError(`claim(maxAttempts): expected a positive integer, got ${max}`);
  }
  return max;
}

/** Checks extend()'s arguments (shared by every engine). */
export function checkExtend(lease: unknown, leaseMs: number): string {
  checkLeaseMs('extend', leaseMs);
  return checkLease(lease, 'extend');
}

function checkLeaseMs(method: string, leaseMs: number): void {
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0)
    throw new OutOfRangeError(`${method}(leaseMs): expected a positive integer, got ${leaseMs}`);
}

/** The last_error of a message claim() dead-lettered after `expiries` expired leases. */
export function deadLetterError(expiries: number, maxAttempts: number): string {
  return `dead letter: its lease expired ${expiries} times with no outcome recorded (maxAttempts ${maxAttempts})`;
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

/** Throws on an invalid markFailed call; returns what to store (retryAt null when final). */
export function checkMarkFailed(opts: MarkFailedOptions): { error: string; retryAt: number | null; lease: string } {
  if (typeof opts?.error !== 'string') throw new InvalidArgumentError('markFailed: error must be a string');
  let error = opts.error.slice(0, MAX_ERROR_LENGTH);
  // Do not keep half of a surrogate pair cut at the limit.
  if (/[\ud800-\udbff]$/.test(error)) error = error.slice(0, -1);
  const lease = checkLease(opts.lease, 'markFailed');
  if ('final' in opts) {
    if (opts.final !== true) throw new InvalidArgumentError('markFailed: final must be true');
    return { error, retryAt: null, lease };
  }
  const retryAt = (opts as { retryAt?: unknown }).retryAt;
  if (typeof retryAt !== 'number' || !Number.isFinite(retryAt))
    throw new InvalidArgumentError('markFailed: retryAt must be a finite number (ms) or final: true');
  return { error, retryAt, lease };
}

/**
 * The lease is required (README.md, "Delivery workers"): a call without one is a programming
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

/** Throws a TypeError naming the first invalid message and field; a batch is all valid or refused. */
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
  });
}
