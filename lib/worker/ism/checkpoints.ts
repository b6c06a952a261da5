/**
 * A quorum of validators' signed checkpoints for one message (docs/isms.md#validators-and-checkpoints):
 * the validators' storage locations from the origin's ValidatorAnnounce (newest announcement
 * first, the first one allowed), each validator's checkpoint read (bounded: size, time, and count
 * within the message's lookup budget), its signature recovered and its fields checked; valid
 * checkpoints are grouped by root and the first root with `threshold` signatures wins, its
 * signatures in the ISM's validator order. Too few is a wait (`signatures: k of t …`), not a
 * failure. A bucket with a reorg flag refuses the build (a wait until its operator clears it).
 */
import type { Address, Hex, PublicClient } from 'viem';
import type { Clock } from '../../clock.ts';
import { DeliveryError, describe } from '../errors.ts';
import { scrub } from '../../redact.ts';
import { VALIDATOR_ANNOUNCE_ABI } from './abi.ts';
import { shortOfQuorum } from './awaiting.ts';
import { parseCheckpoint, verifyCheckpoint, type SignedCheckpoint } from './checkpoint.ts';
import {
  parseLocation,
  type CheckpointEndpoints,
  type ObjectReader,
  type StorageKind,
  type StorageLocation,
} from './storage.ts';

/** One message's allowance for object reads (checkpoints, indexes, flags), shared by its ISMs. */
export interface LookupBudget {
  /** clock.now() after which nothing more is read. */
  deadline: number;
  /** Objects still allowed. */
  objects: number;
}

export type CheckpointEvent =
  | { kind: 'fetched'; storage: StorageKind }
  | { kind: 'bad_signature'; validator: Address }
  | { kind: 'refused'; validator: Address; reason: string };

export interface CheckpointReaderOptions {
  read: ObjectReader;
  clock: Clock;
  endpoints?: CheckpointEndpoints;
  allowLocal?: boolean;
  /** Per object. Default 10 s (Hyperlane's relayer). */
  timeoutMs?: number;
  /** Per object. Default 50 KiB (Hyperlane's relayer). */
  maxBytes?: number;
  onEvent?: (event: CheckpointEvent) => void;
}

export interface OriginCheckpoints {
  publicClient: PublicClient;
  domain: number;
  /** The origin's MerkleTreeHook as a 32-byte word. */
  hook: Hex;
  validatorAnnounce: Address;
}

export interface QuorumRequest {
  origin: OriginCheckpoints;
  validators: readonly Address[];
  threshold: number;
  index: number;
  messageId: Hex;
  budget: LookupBudget;
  signal?: AbortSignal;
}

export interface Quorum {
  root: Hex;
  /** `threshold` signatures, in the ISM's validator order. */
  signatures: Hex[];
  checkpoints: SignedCheckpoint[];
}

const DEFAULT_TIMEOUT_MS = 10_000;
const REORG_FLAG = 'reorg flag set';
const DEFAULT_MAX_BYTES = 50 * 1024;

export interface CheckpointReader {
  /** Storage locations per validator, in order: the first allowed one of each (newest first), or why none. */
  locations(origin: OriginCheckpoints, validators: readonly Address[]): Promise<(StorageLocation | string)[]>;
  /** The object `name` of `location`, within `budget`: undefined when there is none (yet); throws on a failed read. */
  object(
    location: StorageLocation,
    name: string,
    budget: LookupBudget,
    signal?: AbortSignal,
  ): Promise<string | undefined>;
  /** A quorum for a message-id checkpoint at the message's own index; DeliveryError `pending` while too few signed. */
  messageIdQuorum(request: QuorumRequest): Promise<Quorum>;
  /**
   * One validator's checkpoint `index` at `location`, checked (for `messageId` when given):
   * the checkpoint, or why not (undefined: not published yet).
   */
  checkpoint(
    location: StorageLocation,
    validator: Address,
    expected: { domain: number; hook: Hex; index: number; messageId?: Hex },
    budget: LookupBudget,
    signal?: AbortSignal,
  ): Promise<SignedCheckpoint | string | undefined>;
}

