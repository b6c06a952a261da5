/**
 * What the main thread and the store's worker say to each other (lib/sqlite/client.ts,
 * lib/sqlite/worker.ts). A call names a table and one of its methods. Every method of every table
 * is classified below as a read or a write, checked against the tables' types: a method added to
 * a table and not classified here does not compile, and the worker serves only classified
 * methods. Writes are group-committed (one transaction and one fsync for every write waiting, a
 * SAVEPOINT each); reads run at once, also while a write waits for a lock.
 */
import * as errors from '../errors/classes.ts';
import * as workerErrors from '../errors/worker.ts';
import type { Tables } from './database.ts';

export type Access = 'read' | 'write';

export const ACCESS = {
  outbox: {
    enqueue: 'write',
    get: 'read',
    byTx: 'read',
    depth: 'read',
    claim: 'write',
    extend: 'write',
    markDelivered: 'write',
    markFailed: 'write',
    requeue: 'write',
    addGasPayments: 'write',
    gasPayments: 'read',
    addGasSpent: 'write',
    setRequiredGas: 'write',
    recordBroadcast: 'write',
    forgetBroadcast: 'write',
    closeNonceSlot: 'write',
    openBroadcasts: 'read',
    acquireSignerLease: 'write',
    renewSignerLease: 'write',
    releaseSignerLease: 'write',
    signerLeases: 'read',
    list: 'read',
    requeueFailed: 'write',
    prune: 'write',
  },
  merkle: { insert: 'write', insertPacked: 'write', list: 'read', count: 'read' },
  versions: { getVersioned: 'read', byTxVersioned: 'read' },
  health: { ping: 'read' },
} as const satisfies { [T in keyof Tables]: Record<keyof Tables[T], Access> };

export function isWrite(target: string, method: string): boolean {
  return (ACCESS as Record<string, Record<string, Access> | undefined>)[target]?.[method] === 'write';
}

/** The methods of a table the worker serves: exactly the classified ones. */
export function servedMethods(target: keyof Tables): string[] {
  return Object.keys(ACCESS[target]);
}

export interface CallMessage {
  type: 'call';
  id: number;
  target: string;
  method: string;
  args: unknown[];
  /**
   * The caller's clock reading (ms) and the wall time (performance.timeOrigin + performance.now())
   * it was read at. Without a shared clock (see Clock.sharedTime) the worker's `now` is this
   * reading plus the wall time elapsed since, read when the method runs (inside the lock).
   */
  now: number;
  sentAt: number;
  /** Date.now() after which the worker answers SQLITE_BUSY instead of waiting longer for a lock. */
  deadline: number;
}

export interface CloseMessage {
  type: 'close';
}

/** Start watching the file for outbox changes (lib/sqlite/changes.ts), every `intervalMs`. */
export interface WatchMessage {
  type: 'watch';
  intervalMs: number;
}

export type ToWorker = CallMessage | CloseMessage | WatchMessage;

export interface SerializedError {
  /** The class's name (`name` of the error). */
  name: string;
  message: string;
  /**
   * The error's own enumerable data with primitive values: `code` and the fields of its class
   * (`reason`, `status`, `found`...), node:sqlite's `errcode` and `errstr`. Not the cause.
   */
  fields?: Record<string, string | number | boolean | null>;
}

export type FromWorker =
  | { type: 'ready'; methods: Record<string, string[]> }
  | { type: 'failed'; error: SerializedError }
  | { type: 'result'; id: number; value: unknown }
  | { type: 'error'; id: number; error: SerializedError }
  | { type: 'watching' }
  | { type: 'changes'; ids: string[]; txs: string[] }
  | { type: 'closed' };

type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * The classes an error keeps across the thread: every error class of lib/errors/classes.ts and
 * lib/errors/worker.ts, and the built-in ones.
 */
const ERROR_CLASSES: ReadonlyMap<string, ErrorClass> = new Map(
  ([...Object.values(errors), ...Object.values(workerErrors), Error, TypeError, RangeError, SyntaxError] as unknown[])
    .filter(
      (value): value is ErrorClass =>
        typeof value === 'function' && (value === Error || value.prototype instanceof Error),
    )
    .map((type) => [type.name, type]),
);

/** Errors cross the thread boundary as plain data; their class, code and fields survive. */
export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const fields: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(error)) {
    if (key === 'message' || key === 'stack' || key === 'cause') continue;
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      fields[key] = value;
  }
  return { name: error.name, message: error.message, fields };
}

/**
 * The error again, of its class when that is one of ERROR_CLASSES (an Error named as it was
 * otherwise). It is built as the class's instance without running its constructor (whose
 * arguments differ per class), then given the fields it had.
 */
export function deserializeError(data: SerializedError): Error {
  const type = ERROR_CLASSES.get(data.name) ?? Error;
  const error: Error = Reflect.construct(Error, [data.message], type);
  if (error.name !== data.name) error.name = data.name;
  return Object.assign(error, data.fields);
}

/** SQLITE_BUSY and its extended codes: another connection holds the lock. */
export function isBusy(error: unknown): boolean {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  return typeof errcode === 'number' && (errcode & 0xff) === 5;
}
