/**
 * /merkle_tree_insertions (admin): POST stores insertion records of known chains (the others are
 * reported as skipped), GET lists one domain's range. /merkle_proofs (admin): the proof of a leaf
 * from the stored insertions (lib/store/merkle-proof.ts). Without a merkle store there is no route.
 */
import { proofFromInsertions, validateProofQuery } from '../store/merkle-proof.ts';
import { callStore } from '../store/bundle.ts';
import type { MerkleStore } from '../types.ts';
import { parseJsonBody, validateMerkleRange, validateMerkleRequest } from '../relay/validate.ts';
import { sendJson } from './answers.ts';
import type { AdminCheck } from './auth.ts';
import { readJsonBody } from './body.ts';
import { query, type Exchange } from './exchange.ts';
import type { Counter } from '../node/metrics.ts';
import type { Route } from './router.ts';

export interface MerkleEndpointOptions {
  merkle: MerkleStore | undefined;
  knownDomains: ReadonlySet<number>;
  maxBodyBytes: number;
  requireAdmin: AdminCheck;
  rowsWritten: Counter;
}

export function merkleRoutes(options: MerkleEndpointOptions): Route[] {
  const { merkle, knownDomains, maxBodyBytes, requireAdmin, rowsWritten } = options;
  if (merkle === undefined) return [];
  const store: MerkleStore = merkle;

  async function postMerkle(ex: Exchange): Promise<void> {
    requireAdmin(ex);
    const text = await readJsonBody(ex.req, maxBodyBytes);
    const { records, sent } = validateMerkleRequest(parseJsonBody(text));
    const known = records.filter((r) => knownDomains.has(r.chain));
    const skipped = sent.filter((_, i) => !knownDomains.has(records[i].chain));
    const count = known.length > 0 ? await callStore(() => store.insertMerkle(known)) : 0;
    rowsWritten.inc({}, count);
    sendJson(ex, 200, { count, skipped });
  }

  async function getMerkle(ex: Exchange): Promise<void> {
    requireAdmin(ex);
    const { domain, start, end } = validateMerkleRange(query(ex));
    sendJson(ex, 200, { merkle_tree_insertions: await callStore(() => store.listMerkle(domain, start, end)) });
  }

  async function getProof(ex: Exchange): Promise<void> {
    requireAdmin(ex);
    const q = validateProofQuery(query(ex));
    const rows = await callStore(() => store.listMerkle(q.domain, 0, q.root));
    sendJson(ex, 200, proofFromInsertions(rows, q));
  }

  return [
    { path: '/merkle_tree_insertions', GET: getMerkle, POST: postMerkle },
    { path: '/merkle_proofs', GET: getProof },
  ];
}
