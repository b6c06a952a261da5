/**
 * The PostgreSQL store's change feed (docs/outbox.md#change-feed): one connection per replica
 * LISTENs on the outbox's channel, whatever the number of followers, and hands on what the
 * outbox's triggers NOTIFY at each commit (schema migration 4): enqueues by any replica, claims
 * and outcomes by any relayer-worker.
 *
 * The listening connection is taken from the store's pool at the first ready() and kept. When it
 * is lost (the database restarted, the connection was cut, the 30 s health check got no answer),
 * notifications sent meanwhile are lost with it: the feed connects again (backing off from 100 ms
 * to 5 s) and, once it LISTENs again, publishes `all`, so every follower reads again what it
 * follows. Nothing committed while it was away is missed.
 */
import { createChangeHub, type ChangeHub } from '../outbox/change-feed.ts';
import { systemClock, type Clock } from '../clock.ts';
import { InvalidArgumentError, StoreUnavailableError } from '../errors/classes.ts';
import type { PgPool, PgPoolClient } from './pool.ts';
import { outboxChannel } from './schema-push.ts';

/** A pooled connection that can LISTEN: `pg`'s Client. */
export interface PgListenClient extends PgPoolClient {
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

export interface PostgresChangeFeedOptions {
  clock?: Clock;
  /** Told when the listening connection is lost (it is replaced). */
  onLost?: (error: Error) => void;
}

export interface PostgresChangeFeed extends ChangeHub {
  /** Whether the listening connection is up (false before the first ready() too). */
  listening(): boolean;
  /** Stops listening and gives the connection back. Idempotent. */
  close(): Promise<void>;
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;
const HEALTH_CHECK_MS = 30_000;

function isListenClient(client: PgPoolClient): client is PgListenClient {
  return typeof (client as Partial<PgListenClient>).on === 'function';
}

/** A change as NOTIFY carries it ({"ids":[…],"txs":[…]}), or undefined when it is not one. */
function parsePayload(payload: string | undefined): { ids: string[]; txs: string[] } | undefined {
  try {
    const value = JSON.parse(payload ?? '') as { ids?: unknown; txs?: unknown };
    const strings = (list: unknown) => Array.isArray(list) && list.every((item) => typeof item === 'string');
    if (strings(value.ids) && strings(value.txs)) return value as { ids: string[]; txs: string[] };
  } catch {
    // not ours
  }
  return undefined;
}

/** The change feed of the outbox of schema `s` (quoted), listening on a connection of `pool`. */
export function createPostgresChangeFeed(
  pool: PgPool,
  s: string,
  options: PostgresChangeFeedOptions = {},
): PostgresChangeFeed {
  const clock = options.clock ?? systemClock;
  const channel = outboxChannel(s);
  let client: PgListenClient | undefined;
  let closed = false;
  let retryMs = FIRST_RETRY_MS;
  let retryTimer: unknown;
  let healthTimer: unknown;

  const hub = createChangeHub(async () => {
    await listen();
  });

  function drop(lost: PgListenClient, error: Error): void {
    if (client !== lost) return;
    client = undefined;
    clock.clearTimeout(healthTimer);
    try {
      lost.release(error); // a client released with an error is closed, not pooled again
    } catch {
      // already released
    }
    if (closed) return;
    options.onLost?.(error);
    scheduleReconnect();
  }

  function scheduleReconnect(): void {
    retryTimer = clock.setTimeout(
      () => {
        retryTimer = undefined;
        listen().then(
          // Whatever was committed while nobody listened: every follower reads again.
          () => hub.publish({ ids: [], txs: [], all: true }),
          () => scheduleReconnect(),
        );
      },
      retryMs,
      { background: true },
    );
    retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
  }

  function checkHealth(listening: PgListenClient): void {
    healthTimer = clock.setTimeout(
      () => {
        listening.query('SELECT 1').then(
          () => client === listening && checkHealth(listening),
          (error: Error) => drop(listening, error),
        );
      },
      HEALTH_CHECK_MS,
      { background: true },
    );
  }

  async function listen(): Promise<void> {
    if (closed) throw new StoreUnavailableError('the PostgreSQL change feed is closed');
    const connected = await pool.connect();
    if (!isListenClient(connected)) {
      connected.release();
      throw new InvalidArgumentError(
        'the pool\'s connections cannot LISTEN (expected pg\'s Client, with on("notification"))',
      );
    }
    const lost = (error: Error) => drop(connected, error);
    connected.on('error', lost);
    connected.on('end', () => lost(new StoreUnavailableError('the listening connection ended')));
    connected.on('notification', (message) => {
      if (connected !== client || message.channel !== channel) return;
      const change = parsePayload(message.payload);
      hub.publish(change ?? { ids: [], txs: [], all: true });
    });
    client = connected;
    try {
      await connected.query(`LISTEN "${channel}"`);
    } catch (error) {
      drop(connected, error as Error);
      throw error;
    }
    if (closed) {
      await stop(connected);
      throw new StoreUnavailableError('the PostgreSQL change feed is closed');
    }
    retryMs = FIRST_RETRY_MS;
    checkHealth(connected);
  }

  async function stop(listening: PgListenClient): Promise<void> {
    client = undefined;
    try {
      await listening.query('UNLISTEN *');
      listening.release();
    } catch (error) {
      try {
        listening.release(error as Error);
      } catch {
        // already released
      }
    }
  }

  return {
    ...hub,
    listening: () => client !== undefined,
    async close() {
      if (closed) return;
      closed = true;
      clock.clearTimeout(retryTimer);
      clock.clearTimeout(healthTimer);
      if (client !== undefined) await stop(client);
    },
  };
}
