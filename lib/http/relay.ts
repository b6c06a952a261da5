/**
 * /relay: POST submits a transaction's messages through the relay pipeline; GET is the liveness
 * probe, or the status lookup of lib/http/status.ts when its query names `origin_chain` or
 * `tx_hash`.
 */
import type { RelayPipeline } from '../relay/pipeline.ts';
import { sendJson, sendText } from './answers.ts';
import { readJsonBody } from './body.ts';
import type { Exchange } from './exchange.ts';
import type { Counter } from '../node/metrics.ts';
import type { Route } from './router.ts';
import type { StatusEndpoints } from './status.ts';

export interface RelayEndpointOptions {
  pipeline: RelayPipeline;
  maxBodyBytes: number;
  messagesEnqueued: Counter;
  status: StatusEndpoints;
  /** The client's own token (lib/http/fairness.ts), taken before the pipeline's global one. */
  clientToken?(ex: Exchange): Promise<void>;
}

export function relayRoutes(options: RelayEndpointOptions): Route[] {
  const { pipeline, maxBodyBytes, messagesEnqueued, status, clientToken } = options;

  async function postRelay(ex: Exchange): Promise<void> {
    const text = await readJsonBody(ex.req, maxBodyBytes);
    if (clientToken) await clientToken(ex);
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
    // Only a query naming origin_chain or tx_hash is a lookup: any other (a load balancer's
    // cache-buster, `?probe=1`) leaves GET /relay the liveness probe (docs/api.md, GET /relay).
    const params = ex.url?.searchParams;
    if (params === undefined || (!params.has('origin_chain') && !params.has('tx_hash'))) return sendText(ex, 200, 'up');
    return status.messagesOfTx(ex, params);
  }

  return [{ path: '/relay', GET: getRelay, POST: postRelay, probe: true }, ...status.routes];
}
