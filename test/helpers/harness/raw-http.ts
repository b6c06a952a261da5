/**
 * HTTP/1.1 at the byte level over a plain TCP socket: tests write exactly the bytes they mean
 * (malformed, pipelined, dripped slowly) and read back every response the server sends on that
 * connection, including Node's own bodiless 400/408/431 answers.
 */
import { connect, type Socket } from 'node:net';

export interface RawReply {
  status: number;
  /** Header names lower-case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  text(): string;
  json(): any;
}

export interface RawExchange {
  replies: RawReply[];
  /** The server closed the connection (or reset it). */
  closed: boolean;
  /** Milliseconds from connect to the end of the exchange. */
  ms: number;
  /** Bytes of the request actually written before the exchange ended. */
  written: number;
}

export interface RawOptions {
  /** Stop once this many complete replies arrived (default: wait for close or `timeoutMs`). */
  replies?: number;
  /** Give up after this long (the socket is then destroyed). Default 5 000 ms. */
  timeoutMs?: number;
  /** Pause between the given chunks (slow-drip clients). */
  dripMs?: number;
  /** Ends the exchange when aborted (the socket is then destroyed), like `timeoutMs`. */
  signal?: AbortSignal;
}

/** A request as bytes; Content-Length is added for a body unless a header says otherwise. */
export function rawRequest(
  method: string,
  path: string,
  headers: Record<string, string | number> = {},
  body?: string | Buffer,
): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`];
  const names = Object.keys(headers).map((h) => h.toLowerCase());
  if (!names.includes('host')) lines.push('Host: 127.0.0.1');
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  const bytes = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  if (bytes && !names.includes('content-length') && !names.includes('transfer-encoding'))
    lines.push(`Content-Length: ${bytes.length}`);
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
  return bytes ? Buffer.concat([head, bytes]) : head;
}

/** Parses as many complete responses as `buffer` holds; returns them and the bytes consumed. */
function parseReplies(buffer: Buffer, closed: boolean): { replies: RawReply[]; used: number } {
  const replies: RawReply[] = [];
  let at = 0;
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const lines = buffer.subarray(at, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1] ?? NaN);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    let bodyStart = end + 4;
    let body: Buffer;
    if (status === 100) {
      // An interim answer; the real one follows.
      at = bodyStart;
      continue;
    }
    if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
      const parts: Buffer[] = [];
      let p = bodyStart;
      let complete = false;
      for (;;) {
        const lineEnd = buffer.indexOf('\r\n', p);
        if (lineEnd < 0) break;
        const size = parseInt(buffer.subarray(p, lineEnd).toString('latin1'), 16);
        if (buffer.length < lineEnd + 2 + size + 2) break;
        parts.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        p = lineEnd + 2 + size + 2;
        if (size === 0) {
          complete = true;
          break;
        }
      }
      if (!complete) break;
      body = Buffer.concat(parts);
      bodyStart = p;
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (buffer.length < bodyStart + length) break;
      body = buffer.subarray(bodyStart, bodyStart + length);
      bodyStart += length;
    } else if (status === 204 || status === 304 || headers.connection?.toLowerCase() === 'close') {
      // No framing: the body (usually empty) runs to the close.
      if (status !== 204 && status !== 304 && !closed) break;
      body = status === 204 || status === 304 ? Buffer.alloc(0) : buffer.subarray(bodyStart);
      bodyStart = status === 204 || status === 304 ? bodyStart : buffer.length;
    } else {
      body = Buffer.alloc(0);
    }
    const copy = Buffer.from(body);
    replies.push({
      status,
      headers,
      body: copy,
      text: () => copy.toString('utf8'),
      json: () => JSON.parse(copy.toString('utf8')),
    });
    at = bodyStart;
  }
  return { replies, used: at };
}

/** Sends `chunks` (dripped when `dripMs` is set) and collects what comes back. */
export function rawExchange(
  port: number,
  chunks: string | Buffer | Array<string | Buffer>,
  options: RawOptions = {},
): Promise<RawExchange> {
  const list = Array.isArray(chunks) ? chunks : [chunks];
  const timeoutMs = options.timeoutMs ?? 5_000;
  const started = performance.now();
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let replies: RawReply[] = [];
    let written = 0;
    let finished = false;
    let closed = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      clearTimeout(dripTimer);
      replies = parseReplies(received, closed).replies;
      socket.destroy();
      resolve({ replies, closed, ms: performance.now() - started, written });
    };
    const timer = setTimeout(finish, timeoutMs);
    options.signal?.addEventListener('abort', finish, { once: true });
    let dripTimer: ReturnType<typeof setTimeout> | undefined;
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      if (options.replies !== undefined && parseReplies(received, false).replies.length >= options.replies) finish();
    });
    socket.on('error', () => {
      closed = true;
    });
    socket.on('close', () => {
      closed = true;
      finish();
    });
    let next = 0;
    const writeNext = () => {
      if (finished || closed || next >= list.length) return;
      const chunk = list[next++];
      // Counted once the kernel took it; a write after the server closed fails and is not counted.
      const flushed = socket.write(chunk, (error) => {
        if (!error) written += Buffer.byteLength(chunk);
      });
      if (options.dripMs !== undefined) dripTimer = setTimeout(writeNext, options.dripMs);
      else if (flushed) writeNext();
      else socket.once('drain', writeNext);
    };
    socket.once('connect', writeNext);
  });
}
