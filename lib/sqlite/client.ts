/**
 * The main thread's side of the store's worker (lib/sqlite/worker.ts): a generic asynchronous
 * proxy. `proxy(target)` is an object with every method the worker reported for that table, each
 * sending (method name, arguments, the caller's clock reading) and resolving with the worker's
 * answer; a new synchronous method of a table module is served with no code here.
 *
 * Every call has a deadline on this thread too (the worker's lock deadline plus a margin for a
 * slow disk): past it the call rejects, so a request never hangs on the store. Such a write may
 * still commit later; like a write cut off by a crash it was not acknowledged, and relays and
 * merkle insertions are idempotent. The transport deadline is real time (the worker's lock waits
 * are real); the injected Clock only supplies the time the table methods see.
 */
import { Worker } from 'node:worker_threads';
import type { Clock } from '../clock.ts';
import { RelayError } from '../errors/classes.ts';
import { STORE_RETRY_AFTER_SECONDS, StoreUnavailableError } from '../store/bundle.ts';
import {
  deserializeError,
  type CallMessage,
  type FromWorker,
  type SerializedError,
  type ToWorker,
} from './protocol.ts';
import { wallNow } from './shared-time.ts';
import type { WorkerOptions } from './worker.ts';

/** The methods of `T` as the proxy offers them: same arguments, answers as promises. */
export type Proxied<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
};

export interface WorkerClientOptions {
  path: string;
  clock: Clock;
  /** Longest wait of a write for another connection's lock, in the worker. */
  lockTimeoutMs: number;
  /** Longest wait of any call on this thread, from sending to answer. */
  callTimeoutMs: number;
}

export interface WorkerClient {
  proxy<T>(target: string): Proxied<T>;
  /** `transfer`: buffers among the arguments that move to the worker instead of being copied. */
  call(target: string, method: string, args: unknown[], transfer?: ArrayBuffer[]): Promise<unknown>;
  /**
   * Starts the thread's outbox watcher (lib/sqlite/changes.ts), looking every `intervalMs`;
   * `onChanges` gets what changed. Resolves once it watches. Once per client.
   */
  watch(intervalMs: number, onChanges: (ids: string[], txs: string[]) => void): Promise<void>;
  /** Lets the queued calls finish, closes the database and ends the thread. Idempotent. */
  close(): Promise<void>;
  /**
   * Resolves when close() has ended the thread. Rejects with the store_unavailable RelayError
   * every call rejects with from then on when the thread ends any other way (a crash, out of
   * memory, terminated): the store cannot be used again. Handled here, so an embedder that does
   * not listen is not ended by an unhandled rejection.
   */
  closed: Promise<void>;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** performance.now() after which the call is given up. */
  expires: number;
}

// The worker runs the same kind of file as this one: .ts from the sources, .js from dist/.
const WORKER_URL = new URL(`./worker${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`, import.meta.url);

