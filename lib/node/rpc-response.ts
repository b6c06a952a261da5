/**
 * The answer of relayer-api/server's RPC transport (lib/node/rpc-transport.ts): a node:http
 * response as the core's `ChunkedResponse` (lib/rpc/body.ts), its status and headers as received
 * and its body handed to the core's bounded reader chunk by chunk, without a WHATWG stream
 * (docs/rpc.md#rpc-transport).
 *
 * Failures keep the global fetch's shape, so the core classes them alike: a TypeError "fetch
 * failed" with the Node error (its `code`, such as ECONNRESET) as its `cause`.
 */
import type { IncomingMessage } from 'node:http';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { BodySink, ChunkedBody, ChunkedResponse } from '../rpc/body.ts';

export function fetchFailed(cause: unknown): TypeError {
  // The global fetch's shape: the reason is in `cause` (lib/rpc/diagnostics.ts classes it by its
  // code). Node's messages name the host and port ("connect ECONNREFUSED 127.0.0.1:8545"), never
  // a path or key.
  return new TypeError('fetch failed', { cause });
}

const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

function decoderFor(encoding: string): Transform | undefined {
  switch (encoding.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

/** Header lookup on the parsed headers, without copying them into a `Headers`. */
class ResponseHeaders {
  readonly #res: IncomingMessage;
  /** The body was decoded: its declared length and encoding no longer describe it. */
  readonly #decoded: boolean;

  constructor(res: IncomingMessage, decoded: boolean) {
    this.#res = res;
    this.#decoded = decoded;
  }

  get(name: string): string | null {
    const key = name.toLowerCase();
    if (this.#decoded && (key === 'content-length' || key === 'content-encoding')) return null;
    const value = this.#res.headers[key];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : String(value);
  }
}

/**
 * The body of `res` for one reader. Data flows only once `read` is called (the response stays
 * paused until then); a failure before that is kept and told to the reader when it comes.
 */
class SocketBody implements ChunkedBody {
  readonly #source: Readable;
  readonly #destroy: (reason?: unknown) => void;
  #sink: BodySink | undefined;
  #done = false;
  #failure: unknown;

  constructor(res: IncomingMessage, source: Readable, destroy: (reason?: unknown) => void) {
    this.#source = source;
    this.#destroy = destroy;
    source.once('end', () => this.#finish());
    source.once('error', (error) => this.#finish(fetchFailed(error)));
    // The socket went away before the end (reset mid-body, or destroyed by an abort).
    res.once('close', () => {
      if (!res.complete)
        this.#finish(fetchFailed(Object.assign(new Error('other side closed'), { code: 'ECONNRESET' })));
    });
  }

  #finish(failure?: unknown): void {
    if (this.#done) return;
    if (this.#sink === undefined) {
      // Nothing is read before `read`, so only a failure can come first.
      this.#failure ??= failure;
      return;
    }
    this.#done = true;
    if (failure === undefined) this.#sink.end();
    else this.#sink.error(failure);
  }

  read(sink: BodySink): void {
    if (this.#sink !== undefined || this.#done) return;
    this.#sink = sink;
    if (this.#failure !== undefined) return this.#finish(this.#failure);
    this.#source.on('data', (chunk: Buffer) => {
      if (!this.#done) sink.data(chunk);
    });
  }

  cancel(reason?: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#destroy(reason);
  }
}

/** An empty body (a status that has none): it ends as soon as it is read. */
const EMPTY_BODY: ChunkedBody = {
  read: (sink) => sink.end(),
  cancel: () => {},
};

class NodeRpcResponse implements ChunkedResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: ResponseHeaders;
  readonly chunkedBody: ChunkedBody;

  constructor(status: number, statusText: string, headers: ResponseHeaders, body: ChunkedBody) {
    this.status = status;
    this.statusText = statusText;
    this.headers = headers;
    this.chunkedBody = body;
  }

  get ok(): boolean {
    return this.status >= 200 && this.status <= 299;
  }
}

/**
 * `res` as the core reads it. A gzip, deflate or br body (sent although none was asked for) is
 * decoded, so the core's byte bound counts decoded bytes: a small compressed bomb stops at it.
 * `destroy` drops the request and its socket (the body was cancelled: it is not reused).
 */
export function toRpcResponse(res: IncomingMessage, destroy: (reason?: unknown) => void): ChunkedResponse {
  const status = res.statusCode ?? 0;
  const statusText = res.statusMessage ?? '';
  if (NULL_BODY_STATUS.has(status)) {
    res.resume();
    return new NodeRpcResponse(status, statusText, new ResponseHeaders(res, false), EMPTY_BODY);
  }
  const decoder = decoderFor(res.headers['content-encoding'] ?? '');
  const source: Readable = decoder ? pipeline(res, decoder, () => {}) : res;
  return new NodeRpcResponse(
    status,
    statusText,
    new ResponseHeaders(res, decoder !== undefined),
    new SocketBody(res, source, destroy),
  );
}
