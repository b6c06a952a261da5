/** relayer-api/server: the node:http adapter. */
export { createRelayApi, type RelayApi, type RelayApiOptions } from './handler.ts';
export { createRelayServer, type RelayServer, type RelayServerOptions } from './server.ts';
export {
  createMetricsRegistry,
  type MetricsRegistry,
  type Counter,
  type Histogram,
  type Labels,
} from '../node/metrics.ts';
export type { EventOutbox } from './events.ts';
export * from '../errors/family.ts';
export { readBody } from './body.ts';
export { createLineSink, type LineSink, type LineSinkOptions } from '../node/log-sink.ts';
export { createRpcTransport, type RpcTransport, type RpcTransportOptions } from '../node/rpc-transport.ts';
