/**
 * The transaction journal of the in-memory outbox (docs/transactions.md#the-transaction-journal): one
 * entry per signed transaction, in recording order, open until its slot (chain, signer, nonce) is
 * settled. `held` is the outbox's own lease check: a first broadcast is recorded only under the
 * message's lease, which the record renews.
 */
import type { Clock } from '../../clock.ts';
import { checkBroadcast, checkJournalFilter, checkNonceSlot, checkNonceSlotOutcome } from '../checks.ts';
import type { Broadcast, JournalEntry, Outbox, NonceSlot, NonceSlotOutcome, Synchronous } from '../types.ts';

interface JournalRow extends JournalEntry {
  /** Set once its slot is settled. */
  outcome: 'mined' | 'replaced' | 'dropped' | null;
  closedAt: number | null;
}

const sameNonceSlot = (a: NonceSlot, b: NonceSlot) =>
  a.chainId === b.chainId && a.signer === b.signer && a.nonce === b.nonce;

type Journal = Pick<Synchronous<Outbox>, 'recordBroadcast' | 'forgetBroadcast' | 'closeNonceSlot' | 'openBroadcasts'>;

export function createMemoryJournal(
  clock: Clock,
  held: (id: string, lease: string) => { claimedUntil: number | null } | undefined,
  signerAllows: (b: Broadcast) => boolean = () => true,
): Journal & {
  /** markDelivered's part: the open slot of message `id` holding `hash` is settled, `hash` mined. */
  settleDelivered(id: string, hash: string): void;
  /** prune()'s part: deletes up to `limit` rows closed before `before`, oldest closed first; how many. */
  pruneJournal(before: number, limit: number): number;
} {
  // In recording order (a Map keeps insertion order), by hash.
  const journal = new Map<string, JournalRow>();
  const openEntries = (): JournalRow[] => [...journal.values()].filter((e) => e.closedAt === null);
  /** Settles every open broadcast of `slot`; how many. */
  const settle = (slot: NonceSlot, outcome: NonceSlotOutcome): number => {
    const now = clock.now();
    let closed = 0;
    for (const e of openEntries()) {
      if (!sameNonceSlot(e, slot)) continue;
      e.outcome = outcome.outcome === 'dropped' ? 'dropped' : e.hash === outcome.hash ? 'mined' : 'replaced';
      e.closedAt = now;
      closed++;
    }
    return closed;
  };
  const entry = (e: JournalRow): JournalEntry => ({
    messageId: e.messageId,
    chainId: e.chainId,
    signer: e.signer,
    nonce: e.nonce,
    hash: e.hash,
    raw: e.raw,
    sentAt: e.sentAt,
  });

  return {
    pruneJournal(before, limit) {
      const old = [...journal.values()].filter((e) => e.closedAt !== null && e.closedAt < before);
      old.sort((a, b) => a.closedAt! - b.closedAt!);
      for (const e of old.slice(0, limit)) journal.delete(e.hash);
      return Math.min(old.length, limit);
    },

    settleDelivered(id, hash) {
      const sent = journal.get(hash.toLowerCase());
      if (sent && sent.messageId === id && sent.closedAt === null) settle(sent, { outcome: 'mined', hash: sent.hash });
    },

    recordBroadcast(b, f) {
      const { broadcast, fence } = checkBroadcast(b, f);
      if (!signerAllows(broadcast)) return false;
      if (journal.has(broadcast.hash)) return true;
      if (fence) {
        const row = held(broadcast.messageId, fence.lease);
        if (!row) return false;
        row.claimedUntil = clock.now() + fence.leaseMs;
      } else if (!openEntries().some((e) => sameNonceSlot(e, broadcast) && e.messageId === broadcast.messageId)) {
        return false;
      }
      const { signerLease: _lease, ...stored } = broadcast;
      journal.set(broadcast.hash, { ...stored, sentAt: clock.now(), outcome: null, closedAt: null });
      return true;
    },

    forgetBroadcast(hash) {
      const e = journal.get(String(hash).toLowerCase());
      if (!e || e.closedAt !== null) return false;
      journal.delete(e.hash);
      return true;
    },

    closeNonceSlot(s, o) {
      return settle(checkNonceSlot(s, 'closeNonceSlot'), checkNonceSlotOutcome(o));
    },

    openBroadcasts(of) {
      const filter = checkJournalFilter(of);
      return openEntries()
        .filter((e) =>
          'messageId' in filter
            ? e.messageId === filter.messageId
            : e.chainId === filter.chainId && e.signer === filter.signer,
        )
        .map(entry);
    },
  };
}
