/**
 * The outbox's change feed (docs/outbox.md#change-feed): "these
 * messages changed, these transactions got new messages", pushed by the engine that saw the write,
 * whoever wrote it. The status streams follow it instead of reading the outbox on a timer; a
 * delivery worker can follow it to wake on new work. Each engine feeds one hub: the memory outbox
 * publishes its own writes, the SQLite store what its worker thread sees change in the file
 * (PRAGMA data_version), the PostgreSQL store what LISTEN hears from the outbox's triggers.
 *
 * A change names what changed, not how: a listener reads the current state itself. `all` says that
 * changes may have been missed (the PostgreSQL listening connection was lost and is back): every
 * listener reads again whatever it follows.
 */

export interface OutboxChange {
  /** Messages (lower-case ids) enqueued or whose status, attempts, last_error, destination_tx_hash or gas_payment changed. */
  readonly ids: readonly string[];
  /** Transactions (txKey) that got new messages; may name others too. */
  readonly txs: readonly string[];
  /** Changes may have been missed: read again everything followed. */
  readonly all?: boolean;
}

export type ChangeListener = (change: OutboxChange) => void;

export interface ChangeFeed {
  /**
   * Resolves once every change committed from now on reaches the listeners (PostgreSQL: its
   * LISTEN is in place). A reader subscribes, awaits this, then reads: nothing is missed between.
   * Rejects when the feed cannot start (the database cannot be reached); a later call tries again.
   */
  ready(): Promise<void>;
  /** Adds a listener; returns the function that removes it. Listeners must not throw. */
  subscribe(listener: ChangeListener): () => void;
}

/** A feed its engine publishes into. */
export interface ChangeHub extends ChangeFeed {
  publish(change: OutboxChange): void;
  /** Listeners subscribed now. */
  listeners(): number;
}

/** The key of a transaction in a change: origin chain and lower-case tx hash. */
export function txKey(originChain: string, txHash: string): string {
  return `${originChain}\n${txHash.toLowerCase()}`;
}

/**
 * A hub. `start` (optional) runs at the first ready() and again after it failed: what the engine
 * must do before changes flow (start watching, LISTEN).
 */
export function createChangeHub(start?: () => Promise<void>): ChangeHub {
  const listeners = new Set<ChangeListener>();
  let started: Promise<void> | undefined;
  return {
    ready() {
      if (start === undefined) return Promise.resolve();
      started ??= start().catch((error: unknown) => {
        started = undefined;
        throw error;
      });
      return started;
    },
    subscribe(listener) {
      // Wrapped, so the same function subscribed twice gets two subscriptions.
      const entry: ChangeListener = (change) => listener(change);
      listeners.add(entry);
      return () => void listeners.delete(entry);
    },
    publish(change) {
      if (change.ids.length === 0 && change.txs.length === 0 && !change.all) return;
      for (const listener of [...listeners]) listener(change);
    },
    listeners: () => listeners.size,
  };
}
