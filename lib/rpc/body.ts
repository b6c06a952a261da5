/**
 * The answer lib/rpc/client.ts reads from its `fetch`, and its body read within a byte bound. A fetch
 * answers a WHATWG `Response`, whose body is a stream; a transport may instead answer a
 * `ChunkedResponse`, whose body it hands over chunk by chunk without a stream
 * (docs/rpc.md#rpc-transport). Both are read under the same rules: the declared and
 * the received length are bounded, an abort of the attempt stops the read at once, and whatever
 * is left unread is cancelled, so the transport drops the connection.
 */
import { RpcError } from '../errors/classes.ts';
import { joinBytes } from '../codec/hex.ts';

/** Receives a ChunkedBody: `data` for each chunk in order, then `end` or `error`, once. */
export interface BodySink {
  data(chunk: Uint8Array): void;
  end(): void;
  error(error: unknown): void;
}

/** A body delivered without a WHATWG stream. */
export interface ChunkedBody {
  /** Starts the delivery to `sink`; called at most once. */
  read(sink: BodySink): void;
  /** Stops the delivery for good (the transport drops the connection); the sink hears no more. */
  cancel(reason?: unknown): void;
}

/** A `Response`-like answer whose body is a ChunkedBody (relayer-api/server's RPC transport). */
export interface ChunkedResponse {
  readonly status: number;
  readonly ok: boolean;
  readonly statusText: string;
  readonly headers: { get(name: string): string | null };
  readonly chunkedBody: ChunkedBody;
}

/** What lib/rpc/client.ts accepts from its `fetch`. */
export type RpcResponse = Response | ChunkedResponse;

/** The `fetch` lib/rpc/client.ts calls: the global fetch fits, and so does a transport answering ChunkedResponse. */
export type RpcFetch = (input: string, init: RequestInit) => Promise<RpcResponse>;

function tooLarge(): RpcError {
  return new RpcError('too_large', 'response too large');
}

/** Drops an answer's body unread (an HTTP error status): the connection is not kept for another request. */
export async function discardBody(response: RpcResponse): Promise<void> {
  if ('chunkedBody' in response) response.chunkedBody.cancel();
  else await response.body?.cancel().catch(() => {});
}

/** Reads at most `maxBytes` of the body, cancelling it beyond that or when `signal` aborts. */
export async function readBounded(response: RpcResponse, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) {
    await discardBody(response);
    throw tooLarge();
  }
  if ('chunkedBody' in response) return readChunked(response.chunkedBody, maxBytes, signal);
  if (!response.body) return new Uint8Array(0);
  return readChunked(streamBody(response.body), maxBytes, signal);
}

/** A WHATWG body stream as a ChunkedBody, so both kinds of answer are read by one bounded reader. */
function streamBody(stream: ReadableStream<Uint8Array>): ChunkedBody {
  const reader = stream.getReader();
  let cancelled = false;
  return {
    async read(sink) {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (cancelled) return;
          if (done) return sink.end();
          sink.data(value);
        }
      } catch (error) {
        if (!cancelled) sink.error(error);
      } finally {
        reader.releaseLock();
      }
    },
    cancel(reason) {
      cancelled = true;
      // A stalled body must not outlive its attempt: cancelling the reader ends the pending read.
      reader.cancel(reason).catch(() => {});
    },
  };
}

/** The same bounds on a ChunkedBody: one promise for the whole body instead of one per chunk. */
function readChunked(body: ChunkedBody, maxBytes: number, signal: AbortSignal): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let total = 0;
    let settled = false;
    const settle = (error: unknown, bytes?: Uint8Array) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (bytes) resolve(bytes);
      else reject(error);
    };
    const onAbort = () => {
      body.cancel(signal.reason);
      settle(signal.reason);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    body.read({
      data(chunk) {
        if (settled) return;
        total += chunk.byteLength;
        if (total > maxBytes) {
          body.cancel();
          return settle(tooLarge());
        }
        chunks.push(chunk);
      },
      end: () => settle(undefined, chunks.length === 1 ? chunks[0] : joinBytes(chunks)),
      error: (error) => settle(error),
    });
  });
}
