/**
 * A Server-Sent Events reader for tests (docs/api.md#status-events): opens a stream over loopback
 * and parses it as the HTML standard's event-stream format says (fields `event`, `id`, `data`,
 * comments starting with ':'), so tests see events, ids and heartbeats as a browser would.
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';

export interface SseEvent {
  event: string;
  id: string | undefined;
  data: string;
  json(): any;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage['headers'];
  /** The body when the answer is not a stream (an error). */
  text(): Promise<string>;
  events: SseEvent[];
  /** Comment lines received (heartbeats). */
  comments: string[];
  /** The next event after the `seen` first ones (default: those already read), within 5 s of real time. */
  next(what?: string): Promise<SseEvent>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  /** Waits until `count` comments have arrived (bounded, 5 s). */
  comment(count: number): Promise<void>;
  close(): void;
  req: ClientRequest;
  res: IncomingMessage;
}

export function openEvents(
  url: string,
  path: string,
  options: { headers?: Record<string, string>; localAddress?: string; method?: string } = {},
): Promise<SseStream> {
  const target = new URL(path, url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: options.method ?? 'GET',
        headers: { accept: 'text/event-stream', ...options.headers },
        localAddress: options.localAddress,
        agent: false,
      },
      (res) => {
        const events: SseEvent[] = [];
        const comments: string[] = [];
        let buffer = '';
        let read = 0;
        let wake: (() => void) | undefined;
        let body = '';
        let endedResolve: () => void;
        const ended = new Promise<void>((r) => (endedResolve = r));
        const isStream = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (!isStream) return void (body += chunk);
          buffer += chunk;
          let at: number;
          while ((at = buffer.indexOf('\n\n')) !== -1) {
            const block = buffer.slice(0, at);
            buffer = buffer.slice(at + 2);
            const event: SseEvent = { event: 'message', id: undefined, data: '', json: () => JSON.parse(event.data) };
            let isEvent = false;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) comments.push(line);
              else {
                const colon = line.indexOf(':');
                const field = colon === -1 ? line : line.slice(0, colon);
                const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
                if (field === 'event') event.event = value;
                else if (field === 'id') event.id = value;
                else if (field === 'data') event.data += (event.data ? '\n' : '') + value;
                isEvent = true;
              }
            }
            if (isEvent) events.push(event);
          }
          wake?.();
        });
        res.on('end', () => {
          endedResolve();
          wake?.();
        });
        res.on('close', () => {
          endedResolve();
          wake?.();
        });
        const until = async (done: () => boolean, what: string) => {
          const deadline = Date.now() + 5_000;
          while (!done()) {
            if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
            await new Promise<void>((r) => {
              wake = r;
              setTimeout(r, 50);
            });
          }
        };
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          events,
          comments,
          ended,
          req,
          res,
          async text() {
            await ended;
            return body;
          },
          async next(what = 'an event') {
            await until(() => events.length > read || res.complete, what);
            if (events.length <= read) throw new Error(`the stream ended before ${what}`);
            return events[read++];
          },
          comment: (count) => until(() => comments.length >= count, `${count} comments`),
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
