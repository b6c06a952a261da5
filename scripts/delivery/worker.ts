/**
 * A small delivery worker (DESIGN.md §11): claims messages from the relay outbox under a lease,
 * delivers each with `Mailbox.process` on its destination chain and records the outcome. It only
 * speaks the outbox's consumer API (`claim`, `markDelivered`, `markFailed`), so any engine works.
 *
 * Exactly once on chain, at least once in the outbox: a worker that dies after claiming leaves
 * the message `delivering` until its lease expires; the next worker claims it again and calls
 * `process`, which the Mailbox refuses if the first worker's transaction got through ("already
 * delivered"). That refusal is confirmed with `delivered(id)` and recorded as delivered, with the
 * transaction that did deliver it.
 */
import { toHex, type Hash, type Hex, type PublicClient } from 'viem';
import type { Clock } from '../../lib/clock.ts';
import { systemClock } from '../../lib/clock.ts';
import type { ClaimedMessage, Outbox } from '../../lib/outbox.ts';
import { cctpAttestationMetadata } from './cctp-attestation.ts';
import { ISM_CCIP_READ, ISM_NULL, processMessage, recipientIsmType, type Destination } from './destination.ts';

/** What the worker needs of an outbox: its consumer half. */
export type DeliveryOutbox = Pick<Outbox, 'claim' | 'markDelivered' | 'markFailed'>;

export interface Origin {
  publicClient: PublicClient;
  /** Where the chain's CCTP V2 MessageSent may come from (the relayer's cctpMessageTransmitter). */
  transmitters: readonly string[];
}

export interface DeliveryWorkerOptions {
  outbox: DeliveryOutbox;
  /** By Hyperlane domain. */
  destinations: ReadonlyMap<number, Destination>;
  /** By chain name (the outbox's originChain). */
  origins: ReadonlyMap<string, Origin>;
  clock?: Clock;
  /** How long a claim holds a message; longer than one delivery takes (default 60 s). */
  leaseMs?: number;
  /** Messages per claim (default 10). */
  batch?: number;
  /** First retry delay; doubles per attempt (default 5 s). */
  retryDelayMs?: number;
  /** Attempts before a message is marked failed for good (default 5). */
  maxAttempts?: number;
  log?: (line: string) => void;
}

export type DeliveryResult =
  | { id: string; outcome: 'delivered' | 'already-delivered'; txHash: Hash; recorded: boolean }
  | { id: string; outcome: 'retry' | 'failed'; error: string };

/** Errors no retry can cure (no route to the destination, an ISM this worker cannot satisfy). */
class PermanentError extends Error {}

function describe(error: unknown): string {
  const e = error as { shortMessage?: string; message?: string };
  return (e.shortMessage ?? e.message ?? String(error)).split('\n')[0].slice(0, 300);
}

export function createDeliveryWorker(options: DeliveryWorkerOptions) {
  const { outbox, destinations, origins } = options;
  const clock = options.clock ?? systemClock;
  const leaseMs = options.leaseMs ?? 60_000;
  const batch = options.batch ?? 10;
  const retryDelayMs = options.retryDelayMs ?? 5_000;
  const maxAttempts = options.maxAttempts ?? 5;
  const log = options.log ?? (() => {});

  async function metadataFor(m: ClaimedMessage, destination: Destination, raw: Hex): Promise<Hex> {
    const type = await recipientIsmType(destination, raw);
    if (type === ISM_NULL) return '0x';
    if (type === ISM_CCIP_READ) {
      const origin = origins.get(m.originChain);
      if (!origin) throw new PermanentError(`no origin chain ${m.originChain} configured for its CCTP attestation`);
      return cctpAttestationMetadata(origin.publicClient, origin.transmitters, m.txHash as Hash, raw);
    }
    throw new PermanentError(`the recipient's ISM (module type ${type}) needs metadata this worker cannot build`);
  }

  async function deliver(m: ClaimedMessage): Promise<DeliveryResult> {
    log(`claimed ${m.id} attempt ${m.attempts}`);
    try {
      const destination = destinations.get(m.destination);
      if (!destination) throw new PermanentError(`no destination chain configured for domain ${m.destination}`);
      const raw = toHex(m.raw);
      const metadata = await metadataFor(m, destination, raw);
      const { txHash, already } = await processMessage(destination, metadata, raw, (hash) => log(`sent ${m.id} process ${hash}`));
      // false: our lease ran out and another worker holds the message (it will find it delivered).
      const recorded = await outbox.markDelivered(m.id, { destinationTxHash: txHash, lease: m.lease });
      const outcome = already ? 'already-delivered' : 'delivered';
      log(`${outcome} ${m.id} tx ${txHash}${recorded ? '' : ' (lease lost: not recorded by this worker)'}`);
      return { id: m.id, outcome, txHash, recorded };
    } catch (error) {
      const text = describe(error);
      if (error instanceof PermanentError || m.attempts >= maxAttempts) {
        await outbox.markFailed(m.id, { error: text, final: true, lease: m.lease });
        log(`failed ${m.id}: ${text}`);
        return { id: m.id, outcome: 'failed', error: text };
      }
      const retryAt = clock.now() + retryDelayMs * 2 ** (m.attempts - 1);
      await outbox.markFailed(m.id, { error: text, retryAt, lease: m.lease });
      log(`retry ${m.id} after ${new Date(retryAt).toISOString()}: ${text}`);
      return { id: m.id, outcome: 'retry', error: text };
    }
  }

  return {
    /** One claim and its deliveries, one after another (one signer, so one nonce sequence). */
    async runOnce(): Promise<DeliveryResult[]> {
      const claimed = await outbox.claim(batch, leaseMs);
      const results: DeliveryResult[] = [];
      for (const m of claimed) results.push(await deliver(m));
      return results;
    },
  };
}
