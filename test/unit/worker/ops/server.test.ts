/**
 * relayer-worker's ops server (lib/worker/ops/server.ts) over real HTTP on 127.0.0.1: /metrics is valid
 * Prometheus text (checked by the independent reader in helpers/prometheus.ts) carrying what the
 * loop reported, /ready follows the store, other paths and methods are refused.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createOpsServer, createWorkerMetrics } from '../../../../lib/worker/ops/server.ts';
import { parseExposition, sampleValue } from '../../../helpers/harness/prometheus.ts';

test('/metrics counts the deliveries and the outbox; /ready follows the store', async (t) => {
  // delivered, failed, retries, in flight, oldest claimed age, outbox depth, enqueue→delivered histogram.
  let inFlight = 3;
  let storeUp = true;
  const metrics = createWorkerMetrics({ inFlight: () => inFlight });
  const ops = createOpsServer({
    metrics,
    ready: async () => {
      if (!storeUp) throw new Error('database down');
      return true;
    },
    depth: async () => {
      if (!storeUp) throw new Error('database down');
      return 7;
    },
  });
  const { url } = await ops.listen(0, '127.0.0.1');
  t.after(() => ops.close());
  metrics.events.claimed(2, 42.5);
  metrics.events.delivered('base', false, 12);
  metrics.events.delivered('base', true, 3_600);
  metrics.events.retried('base', 'pending');
  metrics.events.retried('base', 'pending');
  metrics.events.retried('base', 'rpc');
  metrics.events.failed('base', 'unsupported');

  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
  const text = parseExposition(await res.text());
  assert.deepEqual(text.violations, []);
  assert.equal(sampleValue(text, 'relayer_worker_delivered_total', { destination: 'base', already: 'false' }), 1);
  assert.equal(sampleValue(text, 'relayer_worker_delivered_total', { destination: 'base', already: 'true' }), 1);
  assert.equal(sampleValue(text, 'relayer_worker_retries_total', { destination: 'base', kind: 'pending' }), 2);
  assert.equal(sampleValue(text, 'relayer_worker_retries_total', { destination: 'base', kind: 'rpc' }), 1);
  assert.equal(sampleValue(text, 'relayer_worker_failed_total', { destination: 'base', kind: 'unsupported' }), 1);
  assert.equal(sampleValue(text, 'relayer_worker_in_flight'), 3);
  assert.equal(sampleValue(text, 'relayer_worker_oldest_claimed_age_seconds'), 42.5);
  assert.equal(sampleValue(text, 'relayer_worker_outbox_depth'), 7);
  assert.equal(sampleValue(text, 'relayer_worker_enqueue_to_delivered_seconds_count', { destination: 'base' }), 2);
  assert.equal(
    sampleValue(text, 'relayer_worker_enqueue_to_delivered_seconds_bucket', { destination: 'base', le: '20' }),
    1,
  );
  assert.equal(sampleValue(text, 'relayer_worker_enqueue_to_delivered_seconds_sum', { destination: 'base' }), 3_612);

  assert.equal(await (await fetch(`${url}/ready`)).text(), 'ready\n');
  storeUp = false;
  inFlight = 0;
  const down = await fetch(`${url}/ready`);
  assert.equal(down.status, 503);
  assert.equal(await down.text(), 'store_unavailable\n');
  const scraped = parseExposition(await (await fetch(`${url}/metrics`)).text());
  assert.equal(
    sampleValue(scraped, 'relayer_worker_outbox_depth'),
    -1,
    'a store that does not answer shows -1, the scrape still works',
  );
  assert.equal((await fetch(`${url}/nope`)).status, 404);
  const post = await fetch(`${url}/metrics`, { method: 'POST' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
});
