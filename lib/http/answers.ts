/**
 * Writing answers: every answer carries the same security and tracing headers; every error is
 * JSON `{"reason","message"}` with `Retry-After` on each 408/429/503, and never a stack or cause.
 */
import { retryAfterHeader, type RelayError } from '../errors/classes.ts';
import type { Exchange } from './exchange.ts';

export const JSON_TYPE = 'application/json';
export const TEXT_TYPE = 'text/plain; charset=utf-8';

export function send(
  ex: Exchange,
  status: number,
  body: string,
  type: string,
  headers: Record<string, string> = {},
): void {
  const { res } = ex;
  if (res.headersSent) return;
  // One writeHead instead of a setHeader per field: each setHeader validates and stores its field.
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Request-Id': ex.id,
    ...headers,
  });
  res.end(ex.req.method === 'HEAD' ? undefined : body);
}

export function sendJson(ex: Exchange, status: number, value: unknown): void {
  send(ex, status, JSON.stringify(value), JSON_TYPE);
}

export function sendText(ex: Exchange, status: number, text: string): void {
  send(ex, status, text, TEXT_TYPE);
}

/** The error's JSON body with its status and Retry-After, plus `extra` headers. */
export function sendError(ex: Exchange, error: RelayError, extra: Record<string, string> = {}): void {
  const headers: Record<string, string> = { ...extra };
  const retryAfter = retryAfterHeader(error);
  if (retryAfter !== undefined) headers['Retry-After'] = retryAfter;
  send(ex, error.status, JSON.stringify(error.toJSON()), JSON_TYPE, headers);
}

/** A 204 with these headers and no body (OPTIONS). */
export function sendEmpty(ex: Exchange, headers: Record<string, string>): void {
  ex.res.statusCode = 204;
  for (const [name, value] of Object.entries(headers)) ex.res.setHeader(name, value);
  ex.res.setHeader('X-Request-Id', ex.id);
  ex.res.end();
}
