/**
 * The in-memory outbox engine: for tests, embedders without persistence, and as the reference the
 * SQLite store is checked against (the same contract suite runs on every engine). Like the SQL
 * engines it copies what it stores and what it returns, so callers cannot alias its rows.
 */
import type { ChangeHub } from '../change-feed.ts';
import { systemClock, type Clock } from '../../clock.ts';
import {
  checkClaim,
  checkExtend,
  checkMarkDelivered,
  checkMarkFailed,
  checkList,
  checkRequeueFailed,
  claimedMessage,
  deadLetterError,
  newLease,
  validateOutboxBatch,
} from '../checks.ts';
import { checkPrune } from '../retention.ts';
import type { Outbox, OutboxRecord, Synchronous } from '../types.ts';
import type { VersionedReads } from '../versioned.ts';
import { createVersioning, versionedReads } from '../versioning.ts';
import { createMemoryJournal } from './journal.ts';
import { createMemoryGasPayments } from './gas-payments.ts';
import { createMemorySignerLeases } from './signers.ts';

interface MemoryRow extends OutboxRecord {
  lease: string | null;
  /** Arrival order: breaks ties between equal enqueuedAt, like a SQL rowid. */
  seq: number;
  /** The change version (VersionedRecord): one counter for the whole outbox. */
  version: number;
  /** What the version was given for: status, attempts, last_error, destination_tx_hash. */
  shown: string;
}

function toRecord(row: MemoryRow): OutboxRecord {
  const { lease: _lease, seq: _seq, version: _version, shown: _shown, ...record } = row;
  return { ...record, raw: row.raw.slice() };
}

/**
 * The in-memory outbox answers synchronously. Its change feed publishes each write as it returns
 * (docs/outbox.md#change-feed).
 */
export type MemoryOutbox = Synchronous<Outbox> & Synchronous<VersionedReads> & { readonly changes: ChangeHub };

export interface MemoryOutboxOptions {
  /** Time for leases, retries and the journal (default: the system clock). */
  clock?: Clock;
}