/** Starts the worker and resolves once the database is open and migrated. */
export function startWorker(options: WorkerClientOptions): Promise<WorkerClient> {
  const { clock, lockTimeoutMs, callTimeoutMs } = options;
  const workerData: WorkerOptions = {
    path: options.path,
    openTimeoutMs: Math.max(lockTimeoutMs, 5_000),
    sharedTime: clock.sharedTime,
  };
  // No inherited flags: --input-type, -e or a test runner's flags would apply to the worker's file.
  const worker = new Worker(WORKER_URL, { workerData, execArgv: [] });
  // Idle, the worker does not keep the process alive; a call in flight does (ref below).
  worker.unref();
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let stopped: Error | undefined;
  let sweep: ReturnType<typeof setInterval> | undefined;
  let closing: Promise<void> | undefined;
  let methods: Record<string, string[]> = {};
  let onChanges: ((ids: string[], txs: string[]) => void) | undefined;
  let watching: (() => void) | undefined;

  function settle(id: number): Pending | undefined {
    const call = pending.get(id);
    if (call === undefined) return undefined;
    pending.delete(id);
    if (pending.size === 0) idle();
    return call;
  }

  function idle(): void {
    // Once close() is called the thread keeps the process alive until it has ended: the caller
    // awaits close(), and nothing else may be left to keep the event loop running.
    if (closing === undefined) worker.unref();
    if (sweep !== undefined) clearInterval(sweep);
    sweep = undefined;
  }

  function expireCalls(): void {
    const now = performance.now();
    // Calls are in sending order with one timeout, so the first not expired ends the sweep.
    for (const [id, call] of pending) {
      if (call.expires > now) break;
      settle(id)?.reject(new StoreUnavailableError(`the SQLite worker did not answer within ${callTimeoutMs} ms`));
    }
  }

  function stop(error: Error): void {
    stopped ??= error;
    for (const id of [...pending.keys()]) settle(id)?.reject(stopped);
  }

  let onReady: (value: WorkerClient) => void;
  let onFailed: (error: unknown) => void;
  const ready = new Promise<WorkerClient>((resolve, reject) => {
    onReady = resolve;
    onFailed = reject;
  });

  worker.on('message', (message: FromWorker) => {
    switch (message.type) {
      case 'result':
        settle(message.id)?.resolve(message.value);
        return;
      case 'error':
        settle(message.id)?.reject(deserializeError(message.error));
        return;
      case 'ready':
        methods = message.methods;
        onReady(client);
        return;
      case 'failed':
        stopped = deserializeError(message.error as SerializedError);
        onFailed(stopped);
        return;
      case 'watching':
        watching?.();
        return;
      case 'changes':
        onChanges?.(message.ids, message.txs);
        return;
      case 'closed':
        return;
    }
  });
  let onClosed: () => void;
  let onDied: (error: Error) => void;
  const closed = new Promise<void>((resolve, reject) => {
    onClosed = resolve;
    onDied = reject;
  });
  closed.catch(() => {});
  let failure: unknown;

  worker.on('error', (error) => {
    // A bug or a resource limit in the worker; the 'exit' below follows. Its message may name a
    // path, so it stays in `cause`.
    failure ??= error;
  });
  worker.on('exit', (code) => {
    if (closing !== undefined && failure === undefined) {
      stop(new StoreUnavailableError('the SQLite store is closed'));
      onClosed();
    } else {
      // The thread ended on its own: every call from now on fails at once, like the ones waiting.
      const cause = new StoreUnavailableError(
        `the SQLite worker thread exited with code ${code}`,
        failure === undefined ? undefined : { cause: failure },
      );
      stop(
        new RelayError(
          'store_unavailable',
          'the SQLite store stopped; nothing more can be stored until the relayer is restarted',
          {
            retryAfterSeconds: STORE_RETRY_AFTER_SECONDS,
            cause,
          },
        ),
      );
      onDied(stopped!);
    }
    onFailed(stopped);
  });

  function call(target: string, method: string, args: unknown[], transfer: ArrayBuffer[] = []): Promise<unknown> {
    if (stopped !== undefined) return Promise.reject(stopped);
    if (closing !== undefined) return Promise.reject(new StoreUnavailableError('the SQLite store is closed'));
    return new Promise((resolve, reject) => {
      const id = nextId++;
      const message: CallMessage = {
        type: 'call',
        id,
        target,
        method,
        args,
        now: clock.now(),
        sentAt: wallNow(),
        deadline: Date.now() + lockTimeoutMs,
      };
      // Cloning the arguments may throw (a getter, a function): the promise rejects, nothing is sent.
      worker.postMessage(message satisfies ToWorker, transfer);
      if (pending.size === 0) {
        worker.ref();
        sweep = setInterval(expireCalls, Math.min(250, callTimeoutMs));
        sweep.unref();
      }
      pending.set(id, { resolve, reject, expires: performance.now() + callTimeoutMs });
    });
  }

  const client: WorkerClient = {
    call,
    closed,
    watch(intervalMs, listener) {
      if (stopped !== undefined) return Promise.reject(stopped);
      onChanges = listener;
      return new Promise<void>((resolve) => {
        watching = resolve;
        worker.postMessage({ type: 'watch', intervalMs } satisfies ToWorker);
      });
    },
    proxy<T>(target: string): Proxied<T> {
      const object: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
      for (const method of methods[target] ?? []) object[method] = (...args) => call(target, method, args);
      return object as Proxied<T>;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (stopped !== undefined) return resolve();
        worker.ref();
        worker.once('exit', () => resolve());
        worker.postMessage({ type: 'close' } satisfies ToWorker);
      });
      return closing;
    },
  };
  return ready;
}
