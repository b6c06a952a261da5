/**
 * What the transaction senders tell (docs/transactions.md#gaps), as log lines and metrics: one info
 * line per broadcast, replacement, re-broadcast and gap, with the chain, the signer, the nonce,
 * the hash, the fees and the message; counters of re-broadcasts, replacements and gaps healed; and
 * the age of the lowest nonce each signer has open, read at scrape time.
 */
import type { Logger } from '../../log.ts';
import type { MetricsRegistry } from '../../node/metrics.ts';
import type { TxEvent } from '../tx/types.ts';

/** What a gauge of the lowest open nonce reads from each destination's sender. */
export interface OpenNonces {
  destination: string;
  signer: string;
  lowestOpen(): { nonce: number; ageMs: number } | undefined;
}

export interface SignerReporter {
  /** The event sink of one destination's sender. */
  onEvent(destination: string): (e: TxEvent) => void;
  /** Adds a sender to the gauge of the lowest open nonce's age. */
  watch(source: OpenNonces): void;
}

const LOG_LINE: Record<TxEvent['kind'], string> = {
  broadcast: 'broadcast',
  replacement: 'replacement',
  rebroadcast: 're-broadcast',
  gap: 'gap',
  fill: 'gap filled',
};

export function createSignerReporter(registry: MetricsRegistry, logger: Logger): SignerReporter {
  const rebroadcasts = registry.counter(
    'relayer_worker_rebroadcasts_total',
    'Transactions given to the node again, the same signed bytes, after the node lost them (a gap), by destination chain.',
  );
  const replacements = registry.counter(
    'relayer_worker_replacements_total',
    'Transactions replaced at the same nonce with higher fees, by destination chain and reason (below-base-fee, blocks, time, gap).',
  );
  const healed = registry.counter(
    'relayer_worker_gaps_healed_total',
    'Gaps (a nonce the chain waits on that the node holds nothing for) filled, by destination chain and how: rebroadcast, replacement, self-transfer.',
  );
  const sources: OpenNonces[] = [];
  registry.gauge(
    'relayer_worker_lowest_open_nonce_age_seconds',
    'Per destination and signer, seconds since the lowest nonce this worker follows was first sent (0 when none is open): a stuck signer grows it.',
    () =>
      sources.map((s) => [
        { destination: s.destination, signer: s.signer },
        Math.round((s.lowestOpen()?.ageMs ?? 0) / 1000),
      ]),
  );
  return {
    onEvent: (destination) => (e) => {
      if (e.kind === 'rebroadcast') {
        rebroadcasts.inc({ destination });
        // A later nonce the node lost with the gap's is not a gap of its own.
        if (e.reason !== 'lost') healed.inc({ destination, by: 'rebroadcast' });
      } else if (e.kind === 'fill') healed.inc({ destination, by: 'self-transfer' });
      else if (e.kind === 'replacement') {
        const reason = e.reason === 'gap' ? 'gap' : (e.reason ?? 'time');
        replacements.inc({ destination, reason });
        if (reason === 'gap') healed.inc({ destination, by: 'replacement' });
      }
      logger.info(LOG_LINE[e.kind], {
        destination,
        chain_id: e.chainId,
        signer: e.signer,
        nonce: e.nonce,
        ...(e.hash === undefined ? {} : { tx_hash: e.hash }),
        ...(e.maxFeePerGas === undefined ? {} : { max_fee_per_gas: e.maxFeePerGas.toString() }),
        ...(e.maxPriorityFeePerGas === undefined
          ? {}
          : { max_priority_fee_per_gas: e.maxPriorityFeePerGas.toString() }),
        ...(e.messageId === undefined ? {} : { message_id: e.messageId }),
        ...(e.reason === undefined ? {} : { reason: e.reason }),
      });
    },
    watch: (source) => void sources.push(source),
  };
}
