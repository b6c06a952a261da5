/**
 * The relay API's metric families (docs/operations.md lists them) on a registry of
 * lib/node/metrics.ts: counters and histograms for each exchange, the receipt fetches, and gauges
 * that a store may answer asynchronously (sampled before each scrape, NaN when the store fails).
 */
import type { Clock } from '../clock.ts';
import type { ReceiptFetchEvent } from '../rpc/receipt.ts';
import { isPromiseLike, withDeadline } from '../store/bundle.ts';
import type { Counter, Histogram, MetricsRegistry } from '../node/metrics.ts';

/** What the relay API's gauges read at scrape time; a store-backed one may answer with a promise. */
export interface RelayMetricSources {
  dedupSize(): number | Promise<number>;
  inFlight(): number;
  outboxDepth?: () => number | Promise<number>;
  /** Status streams (Server-Sent Events) open now, when the server has them. */
  openStreams?: () => number;
}

export interface RelayMetrics {
  /** POST /relay requests, labelled as the reference relayer labels them. */
  requests: Counter;
  responses: Counter;
  duration: Histogram;
  rateLimited: Counter;
  messagesEnqueued: Counter;
  merkleRows: Counter;
  /** Observes one eth_getTransactionReceipt attempt (the pipeline's onReceiptAttempt). */
  receiptAttempt(event: ReceiptFetchEvent): void;
  /** Registers the gauges (once, after the counters: the exposition keeps that order). */
  gauges(sources: RelayMetricSources): void;
  /** Samples the gauges backed by an asynchronous store; awaited before each render. */
  sample(): Promise<void>;
}

/** A /metrics scrape waits this long for a store-backed gauge, then shows NaN. */
const GAUGE_TIMEOUT_MS = 1_000;

/** The relay API's metric families (docs/operations.md lists them), registered on `registry`. */
export function createRelayMetrics(registry: MetricsRegistry, clock: Clock): RelayMetrics {
  // Same name, labels and label values as the reference relayer (relay_api/metrics.rs), so its
  // dashboards work: POST /relay only, status "success" | "failure", error_type "" on success.
  const requests = registry.counter(
    'hyperlane_relay_api_requests_total',
    'POST /relay requests by status ("success" or "failure") and error_type (the failure reason, "" on success).',
  );
  const responses = registry.counter(
    'hyperlane_relay_api_http_responses_total',
    'HTTP responses by route and status code.',
  );
  const duration = registry.histogram(
    'hyperlane_relay_api_request_duration_seconds',
    'Relay API request duration by route.',
  );
  const rateLimited = registry.counter(
    'hyperlane_relay_api_rate_limited_total',
    'POST /relay requests refused by the global rate limit.',
  );
  const receiptDuration = registry.histogram(
    'hyperlane_relay_api_receipt_fetch_duration_seconds',
    'Duration of eth_getTransactionReceipt attempts by chain and RPC endpoint (chain#position in rpcUrls).',
  );
  const receiptFailures = registry.counter(
    'hyperlane_relay_api_receipt_fetch_failures_total',
    'Failed eth_getTransactionReceipt attempts by chain and RPC endpoint (chain#position in rpcUrls).',
  );
  const messagesEnqueued = registry.counter(
    'hyperlane_relay_api_messages_enqueued_total',
    'Messages accepted by POST /relay.',
  );
  const merkleRows = registry.counter(
    'hyperlane_relay_api_merkle_rows_written_total',
    'Merkle tree insertion rows written.',
  );

  // Gauges read from a store that answers asynchronously are sampled before each /metrics render;
  // a synchronous one (the in-memory engines) is read at render time.
  const samplers: Array<() => Promise<void>> = [];
  function storeGauge(name: string, help: string, read: () => number | Promise<number>): void {
    let last = NaN;
    let kind: 'unknown' | 'sync' | 'async' = 'unknown';
    samplers.push(async () => {
      if (kind === 'sync') return;
      try {
        const value = read();
        if (!isPromiseLike(value)) {
          kind = 'sync';
          return;
        }
        kind = 'async';
        last = await withDeadline(value, GAUGE_TIMEOUT_MS, clock, name);
      } catch {
        // A failing store shows as NaN; the scrape itself still answers.
        last = NaN;
      }
    });
    registry.gauge(name, help, () => {
      if (kind === 'async') return last;
      try {
        const value = read();
        if (!isPromiseLike(value)) return value;
        kind = 'async';
        value.then(
          (v) => (last = v),
          () => {},
        );
      } catch {
        // As above.
      }
      return last;
    });
  }

  return {
    requests,
    responses,
    duration,
    rateLimited,
    messagesEnqueued,
    merkleRows,
    receiptAttempt(event) {
      // By position, never by host: a host may name an internal network or hold a provider's key.
      const labels = { chain: event.chain, rpc: event.endpoint };
      receiptDuration.observe(labels, event.durationMs / 1000);
      if (!event.ok) receiptFailures.inc(labels);
    },
    gauges(sources) {
      storeGauge(
        'hyperlane_relay_api_dedup_cache_size',
        'Live entries in the POST /relay dedup cache.',
        sources.dedupSize,
      );
      registry.gauge('hyperlane_relay_api_in_flight_requests', 'Requests being handled.', sources.inFlight);
      if (sources.outboxDepth)
        storeGauge(
          'hyperlane_relay_api_outbox_depth',
          'Messages in the relay outbox not yet delivered.',
          sources.outboxDepth,
        );
      if (sources.openStreams)
        registry.gauge(
          'hyperlane_relay_api_open_status_streams',
          'Status streams (GET /relay/{message_id}/events, GET /relay/events) open now.',
          sources.openStreams,
        );
    },
    async sample() {
      if (samplers.length > 0) await Promise.all(samplers.map((sample) => sample()));
    },
  };
}
