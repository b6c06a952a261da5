/**
 * Raw HTTP over loopback, so tests control every header and byte the server sees. Every response is
 * checked against docs/openapi.json before it is returned (see ./openapi.ts), so each HTTP suite also
 * tests the document; `openapi: false` skips that for a server that is not the relay API.
 */
import { request } from 'node:http';
import { checkAgainstOpenApi } from './openapi.ts';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

export function httpRequest(
  url: string,
  options: {
    method?: string;
    path?: string;
    headers?: Record<string, string | number>;
    body?: string | Buffer;
    openapi?: boolean;
    /** The client's address (another loopback address is another client). */
    localAddress?: string;
  } = {},
): Promise<RawResponse> {
  const target = new URL(options.path ?? '/', url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: options.method ?? 'GET',
        headers: options.headers,
        localAddress: options.localAddress,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const response: RawResponse = {
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: () => JSON.parse(text),
          };
          try {
            if (options.openapi !== false) checkAgainstOpenApi(options.method ?? 'GET', target.pathname, response);
          } catch (error) {
            return reject(error);
          }
          resolve(response);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

export function postJson(
  url: string,
  path: string,
  value: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const body = typeof value === 'string' ? value : JSON.stringify(value);
  return httpRequest(url, { method: 'POST', path, body, headers: { 'content-type': 'application/json', ...headers } });
}
