/**
 * What GET /relay/{message_id} and GET /relay?origin_chain=&tx_hash= answer for one outbox record
 * (docs/design.md#http-surface, docs/outbox.md#message-lifecycle): snake_case like the rest of the API, times
 * as ISO 8601 UTC strings with milliseconds (what a browser's `new Date()` parses, and
 * unambiguous in a log), no raw bytes and no lease (a worker's token is not public).
 */
import { sumGasPayments, type GasPayment } from '../gas/payment.ts';
import type { GasPolicySelector } from '../gas/policy.ts';
import { parseHyperlaneMessage } from '../codec/message.ts';
import type { MessageStatus, OutboxRecord, VersionedRecord } from '../outbox/index.ts';
import { redactUrls } from '../redact.ts';
import { callStore } from '../store/bundle.ts';
import type { GasPaymentEnforcement, GasPolicyType, MessageSummary } from '../types.ts';

export interface MessageStatusJson extends MessageSummary {
  origin_chain: string;
  tx_hash: string;
  status: MessageStatus;
  /** ISO 8601, e.g. "2026-11-23T14:40:29.123Z" */
  enqueued_at: string;
  delivered_at: string | null;
  destination_tx_hash: string | null;
  /** Delivery attempts begun (claims by a delivery worker). */
  attempts: number;
  last_error: string | null;
  /** What was paid for the message's gas and what is required (docs/api.md), when the store keeps payments. */
  gas_payment?: GasPaymentJson;
}

/**
 * `gas_payment` (docs/gas.md#gas-payment-enforcement): amounts as decimal strings (they are
 * uint256). `policy` null: no `gasPaymentEnforcement` entry matches the message.
 */
export interface GasPaymentJson {
  policy: GasPolicyType | null;
  /** Payment logs counted (for the message's destination, each once). */
  payments: number;
  /** Destination gas paid for. */
  gas_amount: string;
  /** Wei paid on the origin chain. */
  payment: string;
  /** `minimum`: the wei required, the minimum plus what our reverted transactions spent (gas_spent_wei); else null. */
  required_payment: string | null;
  /** `onChainFeeQuoting`: the gas required at the worker's last estimate; null before one, and under other policies. */
  required_gas_amount: string | null;
  /** Destination gas the relayer's own mined transactions of the message spent without delivering it (docs/gas.md#gas-already-spent). */
  gas_spent: string;
  /** What that gas cost on the destination chain, in wei. */
  gas_spent_wei: string;
}

export interface MessagesOfTxJson {
  messages: MessageStatusJson[];
}

const iso = (ms: number) => new Date(ms).toISOString();

export function messageStatusJson(record: OutboxRecord): MessageStatusJson {
  return {
    message_id: record.id,
    origin: record.origin,
    destination: record.destination,
    nonce: record.nonce,
    origin_chain: record.originChain,
    tx_hash: record.txHash,
    status: record.status,
    enqueued_at: iso(record.enqueuedAt),
    delivered_at: record.deliveredAt === null ? null : iso(record.deliveredAt),
    destination_tx_hash: record.destinationTxHash,
    attempts: record.attempts,
    // A worker's error often quotes the RPC URL it called, and RPC URLs carry API keys.
    last_error: record.lastError === null ? null : redactUrls(record.lastError),
  };
}

/** `gas_payment` of a record, from its stored payments and the config's policy. */
export function gasPaymentJson(
  record: OutboxRecord,
  payments: readonly GasPayment[],
  selectPolicy: GasPolicySelector,
): GasPaymentJson {
  const policy = selectPolicy(parseHyperlaneMessage(record.raw));
  const paid = sumGasPayments(payments, record);
  return {
    policy: policy?.type ?? null,
    payments: paid.payments,
    gas_amount: String(paid.gasAmount),
    payment: String(paid.payment),
    ...required(policy, record),
    gas_spent: String(record.gasSpent ?? 0n),
    gas_spent_wei: String(record.gasSpentWei ?? 0n),
  };
}

/**
 * What the policy requires of the message (docs/gas.md#gas-payment-enforcement): one case per
 * policy type; a type without one fails the typecheck here (its fall-through takes a `never`).
 */
function required(
  policy: GasPaymentEnforcement | null,
  record: OutboxRecord,
): Pick<GasPaymentJson, 'required_payment' | 'required_gas_amount'> {
  const none = { required_payment: null, required_gas_amount: null };
  if (policy === null) return none;
  switch (policy.type) {
    case 'none':
      return none;
    case 'minimum':
      return { required_payment: String(policy.payment + (record.gasSpentWei ?? 0n)), required_gas_amount: null };
    case 'onChainFeeQuoting':
      return {
        required_payment: null,
        required_gas_amount: record.requiredGas == null ? null : String(record.requiredGas),
      };
    default: {
      // Unreachable for a parsed config: shown as requiring nothing, never as the policy object.
      const unknown: never = policy;
      void unknown;
      return none;
    }
  }
}

/**
 * The records as GET /relay/{id} shows them (GET /relay?…, GET /messages too): with `gas_payment`
 * when the store keeps payments (`readPayments`: one more read for all of them).
 */
export async function statusObjects(
  records: readonly OutboxRecord[],
  readPayments: ((ids: string[]) => GasPayment[] | Promise<GasPayment[]>) | undefined,
  selectPolicy: GasPolicySelector,
): Promise<MessageStatusJson[]> {
  const json = records.map(messageStatusJson);
  if (readPayments === undefined || records.length === 0) return json;
  const payments = await callStore(() => readPayments(records.map((r) => r.id)));
  records.forEach((record, i) => {
    json[i].gas_payment = gasPaymentJson(record, payments, selectPolicy);
  });
  return json;
}

/**
 * A versioned record (a status event's) as GET /relay/{id} shows it: `gas_payment` from the
 * payments read with it (docs/api.md#status-events), none when it carries none.
 */
export function versionedStatusJson(record: VersionedRecord, selectPolicy: GasPolicySelector): MessageStatusJson {
  const json = messageStatusJson(record);
  if (record.gasPayments !== undefined) json.gas_payment = gasPaymentJson(record, record.gasPayments, selectPolicy);
  return json;
}
