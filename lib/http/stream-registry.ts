/**
 * The open status streams of a server (docs/api.md#status-events): their places (bounded per
 * client, per IPv6 /56 and /48, and in all), what each follows, the one subscription to the change feed that wakes them,
 * the shared 15 s heartbeat, and the write that drops a client which does not read. The routes are
 * lib/http/events.ts's.
 */
import type { ChangeFeed, OutboxChange } from '../outbox/change-feed.ts';
import type { Clock } from '../clock.ts';
import { RelayError } from '../errors/classes.ts';
import type { Client } from './client-address.ts';
import type { Exchange } from './exchange.ts';

export const HEARTBEAT_MS = 15_000;
/** Bytes a stream may have waiting unsent before its client counts as not reading. */
export const MAX_UNSENT_BYTES = 64 * 1024;
const RETRY_AFTER_SECONDS = 5;

/** One open stream. */
export interface Stream {
  ex: Exchange;
  /** Keys it follows: message ids and transaction keys (lib/outbox/change-feed.ts txKey). */
  keys: Set<string>;
  /** Called for a change naming one of its keys, or for `all`. */
  changed(): void;
}

export interface StreamRegistry {
  /**
   * Takes a place for a stream of `client` (throws the 429/503 that refuses it); returns its
   * release. Each of the client's blocks holds at most `share` × maxSubscribersPerClient.
   */
  reserve(client: Client): () => void;
  /** Registers a stream (it then hears changes); `remove` undoes it. */
  add(stream: Stream): void;
  remove(stream: Stream): void;
  has(stream: Stream): boolean;
  /** Runs `fn` after `ms` while `stream` is registered; returns its cancel (remove cancels it too). */
  after(stream: Stream, ms: number, fn: () => void): () => void;
  /** Makes `stream` hear the changes naming `key`. */
  follow(stream: Stream, key: string): void;
  /** Starts the heartbeat if it is not running. */
  beating(): void;
  /** Writes `text`; a client with too much unsent is dropped (its socket destroyed). */
  write(stream: Stream, text: string): void;
  size(): number;
  /** Ends every stream and refuses new ones. */
  close(): void;
}

export function createStreamRegistry(options: {
  changes: ChangeFeed | undefined;
  clock: Clock;
  maxSubscribers: number;
  maxSubscribersPerClient: number;
}): StreamRegistry {
  const { changes, clock } = options;
  const streams = new Set<Stream>();
  const byKey = new Map<string, Set<Stream>>();
  const perClient = new Map<string, number>();
  /** The timers of each stream (its lifetime, a transaction stream's wait), cleared when it goes. */
  const timers = new Map<Stream, Set<unknown>>();
  let unsubscribe: (() => void) | undefined;
  let heartbeat: unknown;
  let closed = false;

  function onChange(change: OutboxChange): void {
    if (change.all) {
      for (const stream of streams) stream.changed();
      return;
    }
    const touched = new Set<Stream>();
    for (const key of [...change.ids, ...change.txs]) for (const s of byKey.get(key) ?? []) touched.add(s);
    for (const stream of touched) stream.changed();
  }

  function beat(): void {
    for (const stream of streams) write(stream, ': keep-alive\n\n');
    heartbeat = streams.size > 0 ? clock.setTimeout(beat, HEARTBEAT_MS, { background: true }) : undefined;
  }

  function write(stream: Stream, text: string): void {
    const { res } = stream.ex;
    if (res.destroyed || res.writableEnded || !res.headersSent) return;
    res.write(text);
    if (res.writableLength > MAX_UNSENT_BYTES) res.destroy();
  }

  return {
    reserve(client) {
      if (closed) throw new RelayError('subscribers_full', 'the server is shutting down', { retryAfterSeconds: 1 });
      if (streams.size >= options.maxSubscribers)
        throw new RelayError('subscribers_full', 'too many status streams are open on this server; retry later', {
          retryAfterSeconds: RETRY_AFTER_SECONDS,
        });
      for (const block of client) {
        const count = perClient.get(block.key) ?? 0;
        if (count < options.maxSubscribersPerClient * block.share) continue;
        throw new RelayError(
          'too_many_subscribers',
          block.scope === 'client'
            ? `this client has ${count} status streams open, the most allowed; close one first`
            : `this client's IPv6 /${block.scope} has ${count} status streams open, the most allowed; close one first`,
          { retryAfterSeconds: RETRY_AFTER_SECONDS },
        );
      }
      for (const block of client) perClient.set(block.key, (perClient.get(block.key) ?? 0) + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        for (const block of client) {
          const left = (perClient.get(block.key) ?? 1) - 1;
          if (left === 0) perClient.delete(block.key);
          else perClient.set(block.key, left);
        }
      };
    },
    add(stream) {
      streams.add(stream);
      unsubscribe ??= changes?.subscribe(onChange);
    },
    remove(stream) {
      for (const timer of timers.get(stream) ?? []) clock.clearTimeout(timer);
      timers.delete(stream);
      if (!streams.delete(stream)) return;
      for (const key of stream.keys) {
        const set = byKey.get(key);
        set?.delete(stream);
        if (set?.size === 0) byKey.delete(key);
      }
      if (streams.size === 0) {
        unsubscribe?.();
        unsubscribe = undefined;
        clock.clearTimeout(heartbeat);
        heartbeat = undefined;
      }
    },
    has: (stream) => streams.has(stream),
    after(stream, ms, fn) {
      const own = timers.get(stream) ?? new Set<unknown>();
      timers.set(stream, own);
      const timer = clock.setTimeout(
        () => {
          own.delete(timer);
          if (streams.has(stream)) fn();
        },
        ms,
        { background: true },
      );
      own.add(timer);
      return () => {
        own.delete(timer);
        clock.clearTimeout(timer);
      };
    },
    follow(stream, key) {
      if (stream.keys.has(key)) return;
      stream.keys.add(key);
      const set = byKey.get(key) ?? new Set<Stream>();
      byKey.set(key, set);
      set.add(stream);
    },
    beating() {
      heartbeat ??= clock.setTimeout(beat, HEARTBEAT_MS, { background: true });
    },
    write,
    size: () => streams.size,
    close() {
      closed = true;
      for (const stream of [...streams]) if (!stream.ex.res.writableEnded) stream.ex.res.end();
    },
  };
}
