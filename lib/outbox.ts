/**
 * The relay outbox (docs/design.md#enqueue, #storage, #message-lifecycle): its types, the batch
 * validation every engine shares, and the in-memory engine, for tests, embedders without
 * persistence, and as the reference the SQLite store is checked against (the same contract suite
 * runs on both). Like the SQLite store it copies what it stores and what it returns, so callers
 * cannot alias its rows.
 */
import { systemClock, type Clock } from './clock.ts';
import { isHexOfLength, isUint } from './hex.ts';

/** A message as it is stored in the relay outbox. */
export interface OutboxMessage {
  id: string;
  originChain: string;
  /** lower-case 0x + 64 hex */
  txHash: string;
  origin: number;
  destination: number;
  nonce: number;
  /** The raw Hyperlane message. */
  raw: Uint8Array;
  /** Milliseconds since the epoch when it was enqueued. */
  enqueuedAt: number;
}

/** Where a message is in its life (docs/design.md#message-lifecycle). */
export type MessageStatus = 'queued' | 'delivering' | 'delivered' | 'failed';

/** An outbox row with its lifecycle: what `get`, `byTx` and the status endpoints read. */
export interface OutboxRecord extends OutboxMessage {
  status: MessageStatus;
  /** Delivery attempts begun: each claim() adds 1 (a lease that expires counted as one). */
  attempts: number;
  /**
   * Leases of this message that expired with no outcome recorded and were then taken over by a
   * later claim() (its worker stopped mid-delivery). claim's `maxAttempts` dead-letters on this
   * count; requeue() resets it to 0.
   */
  leaseExpiries: number;
  /** The error of the last failed attempt (kept after a later success, for the record). */
  lastError: string | null;
  /** Milliseconds since the epoch when it was marked delivered. */
  deliveredAt: number | null;
  destinationTxHash: string | null;
  /** End of the lease while 'delivering', else null. */
  claimedUntil: number | null;
  /** 'queued' after a failure: not claimable before this time, else null. */
  retryAt: number | null;
}

/** A message handed to one delivery worker by claim(). */
export interface ClaimedMessage extends OutboxRecord {
  /** Opaque token of this claim: required by extend, markDelivered and markFailed, so a worker
   * whose lease expired and was taken over cannot overwrite the new holder's outcome. */
  lease: string;
}

/** An outbox row as the SQL engines (SQLite, PostgreSQL) store it; `raw` is engine-specific. */
export interface OutboxRow {
  id: string;
  origin_chain: string;
  tx_hash: string;
  origin: number;
  destination: number;
  nonce: number;
  enqueued_at: number;
  status: MessageStatus;
  attempts: number;
  lease_expiries: number;
  last_error: string | null;
  delivered_at: number | null;
  destination_tx_hash: string | null;
  claimed_until: number | null;
  retry_at: number | null;
}

/** The record of a SQL row, with `raw` already decoded by the engine. */
export function recordFromRow(row: OutboxRow, raw: Uint8Array): OutboxRecord {
  return {
    id: row.id,
    originChain: row.origin_chain,
    txHash: row.tx_hash,
    origin: Number(row.origin),
    destination: Number(row.destination),
    nonce: Number(row.nonce),
    raw,
    enqueuedAt: row.enqueued_at,
    status: row.status,
    attempts: row.attempts,
    leaseExpiries: row.lease_expiries,
    lastError: row.last_error,
    deliveredAt: row.delivered_at,
    destinationTxHash: row.destination_tx_hash,
    claimedUntil: row.claimed_until,
    retryAt: row.retry_at,
  };
}

export interface MarkDeliveredOptions {
  destinationTxHash: string;
  /** The `lease` claim() returned with the message (required). */
  lease: string;
}

export type MarkFailedOptions =
  | { error: string; retryAt: number; lease: string }
  | { error: string; final: true; lease: string };

export interface ClaimOptions {
  /**
   * Dead-letter threshold for workers that stop mid-delivery: a delivering message whose lease
   * expired this many times (`leaseExpiries` + 1 >= maxAttempts when this claim finds it expired)
   * is not handed out again but becomes `failed` with a `lastError` saying so. Only expired
   * leases count here; a worker's own failed attempts (markFailed with retryAt) are counted by
   * the worker from `attempts`. Omitted: expired leases are counted but never dead-letter.
   */
  maxAttempts?: number;
}

