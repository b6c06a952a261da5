/**
 * What every section of the outbox contract shares (docs/embedding.md#checking-your-own-outbox):
 * the harness an embedder's factory returns, the test's fake clock, and the messages the sections
 * enqueue.
 */
import type { ClaimedMessage, Outbox, OutboxMessage, OutboxRecord } from '../../outbox/index.ts';
import type { FakeClock } from '../clock.ts';
import { hexToBytes } from '../../codec/hex.ts';
import { hyperlaneMessage, messageId, txHash } from '../messages.ts';

export interface OutboxHarness {
  /** An outbox whose time is the `clock` given to `make`. */
  outbox: Outbox;
  /**
   * Optional: another connection (pool, process-local handle) to the same data, for the
   * concurrent-claimers test across connections. Engines that have only one handle omit it.
   */
  connect?(): Promise<{ outbox: Outbox; close(): void | Promise<void> }>;
  close(): void | Promise<void>;
}

/** Opens a new, empty outbox on `clock` for one test. */
export type MakeOutbox = (clock: FakeClock) => Promise<OutboxHarness>;

/** What a section's tests read: the running test's harness and clock (new for each test). */
export interface ContractContext {
  readonly h: OutboxHarness;
  readonly clock: FakeClock;
}

/** A section of the contract: registers its tests (node:test `test`) inside the contract's describe. */
export type ContractSection = (ctx: ContractContext) => void;

/** The time of message 0's enqueue; each test's clock starts at T0 + 1,000,000 ms. */
export const T0 = 1_700_000_000_000;
export const LEASE = 30_000;
export const DEST_TX = '0x' + 'de'.repeat(32);
export const SIGNER = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
export const OTHER_SIGNER = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';

/** The encoded message and id of each nonce, computed once: the sections ask for the same ones again and again. */
const encoded = new Map<number, { raw: string; id: string }>();

/**
 * Message number `n`: a Hyperlane v3 message from domain 1 to 8453 with nonce `n`, so a distinct
 * id. Its bytes are a new copy each time.
 */
export function outboxMessage(n: number, enqueuedAt = T0 + n, overrides: Partial<OutboxMessage> = {}): OutboxMessage {
  let message = encoded.get(n);
  if (message === undefined) {
    const raw = hyperlaneMessage({ nonce: n, origin: 1, destination: 8453 });
    message = { raw, id: messageId(raw) };
    encoded.set(n, message);
  }
  const { raw, id } = message;
  return {
    id,
    originChain: 'ethereum',
    txHash: txHash(n),
    origin: 1,
    destination: 8453,
    nonce: n,
    raw: hexToBytes(raw)!,
    enqueuedAt,
    ...overrides,
  };
}

/** What get() returns for a message just enqueued. */
export function queuedRecord(m: OutboxMessage): OutboxRecord {
  return {
    ...m,
    status: 'queued',
    attempts: 0,
    leaseExpiries: 0,
    lastError: null,
    deliveredAt: null,
    destinationTxHash: null,
    claimedUntil: null,
    retryAt: null,
    failures: 0,
    pendingSince: null,
    polls: 0,
    requiredGas: null,
    gasSpent: 0n,
    gasSpentWei: 0n,
  };
}

export const id = (n: number): string => outboxMessage(n).id;
export const ids = (messages: readonly { id: string }[]): string[] => messages.map((m) => m.id);

/** Claims everything claimable now. */
export async function claimAll(outbox: Outbox, limit = 1_000): Promise<ClaimedMessage[]> {
  return outbox.claim(limit, LEASE);
}
