/**
 * Status events (docs/api.md#status-events) over real HTTP on loopback, with the memory outbox
 * driven as a delivery worker would: the current status at once, every change after, the end
 * after a final status, the 15 s heartbeat on the injected clock, Last-Event-ID resumption (and
 * 204 once the final state was seen), the transaction stream waiting for its messages, CORS, the
 * bounds per client and in all, a client that does not read, and shutdown with streams open.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { txHash } from '../../helpers/fixtures/builders.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { httpRequest } from '../../helpers/harness/http.ts';
import { parseExposition, sampleValue } from '../../helpers/harness/prometheus.ts';
import { outboxMessage } from '../../../lib/testing/index.ts';
import { startApi } from '../../helpers/harness/server.ts';
import { openEvents } from '../../helpers/harness/sse.ts';

const DEST_TX = '0x' + 'de'.repeat(32);

async function setup(
  t: Parameters<typeof startApi>[0],
  server: NonNullable<Parameters<typeof testConfig>[0]>['server'] = {},
) {
  const clock = createFakeClock();
  const outbox = createMemoryOutbox({ clock });
  const api = await startApi(t, {
    config: testConfig({ server: { corsOrigins: ['http://ui.test'], ...server } }),
    outbox,
    clock,
  });
  return { clock, outbox, api };
}

describe('GET /relay/{message_id}/events', () => {
  test('the current status at once, every change after, then the end after delivered', async (t) => {
    // A change is one of status, attempts, last_error, destination_tx_hash.
    const { outbox, api } = await setup(t);
    const m = outboxMessage(1);
    outbox.enqueue([m]);
    const stream = await openEvents(api.url, `/relay/${m.id}/events`, { headers: { origin: 'http://ui.test' } });
    t.after(() => stream.close());
    assert.equal(stream.status, 200);
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    assert.equal(stream.headers['access-control-allow-origin'], 'http://ui.test', 'CORS as the other endpoints');
    assert.equal(stream.headers['cache-control'], 'no-store');

    const first = await stream.next('the current status');
    assert.equal(first.event, 'status');
    assert.deepEqual([first.json().message_id, first.json().status, first.json().attempts], [m.id, 'queued', 0]);

    const [claimed] = outbox.claim(1, 60_000);
    const delivering = (await stream.next('delivering')).json();
    assert.deepEqual([delivering.status, delivering.attempts], ['delivering', 1]);
    outbox.extend(m.id, claimed.lease, 60_000); // a lease renewal shows nothing new
    outbox.markFailed(m.id, { lease: claimed.lease, error: 'rpc: timeout', retryAt: 0 });
    const retry = await stream.next('queued again');
    assert.deepEqual([retry.json().status, retry.json().last_error], ['queued', 'rpc: timeout']);
    const [again] = outbox.claim(1, 60_000);
    assert.equal((await stream.next('second attempt')).json().attempts, 2);
    outbox.markDelivered(m.id, { lease: again.lease, destinationTxHash: DEST_TX });
    const done = await stream.next('delivered');
    assert.deepEqual([done.json().status, done.json().destination_tx_hash], ['delivered', DEST_TX]);
    await stream.ended;
    const ids = stream.events.map((e) => Number(e.id));
    assert.equal(stream.events.length, 5, 'one event per visible change');
    assert.ok(
      ids.every((id, i) => i === 0 || id > ids[i - 1]),
      `ids grow: ${ids}`,
    );
  });

  test('a comment every 15 s on the injected clock keeps an idle stream open', async (t) => {
    const { clock, outbox, api } = await setup(t);
    const m = outboxMessage(2);
    outbox.enqueue([m]);
    const stream = await openEvents(api.url, `/relay/${m.id}/events`);
    t.after(() => stream.close());
    await stream.next();
    await clock.advance(14_999);
    assert.equal(stream.comments.length, 0);
    await clock.advance(1);
    await stream.comment(1);
    await clock.advance(15_000);
    await stream.comment(2);
    assert.equal(stream.events.length, 1, 'heartbeats are comments, not events');
  });

  test('Last-Event-ID resumes: nothing again if nothing changed, the current state if it did, 204 after the final state', async (t) => {
    const { outbox, api } = await setup(t);
    const m = outboxMessage(3);
    outbox.enqueue([m]);
    const first = await openEvents(api.url, `/relay/${m.id}/events`);
    const seen = await first.next();
    first.close();

    const same = await openEvents(api.url, `/relay/${m.id}/events`, { headers: { 'last-event-id': seen.id! } });
    t.after(() => same.close());
    const [claimed] = outbox.claim(1, 60_000); // a change while the client was away…
    const next = await same.next('the change after the id');
    assert.equal(next.json().status, 'delivering', 'the first event is the change, not the state already seen');
    same.close();

    outbox.markDelivered(m.id, { lease: claimed.lease, destinationTxHash: DEST_TX });
    const missed = await openEvents(api.url, `/relay/${m.id}/events`, { headers: { 'last-event-id': next.id! } });
    const final = await missed.next('the change made while away');
    assert.equal(final.json().status, 'delivered');
    await missed.ended;

    const over = await openEvents(api.url, `/relay/${m.id}/events`, { headers: { 'last-event-id': final.id! } });
    assert.equal(over.status, 204, 'no more to come: EventSource stops reconnecting');
    await over.ended;
  });

  test('an unknown message is 404, a malformed id 400, before any stream opens', async (t) => {
    const { api } = await setup(t);
    const unknown = await httpRequest(api.url, { path: `/relay/${outboxMessage(9).id}/events` });
    assert.deepEqual([unknown.status, unknown.json().reason], [404, 'not_found']);
    const bad = await httpRequest(api.url, { path: '/relay/0x12/events' });
    assert.deepEqual([bad.status, bad.json().reason], [400, 'invalid_request']);
    assert.equal(api.api.streams(), 0);
  });
});

describe('GET /relay/events?origin_chain=&tx_hash=', () => {
  test('an empty list at once for a transaction not relayed yet, its messages once enqueued, the end once all are final', async (t) => {
    const { outbox, api } = await setup(t);
    const hash = txHash(7);
    const stream = await openEvents(api.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`);
    t.after(() => stream.close());
    assert.deepEqual((await stream.next('the empty list')).json(), { messages: [] });
    const [a, b] = [outboxMessage(10, undefined, { txHash: hash }), outboxMessage(11, undefined, { txHash: hash })];
    outbox.enqueue([a, b]);
    const listed = await stream.next('the messages');
    assert.deepEqual(
      listed.json().messages.map((m: { message_id: string }) => m.message_id),
      [a.id, b.id],
    );
    assert.equal(listed.event, 'messages');
    assert.match(listed.id!, /^\d+\.\d+$/, 'the id holds each message version');
    for (const m of [a, b]) {
      const [c] = outbox.claim(1, 60_000);
      outbox.markDelivered(c.id, { lease: c.lease, destinationTxHash: DEST_TX });
      await stream.next(`${m.id} delivering`);
      await stream.next(`${m.id} delivered`);
    }
    await stream.ended;
    const last = stream.events.at(-1)!.json().messages;
    assert.deepEqual(
      last.map((m: { status: string }) => m.status),
      ['delivered', 'delivered'],
    );
    const resumed = await openEvents(api.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`, {
      headers: { 'last-event-id': stream.events.at(-1)!.id! },
    });
    assert.equal(resumed.status, 204);
  });

  test('changes made right after the enqueue, before the stream read its new messages, are not lost', async (t) => {
    const { outbox, api } = await setup(t);
    const hash = txHash(8);
    const stream = await openEvents(api.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`);
    t.after(() => stream.close());
    await stream.next('the empty list');
    outbox.enqueue([outboxMessage(12, undefined, { txHash: hash })]);
    // In the same turn: the stream heard of the new message but follows its id only once it read it.
    const [c] = outbox.claim(1, 60_000);
    outbox.markDelivered(c.id, { lease: c.lease, destinationTxHash: DEST_TX });
    await stream.ended;
    assert.equal(stream.events.at(-1)!.json().messages[0].status, 'delivered');
  });

  test('the query is checked as GET /relay?… checks it', async (t) => {
    const { api } = await setup(t);
    const missing = await httpRequest(api.url, { path: '/relay/events?origin_chain=ethereum' });
    assert.deepEqual([missing.status, missing.json().reason], [400, 'invalid_request']);
    assert.match(missing.json().message, /tx_hash is required/);
    const chain = await httpRequest(api.url, { path: `/relay/events?origin_chain=nowhere&tx_hash=${txHash(1)}` });
    assert.deepEqual([chain.status, chain.json().reason], [400, 'invalid_request']);
  });
});

/** Whether `stream` ends within 5 s of real time (a bound on a wait, not a measured time). */
function endsSoon(stream: { ended: Promise<void> }): Promise<boolean> {
  return Promise.race([
    stream.ended.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000).unref()),
  ]);
}

