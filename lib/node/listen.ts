/**
 * Starts a node:http server listening and answers where it listens: the API server and the
 * delivery worker's ops server (metrics, readiness) both report their address this way
 * (docs/operations.md#logs: the `listening on` line).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ListenAddress {
  host: string;
  port: number;
  /** http://HOST:PORT, an IPv6 host in brackets. */
  url: string;
}

/** Resolves once listening; rejects on the server's first error (a port in use, a bad host). */
export function listenOn(server: Server, port: number, host: string): Promise<ListenAddress> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({ host: address.address, port: address.port, url: `http://${shown}:${address.port}` });
    });
  });
}
