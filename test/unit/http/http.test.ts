/**
 * The HTTP API over real loopback sockets: every row of docs/api.md#errors,
 * docs/design.md#http-surface, #post-relay, #merkle-tree-insertions. Time is a fake clock;
 * receipts come from an in-process JSON-RPC fake; the outbox is the in-memory one and the merkle
 * store is SQLite on disk: one store for the file, emptied for each test
 * (test/helpers/harness/shared-sqlite.ts says why that is safe).
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import type { SqliteStore } from '../../../lib/sqlite/index.ts';
import type { Outbox } from '../../../lib/outbox/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock, type FakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import {
  dispatchLog,
  MAILBOX,
  messageId,
  hyperlaneMessage,
  messageSentLog,
  rpcReceipt,
  transferLogs,
  txHash,
} from '../../helpers/fixtures/builders.ts';
import { httpRequest, postJson, type RawResponse } from '../../helpers/harness/http.ts';
import { startApi, type StartedApi } from '../../helpers/harness/server.ts';
import { sharedSqlite } from '../../helpers/harness/shared-sqlite.ts';

const shared = sharedSqlite('http');

interface Harness extends StartedApi<FakeClock> {
  table: ReceiptTable;
  outbox: Outbox;
  store: SqliteStore;
}

async function start(t: TestContext, configOverrides: Parameters<typeof testConfig>[0] = {}): Promise<Harness> {
  const clock = createFakeClock();
  const table: ReceiptTable = new Map();
  const outbox = createMemoryOutbox({ clock });
  const { store, release } = await shared.lease(clock);
  const { fetch } = fakeRpcFetch(table);
  const api = await startApi(t, { config: testConfig(configOverrides), outbox, merkle: store.merkle, clock, fetch });
  // After the server's own close (hooks run in the order they were added).
  t.after(release);
  return { ...api, table, outbox, store };
}

function withTransfers(h: Harness, n: number, count = 1, fields = {}): string {
  const hash = txHash(n);
  h.table.set(hash, rpcReceipt(hash, transferLogs(count, fields)));
  return hash;
}

function assertError(res: RawResponse, status: number, reason: string): void {
  assert.equal(res.status, status, res.text);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json();
  assert.equal(body.reason, reason);
  assert.equal(typeof body.message, 'string');
  assert.ok(body.message.length > 0);
  assert.deepEqual(Object.keys(body).sort(), ['message', 'reason']);
  if (status === 408 || status === 429 || status === 503) {
    assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/, `Retry-After on ${status}`);
  }
}

describe('GET /relay', () => {
  test('docs/api.md#get-relay-get-ready: liveness probe answers 200 text/plain "up"', async (t) => {
    const h = await start(t);
    const res = await httpRequest(h.url, { path: '/relay' });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.equal(res.text, 'up');
  });
});

describe('POST /relay success', () => {
  test('docs/api.md#post-relay: an eligible transfer is enqueued and listed with id, origin, destination, nonce', async (t) => {
    const h = await start(t);
    const hash = withTransfers(h, 1, 1, { nonce: 7, destination: 8453 });
    const res = await h.relay({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(res.status, 200, res.text);
    const id = messageId(hyperlaneMessage({ nonce: 7, destination: 8453 }));
    assert.deepEqual(res.json(), { messages: [{ message_id: id, origin: 1, destination: 8453, nonce: 7 }] });
    const stored = await h.outbox.get(id);
    assert.ok(stored, 'message is in the outbox');
    assert.equal(stored.txHash, hash);
    assert.equal(stored.originChain, 'ethereum');
  });

  test('docs/api.md#post-relay: several transfers in one transaction keep their order', async (t) => {
    const h = await start(t);
    const hash = withTransfers(h, 2, 3, { nonce: 10 });
    const res = await h.relay({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.json().messages.map((m: { nonce: number }) => m.nonce),
      [10, 11, 12],
    );
  });

  test('docs/design.md#extraction-and-eligibility, docs/api.md#post-relay: counts that differ are not eligible', async (t) => {
    // 200 with an empty list, nothing enqueued.
    const h = await start(t);
    const hash = txHash(3);
    h.table.set(hash, rpcReceipt(hash, [...transferLogs(2), messageSentLog()]));
    const res = await h.relay({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), { messages: [] });
    assert.equal(await h.outbox.depth(), 0);
  });

  test('docs/design.md#extraction-and-eligibility: Dispatch without MessageSent is not eligible', async (t) => {
    const h = await start(t);
    const hash = txHash(4);
    h.table.set(hash, rpcReceipt(hash, [dispatchLog(MAILBOX)]));
    const res = await h.relay({ origin_chain: 'ethereum', tx_hash: hash });
    assert.deepEqual([res.status, res.json()], [200, { messages: [] }]);
  });

  test('docs/design.md#extraction-and-eligibility: a reverted receipt has no messages', async (t) => {
    const h = await start(t);
    const hash = txHash(5);
    h.table.set(hash, rpcReceipt(hash, transferLogs(1), '0x0'));
    const res = await h.relay({ origin_chain: 'ethereum', tx_hash: hash });
    assert.deepEqual([res.status, res.json()], [200, { messages: [] }]);
  });

  test('docs/design.md#check-order: Content-Type with parameters (charset=utf-8) is accepted', async (t) => {
    const h = await start(t);
    const hash = withTransfers(h, 6);
    const res = await h.relay(
      { origin_chain: 'ethereum', tx_hash: hash },
      { 'content-type': 'application/json; charset=utf-8' },
    );
    assert.equal(res.status, 200);
  });
});

describe('POST /relay errors (docs/api.md#errors)', () => {
  test('docs/design.md#check-order invalid_request: empty, oversize, unknown chain, bad hash, malformed JSON, wrong types', async (t) => {
    const h = await start(t);
    const good = txHash(1);
    const cases: Array<[string, unknown]> = [
      ['empty origin_chain', { origin_chain: '', tx_hash: good }],
      ['empty tx_hash', { origin_chain: 'ethereum', tx_hash: '' }],
      ['origin_chain over 128 bytes', { origin_chain: 'e'.repeat(129), tx_hash: good }],
      ['multi-byte origin_chain over 128 bytes', { origin_chain: 'é'.repeat(65), tx_hash: good }],
      ['tx_hash too long', { origin_chain: 'ethereum', tx_hash: good + '00' }],
      ['tx_hash too short', { origin_chain: 'ethereum', tx_hash: good.slice(0, 65) }],
      ['tx_hash not hex', { origin_chain: 'ethereum', tx_hash: '0x' + 'g'.repeat(64) }],
      ['tx_hash without 0x', { origin_chain: 'ethereum', tx_hash: '00' + good.slice(2) }],
      ['unknown chain', { origin_chain: 'notachain', tx_hash: good }],
      ['prototype key as chain', { origin_chain: '__proto__', tx_hash: good }],
      ['constructor as chain', { origin_chain: 'constructor', tx_hash: good }],
      ['missing origin_chain', { tx_hash: good }],
      ['missing tx_hash', { origin_chain: 'ethereum' }],
      ['number origin_chain', { origin_chain: 1, tx_hash: good }],
      ['array tx_hash', { origin_chain: 'ethereum', tx_hash: [good] }],
      ['array body', [{ origin_chain: 'ethereum', tx_hash: good }]],
      ['null body', null],
      ['string body', 'ethereum'],
      ['malformed JSON', '{"origin_chain": "ethereum",'],
      ['empty body', ''],
    ];
    for (const [name, body] of cases) {
      const text = typeof body === 'string' && name !== 'string body' ? body : JSON.stringify(body);
      const res = await h.relay(text);
      assert.equal(res.status, 400, `${name}: ${res.text}`);
      assertError(res, 400, 'invalid_request');
    }
  });

  test('docs/design.md#policy message_not_whitelisted: a message outside a non-empty whitelist rejects the request', async (t) => {
    const h = await start(t, { whitelist: [{ destinationDomain: 10 }] });
    const res = await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 1) });
    assertError(res, 400, 'message_not_whitelisted');
    assert.equal(await h.outbox.depth(), 0);
  });

  test('docs/design.md#policy message_blacklisted: blacklist rule and address blacklist', async (t) => {
    const h = await start(t, {
      blacklist: [{ senderAddress: '0x9999999999999999999999999999999999999999' }],
      addressBlacklist: ['0x8888888888888888888888888888888888888888'],
    });
    const bySender = withTransfers(h, 1, 1, { sender: '0x9999999999999999999999999999999999999999' });
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: bySender }), 400, 'message_blacklisted');
    const byRecipient = withTransfers(h, 2, 1, { recipient: '0x8888888888888888888888888888888888888888' });
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: byRecipient }), 400, 'message_blacklisted');
    assert.equal(await h.outbox.depth(), 0);
  });

  test('docs/design.md#policy unsupported_destination: destination not among relayChains; nothing of the batch is enqueued', async (t) => {
    const h = await start(t, { relayChains: ['base'] });
    const hash = txHash(9);
    // first message to base (fine), second to domain 10 (not configured): the whole request fails
    h.table.set(
      hash,
      rpcReceipt(hash, [...transferLogs(1, { destination: 8453 }), ...transferLogs(1, { destination: 10, nonce: 1 })]),
    );
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: hash }), 400, 'unsupported_destination');
    assert.equal(await h.outbox.depth(), 0);
  });

  test('docs/design.md#extraction-and-eligibility too_many_messages: 11 messages are refused, 10 accepted', async (t) => {
    const h = await start(t);
    assertError(
      await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 1, 11) }),
      400,
      'too_many_messages',
    );
    const ten = await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 2, 10, { nonce: 100 }) });
    assert.equal(ten.status, 200);
    assert.equal(ten.json().messages.length, 10);
  });

  test('docs/design.md#receipt timeout: no receipt within 10 s is 408 with Retry-After, and the pair can be retried at once', async (t) => {
    const h = await start(t);
    const hash = txHash(77);
    const pending = h.relay({ origin_chain: 'ethereum', tx_hash: hash });
    await h.clock.advance(9_000);
    let settled = false;
    void pending.then(() => (settled = true));
    await h.clock.flush();
    assert.equal(settled, false, 'still waiting before 10 s');
    await h.clock.advance(1_500);
    assertError(await pending, 408, 'timeout');
    // mined now: the retry is processed, not duplicate_tx
    h.table.set(hash, rpcReceipt(hash, transferLogs(1)));
    const retry = await h.relay({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(retry.status, 200, retry.text);
  });

  test('docs/design.md#rate-limit rate_limited: the global bucket refuses past its burst, with Retry-After, and refills', async (t) => {
    const h = await start(t, { relayApi: { rateLimit: { burst: 2, perMinute: 60 } } });
    assert.equal((await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 1) })).status, 200);
    assert.equal((await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 2) })).status, 200);
    const limited = await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 3) });
    assertError(limited, 429, 'rate_limited');
    // checked before validation: even an invalid body is rate_limited
    assertError(await h.relay('not json'), 429, 'rate_limited');
    await h.clock.advance(1_000);
    assert.equal((await h.relay({ origin_chain: 'ethereum', tx_hash: txHash(3) })).status, 200);
  });

  test('docs/design.md#deduplication duplicate_tx: the same pair within 5 minutes is 429 until the window ends', async (t) => {
    // The case of tx_hash does not matter.
    const h = await start(t);
    const hash = withTransfers(h, 1);
    assert.equal((await h.relay({ origin_chain: 'ethereum', tx_hash: hash })).status, 200);
    const dup = await h.relay({ origin_chain: 'ethereum', tx_hash: hash.toUpperCase().replace('0X', '0x') });
    assertError(dup, 429, 'duplicate_tx');
    assert.ok(Number(dup.headers['retry-after']) <= 300 && Number(dup.headers['retry-after']) >= 299);
    await h.clock.advance(299_000);
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: hash }), 429, 'duplicate_tx');
    await h.clock.advance(1_001);
    const again = await h.relay({ origin_chain: 'ethereum', tx_hash: hash });
    assert.equal(again.status, 200, 'docs/design.md#deduplication: after 5 minutes the pair may be submitted again');
    assert.equal(
      again.json().messages.length,
      1,
      'docs/design.md#enqueue: a resubmission lists the same messages again',
    );
    assert.equal(await h.outbox.depth(), 1, 'docs/design.md#enqueue: and stores nothing twice');
  });

  test('docs/design.md#deduplication: the dedup key is per (origin_chain, tx_hash)', async (t) => {
    // The same hash on another chain is not a duplicate.
    const h = await start(t);
    const hash = withTransfers(h, 1);
    assert.equal((await h.relay({ origin_chain: 'ethereum', tx_hash: hash })).status, 200);
    const other = await h.relay({ origin_chain: 'base', tx_hash: hash });
    assert.notEqual(other.json().reason, 'duplicate_tx');
  });

  test('docs/design.md#deduplication: failed requests release their reservation (400 policy, 400 too_many, 500)', async (t) => {
    const h = await start(t, { relayChains: ['base'] });
    const hash = withTransfers(h, 1, 1, { destination: 10 });
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: hash }), 400, 'unsupported_destination');
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: hash }), 400, 'unsupported_destination');
    const many = withTransfers(h, 2, 11);
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: many }), 400, 'too_many_messages');
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: many }), 400, 'too_many_messages');
  });

  test('docs/design.md#deduplication cache_full: a dedup cache full of live entries answers 503 with Retry-After', async (t) => {
    const h = await start(t, { relayApi: { dedupCapacity: 2 } });
    assert.equal((await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 1) })).status, 200);
    assert.equal((await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 2) })).status, 200);
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 3) }), 503, 'cache_full');
    await h.clock.advance(300_001);
    assert.equal(
      (await h.relay({ origin_chain: 'ethereum', tx_hash: txHash(3) })).status,
      200,
      'expired entries make room',
    );
  });

  test('docs/design.md#extraction-and-eligibility: a malformed Dispatch log from the Mailbox (a lying RPC) is 500, not a crash', async (t) => {
    const h = await start(t);
    const hash = txHash(1);
    const bad = dispatchLog(MAILBOX);
    bad.data = bad.data.slice(0, -2) + '01'; // non-zero padding
    h.table.set(hash, rpcReceipt(hash, [messageSentLog(), bad]));
    assertError(await h.relay({ origin_chain: 'ethereum', tx_hash: hash }), 500, 'internal_error');
  });
});

describe('HTTP surface (docs/design.md#http-surface)', () => {
  test('docs/design.md#http-surface: unknown path is 404 not_found (JSON)', async (t) => {
    const h = await start(t);
    for (const path of ['/', '/relay/', '/igp_rules', '/RELAY', '/relay/../metrics2']) {
      assertError(await httpRequest(h.url, { path }), 404, 'not_found');
    }
  });

  test('docs/design.md#http-surface: wrong method is 405 method_not_allowed with Allow', async (t) => {
    const h = await start(t);
    for (const [method, path] of [
      ['PUT', '/relay'],
      ['DELETE', '/relay'],
      ['PATCH', '/merkle_tree_insertions'],
      ['POST', '/metrics'],
    ]) {
      const res = await httpRequest(h.url, { method, path });
      assertError(res, 405, 'method_not_allowed');
      assert.ok(String(res.headers.allow).includes('GET'), `${method} ${path} Allow`);
    }
  });

  test('docs/design.md#check-order: a POST without Content-Type application/json is 415 unsupported_media_type', async (t) => {
    const h = await start(t);
    const body = JSON.stringify({ origin_chain: 'ethereum', tx_hash: txHash(1) });
    for (const type of [
      undefined,
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/jsonx',
      'application/json-patch+json',
    ]) {
      const headers: Record<string, string> = type ? { 'content-type': type } : {};
      assertError(
        await httpRequest(h.url, { method: 'POST', path: '/relay', body, headers }),
        415,
        'unsupported_media_type',
      );
      assertError(
        await httpRequest(h.url, { method: 'POST', path: '/merkle_tree_insertions', body, headers }),
        415,
        'unsupported_media_type',
      );
    }
  });

  test('docs/design.md#merkle-tree-insertions: bodies over the limit are 413 payload_too_large (declared and streamed)', async (t) => {
    const h = await start(t, { server: { maxRelayBodyBytes: 1024, maxMerkleBodyBytes: 2048 } });
    const big = JSON.stringify({ origin_chain: 'ethereum', tx_hash: txHash(1), pad: 'x'.repeat(2000) });
    assertError(await postJson(h.url, '/relay', big), 413, 'payload_too_large');
    assertError(await postJson(h.url, '/merkle_tree_insertions', big + ' '.repeat(2000)), 413, 'payload_too_large');
    // chunked, no Content-Length: refused once it grows past the limit
    const chunked = await httpRequest(h.url, {
      method: 'POST',
      path: '/relay',
      body: big,
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    assertError(chunked, 413, 'payload_too_large');
    // under the limit still works
    const ok = await h.relay({ origin_chain: 'ethereum', tx_hash: withTransfers(h, 1) });
    assert.equal(ok.status, 200);
  });

  test('docs/design.md#check-order: invalid UTF-8 in a body is invalid_request', async (t) => {
    const h = await start(t);
    const body = Buffer.concat([
      Buffer.from('{"origin_chain":"eth'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('","tx_hash":"0x00"}'),
    ]);
    assertError(
      await httpRequest(h.url, {
        method: 'POST',
        path: '/relay',
        body,
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    );
  });
});

describe('POST /merkle_tree_insertions (docs/design.md#merkle-tree-insertions)', () => {
  const id = (n: number) => '0x' + n.toString(16).padStart(64, 'a');
  const record = (leaf: number, chain = 1, block = 100) => ({
    chain,
    insertion_block_number: block,
    leaf_index: leaf,
    message_id: id(leaf),
  });

  test('docs/api.md#post-merkle_tree_insertions: records are stored; count is the number written', async (t) => {
    // Listing returns them in leaf order.
    const h = await start(t);
    const res = await postJson(h.url, '/merkle_tree_insertions', {
      merkle_tree_insertions: [record(2), record(0), record(1)],
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json(), { count: 3, skipped: [] });
    const list = await httpRequest(h.url, {
      path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=1',
    });
    assert.equal(list.status, 200);
    assert.deepEqual(list.json(), { merkle_tree_insertions: [record(0), record(1)] });
  });

  test('docs/design.md#merkle-tree-insertions: records of chains not configured are not written and echoed in skipped as sent', async (t) => {
    const h = await start(t);
    const foreign = { ...record(5, 424242), extra: 'kept as sent' };
    const res = await postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: [record(1), foreign] });
    assert.deepEqual(res.json(), { count: 1, skipped: [foreign] });
    const list = await httpRequest(h.url, {
      path: '/merkle_tree_insertions?domain_id=424242&leaf_index_start=0&leaf_index_end=10',
    });
    assert.deepEqual(list.json(), { merkle_tree_insertions: [] });
  });

  test('docs/design.md#merkle-tree-insertions: a repeated (chain, leaf_index) replaces the stored row', async (t) => {
    const h = await start(t);
    await postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: [record(3, 1, 100)] });
    await postJson(h.url, '/merkle_tree_insertions', {
      merkle_tree_insertions: [{ ...record(3, 1, 200), message_id: id(99) }],
    });
    const list = await httpRequest(h.url, {
      path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=3&leaf_index_end=3',
    });
    assert.deepEqual(list.json().merkle_tree_insertions, [{ ...record(3, 1, 200), message_id: id(99) }]);
  });

  test('docs/design.md#merkle-tree-insertions: any invalid record is 400 naming its index and field, and nothing is written', async (t) => {
    const h = await start(t);
    const cases: Array<[string, unknown, RegExp]> = [
      ['chain negative', { ...record(1), chain: -1 }, /\[1\]\.chain/],
      ['chain over uint32', { ...record(1), chain: 2 ** 32 }, /\[1\]\.chain/],
      ['chain string', { ...record(1), chain: '1' }, /\[1\]\.chain/],
      ['leaf fraction', { ...record(1), leaf_index: 1.5 }, /\[1\]\.leaf_index/],
      ['block over 2^53-1', { ...record(1), insertion_block_number: 2 ** 53 }, /\[1\]\.insertion_block_number/],
      ['block hex string', { ...record(1), insertion_block_number: '0x10' }, /\[1\]\.insertion_block_number/],
      ['message_id short', { ...record(1), message_id: '0x1234' }, /\[1\]\.message_id/],
      ['message_id missing', { chain: 1, insertion_block_number: 1, leaf_index: 1 }, /\[1\]\.message_id/],
      ['record not an object', 7, /\[1\]/],
    ];
    for (const [name, bad, field] of cases) {
      const res = await postJson(h.url, '/merkle_tree_insertions', { merkle_tree_insertions: [record(0), bad] });
      assertError(res, 400, 'invalid_request');
      assert.match(res.json().message, field, name);
    }
    for (const body of [{}, { merkle_tree_insertions: [] }, { merkle_tree_insertions: {} }, [], 'x']) {
      assertError(await postJson(h.url, '/merkle_tree_insertions', JSON.stringify(body)), 400, 'invalid_request');
    }
    assertError(
      await postJson(h.url, '/merkle_tree_insertions', '{"merkle_tree_insertions":['),
      400,
      'invalid_request',
    );
    assert.equal(await h.store.merkleRowCount(), 0, 'nothing written by any failed request');
  });

  test('docs/design.md#merkle-tree-insertions: listing needs domain_id and a leaf range of at most 10 000 leaves', async (t) => {
    // leaf_index_start <= leaf_index_end.
    const h = await start(t);
    for (const query of [
      '',
      '?domain_id=1&leaf_index_start=0',
      '?domain_id=1&leaf_index_start=5&leaf_index_end=4',
      '?domain_id=1&leaf_index_start=0&leaf_index_end=10000',
      '?domain_id=x&leaf_index_start=0&leaf_index_end=1',
      '?domain_id=-1&leaf_index_start=0&leaf_index_end=1',
      '?domain_id=1&domain_id=2&leaf_index_start=0&leaf_index_end=1',
    ]) {
      assertError(await httpRequest(h.url, { path: '/merkle_tree_insertions' + query }), 400, 'invalid_request');
    }
    const max = await httpRequest(h.url, {
      path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=9999',
    });
    assert.equal(max.status, 200);
  });

  test('docs/design.md#merkle-tree-insertions: with an admin token both merkle endpoints require Authorization: Bearer', async (t) => {
    const token = 'correct-horse-battery-staple';
    const h = await start(t, { server: { adminToken: token } });
    const body = { merkle_tree_insertions: [record(1)] };
    for (const auth of [
      undefined,
      'Bearer wrong',
      `bearer ${token}x`,
      `Basic ${token}`,
      `Bearer ${token}x`,
      `Bearer ${token.slice(0, -1)}`,
    ]) {
      const headers: Record<string, string> = auth ? { authorization: auth } : {};
      const res = await postJson(h.url, '/merkle_tree_insertions', body, headers);
      assertError(res, 401, 'unauthorized');
      assert.equal(res.headers['www-authenticate'], 'Bearer');
      assertError(
        await httpRequest(h.url, {
          path: '/merkle_tree_insertions?domain_id=1&leaf_index_start=0&leaf_index_end=1',
          headers,
        }),
        401,
        'unauthorized',
      );
    }
    assert.equal(await h.store.merkleRowCount(), 0);
    const ok = await postJson(h.url, '/merkle_tree_insertions', body, { authorization: `Bearer ${token}` });
    assert.equal(ok.status, 200);
    // RFC 9110 §11.1: the scheme is case-insensitive; the token is not.
    for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
      const again = await postJson(h.url, '/merkle_tree_insertions', body, { authorization: `${scheme} ${token}` });
      assert.equal(again.status, 200, scheme);
    }
    // the relay endpoints stay open
    assert.equal((await httpRequest(h.url, { path: '/relay' })).status, 200);
  });
});
