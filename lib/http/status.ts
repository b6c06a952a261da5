/**
 * The message status lookups: GET /relay/{message_id} and GET /relay?origin_chain=&tx_hash=. They
 * exist only when the outbox can be read back (`get`, `byTx`).
 */
import { RelayError } from '../errors/classes.ts';
import { isHexOfLength } from '../codec/hex.ts';
import { createGasPolicySelector } from '../gas/policy.ts';
import { statusObjects } from '../relay/message-status.ts';
import type { Outbox, OutboxRecord } from '../outbox/index.ts';
import { callStore } from '../store/bundle.ts';
import type { ChainConfig, GasPaymentEnforcement } from '../types.ts';
import { validateRelayRequest } from '../relay/validate.ts';
import { sendJson } from './answers.ts';
import type { Exchange } from './exchange.ts';
import type { Route } from './router.ts';

export type StatusSource = Partial<Pick<Outbox, 'get' | 'byTx' | 'gasPayments'>>;

export interface StatusEndpoints {
  /** GET /relay/{message_id}, when the outbox has `get`. */
  routes: Route[];
  /** GET /relay?origin_chain=&tx_hash=: the messages accepted from one transaction. */
  messagesOfTx(ex: Exchange, params: URLSearchParams): Promise<void>;
}

/**
 * The transaction a query names (`origin_chain`, `tx_hash`, each exactly once), by the rules of
 * POST /relay's body, so a pair POST accepted is a pair a lookup finds. `missing` ends the message
 * of a missing parameter.
 */
export function txQuery(
  params: URLSearchParams,
  chains: ReadonlyMap<string, ChainConfig>,
  missing = '',
): ReturnType<typeof validateRelayRequest> {
  const query: Record<string, string> = {};
  for (const name of ['origin_chain', 'tx_hash']) {
    const values = params.getAll(name);
    if (values.length === 0) throw new RelayError('invalid_request', `${name} is required${missing}`);
    if (values.length > 1) throw new RelayError('invalid_request', `${name} is given more than once`);
    query[name] = values[0];
  }
  return validateRelayRequest(query, chains);
}

/**
 * `admit` runs before each lookup is read (the read budget, lib/http/fairness.ts) and throws the
 * RelayError that refuses it.
 */
export function statusEndpoints(
  outbox: StatusSource,
  chains: ReadonlyMap<string, ChainConfig>,
  gasPaymentEnforcement: readonly GasPaymentEnforcement[] = [],
  admit?: (ex: Exchange) => void | Promise<void>,
): StatusEndpoints {
  const readMessage = outbox.get?.bind(outbox);
  const readTx = outbox.byTx?.bind(outbox);
  const readPayments = outbox.gasPayments?.bind(outbox);
  const selectPolicy = createGasPolicySelector(gasPaymentEnforcement);

  const withPayments = (records: OutboxRecord[]) => statusObjects(records, readPayments, selectPolicy);

  async function getMessage(ex: Exchange, read: NonNullable<typeof readMessage>): Promise<void> {
    await admit?.(ex);
    const id = ex.params.message_id;
    if (!isHexOfLength(id, 32))
      throw new RelayError('invalid_request', 'message_id must be 0x followed by 64 hex digits');
    const record = await callStore(() => read(id));
    if (record === undefined) throw new RelayError('not_found', 'no message with this id was accepted by this relayer');
    sendJson(ex, 200, (await withPayments([record]))[0]);
  }

  async function messagesOfTx(ex: Exchange, params: URLSearchParams): Promise<void> {
    if (readTx === undefined) throw new RelayError('not_found', 'this relayer does not keep message statuses');
    await admit?.(ex);
    const { chain, txHash } = txQuery(
      params,
      chains,
      ' (GET /relay without origin_chain and tx_hash is the liveness probe)',
    );
    ex.originChain = chain.name;
    ex.txHash = txHash;
    const records = await callStore(() => readTx(chain.name, txHash));
    sendJson(ex, 200, { messages: await withPayments(records) });
  }

  const routes: Route[] =
    readMessage === undefined
      ? []
      : [{ path: '/relay/{message_id}', GET: (ex) => getMessage(ex, readMessage), probe: true }];
  return { routes, messagesOfTx };
}
