/**
 * One worker per key (docs/transactions.md#one-worker-per-key): before a worker sends anything for a
 * (destination chain, signer) it takes that signer's lease in the outbox, and keeps it renewed a
 * third of the way through. A second process with the same key waits, saying who holds it and
 * until when, and sends nothing; when the holder stops (it releases the lease) or dies (its lease
 * lapses) the waiting one takes over.
 *
 * Leases are taken in one order (chain id, then signer), so two workers with overlapping chains
 * never wait on each other in a circle. What holds a broadcast back is threefold: the journal
 * records a transaction only under the live lease (`fencedJournal`, checked again by the store in
 * the same write), the node client refuses `eth_sendRawTransaction` while the lease is not held
 * (`sendGuard`), and the loop does not start before every lease is held.
 */
import type { Transport } from 'viem';
import { sleep, systemClock, type Clock } from '../../clock.ts';
import type { Logger } from '../../log.ts';
import type { Outbox, SignerKey } from '../../outbox/index.ts';
import { DeliveryError, describe } from '../errors.ts';
import type { TransactionJournal } from '../tx/journal.ts';

export type SignerLeaseStore = Pick<Outbox, 'acquireSignerLease' | 'renewSignerLease' | 'releaseSignerLease'>;

/** A key as the worker knows it: the chain's configured name too, for the log. */
export interface NamedSignerKey extends SignerKey {
  name: string;
}

export interface SignerHolds {
  /** This process's holder id (logged by a worker waiting for it). */
  readonly holder: string;
  /**
   * Takes every lease, in order, waiting while another worker holds one (logged when the holder
   * changes); true once all are held, false when `signal` aborted first.
   */
  acquire(signal: AbortSignal): Promise<boolean>;
  /** The lease of (chainId, signer) while held and renewed within its time; otherwise undefined. */
  lease(chainId: number, signer: string): string | undefined;
  /** Why a lease was lost (taken over, not renewed in time), once one was; the worker stops then. */
  lost(): string | undefined;
  /** Stops renewing and releases every lease held (a clean stop): a waiting worker takes over at its next look. */
  release(): Promise<void>;
}

export interface SignerHoldsOptions {
  store: SignerLeaseStore;
  keys: readonly NamedSignerKey[];
  holder: string;
  leaseMs: number;
  /** Between two looks of a waiting worker. */
  retryMs: number;
  clock: Clock;
  logger: Logger;
  /** Told once when a held lease is lost. */
  onLost?: (reason: string) => void;
}

interface Held {
  lease: string;
  /** The clock's reading just before the call that last took or renewed it. */
  renewedAt: number;
}

const keyOf = (chainId: number, signer: string) => `${chainId}:${signer.toLowerCase()}`;

export function holdSigners(o: SignerHoldsOptions): SignerHolds {
  const { store, holder, leaseMs, clock, logger } = o;
  // Read when the leases are taken: the keys are known once the chains' clients are.
  let keys: NamedSignerKey[] = [];
  const sorted = () =>
    [...new Map(o.keys.map((k) => [keyOf(k.chainId, k.signer), { ...k, signer: k.signer.toLowerCase() }]))]
      .map(([, k]) => k)
      .sort((a, b) => a.chainId - b.chainId || (a.signer < b.signer ? -1 : a.signer > b.signer ? 1 : 0));
  const held = new Map<string, Held>();
  let lostReason: string | undefined;
  let timer: unknown;
  let released = false;

  const lose = (k: NamedSignerKey, reason: string) => {
    held.delete(keyOf(k.chainId, k.signer));
    if (lostReason !== undefined) return;
    lostReason = `signer lease of ${k.signer} on ${k.name} lost: ${reason}`;
    logger.error('signer lease lost; stopping', {
      destination: k.name,
      chain_id: k.chainId,
      signer: k.signer,
      holder,
      reason,
    });
    o.onLost?.(lostReason);
  };

  async function renew(): Promise<void> {
    for (const k of keys) {
      const h = held.get(keyOf(k.chainId, k.signer));
      if (!h) continue;
      const at = clock.now();
      try {
        if (await store.renewSignerLease(k, h.lease, leaseMs)) h.renewedAt = at;
        else lose(k, 'another worker holds it now');
      } catch (error) {
        logger.warn('signer lease renewal failed', { destination: k.name, signer: k.signer, error: describe(error) });
        if (clock.now() - h.renewedAt >= leaseMs) lose(k, `not renewed within ${leaseMs} ms`);
      }
    }
  }

  const tick = () => {
    timer = clock.setTimeout(
      () => void renew().finally(() => !released && held.size > 0 && tick()),
      Math.ceil(leaseMs / 3),
    );
  };

  async function take(k: NamedSignerKey, signal: AbortSignal): Promise<boolean> {
    let told = '';
    while (!signal.aborted) {
      const at = clock.now();
      try {
        const answer = await store.acquireSignerLease(k, holder, leaseMs);
        if (answer.acquired) {
          if (signal.aborted) {
            await Promise.resolve(store.releaseSignerLease(k, answer.lease)).catch(() => false);
            return false;
          }
          held.set(keyOf(k.chainId, k.signer), { lease: answer.lease, renewedAt: at });
          logger.info(told === '' ? 'signer lease taken' : 'signer lease taken over', {
            destination: k.name,
            chain_id: k.chainId,
            signer: k.signer,
            holder,
            ...(told !== '' && { from: told }),
          });
          return true;
        }
        if (answer.holder !== told) {
          told = answer.holder;
          logger.warn('signer held by another worker; waiting', {
            destination: k.name,
            chain_id: k.chainId,
            signer: k.signer,
            holder: answer.holder,
            expires_at: new Date(answer.expiresAt).toISOString(),
          });
        }
      } catch (error) {
        logger.warn('signer lease not taken; trying again', { destination: k.name, error: describe(error) });
      }
      await sleep(clock, o.retryMs, signal).catch(() => {});
    }
    return false;
  }

  return {
    holder,
    async acquire(signal) {
      if (held.size === 0) keys = sorted();
      for (const k of keys) {
        if (held.has(keyOf(k.chainId, k.signer))) continue;
        if (!(await take(k, signal))) return false;
        if (held.size === 1 && !released) tick();
      }
      return true;
    },
    lease(chainId, signer) {
      const h = held.get(keyOf(chainId, signer));
      if (!h || lostReason !== undefined) return undefined;
      return clock.now() - h.renewedAt < leaseMs ? h.lease : undefined;
    },
    lost: () => lostReason,
    async release() {
      released = true;
      clock.clearTimeout(timer);
      for (const k of keys) {
        const h = held.get(keyOf(k.chainId, k.signer));
        if (!h) continue;
        held.delete(keyOf(k.chainId, k.signer));
        await Promise.resolve(store.releaseSignerLease(k, h.lease)).catch((error) =>
          logger.warn('signer lease not released; it lapses', { destination: k.name, error: describe(error) }),
        );
      }
    },
  };
}

