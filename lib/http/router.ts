/**
 * The route table of the HTTP API: one entry per endpoint drives dispatch, 404, 405 and `Allow`,
 * so adding an endpoint is adding an entry. A `{name}` path segment matches one non-empty
 * segment, found in `ex.params`. HEAD is served by GET without the body; OPTIONS answers from the
 * methods listed (lib/http/cors.ts adds the preflight headers).
 */
import { RelayError } from '../errors/classes.ts';
import type { Exchange } from './exchange.ts';

export type RouteHandler = (ex: Exchange) => void | Promise<void>;

/** One endpoint. */
export interface Route {
  path: string;
  GET?: RouteHandler;
  POST?: RouteHandler;
  /** A successful GET is a health probe, logged at debug (probes come every few seconds). */
  probe?: boolean;
}

export interface CompiledRoute extends Route {
  allow: string;
  segments: string[];
}

export interface RouteTable {
  /** The route whose path is exactly `path`, if any (no parameters, no parsing). */
  exact(path: string): CompiledRoute | undefined;
  /** The route matching `path`, with its `{name}` segments written into `params`. */
  match(path: string, params: Record<string, string>): CompiledRoute | undefined;
}

export function compileRoutes(routes: readonly Route[]): RouteTable {
  const exact = new Map<string, CompiledRoute>();
  const patterns: CompiledRoute[] = [];
  for (const route of routes) {
    const allow = [route.GET && 'GET, HEAD', route.POST && 'POST', 'OPTIONS'].filter(Boolean).join(', ');
    const compiled = { ...route, allow, segments: route.path.split('/') };
    if (route.path.includes('{')) patterns.push(compiled);
    else exact.set(route.path, compiled);
  }
  return {
    exact: (path) => exact.get(path),
    match(path, params) {
      const found = exact.get(path);
      if (found !== undefined) return found;
      const segments = path.split('/');
      for (const route of patterns) {
        if (route.segments.length !== segments.length) continue;
        const values: Record<string, string> = {};
        const matches = route.segments.every((part, i) => {
          if (!part.startsWith('{')) return part === segments[i];
          values[part.slice(1, -1)] = segments[i];
          return segments[i] !== '';
        });
        if (matches) {
          Object.assign(params, values);
          return route;
        }
      }
      return undefined;
    },
  };
}

/**
 * The route of the exchange's request line, recorded on the exchange (`matched`, `route`, and
 * `url` when the line had to be parsed); `not_found` when there is none.
 */
export function findRoute(table: RouteTable, ex: Exchange): CompiledRoute {
  const target = ex.target ?? ex.req.url ?? '/';
  // A request line that is exactly a route (the usual case) has nothing to normalise or query.
  let found = table.exact(target);
  if (found === undefined) {
    try {
      ex.url = new URL(target, 'http://localhost');
    } catch {
      throw new RelayError('not_found', 'no such endpoint');
    }
    found = table.match(ex.url.pathname, ex.params);
    if (found === undefined) throw new RelayError('not_found', 'no such endpoint');
  }
  ex.matched = found;
  ex.route = found.path;
  return found;
}

/** The handler of the request's method on `route` (HEAD is GET's); `method_not_allowed` when none. */
export function routeHandler(route: CompiledRoute, method: string | undefined): RouteHandler {
  const handler = method === 'GET' || method === 'HEAD' ? route.GET : method === 'POST' ? route.POST : undefined;
  if (handler === undefined) throw new RelayError('method_not_allowed', `${method} is not allowed on ${route.path}`);
  return handler;
}

/** The headers an error answer adds on this route: `Allow` with a 405. */
export function routeErrorHeaders(ex: Exchange, error: RelayError, headers: Record<string, string>): void {
  if (error.code === 'method_not_allowed' && ex.matched) headers.Allow = ex.matched.allow;
}
