/**
 * Reads a request body up to a byte limit. A declared Content-Length over the limit is refused
 * before anything is read; a body that grows past the limit is refused as soon as it does, and the
 * rest is never buffered. Invalid UTF-8 is the client's error.
 */
import type { IncomingMessage } from 'node:http';
import { RelayError } from '../errors.ts';

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function tooLarge(limit: number): RelayError {
  return new RelayError('payload_too_large', `request body exceeds ${limit} bytes`);
}

export function readBody(req: IncomingMessage, limit: number): Promise<string> {
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