/**
 * Where accepted messages go. `enqueue` stores the whole batch atomically (all or nothing) and
 * is idempotent by message id: a message already present is not stored twice.
 * Returns the number of messages newly stored.
 */
export interface RelayQueue {
  enqueue(batch: readonly OutboxMessage[]): number | Promise<number>;
}

/**
 * The outbox (docs/design.md#leases): the queue, its readers (the status endpoints) and its
 * consumers (delivery workers). Time comes from the engine's injected Clock.
 */
export interface Outbox extends RelayQueue {
  /** The message with this id (any case), or undefined. */
  get(id: string): OutboxRecord | undefined | Promise<OutboxRecord | undefined>;
  /** The messages accepted from one transaction (tx hash in any case), in enqueue order. */
  byTx(originChain: string, txHash: string): OutboxRecord[] | Promise<OutboxRecord[]>;
  /** Messages not yet delivered nor given up: queued + delivering. */
  depth(): number | Promise<number>;
  /**
   * Takes up to `limit` claimable messages, oldest enqueuedAt first (ties in enqueue order), for
   * `leaseMs`. Claimable: queued with retryAt null or <= now, or delivering with an expired lease
   * (claimedUntil <= now). Each becomes delivering with claimedUntil = now + leaseMs, attempts + 1
   * (and leaseExpiries + 1 when it was taken over from an expired lease) and a fresh lease. Two
   * concurrent claimers never get the same message. With `maxAttempts`, expired messages that
   * reached it are dead-lettered first (see ClaimOptions) and do not count toward `limit`.
   * `now` is read while the engine holds its lock (the database's clock on PostgreSQL).
   */
  claim(limit: number, leaseMs: number, opts?: ClaimOptions): ClaimedMessage[] | Promise<ClaimedMessage[]>;
  /**
   * Renews the lease: claimedUntil = now + leaseMs, for the holder of `lease` only (a worker
   * waiting for confirmations keeps its claim). Like markDelivered it still succeeds on a lease
   * that expired if nobody claimed the message since. false: another lease holds it, or it is
   * delivered, failed, queued again or unknown.
   */
  extend(id: string, lease: string, leaseMs: number): boolean | Promise<boolean>;
  /**
   * delivering -> delivered, deliveredAt = now, only under `lease`: the message must still be
   * delivering under that lease (an expired lease nobody took over still counts: the delivery it
   * covered happened). A missing lease is a TypeError; a wrong or stale one, an unknown, queued,
   * delivered or failed message: false, nothing changed.
   */
  markDelivered(id: string, opts: MarkDeliveredOptions): boolean | Promise<boolean>;
  /**
   * delivering -> queued (lastError, retryAt; claimable again from retryAt) or, with `final`,
   * -> failed; only under `lease`, like markDelivered. Returns whether it changed. `error` is
   * kept to its first MAX_ERROR_LENGTH characters.
   */
  markFailed(id: string, opts: MarkFailedOptions): boolean | Promise<boolean>;
  /**
   * An operator re-drives a dead letter: failed -> queued, claimable at once (retryAt null),
   * attempts and lastError kept, leaseExpiries back to 0 (so the next claim with maxAttempts does
   * not dead-letter it again at once). false for any other status or an unknown id.
   */
  requeue(id: string): boolean | Promise<boolean>;
}

/** `T`'s methods answering synchronously (node:sqlite, the in-memory engine). */
export type Synchronous<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Awaited<R> : T[K];
};

/** `T`'s methods answering with promises (PostgreSQL, the SQLite store's worker proxy). */
export type Asynchronous<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K];
};

/** last_error is shown by GET /relay/{id}: a worker's multi-kilobyte RPC error is cut here. */
export const MAX_ERROR_LENGTH = 1000;
/** Longer than any chain's transaction id (EVM 66, Solana ~88 base58, Cosmos 64). */
export const MAX_DESTINATION_TX_HASH_LENGTH = 256;

