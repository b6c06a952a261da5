/**
 * GET /messages (docs/api.md#get-messages): the operator's list of what is stuck, over real
 * loopback on the in-memory outbox (the filters themselves are the outbox contract's, run on every
 * engine). It is never open: 404 without an admin token configured, 401 without the right one;
 * every answer is checked against docs/openapi.json by test/helpers/harness/http.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { outboxMessage } from '../../../lib/testing/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { startApi } from '../../helpers/harness/server.ts';

const TOKEN = 'listing-test-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** An outbox holding message 1 (to ethereum, failed), 2 (to base, queued), 3 (to base, delivered). */
async function stocked() {
  const clock = createFakeClock();
  const outbox = createMemoryOutbox({ clock });
  outbox.enqueue([
    outboxMessage(1, clock.now() - 3000, { destination: 1 }),
    outboxMessage(2, clock.now() - 2000),
    outboxMessage(3, clock.now() - 1000),
  ]);
  const [one] = outbox.claim(1, 60_000);
  outbox.markFailed(one.id, { error: 'recipient reverts', final: true, lease: one.lease });
  const claimed = outbox.claim(2, 60_000);
  const three = claimed.find((m) => m.nonce === 3)!;
  const two = claimed.find((m) => m.nonce === 2)!;
  outbox.markDelivered(three.id, { destinationTxHash: `0x${'de'.repeat(32)}`, lease: three.lease });
  outbox.markFailed(two.id, { error: 'rpc: timeout', retryAt: clock.now() + 60_000, lease: two.lease });
  return { clock, outbox, ids: [1, 2, 3].map((n) => outboxMessage(n).id) };
}

describe('docs/api.md#get-messages: GET /messages lists what is stuck, behind the admin token', () => {
  test('without an admin token configured it is off: 404 saying how to turn it on, never the list', async (t) => {
    const { clock, outbox } = await stocked();
    const api = await startApi(t, { clock, outbox });
    const res = await api.get('/messages');
    assert.equal(res.status, 404);
    assert.equal(res.json().reason, 'not_found');
    assert.match(res.json().message, /RELAYER_ADMIN_TOKEN/);
    assert.equal((await api.get('/messages', AUTH)).status, 404, 'any token: still off');
  });

  test('with a token: 401 without it or with a wrong one (WWW-Authenticate: Bearer), 200 with it', async (t) => {
    const { clock, outbox, ids } = await stocked();
    const api = await startApi(t, { clock, outbox, config: testConfig({ server: { adminToken: TOKEN } }) });
    const refused: Record<string, string>[] = [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: TOKEN }];
    for (const headers of refused) {
      const res = await api.get('/messages', headers);
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(res.json().reason, 'unauthorized');
      assert.equal(res.headers['www-authenticate'], 'Bearer');
    }
    const res = await api.get('/messages', AUTH);
    assert.equal(res.status, 200, res.text);
    const { messages } = res.json();
    assert.deepEqual(
      messages.map((m: { message_id: string }) => m.message_id),
      [ids[0], ids[1]],
      'not delivered, oldest first',
    );
    assert.equal(messages[0].status, 'failed');
    assert.equal(messages[0].last_error, 'recipient reverts');
    assert.equal(messages[1].status, 'queued');
    assert.equal(messages[1].attempts, 1);
    assert.deepEqual(messages[0], (await api.get(`/relay/${ids[0]}`)).json(), "GET /relay/{id}'s object");
  });

  test('status, destination (a chain name) and limit filter; bad values are 400 invalid_request naming the parameter', async (t) => {
    const { clock, outbox, ids } = await stocked();
    const api = await startApi(t, { clock, outbox, config: testConfig({ server: { adminToken: TOKEN } }) });
    const listed = async (query: string) =>
      (await api.get(`/messages?${query}`, AUTH)).json().messages.map((m: { message_id: string }) => m.message_id);
    assert.deepEqual(await listed('status=failed'), [ids[0]]);
    assert.deepEqual(await listed('status=delivered'), [ids[2]]);
    assert.deepEqual(await listed('destination=base'), [ids[1]]);
    assert.deepEqual(await listed('destination=ethereum&status=failed'), [ids[0]]);
    assert.deepEqual(await listed('status=delivering'), []);
    assert.deepEqual(await listed('limit=1'), [ids[0]]);
    for (const [query, named] of [
      ['status=stuck', /^status must be one of queued, delivering, delivered, failed$/],
      ['status=failed&status=queued', /^status is given more than once$/],
      ['destination=etherium', /^destination is not a chain known to this relayer/],
      ['limit=0', /^limit must be an integer from 1 to 1000$/],
      ['limit=1001', /^limit must be/],
      ['limit=ten', /^limit must be/],
    ] as const) {
      const res = await api.get(`/messages?${query}`, AUTH);
      assert.equal(res.status, 400, query);
      assert.equal(res.json().reason, 'invalid_request');
      assert.match(res.json().message, named, query);
    }
  });
});
