/**
 * One broadcast (`eth_sendRawTransaction`) and what it did, decided from what the node holds
 * rather than from its reply (docs/transactions.md#transactions): the reply may be lost (a connection
 * cut after the node took the transaction, a timeout, a fallback moving on) or wrong (a proxy, a
 * node saying "already known" for the very transaction it has). So:
 * - accepted, or "already known" → sent;
 * - any failure → the hash is looked up: a node that has it (pending or mined) → sent;
 * - a failure the node did not answer (transport, timeout, HTTP error) and a hash it does not have
 *   → the same bytes once more; still no answer → unknown (it may have gone out: its nonce stays
 *   held and the follower replaces it at the same nonce if it does not show up);
 * - an answer refusing it for a reason the sender acts on (nonce, fees, funds, a revert: see
 *   lib/worker/tx/node-errors.ts) and a hash the node does not have → refused: it certainly did not
 *   go out, its nonce may be freed;
 * - an answer refusing it in words nobody classifies (a proxy's or a load balancer's error, a node
 *   that is busy) and a hash the node does not have → the same bytes again at once, up to
 *   SAME_BYTES_SENDS sends in all (the same hash: nothing can land twice), then refused. A nonce
 *   freed for such a refusal is a gap under every later send until the next head fills it, and the
 *   message waits its retry backoff: a second send of the same bytes costs one request.
 */
import { TransactionNotFoundError, type Hash, type Hex, type PublicClient } from 'viem';
import { type Classified, classify } from './node-errors.ts';

export interface Refusal extends Classified {
  cause: unknown;
}

export type BroadcastOutcome = 'sent' | 'unknown' | Refusal;

/** Whether the node has `hash` (pending or mined); undefined when it could not be asked. */
export async function isKnown(publicClient: PublicClient, hash: Hash): Promise<boolean | undefined> {
  try {
    await publicClient.getTransaction({ hash });
    return true;
  } catch (err) {
    if (err instanceof TransactionNotFoundError) return false;
    return undefined;
  }
}

/** Sends of the same bytes a refusal in unclassified words (kind `rpc`) gets, in all. */
export const SAME_BYTES_SENDS = 3;

export async function broadcast(publicClient: PublicClient, raw: Hex, hash: Hash): Promise<BroadcastOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      await publicClient.request({ method: 'eth_sendRawTransaction', params: [raw] });
      return 'sent';
    } catch (err) {
      const c = classify(err);
      if (c.kind === 'known') return 'sent';
      const known = await isKnown(publicClient, hash);
      if (known) return 'sent';
      if (c.answered && known === false && c.kind !== 'rpc') return { ...c, cause: err };
      if (attempt >= (c.answered && c.kind === 'rpc' ? SAME_BYTES_SENDS : 2))
        return c.answered ? { ...c, cause: err } : 'unknown';
    }
  }
}