/** Checks claim()'s arguments (shared by every engine); returns maxAttempts or null. */
export function checkClaim(limit: number, leaseMs: number, opts?: ClaimOptions): number | null {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`claim(limit): expected a non-negative integer, got ${limit}`);
  checkLeaseMs('claim', leaseMs);
  if (opts !== undefined && (typeof opts !== 'object' || opts === null)) throw new TypeError('claim(opts): expected an object');
  const max = opts?.maxAttempts;
  if (max === undefined) return null;
  if (!Number.isSafeInteger(max) || max < 1 || max > 2 ** 31 - 1) {
    throw new RangeError(`claim(maxAttempts): expected a positive integer, got ${max}`);
  }
  return max;
}

/** Checks extend()'s arguments (shared by every engine). */
export function checkExtend(lease: unknown, leaseMs: number): string {
  checkLeaseMs('extend', leaseMs);
  return checkLease(lease, 'extend');
}

function checkLeaseMs(method: string, leaseMs: number): void {
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0) throw new RangeError(`${method}(leaseMs): expected a positive integer, got ${leaseMs}`);
}

/** The last_error of a message claim() dead-lettered after `expiries` expired leases. */
export function deadLetterError(expiries: number, maxAttempts: number): string {
  return `dead letter: its lease expired ${expiries} times with no outcome recorded (maxAttempts ${maxAttempts})`;
}

/** Throws on an invalid markDelivered call; returns the options to store. */
export function checkMarkDelivered(opts: MarkDeliveredOptions): { destinationTxHash: string; lease: string } {
  const hash = opts?.destinationTxHash;
  if (typeof hash !== 'string' || hash.length === 0 || hash.length > MAX_DESTINATION_TX_HASH_LENGTH) {
    throw new TypeError(`markDelivered: destinationTxHash must be a string of 1..${MAX_DESTINATION_TX_HASH_LENGTH} characters`);
  }
  return { destinationTxHash: hash, lease: checkLease(opts.lease, 'markDelivered') };
}

/** Throws on an invalid markFailed call; returns what to store (retryAt null when final). */
export function checkMarkFailed(opts: MarkFailedOptions): { error: string; retryAt: number | null; lease: string } {
  if (typeof opts?.error !== 'string') throw new TypeError('markFailed: error must be a string');
  let error = opts.error.slice(0, MAX_ERROR_LENGTH);
  // Do not keep half of a surrogate pair cut at the limit.
  if (/[\ud800-\udbff]$/.test(error)) error = error.slice(0, -1);
  const lease = checkLease(opts.lease, 'markFailed');
  if ('final' in opts) {
    if (opts.final !== true) throw new TypeError('markFailed: final must be true');
    return { error, retryAt: null, lease };
  }
  const retryAt = (opts as { retryAt?: unknown }).retryAt;
  if (typeof retryAt !== 'number' || !Number.isFinite(retryAt)) throw new TypeError('markFailed: retryAt must be a finite number (ms) or final: true');
  return { error, retryAt, lease };
}

/**
 * The lease is required (README.md, "Delivery workers"): a call without one is a programming
 * error, thrown, never a silent `false` that a worker might read as "someone else has it".
 */
function checkLease(lease: unknown, method: string): string {
  if (typeof lease !== 'string' || lease.length === 0) throw new TypeError(`${method}: lease must be the string claim() returned`);
  return lease;
}

/** Unique per claim across processes and replicas (a counter would repeat after a restart). */
export function newLease(): string {
  return crypto.randomUUID();
}

