/**
 * CORS for browser clients: only the configured origins ('*' for any) get
 * `Access-Control-Allow-Origin`; the others get the answer without it (the browser hides it).
 * OPTIONS answers 204 with `Allow`, and with the preflight headers for an allowed origin.
 */
import { sendEmpty } from './answers.ts';
import type { Exchange } from './exchange.ts';

export interface Cors {
  /** Adds the CORS headers of an answer; true when the request's origin is allowed. */
  apply(ex: Exchange): boolean;
  /** Answers OPTIONS on a route that allows `allow`. */
  options(ex: Exchange, allow: string, allowedOrigin: boolean): void;
}

export function createCors(origins: readonly string[]): Cors {
  const allowed = new Set(origins);
  return {
    apply(ex) {
      const origin = ex.req.headers.origin;
      if (origin === undefined || allowed.size === 0) return false;
      ex.res.setHeader('Vary', 'Origin');
      if (!allowed.has(origin) && !allowed.has('*')) return false;
      ex.res.setHeader('Access-Control-Allow-Origin', origin);
      ex.res.setHeader('Access-Control-Expose-Headers', 'Retry-After, X-Request-Id');
      return true;
    },
    options(ex, allow, allowedOrigin) {
      const headers: Record<string, string> = { Allow: allow };
      if (allowedOrigin && ex.req.headers['access-control-request-method'] !== undefined) {
        headers['Access-Control-Allow-Methods'] = allow;
        headers['Access-Control-Allow-Headers'] = 'Content-Type, Authorization, X-Request-Id';
        headers['Access-Control-Max-Age'] = '600';
      }
      sendEmpty(ex, headers);
    },
  };
}
