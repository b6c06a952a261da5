/**
 * docs/browser.md's example ("For bridge UIs") runs as written: the block after the
 * `browser-example` marker is taken from docs/browser.md, its three constants are pointed at a real
 * server on loopback, and it runs with the global fetch. Only `setTimeout` and `console` are
 * handed in: each of its waits moves the server's fake clock by the same time and lets a
 * stand-in delivery worker take one step, so the example sees queued → delivering → delivered.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { createFakeClock } from '../../helpers/fakes/clock.ts';
import { fakeRpcFetch, type ReceiptTable } from '../../helpers/fakes/rpc.ts';
import { hyperlaneMessage, messageId, rpcReceipt, transferLogs, txHash } from '../../helpers/fixtures/builders.ts';
import { startApi } from '../../helpers/harness/server.ts';

const DEST_TX = '0x' + 'de'.repeat(32);

function browserExample(): string {
  const page = readFileSync(new URL('../../../docs/browser.md', import.meta.url), 'utf8');
  const match = /<!-- browser-example[^>]*-->\n```js\n([\s\S]*?)```/.exec(page);
  assert.ok(match, 'docs/browser.md has the browser example block');
  return match[1];
}

function withConstants(code: string, relayer: string, chain: string, tx: string): string {
  const replaced = code
    .replace(/^const RELAYER = .*$/m, `const RELAYER = ${JSON.stringify(relayer)};`)
    .replace(/^const ORIGIN_CHAIN = .*$/m, `const ORIGIN_CHAIN = ${JSON.stringify(chain)};`)
    .replace(/^const TX_HASH = .*$/m, `const TX_HASH = ${JSON.stringify(tx)};`);
  assert.equal(replaced.split('\n').length, code.split('\n').length);
  assert.notEqual(replaced, code);
  return replaced;
}

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
  ...args: string[]
) => (...values: unknown[]) => Promise<void>;

test('docs/browser.md: the browser example relays a transaction and follows its messages to delivered', async (t) => {
  // Also when rate limited and when resubmitted.
  const clock = createFakeClock();
  const outbox = createMemoryOutbox({ clock });
  const table: ReceiptTable = new Map();
  const config = testConfig({ relayApi: { rateLimit: { burst: 1, perMinute: 60 } } });
  const { url } = await startApi(t, { config, outbox, clock, fetch: fakeRpcFetch(table).fetch });
  const hash = txHash(1);
  table.set(hash, rpcReceipt(hash, transferLogs(2, { nonce: 30 })));
  const ids = [30, 31].map((nonce) => messageId(hyperlaneMessage({ nonce, origin: 1, destination: 8453 })));

  const lines: string[] = [];
  const waits: number[] = [];
  // The stand-in worker: at each wait of the example, the oldest message moves one step.
  const leases = new Map<string, string>();
  const step = async () => {
    const [claimed] = await outbox.claim(1, 60_000);
    if (claimed) return void leases.set(claimed.id, claimed.lease);
    for (const id of ids) {
      if ((await outbox.get(id))?.status === 'delivering')
        return void (await outbox.markDelivered(id, { destinationTxHash: DEST_TX, lease: leases.get(id)! }));
    }
  };
  const fakeSetTimeout = (fn: () => void, ms: number) => {
    waits.push(ms);
    void clock.advance(ms).then(step).then(fn);
  };
  const run = (tx: string) =>
    new AsyncFunction('setTimeout', 'console', withConstants(browserExample(), url, 'ethereum', tx))(fakeSetTimeout, {
      log: (...args: unknown[]) => lines.push(args.join(' ')),
    });

  // Spend the only token, so the example's POST is answered 429 first and must wait.
  const other = txHash(2);
  table.set(other, rpcReceipt(other, transferLogs(1, { nonce: 99 })));
  await fetch(`${url}/relay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin_chain: 'ethereum', tx_hash: other }),
  });

  await run(hash);
  assert.ok(waits[0] >= 1_000, `waited the 429's Retry-After first (${waits[0]} ms)`);
  assert.ok(
    waits.slice(1).every((ms) => ms === 3_000),
    'then polled every 3 s',
  );
  assert.deepEqual(
    lines.filter((l) => / (delivered|failed) /.test(l)),
    ids.map((id) => `${id} delivered ${DEST_TX}`),
  );
  assert.ok(
    lines.some((l) => l.startsWith(`${ids[0]} delivering attempts: 1`)),
    lines.join('\n'),
  );

  // The same transaction again: duplicate_tx, answered from the lookup.
  lines.length = 0;
  await clock.advance(60_000); // a fresh token
  await run(hash.toUpperCase().replace('0X', '0x'));
  assert.deepEqual(
    lines,
    ids.map((id) => `${id} delivered ${DEST_TX}`),
  );

  // A transaction the relayer refuses: the example throws the API's error.
  await assert.rejects(
    run('0x1234'),
    (e: Error & { status?: number; reason?: string }) => e.status === 400 && e.reason === 'invalid_request',
  );
});
