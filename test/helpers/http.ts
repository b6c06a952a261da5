/** Raw HTTP over loopback, so tests control every header and byte the server sees. */
import { request } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

export function httpRequest(
  url: string,
  options: { method?: string; path?: string; headers?: Record<string, string | number>; body?: string | Buffer } = {},
): Promise<RawResponse> {
  const target = new URL(options.path ?? '/', url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, method: options.method ?? 'GET', headers: options.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

export function postJson(url: string, path: string, value: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  const body = typeof value === 'string' ? value : JSON.stringify(value);
  return httpRequest(url, { method: 'POST', path, body, headers: { 'content-type': 'application/json', ...headers } });
}