/** `createMemoryOutbox({ clock })`, as every factory takes its options (docs/embedding.md#options). */
export function createMemoryOutbox(options: MemoryOutboxOptions = {}): MemoryOutbox {
  const clock = options.clock ?? systemClock;
  // `open` holds the queued and delivering rows, so claim() does not walk the delivered history.
  const rows = new Map<string, MemoryRow>();
  const open = new Map<string, MemoryRow>();
  const { changes, changed } = createVersioning();
  const { allows, ...signers } = createMemorySignerLeases(clock);
  let arrivals = 0;
  const { settleDelivered, pruneJournal, ...journal } = createMemoryJournal(
    clock,
    (id, lease) => held(id, lease),
    allows,
  );
  const payments = createMemoryGasPayments(
    (id) => rows.get(id),
    (ids) =>
      changed(
        ids.map((id) => rows.get(id)!),
        false,
        true,
      ),
  );
  const versioned = versionedReads(rows, toRecord, payments.gasPayments);

  /** The holder of `lease`: still delivering under it (expired or not, as long as nobody took it over). */
  function held(id: string, lease: string): MemoryRow | undefined {
    const row = open.get(id.toLowerCase());
    return row !== undefined && row.status === 'delivering' && row.lease === lease ? row : undefined;
  }

  return {
    enqueue(batch) {
      validateOutboxBatch(batch);
      const stored: MemoryRow[] = [];
      for (const m of batch) payments.add(m.gasPayments ?? []);
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
          failures: 0,
          pendingSince: null,
          polls: 0,
          requiredGas: null,
          gasSpent: 0n,
          gasSpentWei: 0n,
          lease: null,
          seq: arrivals++,
          version: 0,
          shown: '',
        };
        rows.set(m.id, row);
        open.set(m.id, row);
        stored.push(row);
      }
      changed(stored, true);
      return stored.length;
    },

    get(id) {
      const row = rows.get(id.toLowerCase());
      return row && toRecord(row);
    },

    byTx: (originChain, txHash) => versioned.ofTx(originChain, txHash).map(toRecord),

    getVersioned: versioned.getVersioned,
    byTxVersioned: versioned.byTxVersioned,

    changes,

    depth: () => open.size,

    claim(limit, leaseMs, opts) {
      const maxLeaseExpiries = checkClaim(limit, leaseMs, opts);
      if (limit === 0) return [];
      const now = clock.now();
      const claimable: MemoryRow[] = [];
      const dead: MemoryRow[] = [];
      for (const row of open.values()) {
        if (row.status === 'queued') {
          if (row.retryAt === null || row.retryAt <= now) claimable.push(row);
        } else if (row.claimedUntil! <= now) {
          if (maxLeaseExpiries !== null && row.leaseExpiries >= maxLeaseExpiries) {
            // The dead letter: its workers kept stopping while holding it, its last look included.
            row.leaseExpiries++;
            row.status = 'failed';
            row.lastError = deadLetterError(row.leaseExpiries, maxLeaseExpiries);
            row.claimedUntil = null;
            row.lease = null;
            open.delete(row.id);
            dead.push(row);
          } else claimable.push(row);
        }
      }
      claimable.sort((a, b) => a.enqueuedAt - b.enqueuedAt || a.seq - b.seq);
      const taken = claimable.slice(0, limit);
      const claimed = taken.map((row) => {
        if (row.status === 'delivering') row.leaseExpiries++;
        row.status = 'delivering';
        row.claimedUntil = now + leaseMs;
        row.retryAt = null;
        row.attempts++;
        row.lease = newLease();
        return claimedMessage(toRecord(row), row.lease, maxLeaseExpiries);
      });
      changed([...dead, ...taken]);
      return claimed;
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
      changed([row]);
      // The journal's slot of the delivering transaction is settled with it.
      settleDelivered(row.id, destinationTxHash);
      return true;
    },

    markFailed(id, opts) {
      const { error, retryAt, lease, state } = checkMarkFailed(opts);
      const row = held(id, lease);
      if (!row) return false;
      row.lastError = error;
      if (state) Object.assign(row, state);
      row.claimedUntil = null;
      row.lease = null;
      if (retryAt === null) {
        row.status = 'failed';
        open.delete(row.id);
      } else {
        row.status = 'queued';
        row.retryAt = retryAt;
      }
      changed([row]);
      return true;
    },

    addGasPayments: payments.addGasPayments,
    gasPayments: payments.gasPayments,
    addGasSpent: payments.addGasSpent,
    setRequiredGas: payments.setRequiredGas,

    requeue(id) {
      const row = rows.get(id.toLowerCase());
      if (row?.status !== 'failed') return false;
      redrive(row);
      return true;
    },

    ...journal,
    ...signers,
    list(opts) {
      const { status, destination, limit } = checkList(opts);
      return select(
        (row) => (status === null ? row.status !== 'delivered' : row.status === status),
        destination,
        limit,
      ).map(toRecord);
    },

    requeueFailed(opts) {
      const { destination, limit } = checkRequeueFailed(opts);
      return select((row) => row.status === 'failed', destination, limit).map((row) => {
        redrive(row);
        return row.id;
      });
    },

    prune(opts) {
      const { before, limit } = checkPrune(opts);
      const old = select(
        (r) => r.status === 'delivered' && r.deliveredAt! < before && r.enqueuedAt < before,
        null,
        limit,
      );
      for (const row of old) rows.delete(row.id);
      payments.forget(new Set(old.map((row) => row.id)));
      return { messages: old.length, journal: pruneJournal(before, limit) };
    },
  };

  /** Rows passing `keep` (and to `destination`), oldest first, at most `limit`. */
  function select(keep: (row: MemoryRow) => boolean, destination: number | null, limit: number): MemoryRow[] {
    const found: MemoryRow[] = [];
    for (const row of rows.values())
      if (keep(row) && (destination === null || row.destination === destination)) found.push(row);
    return found.sort((a, b) => a.enqueuedAt - b.enqueuedAt || a.seq - b.seq).slice(0, limit);
  }

  /** failed -> queued, claimable at once, attempts and lastError kept, the attempt count reset. */
  function redrive(row: MemoryRow): void {
    row.status = 'queued';
    row.retryAt = null;
    row.leaseExpiries = 0;
    row.failures = 0;
    row.pendingSince = null;
    row.polls = 0;
    open.set(row.id, row);
    changed([row]);
  }
}
