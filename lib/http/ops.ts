/** The operator's endpoints: GET /ready, /chains, /metrics and /openapi.json. */
import type { Clock } from '../clock.ts';
import { callStore, withDeadline, type RelayerStore } from '../store/bundle.ts';
import type { RelayerConfig } from '../types.ts';
import { JSON_TYPE, send, sendJson, sendText } from './answers.ts';
import type { Exchange } from './exchange.ts';
import type { MetricsRegistry } from '../node/metrics.ts';
import type { RelayMetrics } from './relay-metrics.ts';
import type { Route } from './router.ts';

/** GET /ready waits this long for the store's ping (docs/design.md#http-surface). */
const READY_TIMEOUT_MS = 1_000;

export interface OpsEndpointOptions {
  config: RelayerConfig;
  store: RelayerStore | undefined;
  clock: Clock;
  metrics: MetricsRegistry;
  relayMetrics: RelayMetrics;
  openapi: unknown;
}

export function opsRoutes(options: OpsEndpointOptions): Route[] {
  const { config, store, clock, metrics, relayMetrics, openapi } = options;
  // GET /chains: what a client may send as origin_chain. Never the RPC URLs (they carry API keys).
  const chainList = JSON.stringify({
    chains: Object.values(config.chains).map((c) => ({
      name: c.name,
      domain_id: c.domainId,
      chain_id: c.chainId ?? null,
    })),
  });

  async function getReady(ex: Exchange): Promise<void> {
    // Without a store bundle everything lives in this process, which is answering.
    if (store !== undefined)
      await withDeadline(
        callStore(() => store.ping()),
        READY_TIMEOUT_MS,
        clock,
        'the store ping',
      );
    sendText(ex, 200, 'ready');
  }

  async function getMetrics(ex: Exchange): Promise<void> {
    await relayMetrics.sample();
    send(ex, 200, metrics.render(), 'text/plain; version=0.0.4; charset=utf-8');
  }

  return [
    { path: '/ready', GET: getReady, probe: true },
    { path: '/chains', GET: (ex) => send(ex, 200, chainList, JSON_TYPE) },
    { path: '/metrics', GET: getMetrics },
    ...(openapi === undefined ? [] : [{ path: '/openapi.json', GET: (ex: Exchange) => sendJson(ex, 200, openapi) }]),
  ];
}
