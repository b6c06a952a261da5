/**
 * Per-client buckets (docs/api.md#per-client-limits) on both engines: a client's burst, its refill,
 * and the bound on how many buckets are kept (maxClients, least recently used first; a bucket
 * dropped starts full again, more lenient and never stricter). The in-process engine drops as it
 * goes; PostgreSQL's sweep deletes, on the real server, the buckets full again and those beyond
 * the bound.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createClientBuckets } from '../../../lib/relay/client-rate-limit.ts';
import { createPostgresClientBuckets } from '../../../lib/postgres/client-rate-limit.ts';
import { openPostgresStore } from '../../../lib/postgres/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { testSchema } from '../../helpers/harness/postgres.ts';

const MINUTE = 60_000;

describe('per-client buckets in process', () => {
  test('burst, then one token a minute; Retry-After says when', async () => {
    const clock = createFakeClock();
    const buckets = createClientBuckets({ clock, burst: 2, perMinute: 1 });
    assert.deepEqual([buckets.take('a'), buckets.take('a')], [{ ok: true }, { ok: true }]);
    assert.deepEqual(buckets.take('a'), { ok: false, retryAfterSeconds: 60 });
    assert.deepEqual(buckets.take('b'), { ok: true }, 'another client has its own bucket');
    await clock.advance(MINUTE);
    assert.deepEqual(buckets.take('a'), { ok: true });
    assert.equal(buckets.take('a').ok, false);
  });

  test('at most maxClients buckets: the least recently used is dropped and starts full', () => {
    const clock = createFakeClock();
    const buckets = createClientBuckets({ clock, burst: 1, perMinute: 1, maxClients: 3 });
    for (const client of ['a', 'b', 'c']) assert.ok(buckets.take(client).ok);
    assert.equal(buckets.take('a').ok, false, 'a is empty, and now the most recently used');
    assert.ok(buckets.take('d').ok);
    assert.equal(buckets.size(), 3);
    assert.equal(buckets.take('a').ok, false, 'a was kept: b, the least recently used, went');
    assert.ok(buckets.take('b').ok, 'b starts again from a full bucket');
    assert.equal(buckets.size(), 3);
  });
});

describe('per-client buckets on PostgreSQL', () => {
  async function setUp(t: { after(fn: () => Promise<void>): void }, maxClients: number) {
    const clock = createFakeClock();
    const ts = await testSchema();
    const store = await openPostgresStore(ts.pool, { relayApi: testConfig().relayApi, schema: ts.schema, clock });
    t.after(async () => {
      await store.close();
      await ts.close();
    });
    const open = () =>
      createPostgresClientBuckets(ts.pool, `"${ts.schema}"`, {
        name: 'relay',
        burst: 1,
        perMinute: 1,
        maxClients,
        clock,
      });
    const clients = async () =>
      (
        await ts.pool.query<{ client: string }>(
          `SELECT client FROM "${ts.schema}".client_buckets WHERE name = 'relay' ORDER BY client`,
        )
      ).rows.map((r) => r.client);
    return { clock, open, clients };
  }

  test('the sweep keeps the maxClients most recently used; a client swept starts full', async (t) => {
    const { clock, open, clients } = await setUp(t, 3);
    const buckets = open();
    for (const client of ['a', 'b', 'c', 'd', 'e']) {
      assert.ok((await buckets.take(client)).ok);
      await clock.advance(1_000);
    }
    assert.equal((await buckets.take('a')).ok, false, 'a is empty, and now the most recently used');
    assert.deepEqual(await clients(), ['a', 'b', 'c', 'd', 'e'], 'between two sweeps the table may pass the bound');
    assert.equal(await buckets.sweep(), 2);
    assert.deepEqual(await clients(), ['a', 'd', 'e'], 'b and c, the least recently used, went');
    assert.ok((await buckets.take('b')).ok, 'b starts again from a full bucket');
    assert.equal((await buckets.take('a')).ok, false, 'a was kept, still empty');
  });

  test('the sweep deletes the buckets full again (the same as no row); the others stay', async (t) => {
    const { clock, open, clients } = await setUp(t, 100);
    const buckets = open();
    assert.ok((await buckets.take('old')).ok);
    await clock.advance(MINUTE / 2);
    assert.ok((await buckets.take('new')).ok);
    await clock.advance(MINUTE / 2 + 1);
    assert.equal(await buckets.sweep(), 1);
    assert.deepEqual(await clients(), ['new']);
    assert.equal((await buckets.take('new')).ok, false, 'new has not refilled yet');
  });

  test('a replica that starts sweeps before its first take: the bound holds across replicas', async (t) => {
    const { open, clients } = await setUp(t, 2);
    const first = open();
    for (const client of ['a', 'b', 'c', 'd']) await first.take(client);
    const second = open();
    await second.take('e');
    // The sweep runs beside the take; a bounded wait for it (it is one statement).
    for (let i = 0; i < 100 && (await clients()).length > 3; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok((await clients()).length <= 3, `at most maxClients + the take beside the sweep: ${await clients()}`);
  });
});
