/**
 * The store's worker thread: it owns the only node:sqlite connection, so a disk flush or a lock
 * wait stops this thread, never the server's event loop (docs/design.md#storage).
 *
 * Reads run as they arrive. Writes are group-committed: every write waiting when the previous
 * commit ends goes into one BEGIN IMMEDIATE … COMMIT, each inside its own SAVEPOINT (through the
 * tables' Transaction), so a request that fails rolls back only itself; each is answered after the
 * COMMIT, i.e. after the fsync that covers it. Messages that arrive while a commit (its fsync) is
 * in flight wait in the port and form the next group.
 *
 * No statement waits inside SQLite (busy_timeout 0): when another connection holds the write lock,
 * BEGIN IMMEDIATE fails at once and is retried every RETRY_MS, so reads keep being answered
 * meanwhile; a write still waiting at its deadline is answered SQLITE_BUSY and nothing of it is
 * written.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { DatabaseSync } from 'node:sqlite';
import { systemClock, type Clock } from '../clock.ts';
import { createChangeWatcher, type ChangeWatcher } from './changes.ts';
import { openDatabase, type Tables } from './database.ts';
import { readSharedTime, wallNow } from './shared-time.ts';
import type { Transaction } from './transaction.ts';
import {
  isBusy,
  isWrite,
  serializeError,
  servedMethods,
  type CallMessage,
  type FromWorker,
  type ToWorker,
} from './protocol.ts';
import { InvalidArgumentError, StoreUnavailableError } from '../errors/classes.ts';

export interface WorkerOptions {
  path: string;
  /** How long opening (migrations) may wait for another connection's lock. */
  openTimeoutMs: number;
  /** The injected clock's shared time (Clock.sharedTime), when it has one. */
  sharedTime?: SharedArrayBuffer;
}

const RETRY_MS = 2;

const port = parentPort!;
const { path, openTimeoutMs, sharedTime } = workerData as WorkerOptions;

// The table methods read the time when they run, i.e. once their transaction holds the write lock
// (a claim that waited 300 ms for the lock still gets its whole lease): the injected clock's
// shared time if it has one, else the caller's reading moved on by the wall time since it was
// sent (for the system clock, this thread's own reading of the wall clock).
let current: CallMessage | undefined;
const clock: Clock = {
  ...systemClock,
  now() {
    if (sharedTime !== undefined) return readSharedTime(sharedTime);
    if (current === undefined) return systemClock.now();
    return current.now + Math.max(0, wallNow() - current.sentAt);
  },
};

function post(message: FromWorker): void {
  port.postMessage(message);
}

let database: ReturnType<typeof openDatabase> | undefined;
try {
  database = openDatabase(path, clock, openTimeoutMs);
} catch (error) {
  post({ type: 'failed', error: serializeError(error) });
  port.close();
}
if (database !== undefined) serve(database.db, database.tables, database.transaction);

