/**
 * What an operator is told about a failed JSON-RPC attempt without leaking a key: the endpoint
 * reduced to its origin, the node's or the transport's words with the URL's pieces blanked out,
 * and the failure's class (docs/operations.md#logs).
 */
import type { RpcError } from '../errors/classes.ts';
import { redactUrls } from '../redact.ts';

/** The class of an endpoint's failure, as an operator acts on it (docs/operations.md#logs). */
export type RpcFailureClass =
  | 'dns'
  | 'connection_refused'
  | 'connection_reset'
  | 'tls'
  | 'timeout'
  | 'transport'
  | 'http_5xx'
  | 'http_4xx'
  | 'rpc_error'
  | 'malformed_answer';

/** The innermost `code` property on the cause chain (Node's "ECONNREFUSED", undici's "UND_ERR_SOCKET"). */
function transportCode(error: unknown): string | undefined {
  let code: string | undefined;
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const own = (e as { code?: unknown }).code;
    if (typeof own === 'string') code = own;
  }
  return code;
}

/**
 * The class and phrase of a transport failure (the request got no HTTP answer) from the `code` on
 * its cause chain: "DNS lookup failed (ENOTFOUND)", "connection refused". The server's logs and the
 * worker's start-up check (lib/worker/chain/watch.ts) say the same words.
 */
export function classifyTransportFailure(cause: unknown): { failure: RpcFailureClass; summary: string } {
  const code = transportCode(cause) ?? '';
  if (/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL)$/.test(code))
    return { failure: 'dns', summary: `DNS lookup failed (${code})` };
  if (code === 'ECONNREFUSED') return { failure: 'connection_refused', summary: 'connection refused' };
  if (/^(ECONNRESET|EPIPE|UND_ERR_SOCKET|UND_ERR_CLOSED)$/.test(code))
    return { failure: 'connection_reset', summary: 'connection reset' };
  if (/^(ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT)$/.test(code))
    return { failure: 'timeout', summary: 'timed out' };
  if (/CERT|TLS|SSL|UNABLE_TO_VERIFY/.test(code)) return { failure: 'tls', summary: `TLS error (${code})` };
  return { failure: 'transport', summary: code === '' ? 'transport error' : `transport error (${code})` };
}

/** The class of `error` and a short URL-free phrase for it ("connection refused", "HTTP 503"). */
export function classifyFailure(error: RpcError): { failure: RpcFailureClass; summary: string } {
  switch (error.code) {
    case 'transport':
      return classifyTransportFailure(error.cause);
    case 'attempt_timeout':
    case 'deadline':
      return { failure: 'timeout', summary: 'no answer in time' };
    case 'http_status':
      return { failure: /^HTTP 5/.test(error.message) ? 'http_5xx' : 'http_4xx', summary: error.message };
    case 'rpc_error':
      return { failure: 'rpc_error', summary: error.message };
    default:
      return { failure: 'malformed_answer', summary: `malformed answer (${error.message})` };
  }
}

/**
 * Why an attempt failed beneath its fixed message, for the operator's log: the node's JSON-RPC
 * error message or the innermost transport cause ("connect ECONNREFUSED 127.0.0.1:8545",
 * "getaddrinfo ENOTFOUND host"): first line, URLs redacted, at most 200 characters.
 */
export function causeText(error: unknown): string | undefined {
  let cause = error instanceof Error ? error.cause : undefined;
  while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause;
  const text = cause instanceof Error ? cause.message : cause;
  if (typeof text !== 'string' || text === '') return undefined;
  return redactUrls(text.split('\n')[0]).slice(0, 200);
}
