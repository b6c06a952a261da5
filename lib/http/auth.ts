/**
 * The admin bearer token of the merkle endpoints. Without a configured token they are open
 * (the operator keeps them on a private network).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { RelayError } from '../errors/classes.ts';
import type { Exchange } from './exchange.ts';

/** Throws `unauthorized` unless the request carries the admin token; a no-op without one. */
export type AdminCheck = (ex: Exchange) => void;

export function createAdminCheck(token: string | null): AdminCheck {
  if (token === null) return () => {};
  const digest = createHash('sha256').update(token).digest();
  return (ex) => {
    const header = ex.req.headers.authorization ?? '';
    // RFC 9110 §11.1: the auth-scheme is case-insensitive (clients send "bearer" too).
    const match = /^Bearer ([\x21-\x7e]+)$/i.exec(header);
    const given = createHash('sha256')
      .update(match ? match[1] : '')
      .digest();
    // Equal-length digests: the comparison time does not depend on where the tokens differ.
    if (!match || !timingSafeEqual(given, digest)) {
      throw new RelayError('unauthorized', 'a valid admin bearer token is required');
    }
  };
}

/** The headers an error answer adds: the challenge with a 401. */
export function authErrorHeaders(error: RelayError, headers: Record<string, string>): void {
  if (error.code === 'unauthorized') headers['WWW-Authenticate'] = 'Bearer';
}