function serve(db: DatabaseSync, tables: Tables, transaction: Transaction): void {
  /** The classified methods of each table (lib/sqlite/protocol.ts): what the main thread's proxy may call. */
  const methods: Record<string, string[]> = {};
  for (const name of Object.keys(tables) as (keyof Tables)[]) methods[name] = servedMethods(name);

  function invoke(call: CallMessage): unknown {
    const table = (tables as unknown as Record<string, Record<string, (...args: unknown[]) => unknown>>)[call.target];
    if (table === undefined || !methods[call.target].includes(call.method)) {
      throw new InvalidArgumentError(`no such store method: ${call.target}.${call.method}`);
    }
    current = call;
    try {
      return table[call.method](...call.args);
    } finally {
      current = undefined;
    }
  }

  const reads: CallMessage[] = [];
  const writes: CallMessage[] = [];
  let scheduled = false;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let closing = false;
  // Outbox changes (lib/sqlite/changes.ts), once the main thread asked for them.
  let watcher: ChangeWatcher | undefined;
  let watchTimer: ReturnType<typeof setInterval> | undefined;

  function postChanges(): void {
    if (watcher === undefined) return;
    try {
      const { ids, txs } = watcher.scan();
      if (ids.length > 0) post({ type: 'changes', ids, txs });
    } catch {
      // A read refused while another connection recovers the WAL: the cursor did not move, the
      // next look finds the same rows.
    }
  }

  function watch(intervalMs: number): void {
    if (watcher === undefined) {
      watcher = createChangeWatcher(db);
      watchTimer = setInterval(() => {
        let moved = false;
        try {
          moved = watcher!.othersCommitted();
        } catch {
          // Refused while another connection recovers the WAL: the next tick looks again.
        }
        if (moved) postChanges();
      }, intervalMs);
    }
    post({ type: 'watching' });
  }

  function busyError(call: CallMessage): Error {
    return Object.assign(
      new StoreUnavailableError(
        `database is locked: ${call.target}.${call.method} waited for the write lock until its deadline`,
      ),
      {
        errcode: 5,
        errstr: 'database is locked',
      },
    );
  }

  /** Answers the calls of `queue` whose deadline passed with SQLITE_BUSY; keeps the others. */
  function expire(queue: CallMessage[]): void {
    const now = Date.now();
    let kept = 0;
    for (const call of queue) {
      if (call.deadline <= now) post({ type: 'error', id: call.id, error: serializeError(busyError(call)) });
      else queue[kept++] = call;
    }
    queue.length = kept;
  }

  function runReads(): void {
    const batch = reads.splice(0);
    for (const call of batch) {
      try {
        post({ type: 'result', id: call.id, value: invoke(call) });
      } catch (error) {
        // A WAL reader is refused only while another connection recovers the WAL index: rare, brief.
        if (isBusy(error)) reads.push(call);
        else post({ type: 'error', id: call.id, error: serializeError(error) });
      }
    }
  }

  function runWrites(): void {
    if (writes.length === 0) return;
    let group: CallMessage[] = [];
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    let failure: unknown;
    try {
      // The group's BEGIN IMMEDIATE … COMMIT. The calls are taken only once BEGIN has the lock.
      transaction(() => {
        group = writes.splice(0);
        for (const call of group) {
          try {
            // Inside the group's transaction this is a SAVEPOINT: a failing call rolls back only
            // itself, and a method that writes without its own transaction is all or nothing too.
            results.push({ ok: true, value: transaction(() => invoke(call)) });
          } catch (error) {
            results.push({ ok: false, error });
            // SQLite ended the transaction itself (SQLITE_FULL, IOERR…): the whole group fails.
            if (!db.isTransaction) throw error;
          }
        }
      });
    } catch (error) {
      if (group.length === 0) {
        // BEGIN failed. Busy: retried by the timer while reads go on; anything else ends the calls.
        if (!isBusy(error)) {
          for (const call of writes.splice(0)) post({ type: 'error', id: call.id, error: serializeError(error) });
        }
        return;
      }
      failure = error;
    }
    group.forEach((call, i) => {
      const result = results[i];
      if (failure !== undefined && (result === undefined || result.ok)) {
        // Nothing of the group was committed: every write of it fails with the commit's error.
        post({ type: 'error', id: call.id, error: serializeError(failure) });
      } else if (result.ok) post({ type: 'result', id: call.id, value: result.value });
      else post({ type: 'error', id: call.id, error: serializeError(result.error) });
    });
    // This connection's own commits do not move data_version: look now. After the answers, so a
    // writer hears of its write's success before the feed tells of it.
    if (failure === undefined) postChanges();
  }

  function drain(): void {
    scheduled = false;
    if (retryTimer !== undefined) {
      clearTimeout(retryTimer);
      retryTimer = undefined;
    }
    runReads();
    runWrites();
    expire(reads);
    expire(writes);
    if (reads.length > 0 || writes.length > 0) {
      // Only a lock held by another connection leaves work behind: try again shortly.
      retryTimer ??= setTimeout(drain, RETRY_MS);
    } else if (closing) {
      if (watchTimer !== undefined) clearInterval(watchTimer);
      db.close();
      post({ type: 'closed' });
      port.close();
    }
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    // After the messages already in the port are delivered: they join this group.
    setImmediate(drain);
  }

  port.on('message', (message: ToWorker) => {
    if (message.type === 'close') {
      closing = true;
      schedule();
      return;
    }
    if (message.type === 'watch') return watch(message.intervalMs);
    (isWrite(message.target, message.method) ? writes : reads).push(message);
    schedule();
  });

  post({ type: 'ready', methods });
}
