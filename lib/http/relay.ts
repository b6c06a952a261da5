/**
 * /relay: POST submits a transaction's messages through the relay pipeline; GET without a query
 * is the liveness probe, with one the status lookup of lib/http/status.ts.
 */
import type { RelayPipeline } from '../pipeline.ts';
import { sendJson, sendText } from './answers.ts';
import { readJsonBody } from './body.ts';
import type { Exchange } from './exchange.ts';
import type { Counter } from './metrics.ts';
import type { Route } from './router.ts';
import type { StatusEndpoints } from './status.ts';

export interface RelayEndpointOptions {
  pipeline: RelayPipeline;
  maxBodyBytes: number;
  messagesEnqueued: Counter;
  status: StatusEndpoints;
}

export function relayRoutes(options: RelayEndpointOptions): Route[] {
  const { pipeline, maxBodyBytes, messagesEnqueued, status } = options;

  async function postRelay(ex: Exchange): Promise<void> {
    const text = await readJsonBody(ex.req, maxBodyBytes);
    // The chain and hash are known as soon as they are valid, so even a request whose client
    // leaves early is logged with them.
    const result = await pipeline.relayText(text, {
      onValid: ({ originChain, txHash }) => {
        ex.originChain = originChain;
        ex.txHash = txHash;
      },
    });
    ex.messages = result.messages.length;
    if (result.messages.length > 0) messagesEnqueued.inc({}, result.messages.length);
    sendJson(ex, 200, result);
  }

  function getRelay(ex: Exchange): void | Promise<void> {
    // Any query makes it a lookup; the bare path stays the liveness probe.
    if (ex.url === undefined || ex.url.search === '') return sendText(ex, 200, 'up');
    return status.messagesOfTx(ex, ex.url.searchParams);
  }

  return [{ path: '/relay', GET: getRelay, POST: postRelay, probe: true }, ...status.routes];
}