export function createCheckpointReader(o: CheckpointReaderOptions): CheckpointReader {
  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = o.maxBytes ?? DEFAULT_MAX_BYTES;
  const reader: CheckpointReader = {
    async locations(origin, validators) {
      const announced = await origin.publicClient.readContract({
        address: origin.validatorAnnounce,
        abi: VALIDATOR_ANNOUNCE_ABI,
        functionName: 'getAnnouncedStorageLocations',
        args: [[...validators]],
      });
      return validators.map((validator, i) => {
        const list = announced[i] ?? [];
        let why = 'no storage location announced';
        for (let j = list.length - 1; j >= 0; j--) {
          const parsed = parseLocation(list[j], { endpoints: o.endpoints, allowLocal: o.allowLocal });
          if (!('refused' in parsed)) return parsed;
          why = parsed.refused;
        }
        if (list.length > 0) o.onEvent?.({ kind: 'refused', validator, reason: why });
        return why;
      });
    },

    async object(location, name, budget, signal) {
      const left = budget.deadline - o.clock.now();
      if (budget.objects <= 0 || left <= 0) throw new DeliveryError('pending', 'the lookup budget ran out');
      budget.objects--;
      const got = await o.read(location, name, { timeoutMs: Math.min(timeoutMs, left), maxBytes, signal });
      o.onEvent?.({ kind: 'fetched', storage: location.kind });
      return got.found ? got.text : undefined;
    },

    async checkpoint(location, validator, expected, budget, signal) {
      // A validator that reported a reorg: its checkpoints are not used until its operator clears the flag.
      const flag = await reader.object(location, location.reorgFlagName, budget, signal);
      if (flag !== undefined) return REORG_FLAG;
      const text = await reader.object(location, location.checkpointName(expected.index), budget, signal);
      if (text === undefined) return undefined;
      const parsed = parseCheckpoint(text);
      if (typeof parsed === 'string') return parsed;
      const wrong = await verifyCheckpoint(parsed, { ...expected, validator });
      if (wrong === 'bad signature') o.onEvent?.({ kind: 'bad_signature', validator });
      return wrong ?? parsed;
    },

    async messageIdQuorum(r) {
      const { origin, validators, threshold } = r;
      const locations = await reader.locations(origin, validators);
      const expected = { domain: origin.domain, hook: origin.hook, index: r.index, messageId: r.messageId };
      const results = await Promise.all(
        validators.map(async (validator, i): Promise<SignedCheckpoint | string> => {
          const location = locations[i];
          if (typeof location === 'string') return location;
          try {
            return (await reader.checkpoint(location, validator, expected, r.budget, r.signal)) ?? 'not signed yet';
          } catch (error) {
            if (r.signal?.aborted) throw error;
            return describe(error);
          }
        }),
      );
      // One flagged bucket refuses the build, whatever the others signed (Hyperlane's relayer refuses
      // it too): the origin may have reorganised under the checkpoints (docs/isms.md#validators-and-checkpoints).
      const flagged = results.indexOf(REORG_FLAG);
      if (flagged >= 0)
        throw new DeliveryError(
          'pending',
          `validator ${flagged + 1} (${validators[flagged]}) reported a reorg (${REORG_FLAG}): nothing is built from this ISM's checkpoints until its operator clears the flag`,
        );
      return quorumOf(validators, threshold, results);
    },
  };
  return reader;
}

/** The first root signed by `threshold` validators, its signatures in validator order; else a `pending` DeliveryError. */
export function quorumOf(
  validators: readonly Address[],
  threshold: number,
  results: readonly (SignedCheckpoint | string)[],
): Quorum {
  const byRoot = new Map<Hex, SignedCheckpoint[]>();
  results.forEach((r) => {
    if (typeof r === 'string') return;
    byRoot.set(r.root, [...(byRoot.get(r.root) ?? []), r]);
  });
  let best = 0;
  for (const [root, group] of byRoot) {
    best = Math.max(best, group.length);
    if (group.length < threshold) continue;
    // results are in validator order already; the first `threshold` of the group keep it.
    const chosen = group.slice(0, threshold);
    return { root, signatures: chosen.map((c) => c.signature), checkpoints: chosen };
  }
  const why = results
    .map((r, i) => (typeof r === 'string' ? `validator ${i + 1} (${validators[i]}): ${r}` : undefined))
    .filter((s) => s !== undefined);
  throw shortOfQuorum(
    new DeliveryError(
      'pending',
      scrub(`signatures: ${best} of ${threshold}${why.length ? `; ${why.join('; ')}` : ''}`),
    ),
  );
}
