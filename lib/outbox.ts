/**
 * The relay outbox (DESIGN.md §3, §7, §11): its types, the batch validation every engine shares,
 * and the in-memory engine, for tests, embedders without persistence, and as the reference the
 * SQLite store is checked against (the same contract suite runs on both). Like the SQLite store it
 * copies what it stores and what it returns, so callers cannot alias its rows.
 */
import { systemClock, type Clock } from './clock.ts';
import { isHexOfLength } from './hex.ts';

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

/** An outbox row read back by a delivery worker. */
export interface PendingMessage extends OutboxMessage {
  deliveredAt: number | null;
}

/**
 * Where accepted messages go. `enqueue` stores the whole batch atomically (all or nothing) and
 * is idempotent by message id: a message already present is not stored twice.
 * Returns the number of messages newly stored.
 */
export interface RelayQueue {
  enqueue(batch: readonly OutboxMessage[]): number | Promise<number>;
}

/** The outbox a delivery worker reads: the queue plus reading and acknowledging. */
export interface Outbox extends RelayQueue {
  /** Undelivered messages, oldest first. */
  pending(limit?: number): PendingMessage[] | Promise<PendingMessage[]>;
  /** Marks messages delivered; returns how many changed. Unknown ids are ignored. */
  markDelivered(ids: readonly string[], at?: number): number | Promise<number>;
  /** Number of undelivered messages. */
  depth(): number | Promise<number>;
  get(id: string): PendingMessage | undefined | Promise<PendingMessage | undefined>;
}

function isUint32(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 0xffffffff;
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
    if (!isUint32(m.origin)) throw bad('origin');
    if (!isUint32(m.destination)) throw bad('destination');
    if (!isUint32(m.nonce)) throw bad('nonce');
    if (!(m.raw instanceof Uint8Array)) throw bad('raw');
    if (!Number.isSafeInteger(m.enqueuedAt) || m.enqueuedAt < 0) throw bad('enqueuedAt');
  });
}

function copyRow(row: PendingMessage): PendingMessage {
  return { ...row, raw: row.raw.slice() };
}

export function createMemoryOutbox(clock: Clock = systemClock): Outbox {
  // Map iteration order is insertion order, which breaks ties between equal enqueuedAt times the
  // way a SQLite rowid does.
  const rows = new Map<string, PendingMessage>();
  let undelivered = 0;

  return {
    enqueue(batch) {
      validateOutboxBatch(batch);
      let stored = 0;
      for (const m of batch) {
        if (rows.has(m.id)) continue; // idempotent by id, also within one batch
        rows.set(m.id, {
          id: m.id,
          originChain: m.originChain,
          txHash: m.txHash,
          origin: m.origin,
          destination: m.destination,
          nonce: m.nonce,
          raw: m.raw.slice(),
          enqueuedAt: m.enqueuedAt,
          deliveredAt: null,
        });
        stored++;
      }
      undelivered += stored;
      return stored;
    },

    pending(limit = Number.POSITIVE_INFINITY) {
      if (!(limit >= 0)) throw new RangeError('limit must be a non-negative number');
      const open: PendingMessage[] = [];
      for (const row of rows.values()) if (row.deliveredAt === null) open.push(row);
      // Array.prototype.sort is stable, so equal times keep insertion order.
      open.sort((a, b) => a.enqueuedAt - b.enqueuedAt);
      return open.slice(0, limit).map(copyRow);
    },

    markDelivered(ids, at = clock.now()) {
      let changed = 0;
      for (const id of ids) {
        const row = rows.get(id);
        if (!row || row.deliveredAt !== null) continue;
        row.deliveredAt = at;
        changed++;
      }
      undelivered -= changed;
      return changed;
    },

    depth: () => undelivered,

    get(id) {
      const row = rows.get(id);
      return row && copyRow(row);
    },
  };
}
