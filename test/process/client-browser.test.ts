/**
 * relayer-api/client's watch() and watchTx() in a real headless Chromium (test/helpers/harness/browser.ts),
 * on a page of another origin than the API (another port), as a bridge UI calls a public relayer:
 * the built client (dist/lib/client) is served by the page's own server and imported as an ES
 * module. Over the browser's EventSource the page sees every status as the stand-in worker makes it,
 * with no status lookup polled (CORS on the stream included); without EventSource, or when the
 * server refuses the stream, it polls and sees the same end.
 */
import assert from 'node:assert/strict';
import { createReadStream, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createMemoryOutbox, type MemoryOutbox } from '../../lib/outbox/index.ts';
import { launchBrowser, type Browser, type Page } from '../helpers/harness/browser.ts';
import { testConfig } from '../helpers/fixtures/config.ts';
import { outboxMessage } from '../../lib/testing/index.ts';
import { REPO_ROOT, startApi } from '../helpers/harness/server.ts';

const DEST_TX = '0x' + 'de'.repeat(32);
let browser: Browser;
let pageOrigin: string;

/** The UI's own origin: a page and the built client, nothing else. */
async function startPageServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end('<!doctype html><title>bridge UI</title><p>ui</p>');
    }
    const file = new URL(`../..${path}`, import.meta.url);
    if (!path.startsWith('/dist/lib/') || !path.endsWith('.js') || !existsSync(file)) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'text/javascript' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

let pages: Awaited<ReturnType<typeof startPageServer>> | undefined;
before(async () => {
  assert.ok(
    existsSync(new URL('dist/lib/client/watch.js', `file://${REPO_ROOT}/`)),
    'the client is built (npm run build)',
  );
  pages = await startPageServer();
  pageOrigin = pages.origin;
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await pages?.close();
});

/** The API on its own origin, allowing the page's; reads of the status lookup are counted. */
async function api(t: Parameters<typeof startApi>[0], server: object = {}) {
  const outbox = createMemoryOutbox();
  let lookups = 0;
  const counted: MemoryOutbox = { ...outbox, get: (id: string) => (lookups++, outbox.get(id)) };
  const started = await startApi(t, {
    config: testConfig({ server: { corsOrigins: [pageOrigin], ...server } }),
    outbox: counted,
  });
  return { ...started, outbox, lookups: () => lookups };
}

/** A page of the UI's origin with the client made for `apiUrl` as `window.client`. */
async function page(apiUrl: string, clientOptions = '{}'): Promise<Page> {
  const p = await browser.open(`${pageOrigin}/`);
  await p.evaluate(`import('/dist/lib/client/index.js').then((m) => {
    window.client = m.createRelayClient({ baseUrl: ${JSON.stringify(apiUrl)}, ...${clientOptions} });
  })`);
  return p;
}

/** Waits (bounded, 5 s) until `check` holds. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), what);
}

/** Waits (bounded, 20 s: EventSource waits about 3 s before it reconnects) until `check` holds. */
async function untilLong(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(await check(), what);
}