describe('status stream bounds and shutdown', () => {
  test('a transaction stream with no message ends after txStreamWaitSeconds with a timeout event; one with messages does not', async (t) => {
    // docs/api.md#status-events: server.txStreamWaitSeconds (default 120 s) bounds an empty stream.
    const { clock, outbox, api } = await setup(t, { txStreamWaitSeconds: 120, streamMaxSeconds: 900 });
    const empty = await openEvents(api.url, `/relay/events?origin_chain=ethereum&tx_hash=${txHash(40)}`);
    t.after(() => empty.close());
    assert.deepEqual((await empty.next('the empty list')).json(), { messages: [] });
    const hash = txHash(41);
    const relayed = await openEvents(api.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`);
    t.after(() => relayed.close());
    await relayed.next('the empty list');
    await clock.advance(60_000);
    outbox.enqueue([outboxMessage(41, undefined, { txHash: hash })]);
    await relayed.next('the message');
    await clock.advance(59_999);
    assert.equal(empty.events.length, 1, 'still waiting 1 ms before the end of the wait');
    await clock.advance(1);
    const timeout = await empty.next('the timeout');
    assert.equal(timeout.event, 'timeout');
    assert.deepEqual(timeout.json(), {
      reason: 'timeout',
      message: 'no message of this transaction was accepted within 120 s; relay it (POST /relay), then watch it again',
    });
    assert.ok(await endsSoon(empty), 'the empty stream ended');
    await clock.advance(600_000);
    assert.equal(relayed.events.length, 2, 'a stream with a message does not time out');
    assert.equal(api.api.streams(), 1, 'the stream with a message is open');
  });

  test('every stream ends after streamMaxSeconds; reconnecting with Last-Event-ID resumes where it was', async (t) => {
    // docs/api.md#status-events: EventSource reconnects with the last id; nothing is lost, nothing sent twice.
    const { clock, outbox, api } = await setup(t, { streamMaxSeconds: 900 });
    const m = outboxMessage(42);
    outbox.enqueue([m]);
    const stream = await openEvents(api.url, `/relay/${m.id}/events`);
    t.after(() => stream.close());
    const first = await stream.next('the current status');
    await clock.advance(899_999);
    assert.equal(api.api.streams(), 1, 'open until its lifetime');
    await clock.advance(1);
    assert.ok(await endsSoon(stream), 'the stream ended at its lifetime');
    assert.deepEqual(
      stream.events.map((e) => e.event),
      ['status'],
      'ended without an event: a reconnection, not an error',
    );
    const again = await openEvents(api.url, `/relay/${m.id}/events`, { headers: { 'last-event-id': first.id! } });
    t.after(() => again.close());
    assert.equal(again.status, 200);
    const [claimed] = outbox.claim(1, 60_000);
    assert.equal((await again.next('the change after the id')).json().status, 'delivering');
    outbox.markDelivered(m.id, { lease: claimed.lease, destinationTxHash: DEST_TX });
    assert.equal((await again.next('delivered')).json().status, 'delivered');
    assert.ok(await endsSoon(again), 'the end after delivered');
  });

  test('places are also bounded per IPv6 /56 and /48 (2× and 5× a client), through a trusted proxy', async (t) => {
    // docs/api.md#per-client-limits: maxSubscribersPerClient 2 → a /56 holds 4, a /48 10.
    const { outbox, api } = await setup(t, { maxSubscribersPerClient: 2, trustedProxies: ['127.0.0.0/8'] });
    const m = outboxMessage(43);
    outbox.enqueue([m]);
    const open: Awaited<ReturnType<typeof openEvents>>[] = [];
    t.after(() => {
      for (const s of open) s.close();
    });
    const from = async (client: string) => {
      const s = await openEvents(api.url, `/relay/${m.id}/events`, { headers: { 'x-forwarded-for': client } });
      if (s.status === 200) open.push(s);
      return s.status === 200 ? 200 : [s.status, JSON.parse(await s.text()).message];
    };
    assert.deepEqual([await from('2001:db8:1:1::1'), await from('2001:db8:1:1::2')], [200, 200]);
    assert.deepEqual(await from('2001:db8:1:1::3'), [
      429,
      'this client has 2 status streams open, the most allowed; close one first',
    ]);
    assert.deepEqual([await from('2001:db8:1:2::1'), await from('2001:db8:1:2::1')], [200, 200], 'another /64');
    assert.deepEqual(await from('2001:db8:1:3::1'), [
      429,
      "this client's IPv6 /56 has 4 status streams open, the most allowed; close one first",
    ]);
    // Other /56s of the same /48: 10 in the /48.
    for (const client of ['2001:db8:1:100::1', '2001:db8:1:101::1', '2001:db8:1:200::1'])
      for (let i = 0; i < 2; i++) assert.equal(await from(client), 200, client);
    assert.equal(open.length, 10, '10 in the /48');
    assert.deepEqual(await from('2001:db8:1:300::1'), [
      429,
      "this client's IPv6 /48 has 10 status streams open, the most allowed; close one first",
    ]);
    assert.equal(await from('2001:db8:2:300::1'), 200, 'another /48');
    assert.equal(await from('192.0.2.1'), 200, 'an IPv4 client');
  });

  test('beyond the subscriber limits 429 too_many_subscribers or 503 subscribers_full; a closed stream frees its place', async (t) => {
    // Beyond maxSubscribersPerClient 429 too_many_subscribers, beyond maxSubscribers 503 subscribers_full, both
    // with Retry-After.
    const { outbox, api } = await setup(t, { maxSubscribers: 3, maxSubscribersPerClient: 2 });
    const m = outboxMessage(20);
    outbox.enqueue([m]);
    const path = `/relay/${m.id}/events`;
    const a = await openEvents(api.url, path);
    const b = await openEvents(api.url, path);
    t.after(() => {
      for (const s of [a, b]) s.close();
    });
    const refused = await httpRequest(api.url, { path });
    assert.deepEqual([refused.status, refused.json().reason], [429, 'too_many_subscribers']);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    // Another client (another loopback address) still gets one, then the server is full.
    const c = await openEvents(api.url, path, { localAddress: '127.0.0.2' });
    t.after(() => c.close());
    assert.equal(c.status, 200);
    const full = await openEvents(api.url, path, { localAddress: '127.0.0.3' });
    assert.equal(full.status, 503);
    assert.equal(JSON.parse(await full.text()).reason, 'subscribers_full');
    assert.ok(Number(full.headers['retry-after']) >= 1);
    a.close();
    await a.ended;
    for (let i = 0; i < 100 && api.api.streams() > 2; i++) await new Promise((r) => setTimeout(r, 10));
    const d = await openEvents(api.url, path);
    t.after(() => d.close());
    assert.equal(d.status, 200, 'the closed stream gave its place back');
  });

  test('docs/operations.md#metrics: the open_status_streams gauge counts open streams: two, then one after a close', async (t) => {
    const { outbox, api } = await setup(t);
    const hash = txHash(21);
    const m = outboxMessage(21, undefined, { txHash: hash });
    outbox.enqueue([m]);
    const gauge = async () =>
      sampleValue(
        parseExposition((await httpRequest(api.url, { path: '/metrics' })).text),
        'hyperlane_relay_api_open_status_streams',
      );
    assert.equal(await gauge(), 0, 'none open');
    const one = await openEvents(api.url, `/relay/${m.id}/events`);
    const two = await openEvents(api.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`);
    t.after(() => {
      for (const s of [one, two]) s.close();
    });
    await Promise.all([one.next(), two.next()]);
    assert.equal(await gauge(), 2, 'a message stream and a transaction stream');
    two.close();
    await two.ended;
    // The server hears the close on its side of the socket a moment later.
    for (let i = 0; i < 100 && api.api.streams() > 1; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(await gauge(), 1, 'the closed one is gone');
    const [claimed] = outbox.claim(1, 60_000);
    outbox.markDelivered(m.id, { lease: claimed.lease, destinationTxHash: DEST_TX });
    await one.ended;
    for (let i = 0; i < 100 && api.api.streams() > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(await gauge(), 0, 'a stream the server ended after the final status');
  });

  test('a client that does not read is dropped once 64 KiB wait unsent, not buffered without limit', async (t) => {
    const { outbox, api } = await setup(t);
    const hash = txHash(30);
    const messages = Array.from({ length: 10 }, (_, i) => outboxMessage(40 + i, undefined, { txHash: hash }));
    outbox.enqueue(messages);
    const stream = await openEvents(api.url, `/relay/events?origin_chain=ethereum&tx_hash=${hash}`);
    stream.res.pause(); // reads nothing more
    // Each round changes every message's last_error (1 000 characters): ~13 KB per event.
    for (let round = 0; round < 2_000 && api.api.streams() > 0; round++) {
      for (const c of outbox.claim(10, 60_000))
        outbox.markFailed(c.id, { lease: c.lease, error: `${round}`.padEnd(1000, 'x'), retryAt: 0 });
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(api.api.streams(), 0, 'the stream was dropped');
    stream.close();
  });

  test("the server's close ends every stream at once: the shutdown does not wait for them", async (t) => {
    const { outbox, api } = await setup(t);
    const m = outboxMessage(50);
    outbox.enqueue([m]);
    const streams = await Promise.all([1, 2, 3].map(() => openEvents(api.url, `/relay/${m.id}/events`)));
    await Promise.all(streams.map((s) => s.next()));
    const started = Date.now();
    await api.server.close(60_000);
    await Promise.all(streams.map((s) => s.ended));
    assert.ok(Date.now() - started < 5_000, 'closed well before the grace period');
    assert.equal(api.api.streams(), 0);
  });
});