/** The outbox's journal as the sender sees it: every broadcast recorded under the signer's lease, none without. */
export function fencedJournal(journal: TransactionJournal, holds: Pick<SignerHolds, 'lease'>): TransactionJournal {
  return {
    async recordBroadcast(b, fence) {
      const signerLease = holds.lease(b.chainId, b.signer);
      if (signerLease === undefined) return false;
      return journal.recordBroadcast({ ...b, signerLease }, fence);
    },
    forgetBroadcast: (hash) => journal.forgetBroadcast(hash),
    closeNonceSlot: (slot, outcome) => journal.closeNonceSlot(slot, outcome),
    openBroadcasts: (of) => journal.openBroadcasts(of),
    ...(journal.addGasSpent && { addGasSpent: journal.addGasSpent.bind(journal) }),
  };
}

/** A node client's transport that refuses `eth_sendRawTransaction` unless `allowed()`: nothing goes out without the lease. */
export function sendGuard(transport: Transport, allowed: () => boolean): Transport {
  return ((params: Parameters<Transport>[0]) => {
    const inner = transport(params);
    const request: typeof inner.request = async (args, options) => {
      if (args.method === 'eth_sendRawTransaction' && !allowed())
        throw new DeliveryError('stopped', 'this worker does not hold the signer lease: nothing broadcast');
      return inner.request(args, options);
    };
    return { ...inner, request };
  }) as Transport;
}

/** What createRelayerWorker needs (lib/worker/wiring.ts). */
export interface WorkerSignerHolds extends SignerHolds {
  /** The journal the senders record in: fenced by the leases. */
  journal(outbox: TransactionJournal): TransactionJournal;
  /** Whether a broadcast for (chainId, signer) may go out now. */
  mayBroadcast(chainId: number, signer: string): boolean;
}

/**
 * The worker's signer leases on its outbox, held for `worker.leaseSeconds` and renewed a third of
 * the way through; a waiting worker looks again every third of that (at most 5 s). An outbox
 * without signer leases (an embedder's own) gets none: said at start, nothing fenced.
 */
export function workerSignerHolds(o: {
  /** The worker's outbox: every engine has signer leases; an embedder's may not. */
  outbox: object;
  config: { worker: { leaseSeconds: number } };
  holder?: string;
  clock?: Clock;
  logger: Logger;
  keys: readonly NamedSignerKey[];
  onLost: () => void;
}): WorkerSignerHolds {
  const { acquireSignerLease, renewSignerLease, releaseSignerLease } = o.outbox as Partial<SignerLeaseStore>;
  const holder = o.holder ?? defaultHolder();
  if (!acquireSignerLease || !renewSignerLease || !releaseSignerLease) {
    return {
      holder,
      async acquire() {
        o.logger.warn('the outbox keeps no signer leases: one worker per key is not enforced');
        return true;
      },
      lease: () => undefined,
      lost: () => undefined,
      release: async () => {},
      journal: (outbox) => outbox,
      mayBroadcast: () => true,
    };
  }
  const leaseMs = o.config.worker.leaseSeconds * 1000;
  const holds = holdSigners({
    store: o.outbox as SignerLeaseStore,
    keys: o.keys,
    holder,
    leaseMs,
    retryMs: Math.max(250, Math.min(Math.ceil(leaseMs / 3), 5_000)),
    clock: o.clock ?? systemClock,
    logger: o.logger,
    onLost: o.onLost,
  });
  return {
    ...holds,
    journal: (outbox) => fencedJournal(outbox, holds),
    mayBroadcast: (chainId, signer) => holds.lease(chainId, signer) !== undefined,
  };
}

/** `host pid 1234 ab12cd34`: which machine and process, and a suffix unique to this start. */
function defaultHolder(): string {
  const host = process
    .getBuiltinModule('node:os')
    .hostname()
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 120);
  return `${host} pid ${process.pid} ${crypto.randomUUID().slice(0, 8)}`;
}
