/**
 * The gauge of messages awaiting validators' signatures (lib/worker/ism/awaiting.ts,
 * docs/isms.md#metrics): a build short of a quorum (quorumOf's `signatures: k of t`), directly or
 * wrapped by an aggregation's wait, counts the message; any other end of a build takes it out, and
 * so does time (a message not built again within forgetMs). Rendered by a real metrics registry.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Address, Hex, PublicClient } from 'viem';
import { createMetricsRegistry } from '../../../../lib/node/metrics.ts';
import { DeliveryError } from '../../../../lib/worker/errors.ts';
import { buildAggregation } from '../../../../lib/worker/ism/aggregation.ts';
import { awaitingSignaturesGauge, isShortOfQuorum } from '../../../../lib/worker/ism/awaiting.ts';
import { quorumOf } from '../../../../lib/worker/ism/checkpoints.ts';
import type { IsmContext } from '../../../../lib/worker/ism/types.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';

const validators: Address[] = [
  '0x00000000000000000000000000000000000000a1',
  '0x00000000000000000000000000000000000000a2',
];
const short = (): unknown => {
  try {
    quorumOf(validators, 2, ['not signed yet', 'not signed yet']);
  } catch (error) {
    return error;
  }
  assert.fail('quorumOf returned without signatures');
};

/** The error buildAggregation throws when its one module is short of a quorum. */
async function aggregationWait(): Promise<unknown> {
  const publicClient = {
    readContract: async () => [['0x00000000000000000000000000000000000000b1'], 1],
  } as unknown as PublicClient;
  const c = { publicClient, message: '0x01', visited: 0, shared: {} } as unknown as IsmContext;
  return buildAggregation(c, '0x00000000000000000000000000000000000000b0', 0, async () => {
    throw short();
  }).then(
    () => assert.fail('built'),
    (error: unknown) => error,
  );
}

const gaugeLine = (registry: ReturnType<typeof createMetricsRegistry>) =>
  registry
    .render()
    .split('\n')
    .find((l) => l.startsWith('relayer_worker_messages_awaiting_signatures '));

test('docs/isms.md#metrics: messages short of a quorum are counted until built, failed otherwise, or forgotten', async () => {
  const clock = createFakeClock();
  const registry = createMetricsRegistry();
  const built = awaitingSignaturesGauge(registry, { clock, forgetMs: 60_000 });
  const [a, b, c] = ['0x01', '0x02', '0x03'] as Hex[];
  const wrapped = await aggregationWait();
  assert.ok(wrapped instanceof DeliveryError && wrapped.code === 'pending', 'an aggregation wait');
  assert.ok(isShortOfQuorum(wrapped), 'found through the aggregation error cause');
  assert.equal(isShortOfQuorum(new DeliveryError('pending', 'signatures: 1 of 2')), false, 'by origin, not by text');

  built(a, short());
  built(b, wrapped);
  built(c, new DeliveryError('pending', 'attestation pending'));
  assert.equal(gaugeLine(registry), 'relayer_worker_messages_awaiting_signatures 2');
  built(a, short());
  assert.equal(gaugeLine(registry), 'relayer_worker_messages_awaiting_signatures 2', 'one message counted once');
  built(a, undefined);
  assert.equal(gaugeLine(registry), 'relayer_worker_messages_awaiting_signatures 1', 'built: out');
  built(b, new DeliveryError('metadata', 'aggregation: 0 of 1 modules verified'));
  assert.equal(gaugeLine(registry), 'relayer_worker_messages_awaiting_signatures 0', 'failed otherwise: out');

  built(c, short());
  await clock.advance(60_000);
  assert.equal(gaugeLine(registry), 'relayer_worker_messages_awaiting_signatures 1', 'within forgetMs');
  await clock.advance(1);
  assert.equal(gaugeLine(registry), 'relayer_worker_messages_awaiting_signatures 0', 'not built again: forgotten');
});
