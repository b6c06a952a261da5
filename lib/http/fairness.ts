/**
 * Per-client limits (docs/api.md#per-client-limits): `relayApi.clientRateLimit`, a bucket per
 * client in front of the global one for POST /relay, and `server.readRateLimit`, a budget per
 * client for status reads and stream openings (their own, so reads never spend what relays need).
 * A refusal is 429 `rate_limited` with Retry-After, before anything of the request is done. The
 * buckets live in the store when it shares them between replicas (PostgreSQL), else in memory.
 *
 * An IPv6 client takes a token from its /64's bucket, then its /56's and its /48's, which hold 2×
 * and 5× a client's bucket (lib/http/client-address.ts): the first that refuses refuses the request.
 */
import type { IncomingMessage } from 'node:http';
import { createClientBuckets, type ClientRateLimiter } from '../relay/client-rate-limit.ts';
import type { Client, ClientBlock } from './client-address.ts';
import type { Clock } from '../clock.ts';
import { RelayError } from '../errors/classes.ts';
import { callStore, type RelayerStore } from '../store/bundle.ts';
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
  clientOf(req: IncomingMessage): Client;
}): Fairness {
  const { clock, store, clientOf } = options;
  /** One budget's buckets: a limiter per scope, made at first use, `share` times the client's bucket. */
  const limiter = (name: string, limit: RateLimitConfig | null) => {
    if (limit === null) return undefined;
    const scopes = new Map<string, ClientRateLimiter>();
    return (block: ClientBlock): ClientRateLimiter => {
      let found = scopes.get(block.scope);
      if (found === undefined) {
        const scaled = { burst: limit.burst * block.share, perMinute: limit.perMinute * block.share };
        const scoped = block.scope === 'client' ? name : `${name}_${block.scope}`;
        found = store?.clientRateLimiter?.(scoped, scaled) ?? createClientBuckets({ clock, ...scaled });
        scopes.set(block.scope, found);
      }
      return found;
    };
  };

  function gate(limiterOf: ((block: ClientBlock) => ClientRateLimiter) | undefined, what: string) {
    if (limiterOf === undefined) return undefined;
    return async (ex: Exchange) => {
      for (const block of clientOf(ex.req)) {
        const taken = await callStore(() => limiterOf(block).take(block.key));
        if (!taken.ok)
          throw new RelayError(
            'rate_limited',
            block.scope === 'client'
              ? `this client's ${what} rate limit is exceeded; retry after a short backoff`
              : `the ${what} rate limit of this client's IPv6 /${block.scope} is exceeded; retry after a short backoff`,
            { retryAfterSeconds: taken.retryAfterSeconds },
          );
      }
    };
  }

  return {
    relay: gate(limiter('relay', options.relay), 'relay'),
    read: gate(limiter('read', options.read), 'read'),
  };
}
