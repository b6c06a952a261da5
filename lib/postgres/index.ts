/**
 * The PostgreSQL store (`relayer-api/postgres`, docs/design.md#postgresql, docs/replicas.md#how-replicas-agree): outbox,
 * merkle insertions, dedup reservations and the global token bucket in one database, shared by
 * every replica, so N `relayer-server` processes behind one load balancer behave as one server.
 *
 * The caller brings a `pg`-compatible pool (see pool.ts) and keeps owning it: close() stops the
 * store, the caller ends the pool. Sizing: each in-flight POST /relay holds no connection between
 * its statements, so a small pool (the default 10 of `pg`) serves hundreds of requests a second.
 */
import type { Clock } from '../clock.ts';
import type { RelayAdmission, RelayerStore } from '../store/bundle.ts';
import type { RelayApiConfig } from '../types.ts';
import { createPostgresChangeFeed, type PostgresChangeFeed } from './changes.ts';
import { createPostgresClientBuckets } from './client-rate-limit.ts';
import { createPostgresDedupStore, type PostgresDedupStore } from './dedup.ts';
import { createPostgresMerkleStore, type PostgresMerkleStore } from './merkle.ts';
import { createPostgresOutbox, type PostgresOutbox } from './outbox.ts';
import { run, type PgPool } from './pool.ts';
import { createPostgresTokenBucket, type PostgresRateLimiter } from './rate-limit.ts';
import { createPostgresAdmission } from './relay.ts';
import { migrate, quoteSchema } from './schema.ts';
import { createPostgresVersions, type PostgresVersions } from './versions.ts';

export * from '../errors/family.ts';
export { migrate, MIGRATIONS, SCHEMA_VERSION } from './schema.ts';
export {
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  type PgPool,
  type PgPoolClient,
  type PgQueryable,
  type PgQueryConfig,
  type PgQueryResult,
} from './pool.ts';
export type {
  PostgresChangeFeed,
  PostgresDedupStore,
  PostgresMerkleStore,
  PostgresOutbox,
  PostgresRateLimiter,
  PostgresVersions,
};
export type { PostgresReservation } from './dedup.ts';

/** A pending reservation outlives the receipt wait by this much before another replica may take it. */
export const PENDING_MARGIN_MS = 5_000;

export interface PostgresStoreOptions {
  /** The relay settings the shared dedup store and bucket follow (config.relayApi). */
  relayApi: Pick<RelayApiConfig, 'rateLimit' | 'dedupWindowSeconds' | 'dedupCapacity' | 'receiptTimeoutSeconds'>;
  /** PostgreSQL schema holding the tables (created if missing). Default 'relayer'. */
  schema?: string;
  /**
   * Time source for expiries, the bucket and the lifecycle timestamps. Default: the database's
   * clock, so replicas whose clocks differ agree; the outbox reads it inside each statement, after
   * any wait for a row lock. Tests inject a fake clock: it is read when a call is made.
   */
  clock?: Clock;
  /** Run the migrations (default true). */
  migrate?: boolean;
  /** Called when an idle pooled connection dies (e.g. the database restarted); the pool replaces it. */
  onPoolError?: (error: Error) => void;
  /** Called when the change feed's listening connection is lost (it connects again; lib/postgres/changes.ts). */
  onListenLost?: (error: Error) => void;
  /**
   * Where the change feed takes its LISTEN connection (default `pool`). A pool of its own keeps
   * that connection out of the statements' pool, so even a pool of one serves requests while a
   * status stream listens (docs/outbox.md#change-feed); the commands give it one. Ended by its owner.
   */
  listenPool?: PgPool;
}

export interface PostgresStore extends RelayerStore {
  /**
   * The outbox and its change feed (lib/outbox/change-feed.ts), which holds one connection of `listenPool`
   * (default the pool) for LISTEN from its first ready() until close().
   */
  outbox: PostgresOutbox & PostgresVersions & { readonly changes: PostgresChangeFeed };
  admission: RelayAdmission;
  merkle: PostgresMerkleStore;
  dedup: PostgresDedupStore;
  rateLimiter: PostgresRateLimiter;
  /** Resolves when the database answers (GET /ready). */
  ping(): Promise<void>;
  /** Stops using the pool; does not end it (the caller owns it). Idempotent. */
  close(): Promise<void>;
}

export async function openPostgresStore(pool: PgPool, options: PostgresStoreOptions): Promise<PostgresStore> {
  const name = options.schema ?? 'relayer';
  const s = quoteSchema(name);
  const { relayApi, clock } = options;
  // pg.Pool emits 'error' for an idle connection the server closed; unhandled, that event would
  // end the process. The pool drops the connection itself and opens a new one on the next query.
  const onPoolError = options.onPoolError ?? (() => {});
  pool.on?.('error', onPoolError);
  if (options.migrate !== false) await migrate(pool, name);
  const dedup = {
    windowMs: relayApi.dedupWindowSeconds * 1000,
    pendingMs: relayApi.receiptTimeoutSeconds * 1000 + PENDING_MARGIN_MS,
    capacity: relayApi.dedupCapacity,
  };
  const changes = createPostgresChangeFeed(options.listenPool ?? pool, s, { clock, onLost: options.onListenLost });
  return {
    outbox: Object.assign(createPostgresOutbox(pool, s, clock), createPostgresVersions(pool, s), { changes }),
    merkle: createPostgresMerkleStore(pool, s),
    dedup: createPostgresDedupStore(pool, s, { ...dedup, clock }),
    rateLimiter: createPostgresTokenBucket(pool, s, { ...relayApi.rateLimit, clock }),
    clientRateLimiter: (budget, bucket) => createPostgresClientBuckets(pool, s, { name: budget, ...bucket, clock }),
    // POST /relay in two round trips instead of four (relay.ts), on the same tables.
    admission: createPostgresAdmission(pool, s, { bucket: relayApi.rateLimit, dedup, clock }),
    async ping() {
      await run(pool, 'SELECT 1');
    },
    async close() {
      // The listening connection, if any, goes back to its pool; nothing else is held.
      await changes.close();
    },
  };
}
