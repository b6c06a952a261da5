/**
 * The two ways the relay API reaches a JSON-RPC endpoint, so the RPC suites run against both: the
 * core's default (the global fetch) and the keep-alive node:http transport relayer-server injects
 * (lib/node/rpc-transport.ts). Each must show the same outcomes and failure classes.
 */
import { createRpcTransport } from '../../../lib/node/rpc-transport.ts';
import type { RpcFetch } from '../../../lib/rpc/client.ts';
import type { Cleanup } from './server.ts';

export interface TransportCase {
  name: string;
  /** The `fetch` to inject (undefined: the core's default), closed when `t` ends. */
  fetch(t: Cleanup): RpcFetch | undefined;
}

export const TRANSPORTS: readonly TransportCase[] = [
  { name: 'global fetch', fetch: () => undefined },
  {
    name: 'node:http keep-alive transport',
    fetch(t) {
      const transport = createRpcTransport();
      t.after(() => transport.close());
      return transport.fetch;
    },
  },
];