describe('relayer-api/client in a real browser, on another origin', () => {
  test('watch(id) over EventSource: every status as the worker makes it, the end after delivered, no lookup polled', async (t) => {
    const { url, outbox, api: relayApi, lookups } = await api(t);
    const m = outboxMessage(1);
    outbox.enqueue([m]);
    const p = await page(url);
    await p.evaluate(`window.seen = []; window.done = (async () => {
      for await (const s of client.watch(${JSON.stringify(m.id)})) seen.push(s.status + '/' + s.attempts + '/' + s.destination_tx_hash);
      return 'ended';
    })(); 1`);
    await until(() => relayApi.streams() === 1, 'the page opened a stream');
    await until(() => true, '');
    const seen = () => p.evaluate<string[]>('window.seen');
    for (let i = 0; i < 100 && (await seen()).length < 1; i++) await new Promise((r) => setTimeout(r, 10));
    const [claimed] = outbox.claim(1, 60_000);
    for (let i = 0; i < 100 && (await seen()).length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    outbox.markDelivered(m.id, { lease: claimed.lease, destinationTxHash: DEST_TX });
    assert.equal(await p.evaluate('window.done'), 'ended');
    assert.deepEqual(await seen(), ['queued/0/null', 'delivering/1/null', `delivered/1/${DEST_TX}`]);
    assert.equal(lookups(), 0, 'pushed, not polled');
  });

  test('watch(id) over EventSource: a top-up stored while the message waits is a state, gas_payment as message() has it', async (t) => {
    // docs/api.md#status-events: what a page waiting for a gas payment must learn.
    const { url, outbox, api: relayApi } = await api(t);
    const m = outboxMessage(7);
    outbox.enqueue([m]);
    const p = await page(url);
    await p.evaluate(`window.seen = []; window.done = (async () => {
      for await (const s of client.watch(${JSON.stringify(m.id)})) seen.push(s);
      return 'ended';
    })(); 1`);
    await until(() => relayApi.streams() === 1, 'the page opened a stream');
    const seen = () =>
      p.evaluate<{ status: string; gas_payment: { payments: number; gas_amount: string } }[]>('window.seen');
    for (let i = 0; i < 100 && (await seen()).length < 1; i++) await new Promise((r) => setTimeout(r, 10));
    const topUp = { messageId: m.id, destination: m.destination, gasAmount: 250_000n, payment: 1n, txHash: m.txHash };
    outbox.addGasPayments([{ ...topUp, logIndex: 1 }]);
    for (let i = 0; i < 100 && (await seen()).length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    const states = await seen();
    assert.deepEqual(
      states.map((s) => [s.status, s.gas_payment.payments, s.gas_payment.gas_amount]),
      [
        ['queued', 0, '0'],
        ['queued', 1, '250000'],
      ],
    );
    const looked = await p.evaluate(`client.message(${JSON.stringify(m.id)})`);
    assert.deepEqual(states[1], looked, 'the pushed state is what message() answers');
    const [claimed] = outbox.claim(1, 60_000);
    outbox.markDelivered(m.id, { lease: claimed.lease, destinationTxHash: DEST_TX });
    assert.equal(await p.evaluate('window.done'), 'ended');
  });

  test('watchTx over EventSource: the empty list, the messages once relayed, the end once all are delivered', async (t) => {
    const { url, outbox, api: relayApi } = await api(t);
    const hash = outboxMessage(2).txHash;
    const p = await page(url);
    await p.evaluate(`window.lists = []; window.done = (async () => {
      for await (const list of client.watchTx('ethereum', ${JSON.stringify(hash)})) lists.push(list.map((m) => m.status).join(','));
      return 'ended';
    })(); 1`);
    await until(() => relayApi.streams() === 1, 'the page opened a stream');
    for (let i = 0; i < 100 && (await p.evaluate<string[]>('window.lists')).length < 1; i++)
      await new Promise((r) => setTimeout(r, 10));
    const messages = [2, 3].map((n) => outboxMessage(n, undefined, { txHash: hash }));
    outbox.enqueue(messages);
    for (const c of outbox.claim(2, 60_000)) outbox.markDelivered(c.id, { lease: c.lease, destinationTxHash: DEST_TX });
    assert.equal(await p.evaluate('window.done'), 'ended');
    const lists = await p.evaluate<string[]>('window.lists');
    assert.equal(lists[0], '', 'nothing relayed yet');
    assert.equal(lists.at(-1), 'delivered,delivered');
  });

  test('watch(id) goes on across the end of a stream at server.streamMaxSeconds: EventSource resumes, each state once', async (t) => {
    // docs/api.md#status-events: the server ends every stream after its lifetime (900 s, on its fake clock).
    const { url, outbox, api: relayApi, lookups, clock } = await api(t);
    const m = outboxMessage(8);
    outbox.enqueue([m]);
    const p = await page(url);
    await p.evaluate(`window.seen = []; window.done = (async () => {
      for await (const s of client.watch(${JSON.stringify(m.id)})) seen.push(s.status + '/' + s.attempts);
      return 'ended';
    })(); 1`);
    await until(() => relayApi.streams() === 1, 'the page opened a stream');
    await untilLong(async () => (await p.evaluate<string[]>('window.seen')).length === 1, 'the first state');
    await clock.advance(900_000);
    await until(() => relayApi.streams() === 0, 'the server ended it at its lifetime');
    await untilLong(() => relayApi.streams() === 1, 'EventSource reconnected');
    const [claimed] = outbox.claim(1, 60_000);
    await untilLong(
      async () => (await p.evaluate<string[]>('window.seen')).length >= 2,
      'the change after the reconnection',
    );
    outbox.markDelivered(m.id, { lease: claimed.lease, destinationTxHash: DEST_TX });
    assert.equal(await p.evaluate('window.done'), 'ended');
    assert.deepEqual(await p.evaluate('window.seen'), ['queued/0', 'delivering/1', 'delivered/1']);
    assert.equal(lookups(), 0, 'pushed, not polled: the end of a stream is not a refusal');
  });

  test("watchTx: a transaction stream the server ends with no message (txStreamWaitSeconds) is the API's timeout", async (t) => {
    const { url, api: relayApi, clock } = await api(t);
    const p = await page(url);
    const result = p.evaluate<string>(`(async () => {
      const lists = [];
      try { for await (const list of client.watchTx('ethereum', ${JSON.stringify(outboxMessage(9).txHash)})) lists.push(list.length); }
      catch (e) { return e.code + ' ' + e.status + ' ' + lists.join(',') + ' ' + e.message; }
      return 'ended without an error';
    })()`);
    await until(() => relayApi.streams() === 1, 'the page opened a stream');
    await clock.advance(120_000);
    const bound = new Promise<string>((resolve) => setTimeout(() => resolve('no answer within 20 s'), 20_000).unref());
    assert.equal(
      await Promise.race([result, bound]),
      'timeout 408 0 no message of this transaction was accepted within 120 s; relay it (POST /relay), then watch it again',
    );
    assert.equal(relayApi.streams(), 0, 'no reconnection');
  });

  test('without EventSource the client polls, and sees the same end', async (t) => {
    const { url, outbox, lookups } = await api(t);
    const m = outboxMessage(4);
    outbox.enqueue([m]);
    const p = await page(url, '{}');
    await p.evaluate(`window.seen = []; window.done = (async () => {
      for await (const s of client.watch(${JSON.stringify(m.id)}, { EventSource: null, pollIntervalMs: 20 })) seen.push(s.status);
      return 'ended';
    })(); 1`);
    await until(() => lookups() >= 1, 'polled');
    const [claimed] = outbox.claim(1, 60_000);
    const polled = lookups();
    await until(() => lookups() >= polled + 2, 'polled again');
    outbox.markDelivered(m.id, { lease: claimed.lease, destinationTxHash: DEST_TX });
    assert.equal(await p.evaluate('window.done'), 'ended');
    assert.deepEqual(await p.evaluate('window.seen'), ['queued', 'delivering', 'delivered']);
  });

  test("a stream the server refuses falls back to polling; an unknown id is the API's not_found", async (t) => {
    // The server refuses because the client's streams are all taken.
    const { url, outbox, lookups } = await api(t, { maxSubscribersPerClient: 0 });
    const m = outboxMessage(5);
    outbox.enqueue([m]);
    const p = await page(url);
    const unknown = await p.evaluate<string>(`(async () => {
      try { for await (const s of client.watch(${JSON.stringify(outboxMessage(6).id)})) return 'got ' + s.status; }
      catch (e) { return e.code + ' ' + e.status; }
    })()`);
    assert.equal(unknown, 'not_found 404');
    await p.evaluate(`window.done = (async () => {
      let last; for await (const s of client.watch(${JSON.stringify(m.id)}, { pollIntervalMs: 20 })) last = s.status;
      return last;
    })(); 1`);
    await until(() => lookups() >= 2, 'polling after the refusal');
    const [claimed] = outbox.claim(1, 60_000);
    outbox.markDelivered(m.id, { lease: claimed.lease, destinationTxHash: DEST_TX });
    assert.equal(await p.evaluate('window.done'), 'delivered');
  });
});
