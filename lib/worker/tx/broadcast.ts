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
 * - an answer refusing it (a JSON-RPC error) and a hash the node does not have → refused: it
 *   certainly did not go out, its nonce may be freed.
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

export async function broadcast(publicClient: PublicClient, raw: Hex, hash: Hash): Promise<BroadcastOutcome> {
  for (let attempt = 0; ; attempt++) {
    try {
      await publicClient.request({ method: 'eth_sendRawTransaction', params: [raw] });
      return 'sent';
    } catch (err) {
      const c = classify(err);
      if (c.kind === 'known') return 'sent';
      const known = await isKnown(publicClient, hash);
      if (known) return 'sent';
      if (c.answered && known === false) return { ...c, cause: err };
      if (attempt >= 1) return c.answered ? { ...c, cause: err } : 'unknown';
    }
  }
}
