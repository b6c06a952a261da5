/**
 * Gas payments (docs/gas.md#gas-payment-enforcement): the InterchainGasPaymaster's `GasPayment`
 * logs for a message, as the server finds them in a `POST /relay` receipt and the worker finds
 * later ones (top-ups) with `eth_getLogs`, and what they add up to. As in Hyperlane's relayer a
 * payment counts for its (message id, destination) only, so a payment for another destination does
 * not count; each log counts once, by (transaction hash, log index); amounts are summed.
 */
import { decodeGasPaymentLog, GAS_PAYMENT_TOPIC, type Log } from '../codec/abi.ts';
import { DecodeError } from '../errors/classes.ts';
import type { GasPaid } from './policy.ts';

/** One `GasPayment` log, as stored with its message. */
export interface GasPayment {
  /** lower-case 0x + 64 hex */
  messageId: string;
  destination: number;
  /** Destination gas paid for. */
  gasAmount: bigint;
  /** Wei paid on the origin chain. */
  payment: bigint;
  /** The origin transaction that logged it, lower-case 0x + 64 hex. */
  txHash: string;
  logIndex: number;
}

/** Where gas payments are kept: every outbox engine, beside its messages (lib/outbox/types.ts). */
export interface GasPaymentStore {
  /**
   * Payments found after intake (top-ups read with eth_getLogs): stored unless their (txHash,
   * logIndex) is there already. Returns how many were new.
   */
  addGasPayments(payments: readonly GasPayment[]): number | Promise<number>;
  /** The stored gas payments of these messages (ids in any case), in no particular order. */
  gasPayments(ids: readonly string[]): GasPayment[] | Promise<GasPayment[]>;
}

/**
 * Gas the relayer already spent on a message (docs/gas.md#gas-already-spent): one of its own `process`
 * transactions that was mined and did not deliver the message (reverted, or ran out of gas), as
 * its receipt says. Hyperlane's relayer keeps the same per message (`gas_used`, `tokens_used`) and
 * deducts it from the gas paid for before the next estimate is judged.
 */
export interface GasSpend {
  /** The message, lower-case 0x + 64 hex. */
  messageId: string;
  /** The mined transaction, lower-case 0x + 64 hex: each counts once. */
  txHash: string;
  /** The receipt's gasUsed. */
  gasUsed: bigint;
  /** What it cost on the destination chain in wei: gasUsed × effectiveGasPrice. */
  cost: bigint;
}

/**
 * The gas book beside the payments (every outbox engine): the gas `onChainFeeQuoting` required at
 * the message's last estimate, and the gas its reverted transactions spent. Both are read back on
 * the message's record (OutboxRecord requiredGas, gasSpent, gasSpentWei).
 */
export interface GasBookStore {
  /**
   * Spends of reverted transactions: each stored unless its txHash is there already, and added to
   * its message's gasSpent and gasSpentWei in the same write. A spend of a message the outbox does
   * not hold is not stored. Returns how many were new.
   */
  addGasSpent(spends: readonly GasSpend[]): number | Promise<number>;
  /**
   * The gas required at the last estimate of message `id` (any case): true when it changed, false
   * when it was already that or the message is unknown.
   */
  setRequiredGas(id: string, gas: bigint): boolean | Promise<boolean>;
}

/** A message a payment may be for: its id and destination. */
export interface PayableMessage {
  id: string;
  destination: number;
}

/**
 * The payments in `logs` (one transaction's, `txHash`) emitted by `paymaster` for one of
 * `messages` and its own destination, in log order, each log once. Throws DecodeError for a
 * malformed `GasPayment` log or one without a log index: a real paymaster cannot emit it, so the
 * node is lying or broken (the caller decides what that means).
 */
export function gasPaymentsIn(
  logs: readonly Log[],
  txHash: string,
  paymaster: string,
  messages: readonly PayableMessage[],
): GasPayment[] {
  const wanted = new Map(messages.map((m) => [m.id.toLowerCase(), m.destination]));
  const address = paymaster.toLowerCase();
  const seen = new Set<number>();
  const found: GasPayment[] = [];
  for (const log of logs) {
    if (log.address !== address || log.topics[0] !== GAS_PAYMENT_TOPIC) continue;
    const event = decodeGasPaymentLog(log);
    if (log.logIndex === undefined) throw new DecodeError('data', 'GasPayment log without a log index');
    if (wanted.get(event.messageId) !== event.destination || seen.has(log.logIndex)) continue;
    seen.add(log.logIndex);
    found.push({ ...event, txHash: txHash.toLowerCase(), logIndex: log.logIndex });
  }
  return found;
}

/** What `payments` add up to for `message`: its own destination only, each (tx hash, log index) once. */
export function sumGasPayments(payments: readonly GasPayment[], message: PayableMessage): GasPaid {
  const id = message.id.toLowerCase();
  const seen = new Set<string>();
  const paid: GasPaid = { payments: 0, gasAmount: 0n, payment: 0n };
  for (const p of payments) {
    const key = `${p.txHash.toLowerCase()}:${p.logIndex}`;
    if (p.messageId.toLowerCase() !== id || p.destination !== message.destination || seen.has(key)) continue;
    seen.add(key);
    paid.payments++;
    paid.gasAmount += p.gasAmount;
    paid.payment += p.payment;
  }
  return paid;
}

/**
 * The `eth_getLogs` filter for a message's payments on `paymaster` (topic1 = the message id,
 * topic2 = its destination) in blocks `fromBlock`..`toBlock`: how the worker finds top-ups made
 * after intake, one bounded range at a time (lib/worker/gas/top-ups.ts).
 */
export function gasPaymentLogFilter(
  paymaster: string,
  message: PayableMessage,
  fromBlock: bigint,
  toBlock: bigint,
): { address: string; topics: string[]; fromBlock: string; toBlock: string } {
  return {
    address: paymaster.toLowerCase(),
    topics: [GAS_PAYMENT_TOPIC, message.id.toLowerCase(), `0x${message.destination.toString(16).padStart(64, '0')}`],
    fromBlock: `0x${fromBlock.toString(16)}`,
    toBlock: `0x${toBlock.toString(16)}`,
  };
}

/** A `gas_payments` row as the SQL engines read it (numbers or their text; amounts as decimal text). */
export interface GasPaymentRow {
  tx_hash: string;
  log_index: number | string;
  message_id: string;
  destination: number | string;
  gas_amount: string;
  payment: string;
}

export function gasPaymentFromRow(row: GasPaymentRow): GasPayment {
  return {
    messageId: row.message_id,
    destination: Number(row.destination),
    gasAmount: BigInt(row.gas_amount),
    payment: BigInt(row.payment),
    txHash: row.tx_hash,
    logIndex: Number(row.log_index),
  };
}

/**
 * The JSON array of a message's `gas_payments` rows that the versioned reads select with its
 * outbox row (one statement: docs/api.md#status-events), as text (SQLite) or parsed (PostgreSQL).
 */
export function gasPaymentsFromJson(json: string | readonly GasPaymentRow[] | null): GasPayment[] {
  const rows: readonly GasPaymentRow[] = typeof json === 'string' ? JSON.parse(json) : (json ?? []);
  return rows.map(gasPaymentFromRow);
}
