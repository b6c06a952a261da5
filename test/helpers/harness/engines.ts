/**
 * The storage engines every contract suite runs on, in one place: the per-process memory
 * engines, SQLite (in memory and on a file, answered by its worker thread) and PostgreSQL on a
 * real server (test/helpers/harness/postgres.ts). A contract suite loops over ENGINES, a reader of the
 * outbox over OUTBOX_ENGINES; a new engine is one entry here.
 */
import pg from 'pg';
import { createMemoryDedupStore, type DedupStore } from '../../../lib/relay/dedup.ts';
import { createMemoryMerkleStore } from '../../../lib/store/merkle.ts';
import { createMemoryOutbox, type Outbox } from '../../../lib/outbox/index.ts';
import { openPostgresStore, type PostgresStoreOptions } from '../../../lib/postgres/index.ts';
import { createTokenBucket, type RateLimiter } from '../../../lib/relay/rate-limit.ts';
import { openSqliteStore } from '../../../lib/sqlite/index.ts';
import type { MerkleStore } from '../../../lib/types.ts';
import type { FakeClock } from '../fakes/clock.ts';
import { sharedPostgres } from './shared-postgres.ts';
import { sharedSqlite } from './shared-sqlite.ts';

export type RelayApiSettings = PostgresStoreOptions['relayApi'];

/** The relay settings the engines are opened with unless a test gives its own. */
export function relayApiSettings(overrides: Partial<RelayApiSettings> = {}): RelayApiSettings {
  return {
    rateLimit: { burst: 100, perMinute: 100 },
    dedupWindowSeconds: 300,
    dedupCapacity: 10_000,
    receiptTimeoutSeconds: 10,
    ...overrides,
  };
}

export interface OpenedEngine {
  outbox: Outbox;
  merkle: MerkleStore;
  /** Merkle rows stored, read independently of listMerkle. */
  merkleRowCount(): Promise<number>;
  /** The engine's own dedup store and rate limiter, when it has them (memory, PostgreSQL). */
  dedup?: DedupStore;
  rateLimiter?: RateLimiter;
  /** Another connection to the same data (a replica), when the engine has one. */
  connect?(): Promise<{ outbox: Outbox; close(): void | Promise<void> }>;
  close(): void | Promise<void>;
}

export interface Engine {
  name: string;
  /** Whether the engine has its own dedup store and rate limiter (shared between replicas). */
  limits: boolean;
  /** How long a dedup reservation not yet committed lives on this engine (docs/replicas.md#how-replicas-agree). */
  dedupPendingMs(api: RelayApiSettings): number;
  open(clock: FakeClock, api?: RelayApiSettings): Promise<OpenedEngine>;
}

export const memoryEngine: Engine = {
  name: 'memory',
  limits: true,
  dedupPendingMs: (api) => api.dedupWindowSeconds * 1000,
  async open(clock, api = relayApiSettings()) {
    const merkle = createMemoryMerkleStore();
    return {
      outbox: createMemoryOutbox({ clock }),
      merkle,
      merkleRowCount: async () => merkle.size(),
      dedup: createMemoryDedupStore({ clock, windowMs: api.dedupWindowSeconds * 1000, capacity: api.dedupCapacity }),
      rateLimiter: createTokenBucket({ clock, ...api.rateLimit }),
      close() {},
    };
  },
};

/** SQLite in memory: a fresh store (and worker thread) for each test. */
function sqliteMemoryEngine(): Engine {
  return {
    name: 'SQLite :memory:',
    limits: false,
    // SQLite keeps no dedup or rate limit of its own (the per-process ones are used).
    dedupPendingMs: () => 0,
    async open(clock) {
      const store = await openSqliteStore(':memory:', { clock });
      return {
        outbox: store.outbox,
        merkle: store.merkle,
        merkleRowCount: () => store.merkleRowCount(),
        close: () => store.close(),
      };
    },
  };
}

/**
 * SQLite on a file in WAL mode, with replicas (other connections to the file): one store shared
 * by the tests of the file, emptied for each (test/helpers/harness/shared-sqlite.ts says why that is safe).
 */
function sqliteFileEngine(): Engine {
  // Created with the module, so its after() hook belongs to the file, not to the first test.
  const shared = sharedSqlite('engines');
  return {
    name: 'SQLite file (WAL)',
    limits: false,
    dedupPendingMs: () => 0,
    async open(clock) {
      const { store, connect, release } = await shared.lease(clock);
      return {
        outbox: store.outbox,
        merkle: store.merkle,
        merkleRowCount: () => store.merkleRowCount(),
        async connect() {
          const other = await connect();
          return { outbox: other.outbox, close() {} };
        },
        close: release,
      };
    },
  };
}

// Created with the module, so its after() hook belongs to the file, not to the first test.
const sharedSchema = sharedPostgres();

/**
 * PostgreSQL on the shared test server: one schema shared by the tests of the file, emptied for
 * each (test/helpers/harness/shared-postgres.ts says why that is safe); each test opens its own store on
 * it, with its clock and settings.
 */
export const postgresEngine: Engine = {
  name: 'PostgreSQL',
  limits: true,
  // A pending reservation lives the receipt timeout + 5 s (docs/replicas.md#how-replicas-agree).
  dedupPendingMs: (api) => api.receiptTimeoutSeconds * 1000 + 5_000,
  async open(clock, api = relayApiSettings()) {
    const { pool, schema, release } = await sharedSchema.lease();
    const store = await openPostgresStore(pool, { relayApi: api, schema, clock });
    return {
      outbox: store.outbox,
      merkle: store.merkle,
      merkleRowCount: async () =>
        Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".merkle_insertions`)).rows[0].n),
      dedup: store.dedup,
      rateLimiter: store.rateLimiter,
      async connect() {
        // Another replica: its own pool on the same schema.
        const other = new pg.Pool({ connectionString: pool.options.connectionString, max: 2 });
        const replica = await openPostgresStore(other, { relayApi: api, schema, clock });
        return { outbox: replica.outbox, close: () => other.end() };
      },
      async close() {
        await store.close();
        release();
      },
    };
  },
};

const sqliteFile = sqliteFileEngine();

export const ENGINES: readonly Engine[] = [memoryEngine, sqliteMemoryEngine(), sqliteFile, postgresEngine];

/**
 * The engines an outbox reader runs on (the status endpoints, the client), one of each kind:
 * memory, SQLite on a file, PostgreSQL (docs/outbox.md#message-lifecycle).
 */
export const OUTBOX_ENGINES: readonly Engine[] = [memoryEngine, sqliteFile, postgresEngine];
