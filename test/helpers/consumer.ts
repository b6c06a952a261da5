/**
 * An embedder's TypeScript file: test/process/package-types.test.ts compiles it against the packed
 * tarball (docs/embedding.md#typescript). Every import must resolve (no TS2305), and each
 * `const x: T = …` line states what a type must be; nothing here runs.
 */
import {
  BaseError,
  type Broadcast,
  type BroadcastFence,
  type ClaimOptions,
  type ErrorCode,
  type GasSpend,
  InvalidArgumentError,
  type JournalEntry,
  type ListOptions,
  type AttemptState,
  OutOfRangeError,
  type Outbox,
  RelayError,
  type Reason,
  type RequeueFailedOptions,
  type NonceSlot,
  type NonceSlotOutcome,
  StoreUnavailableError,
  type ValidRelayRequest,
  type LoggerOptions,
  type TimerOptions,
  createMemoryOutbox,
} from 'relayer-api';
import { createRelayApi, type RelayApiOptions } from 'relayer-api/server';
import { openSqliteStore, SchemaVersionError, type SqliteStore } from 'relayer-api/sqlite';
import { openPostgresStore, type PostgresStore } from 'relayer-api/postgres';
import { createRelayClient, RelayApiError } from 'relayer-api/client';
import { createRelayerWorker, DeliveryError, TransactionError, CcipReadError } from 'relayer-api/worker';
import { createFakeClock, outboxContract, type MakeOutbox, type OutboxHarness } from 'relayer-api/testing';

declare const error: unknown;

if (error instanceof InvalidArgumentError) {
  const code: 'invalid_argument' = error.code;
  void code;
}
if (error instanceof OutOfRangeError) {
  const code: 'out_of_range' = error.code;
  void code;
}
if (error instanceof RelayError) {
  const code: Reason = error.code;
  void code;
}
if (error instanceof BaseError) {
  // After instanceof BaseError, code is the family's union, not any: this line must fail to compile.
  // @ts-expect-error
  const notACode: 'no such code' = error.code;
  const code: ErrorCode = error.code;
  void notACode;
  void code;
}
if (error instanceof DeliveryError && error.code === 'gas_payment') void error.final;
if (error instanceof TransactionError || error instanceof CcipReadError || error instanceof RelayApiError)
  void error.code;
if (error instanceof SchemaVersionError || error instanceof StoreUnavailableError) void error.code;

// The outbox's methods in the types they are written with, not Parameters<Outbox['…']>.
type Journal = {
  record: (b: Broadcast, fence?: BroadcastFence) => unknown;
  close: (slot: NonceSlot, outcome: NonceSlotOutcome) => unknown;
  entries: JournalEntry[];
  spend: GasSpend;
  claim: ClaimOptions;
  list: ListOptions;
  requeue: RequeueFailedOptions;
  state: AttemptState;
  request: ValidRelayRequest;
  logger: LoggerOptions;
  timer: TimerOptions;
};
const outbox: Outbox = createMemoryOutbox();
const harness: OutboxHarness = { outbox, close() {} };
const make: MakeOutbox = async () => harness;
void make;
void [createRelayApi, openSqliteStore, openPostgresStore, createRelayClient, createRelayerWorker, createFakeClock];
void outboxContract;
export type { Journal, RelayApiOptions, SqliteStore, PostgresStore };
