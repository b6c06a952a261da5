/**
 * The worker's multisig builder, wired from its config (docs/isms.md#validators-and-checkpoints):
 * origins are the chains with both `merkleTreeHook` and `validatorAnnounce`; checkpoints are read
 * from the public S3 and GCS hosts or `worker.checkpointEndpoints`, `file://` only with
 * `allowLocalCheckpointSyncers`; one message's reads share a budget of `worker.ccipReadBudgetSeconds`
 * and MAX_OBJECTS_PER_MESSAGE objects.
 */
import type { Address, PublicClient } from 'viem';
import type { Clock } from '../../clock.ts';
import type { Logger } from '../../log.ts';
import type { MetricsRegistry } from '../../node/metrics.ts';
import type { ChainConfig, MerkleStore, RelayerConfig } from '../../types.ts';
import type { MultisigBuilder, OriginChain } from './types.ts';
import { createCheckpointReader, type CheckpointEvent } from './checkpoints.ts';
import { readLocalObject } from './local-files.ts';
import { createMultisigBuilder } from './multisig.ts';
import { createObjectReader } from './storage.ts';

/** Objects (checkpoints, reorg flags, latest indexes) one message may read per attempt. */
export const MAX_OBJECTS_PER_MESSAGE = 200;

export interface WorkerMultisigOptions {
  /** The worker's metrics: checkpoints fetched per storage kind, bad signatures, refused locations, root mismatches. */
  registry?: MetricsRegistry;
  clock: Clock;
  logger: Logger;
  /** The viem client of a configured chain (the worker's, shared with its destination when it is one). */
  client(chain: ChainConfig): Promise<PublicClient>;
  fetch?: typeof fetch;
  /** The stored merkle tree insertions: MerkleRootMultisig proofs from them when they agree with the signed root. */
  merkle?: MerkleStore;
  onEvent?: (event: CheckpointEvent) => void;
}

/** Undefined when no chain names both a merkleTreeHook and a validatorAnnounce (multisig ISMs are then unsupported). */
export function workerMultisig(config: RelayerConfig, o: WorkerMultisigOptions): MultisigBuilder | undefined {
  const byDomain = new Map<number, ChainConfig>();
  for (const chain of Object.values(config.chains))
    if (chain.merkleTreeHook && chain.validatorAnnounce) byDomain.set(chain.domainId, chain);
  if (byDomain.size === 0) return undefined;
  const origins = new Map<number, Promise<OriginChain>>();
  const count = o.registry ? checkpointCounters(o.registry) : undefined;
  const checkpoints = createCheckpointReader({
    read: createObjectReader({ fetch: o.fetch, readFile: readLocalObject }),
    clock: o.clock,
    endpoints: config.worker.checkpointEndpoints,
    allowLocal: config.allowLocalCheckpointSyncers === true,
    onEvent: (event) => {
      o.onEvent?.(event);
      count?.(event);
      if (event.kind === 'bad_signature') o.logger.warn('checkpoint: bad signature', { validator: event.validator });
      if (event.kind === 'refused')
        o.logger.warn('checkpoint: location refused', { validator: event.validator, reason: event.reason });
    },
  });
  return createMultisigBuilder({
    origin(domain) {
      const chain = byDomain.get(domain);
      if (!chain) return Promise.resolve(undefined);
      let found = origins.get(domain);
      if (!found) {
        found = o.client(chain).then((publicClient) => ({
          name: chain.name,
          domain,
          publicClient,
          merkleTreeHook: chain.merkleTreeHook as Address,
          validatorAnnounce: chain.validatorAnnounce as Address,
        }));
        // A client that could not be made is asked for again next time.
        found.catch(() => origins.delete(domain));
        origins.set(domain, found);
      }
      return found;
    },
    checkpoints,
    clock: o.clock,
    budgetMs: config.worker.ccipReadBudgetSeconds * 1000,
    maxObjects: MAX_OBJECTS_PER_MESSAGE,
    onMismatch: () => count?.({ kind: 'root_mismatch' }),
    storedLeaves: o.merkle ? async (domain, upTo) => o.merkle!.listMerkle(domain, 0, upTo) : undefined,
    onStoredMismatch: (domain, index) => {
      o.logger.warn('merkle: stored insertions contradict the signed root; the chain is used', { domain, index });
      count?.({ kind: 'stored_mismatch' });
    },
  });
}

/** The counters of docs/isms.md#metrics, as one event sink. */
function checkpointCounters(
  registry: MetricsRegistry,
): (event: CheckpointEvent | { kind: 'root_mismatch' | 'stored_mismatch' }) => void {
  const fetched = registry.counter(
    'relayer_worker_checkpoints_fetched_total',
    "Validators' checkpoint storage objects read, by storage kind (s3, gcs, file).",
  );
  const bad = registry.counter(
    'relayer_worker_checkpoint_bad_signatures_total',
    'Checkpoints whose signature is not their validator (skipped).',
  );
  const refused = registry.counter(
    'relayer_worker_checkpoint_locations_refused_total',
    'Validators whose every announced storage location was refused (file:// not allowed, malformed).',
  );
  const mismatch = registry.counter(
    'relayer_worker_merkle_root_mismatches_total',
    "Signed roots that the origin tree's proof did not reach (nothing sent).",
  );
  const stored = registry.counter(
    'relayer_worker_stored_insertion_mismatches_total',
    'Proofs for which the stored merkle tree insertions contradicted the signed root (the chain was used).',
  );
  return (event) => {
    if (event.kind === 'fetched') fetched.inc({ storage: event.storage });
    else if (event.kind === 'bad_signature') bad.inc({});
    else if (event.kind === 'refused') refused.inc({});
    else if (event.kind === 'stored_mismatch') stored.inc({});
    else mismatch.inc({});
  };
}
