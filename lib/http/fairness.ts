/**
 * Per-client limits (docs/api.md#per-client-limits): `relayApi.clientRateLimit`, a bucket per
 * client in front of the global one for POST /relay, and `server.readRateLimit`, a budget per
 * client for status reads and stream openings (their own, so reads never spend what relays need).
 * A refusal is 429 `rate_limited` with Retry-After, before anything of the request is done. The
 * buckets live in the store when it shares them between replicas (PostgreSQL), else in memory.
 */
import type { IncomingMessage } from 'node:http';
import { createClientBuckets, type ClientRateLimiter } from '../client-rate-limit.ts';
import type { Clock } from '../clock.ts';
import { RelayError } from '../errors.ts';
import { callStore, type RelayerStore } from '../store.ts';
import type { RateLimitConfig } from '../types.ts';
import type { Exchange } from './exchange.ts';

export interface Fairness {
  /** Takes the client's relay token (POST /relay); undefined when there is no per-client limit. */
  relay?(ex: Exchange): Promise<void>;
  /** Takes the client's read token (status reads, streams); undefined when there is no read budget. */
  read?(ex: Exchange): Promise<void>;
}

export function createFairness(options: {
  relay: RateLimitConfig | null;
  read: RateLimitConfig | null;
  clock: Clock;
  store?: RelayerStore;
  clientOf(req: IncomingMessage): string;
}): Fairness {
  const { clock, store, clientOf } = options;
  const limiter = (name: string, limit: RateLimitConfig | null) =>
    limit === null ? undefined : (store?.clientRateLimiter?.(name, limit) ?? createClientBuckets({ clock, ...limit }));

  function gate(limiter: ClientRateLimiter | undefined, what: string) {
    if (limiter === undefined) return undefined;
    return async (ex: Exchange) => {
      const client = clientOf(ex.req);
      const taken = await callStore(() => limiter.take(client));
      if (!taken.ok)
        throw new RelayError(
          'rate_limited',
          `this client's ${what} rate limit is exceeded; retry after a short backoff`,
          {
            retryAfterSeconds: taken.retryAfterSeconds,
          },
        );
    };
  }

  return {
    relay: gate(limiter('relay', options.relay), 'relay'),
    read: gate(limiter('read', options.read), 'read'),
  };
}
