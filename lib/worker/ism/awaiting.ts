/**
 * Messages awaiting validators' signatures (docs/isms.md#waiting-for-signatures): those whose last
 * metadata build in this worker ended short of a quorum, directly or inside an aggregation or a
 * routing ISM. A message leaves the count when a build of it ends any other way (built, another
 * failure), or when it has not been built for `forgetMs` (failed at its deadline, delivered by
 * someone else, taken by another worker): the gauge is this worker's view.
 */
import { keccak256, type Hex } from 'viem';
import type { Clock } from '../../clock.ts';
import type { MetricsRegistry } from '../../node/metrics.ts';
import type { DeliveryError } from '../errors.ts';

const SHORT_OF_QUORUM = new WeakSet<object>();

/** Marks `error` as a quorum not reached yet (lib/worker/ism/checkpoints.ts's `signatures: k of t`). */
export function shortOfQuorum(error: DeliveryError): DeliveryError {
  SHORT_OF_QUORUM.add(error);
  return error;
}

/** Whether `error`, or an error it wraps (an aggregation's wait), is a quorum not reached yet. */
export function isShortOfQuorum(error: unknown): boolean {
  let at = error;
  for (let depth = 0; depth < 16 && typeof at === 'object' && at !== null; depth++) {
    if (SHORT_OF_QUORUM.has(at)) return true;
    at = (at as { cause?: unknown }).cause;
  }
  return false;
}

export interface AwaitingSignatures {
  /** One metadata build of message `id` ended: with `error`, or built (undefined). */
  built(id: string, error: unknown): void;
  /** Messages whose last build, within `forgetMs`, ended short of a quorum. */
  count(): number;
}

export function createAwaitingSignatures(o: { clock: Clock; forgetMs: number }): AwaitingSignatures {
  const since = new Map<string, number>();
  return {
    built(id, error) {
      if (isShortOfQuorum(error)) since.set(id, o.clock.now());
      else since.delete(id);
    },
    count() {
      const now = o.clock.now();
      for (const [id, at] of since) if (now - at > o.forgetMs) since.delete(id);
      return since.size;
    },
  };
}

/**
 * The gauge `relayer_worker_messages_awaiting_signatures` on `registry`, and the destinations'
 * `onMetadata` that feeds it (messages keyed by id).
 */
export function awaitingSignaturesGauge(
  registry: MetricsRegistry,
  o: { clock: Clock; forgetMs: number },
): (message: Hex, error: unknown) => void {
  const awaiting = createAwaitingSignatures(o);
  registry.gauge(
    'relayer_worker_messages_awaiting_signatures',
    "Messages whose last metadata build in this worker ended short of their validators' quorum (waiting, not failed).",
    () => awaiting.count(),
  );
  return (message, error) => awaiting.built(keccak256(message), error);
}
