/**
 * What the main thread and the store's worker say to each other (lib/sqlite/client.ts,
 * lib/sqlite/worker.ts). A call names a table and one of its methods: any synchronous method of
 * lib/sqlite/outbox.ts or lib/sqlite/merkle.ts is served without further code. Methods listed in
 * WRITES are group-committed (one transaction and one fsync for every write waiting, a SAVEPOINT
 * each); every other method is a read and runs at once, also while a write waits for a lock.
 */
import { SchemaVersionError } from '../errors.ts';

export const WRITES: Readonly<Record<string, readonly string[]>> = {
  outbox: ['enqueue', 'markDelivered', 'claim', 'markFailed', 'extend', 'requeue'],
  merkle: ['insert', 'insertPacked'],
};

export function isWrite(target: string, method: string): boolean {
  return WRITES[target]?.includes(method) ?? false;
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

export type ToWorker = CallMessage | CloseMessage;

export interface SerializedError {
  name: string;
  message: string;
  code?: string;
  errcode?: number;
  errstr?: string;
  found?: number;
  supported?: number;
}

export type FromWorker =
  | { type: 'ready'; methods: Record<string, string[]> }
  | { type: 'failed'; error: SerializedError }
  | { type: 'result'; id: number; value: unknown }
  | { type: 'error'; id: number; error: SerializedError }
  | { type: 'closed' };

/** Errors cross the thread boundary as plain data; their class and SQLite codes survive. */
export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const e = error as Error & Partial<SerializedError>;
  return { name: e.name, message: e.message, code: e.code, errcode: e.errcode, errstr: e.errstr, found: e.found, supported: e.supported };
}

export function deserializeError(data: SerializedError): Error {
  if (data.name === 'SchemaVersionError') return new SchemaVersionError(data.found!, data.supported!);
  const Type = data.name === 'TypeError' ? TypeError : data.name === 'RangeError' ? RangeError : Error;
  const error = new Type(data.message);
  if (Type === Error && data.name !== 'Error') error.name = data.name;
  if (data.code !== undefined) Object.assign(error, { code: data.code, errcode: data.errcode, errstr: data.errstr });
  return error;
}

/** SQLITE_BUSY and its extended codes: another connection holds the lock. */
export function isBusy(error: unknown): boolean {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  return typeof errcode === 'number' && (errcode & 0xff) === 5;
}