/** Throws a TypeError naming the first invalid message and field; a batch is all valid or refused. */
export function validateOutboxBatch(batch: readonly OutboxMessage[]): void {
  if (!Array.isArray(batch)) throw new TypeError('batch must be an array');
  batch.forEach((m, i) => {
    const bad = (field: string) => new TypeError(`batch[${i}].${field} is invalid`);
    if (typeof m !== 'object' || m === null) throw new TypeError(`batch[${i}] is not an object`);
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

interface MemoryRow extends OutboxRecord {
  lease: string | null;
  /** Arrival order: breaks ties between equal enqueuedAt, like a SQL rowid. */
  seq: number;
}

function toRecord(row: MemoryRow): OutboxRecord {
  const { lease: _lease, seq: _seq, ...record } = row;
  return { ...record, raw: row.raw.slice() };
}

/** The in-memory outbox answers synchronously. */
export type MemoryOutbox = Synchronous<Outbox>;

export function createMemoryOutbox(clock: Clock = systemClock): MemoryOutbox {
  // `open` holds the queued and delivering rows, so claim() does not walk the delivered history.
  const rows = new Map<string, MemoryRow>();
  const open = new Map<string, MemoryRow>();

  /** The holder of `lease`: still delivering under it (expired or not, as long as nobody took it over). */
  function held(id: string, lease: string): MemoryRow | undefined {
    const row = open.get(id.toLowerCase());
    return row !== undefined && row.status === 'delivering' && row.lease === lease ? row : undefined;
  }

  return {
    enqueue(batch) {
      validateOutboxBatch(batch);
      let stored = 0;
      for (const m of batch) {
        if (rows.has(m.id)) continue; // idempotent by id, also within one batch
        const row: MemoryRow = {
          id: m.id,
          originChain: m.originChain,
          txHash: m.txHash,
          origin: m.origin,
          destination: m.destination,
          nonce: m.nonce,
          raw: m.raw.slice(),
          enqueuedAt: m.enqueuedAt,
          status: 'queued',
          attempts: 0,
          leaseExpiries: 0,
          lastError: null,
          deliveredAt: null,
          destinationTxHash: null,
          claimedUntil: null,
          retryAt: null,
          lease: null,
          seq: rows.size,
        };
        rows.set(m.id, row);
        open.set(m.id, row);
        stored++;
      }
      return stored;
    },

    get(id) {
      const row = rows.get(id.toLowerCase());
      return row && toRecord(row);
    },

    byTx(originChain, txHash) {
      const hash = txHash.toLowerCase();
      const found: OutboxRecord[] = [];
      for (const row of rows.values()) if (row.originChain === originChain && row.txHash === hash) found.push(toRecord(row));
      return found;
    },

    depth: () => open.size,

    claim(limit, leaseMs, opts) {
      const maxAttempts = checkClaim(limit, leaseMs, opts);
      if (limit === 0) return [];
      const now = clock.now();
      const claimable: MemoryRow[] = [];
      for (const row of open.values()) {
        if (row.status === 'queued') {
          if (row.retryAt === null || row.retryAt <= now) claimable.push(row);
        } else if (row.claimedUntil! <= now) {
          if (maxAttempts !== null && row.leaseExpiries + 1 >= maxAttempts) {
            // The dead letter: its workers kept stopping while holding it.
            row.leaseExpiries++;
            row.status = 'failed';
            row.lastError = deadLetterError(row.leaseExpiries, maxAttempts);
            row.claimedUntil = null;
            row.lease = null;
            open.delete(row.id);
          } else claimable.push(row);
        }
      }
      claimable.sort((a, b) => a.enqueuedAt - b.enqueuedAt || a.seq - b.seq);
      return claimable.slice(0, limit).map((row) => {
        if (row.status === 'delivering') row.leaseExpiries++;
        row.status = 'delivering';
        row.claimedUntil = now + leaseMs;
        row.retryAt = null;
        row.attempts++;
        row.lease = newLease();
        return { ...toRecord(row), lease: row.lease };
      });
    },

    extend(id, lease, leaseMs) {
      const token = checkExtend(lease, leaseMs);
      const row = held(id, token);
      if (!row) return false;
      row.claimedUntil = clock.now() + leaseMs;
      return true;
    },

    markDelivered(id, opts) {
      const { destinationTxHash, lease } = checkMarkDelivered(opts);
      const row = held(id, lease);
      if (!row) return false;
      row.status = 'delivered';
      row.deliveredAt = clock.now();
      row.destinationTxHash = destinationTxHash;
      row.claimedUntil = null;
      row.retryAt = null;
      row.lease = null;
      open.delete(row.id);
      return true;
    },

    markFailed(id, opts) {
      const { error, retryAt, lease } = checkMarkFailed(opts);
      const row = held(id, lease);
      if (!row) return false;
      row.lastError = error;
      row.claimedUntil = null;
      row.lease = null;
      if (retryAt === null) {
        row.status = 'failed';
        open.delete(row.id);
      } else {
        row.status = 'queued';
        row.retryAt = retryAt;
      }
      return true;
    },

    requeue(id) {
      const row = rows.get(id.toLowerCase());
      if (!row || row.status !== 'failed') return false;
      row.status = 'queued';
      row.retryAt = null;
      row.leaseExpiries = 0;
      open.set(row.id, row);
      return true;
    },
  };
}
