/**
 * An outbox row as the SQL engines (SQLite, PostgreSQL) read it, and the record it makes
 * (docs/design.md#storage).
 */
import type { MessageStatus, OutboxRecord } from './types.ts';

/** An outbox row as the SQL engines (SQLite, PostgreSQL) store it; `raw` is engine-specific. */
export interface OutboxRow {
  id: string;
  origin_chain: string;
  tx_hash: string;
  origin: number;
  destination: number;
  nonce: number;
  enqueued_at: number;
  status: MessageStatus;
  attempts: number;
  lease_expiries: number;
  last_error: string | null;
  delivered_at: number | null;
  destination_tx_hash: string | null;
  claimed_until: number | null;
  retry_at: number | null;
  failures: number;
  pending_since: number | null;
  polls: number;
  /** Decimal text (uint256), as both engines read it. */
  required_gas: string | null;
  gas_spent: string;
  gas_spent_wei: string;
}

/** The record of a SQL row, with `raw` already decoded by the engine. */
export function recordFromRow(row: OutboxRow, raw: Uint8Array): OutboxRecord {
  return {
    id: row.id,
    originChain: row.origin_chain,
    txHash: row.tx_hash,
    origin: Number(row.origin),
    destination: Number(row.destination),
    nonce: Number(row.nonce),
    raw,
    enqueuedAt: row.enqueued_at,
    status: row.status,
    attempts: row.attempts,
    leaseExpiries: row.lease_expiries,
    lastError: row.last_error,
    deliveredAt: row.delivered_at,
    destinationTxHash: row.destination_tx_hash,
    claimedUntil: row.claimed_until,
    retryAt: row.retry_at,
    failures: row.failures,
    pendingSince: row.pending_since,
    polls: row.polls,
    requiredGas: row.required_gas === null ? null : BigInt(row.required_gas),
    gasSpent: BigInt(row.gas_spent),
    gasSpentWei: BigInt(row.gas_spent_wei),
  };
}
