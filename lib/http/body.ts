/**
 * Reads a request body up to a byte limit. A declared Content-Length over the limit is refused
 * before anything is read; a body that grows past the limit is refused as soon as it does, and the
 * rest is never buffered. Invalid UTF-8 is the client's error.
 *
 * Mounted behind a framework that has read the body already (docs/embedding.md#mounting-the-http-api):
 * a `req.body` it left (Express's express.json() an object, a raw parser a string or bytes) is the
 * body, under the same limit; a stream that ended with no `req.body` is refused at once, never
 * waited on (no 'end' event would come).
 */
import type { IncomingMessage } from 'node:http';
import type { Clock } from '../clock.ts';
import { RelayError } from '../errors/classes.ts';

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function tooLarge(limit: number): RelayError {
  return new RelayError('payload_too_large', `request body exceeds ${limit} bytes`);
}

/** The body of a request that must be JSON: `unsupported_media_type` for any other Content-Type. */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<string> {
  const media = req.headers['content-type']?.split(';')[0].trim().toLowerCase();
  if (media !== 'application/json') {
    return Promise.reject(new RelayError('unsupported_media_type', 'Content-Type must be application/json'));
  }
  return readBody(req, limit);
}

/** Why a request whose body another handler read cannot be answered; said to the client and logged. */
export const BODY_ALREADY_READ =
  'the request body was read before the relay API handler: mount it before the body parser, or leave the parsed body in req.body';

export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const given = (req as IncomingMessage & { body?: unknown }).body;
  if (given !== undefined) return bodyGiven(given, limit);
  if (req.readableEnded) return Promise.reject(new RelayError('internal_error', BODY_ALREADY_READ));
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (error: RelayError | undefined) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (error) {
        // Stop reading: the connection is closed after the error answer.
        req.pause();
        reject(error);
        return;
      }
      try {
        resolve(decoder.decode(Buffer.concat(chunks, size)));
      } catch {
        reject(new RelayError('invalid_request', 'request body is not valid UTF-8'));
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) finish(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => finish(undefined);
    const onError = () => finish(new RelayError('invalid_request', 'request body could not be read'));
    const onAborted = () => finish(new RelayError('invalid_request', 'request aborted by the client'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

/** The body a framework parsed: text and bytes as sent, anything else as its JSON. */
function bodyGiven(given: unknown, limit: number): Promise<string> {
  let bytes: Uint8Array;
  if (typeof given === 'string') bytes = Buffer.from(given, 'utf8');
  else if (given instanceof Uint8Array) bytes = given;
  else {
    const text = JSON.stringify(given);
    if (text === undefined) return Promise.reject(new RelayError('invalid_request', 'request body is not JSON'));
    bytes = Buffer.from(text, 'utf8');
  }
  if (bytes.length > limit) return Promise.reject(tooLarge(limit));
  try {
    return Promise.resolve(typeof given === 'string' ? given : decoder.decode(bytes));
  } catch {
    return Promise.reject(new RelayError('invalid_request', 'request body is not valid UTF-8'));
  }
}

/**
 * How long and how much the server keeps reading after refusing a request whose body it did not
 * read (nginx's lingering close: lingering_time 30 s). Enough for a client that sends its whole
 * body before it reads the answer (a 64 MiB upload over a slow link); a client that sends
 * forever is cut off.
 */
export const LINGER = { maxBytes: 128 * 1024 * 1024, maxMs: 10_000 };

/**
 * Call before answering a request whose body is unread (an early 401, 413, 415): the connection
 * then ends with a lingering close instead of an abortive one.
 *
 * Node ends a `Connection: close` answer with `socket.destroySoon()`: FIN, then close() as soon as
 * the answer is handed to the kernel. A close() with unread bytes in the receive buffer makes the
 * kernel send a reset instead, and a client still sending its body gets an error on its next write
 * and loses the answer it has not read yet. Here the server half-closes (FIN after the answer),
 * keeps reading and discarding what the client still sends, and closes when the client closes its
 * side or a bound of LINGER is reached.
 */
export function lingerAfterAnswer(req: IncomingMessage, clock: Clock): void {
  const socket = req.socket;
  socket.destroySoon = () => {
    let drained = 0;
    const cutOff = () => socket.destroy();
    const timer = clock.setTimeout(cutOff, LINGER.maxMs);
    socket.once('close', () => clock.clearTimeout(timer));
    // The http parser still reads the socket and hands the rest of the body to `req`.
    req.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > LINGER.maxBytes) cutOff();
    });
    req.resume();
    socket.end();
  };
}
