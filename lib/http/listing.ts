/**
 * GET /messages (admin, docs/api.md#get-messages): what is stuck, for an operator: the messages of
 * one status (or every one not delivered), of one destination chain or all, oldest first. It is
 * never open: without an admin token configured it answers 404 saying how to turn it on, and with
 * one it needs `Authorization: Bearer <token>` (compared in constant time, lib/http/auth.ts).
 */
import { RelayError } from '../errors/classes.ts';
import { decimal } from '../codec/hex.ts';
import { createGasPolicySelector } from '../gas/policy.ts';
import { statusObjects } from '../relay/message-status.ts';
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, type MessageStatus, type Outbox } from '../outbox/index.ts';
import { callStore } from '../store/bundle.ts';
import type { ChainConfig, GasPaymentEnforcement } from '../types.ts';
import { sendJson } from './answers.ts';
import { createAdminCheck } from './auth.ts';
import { query, type Exchange } from './exchange.ts';
import type { Route } from './router.ts';

const STATUSES: readonly MessageStatus[] = ['queued', 'delivering', 'delivered', 'failed'];

export interface ListingOptions {
  outbox: Partial<Pick<Outbox, 'list' | 'gasPayments'>>;
  chains: ReadonlyMap<string, ChainConfig>;
  adminToken: string | null;
  /** For each message's `gas_payment`, as GET /relay/{id} shows it. */
  gasPaymentEnforcement?: readonly GasPaymentEnforcement[];
}

export function listingRoutes(options: ListingOptions): Route[] {
  const source = options.outbox.list?.bind(options.outbox);
  if (source === undefined) return [];
  const list = source;
  const { chains, adminToken } = options;
  const readPayments = options.outbox.gasPayments?.bind(options.outbox);
  const selectPolicy = createGasPolicySelector(options.gasPaymentEnforcement ?? []);
  const requireAdmin = createAdminCheck(adminToken);

  /** The one value of `name`, or undefined; a repeated parameter is refused. */
  function one(params: URLSearchParams, name: string): string | undefined {
    const values = params.getAll(name);
    if (values.length > 1) throw new RelayError('invalid_request', `${name} is given more than once`);
    return values[0];
  }

  async function getMessages(ex: Exchange): Promise<void> {
    if (adminToken === null)
      throw new RelayError(
        'not_found',
        'GET /messages is off: it needs an admin token (RELAYER_ADMIN_TOKEN or server.adminToken)',
      );
    requireAdmin(ex);
    const params = query(ex);
    const status = one(params, 'status');
    if (status !== undefined && !STATUSES.includes(status as MessageStatus))
      throw new RelayError('invalid_request', `status must be one of ${STATUSES.join(', ')}`);
    const name = one(params, 'destination');
    const chain = name === undefined ? undefined : chains.get(name);
    if (name !== undefined && chain === undefined)
      throw new RelayError(
        'invalid_request',
        'destination is not a chain known to this relayer; GET /chains lists the chains it knows',
      );
    const limitText = one(params, 'limit');
    const limit = limitText === undefined ? DEFAULT_LIST_LIMIT : decimal(limitText);
    if (limit === undefined || limit < 1 || limit > MAX_LIST_LIMIT)
      throw new RelayError('invalid_request', `limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
    const records = await callStore(() =>
      list({ status: status as MessageStatus | undefined, destination: chain?.domainId, limit }),
    );
    sendJson(ex, 200, { messages: await statusObjects(records, readPayments, selectPolicy) });
  }

  return [{ path: '/messages', GET: getMessages }];
}
