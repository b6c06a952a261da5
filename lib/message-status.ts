/**
 * What GET /relay/{message_id} and GET /relay?origin_chain=&tx_hash= answer for one outbox record
 * (docs/design.md#http-surface, #message-lifecycle): snake_case like the rest of the API, times
 * as ISO 8601 UTC strings with milliseconds (what a browser's `new Date()` parses, and
 * unambiguous in a log), no raw bytes and no lease (a worker's token is not public).
 */
import type { MessageStatus, OutboxRecord } from './outbox/index.ts';
import { redactUrls } from './redact.ts';
import type { MessageSummary } from './types.ts';

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
