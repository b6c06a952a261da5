/**
 * The worker's hold on its signer leases (lib/worker/chain/signer-lease.ts, docs/transactions.md#one-worker-per-key)
 * on the in-memory outbox and a fake clock: who waits and what it logs, the takeover, a lease lost
 * to another worker, and the node client that refuses to broadcast without the lease.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { custom } from 'viem';
import type { LogLevel } from '../../../../lib/log.ts';
import { createMemoryOutbox } from '../../../../lib/outbox/index.ts';
import { fencedJournal, holdSigners, sendGuard } from '../../../../lib/worker/chain/signer-lease.ts';
import { createFakeClock, type FakeClock } from '../../../helpers/fakes/clock.ts';
import { outboxMessage } from '../../../../lib/testing/outbox-contract/context.ts';

const SIGNER = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const KEYS = [
  { name: 'base', chainId: 8453, signer: SIGNER },
  { name: 'ethereum', chainId: 1, signer: SIGNER },
];
const LEASE_MS = 9_000;

function logger() {
  const lines: { level: LogLevel; msg: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: LogLevel) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      lines.push({ level, msg, fields });
  return { lines, log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

function holds(outbox: ReturnType<typeof createMemoryOutbox>, clock: FakeClock, holder: string) {
  const l = logger();
  const lost: string[] = [];
  const h = holdSigners({
    store: outbox,
    keys: KEYS,
    holder,
    leaseMs: LEASE_MS,
    retryMs: 3_000,
    clock,
    logger: l.log,
    onLost: (why) => lost.push(why),
  });
  return { h, lines: l.lines, lost };
}

test('docs/transactions.md#one-worker-per-key: a second holder waits, says who holds the key, and takes over at the release', async () => {
  const clock = createFakeClock(1_700_000_000_000);
  const outbox = createMemoryOutbox({ clock });
  const a = holds(outbox, clock, 'worker-a');
  const b = holds(outbox, clock, 'worker-b');
  assert.equal(await a.h.acquire(new AbortController().signal), true);
  assert.deepEqual(
    a.lines.map((l) => [l.msg, l.fields.chain_id]),
    [
      ['signer lease taken', 1],
      ['signer lease taken', 8453],
    ],
    'in order of chain id',
  );
  const waiting = b.h.acquire(new AbortController().signal);
  await clock.flush();
  const said = b.lines.find((l) => l.msg === 'signer held by another worker; waiting');
  assert.equal(said?.level, 'warn');
  assert.deepEqual(said?.fields, {
    destination: 'ethereum',
    chain_id: 1,
    signer: SIGNER,
    holder: 'worker-a',
    expires_at: new Date(clock.now() + LEASE_MS).toISOString(),
  });
  // The holder renews a third of the way through, the waiting one keeps looking: nothing changes hands.
  for (let i = 0; i < 6; i++) await clock.advance(3_000);
  assert.equal(b.h.lease(1, SIGNER), undefined);
  assert.equal(b.lines.filter((l) => l.msg.startsWith('signer held')).length, 1, 'said once per holder');
  assert.ok(a.h.lease(1, SIGNER) && a.h.lease(8453, SIGNER));
  await a.h.release();
  assert.equal(a.h.lease(1, SIGNER), undefined);
  await clock.advance(3_000);
  assert.equal(await waiting, true);
  assert.deepEqual(
    b.lines.filter((l) => l.msg.startsWith('signer lease taken')).map((l) => [l.msg, l.fields.chain_id, l.fields.from]),
    [
      ['signer lease taken over', 1, 'worker-a'],
      ['signer lease taken', 8453, undefined],
    ],
  );
  assert.ok(b.h.lease(1, SIGNER) && b.h.lease(8453, SIGNER));
  await b.h.release();
});

test('docs/transactions.md#one-worker-per-key: a holder whose renewals fail past the lease loses it; its records are refused', async () => {
  const clock = createFakeClock(1_700_000_000_000);
  const outbox = createMemoryOutbox({ clock });
  let down = false;
  const flaky = {
    ...outbox,
    renewSignerLease: (...args: Parameters<typeof outbox.renewSignerLease>) => {
      if (down) throw new Error('store unavailable');
      return outbox.renewSignerLease(...args);
    },
  };
  const l = logger();
  const lost: string[] = [];
  const a = holdSigners({
    store: flaky,
    keys: KEYS.slice(0, 1),
    holder: 'worker-a',
    leaseMs: LEASE_MS,
    retryMs: 3_000,
    clock,
    logger: l.log,
    onLost: (why) => lost.push(why),
  });
  assert.equal(await a.acquire(new AbortController().signal), true);
  await outbox.enqueue([outboxMessage(1)]);
  const [m] = outbox.claim(1, 60_000);
  const journal = fencedJournal(outbox, a);
  const entry = (n: number) => ({
    messageId: m.id,
    chainId: 8453,
    signer: SIGNER,
    nonce: 0,
    hash: `0x${String(n).padStart(64, '0')}`,
    raw: '0x02f8',
  });
  assert.equal(await journal.recordBroadcast(entry(1), { lease: m.lease, leaseMs: 60_000 }), true);
  down = true;
  await clock.advance(3_000);
  await clock.advance(3_000);
  assert.ok(a.lease(8453, SIGNER), 'still within the lease');
  assert.deepEqual(lost, []);
  await clock.advance(3_000);
  assert.equal(a.lease(8453, SIGNER), undefined, 'not renewed within the lease: not held');
  assert.equal(lost.length, 1);
  assert.match(lost[0], /signer lease of 0x7099\w+ on base lost: not renewed within 9000 ms/);
  assert.equal(l.lines.find((x) => x.msg === 'signer lease lost; stopping')?.level, 'error');
  // Another worker takes the key; the old holder's journal records nothing.
  const b = outbox.acquireSignerLease({ chainId: 8453, signer: SIGNER }, 'worker-b', LEASE_MS);
  assert.equal(b.acquired, true);
  assert.equal(await journal.recordBroadcast({ ...entry(2), nonce: 1 }, { lease: m.lease, leaseMs: 60_000 }), false);
  assert.equal(outbox.recordBroadcast({ ...entry(2), nonce: 1 }, { lease: m.lease, leaseMs: 60_000 }), false);
  await a.release();
});

test('docs/transactions.md#one-worker-per-key: the client refuses eth_sendRawTransaction without the lease, passes it with', async () => {
  const asked: string[] = [];
  let held = false;
  const transport = sendGuard(
    custom({
      request: async ({ method }: { method: string }) => {
        asked.push(method);
        return '0x1';
      },
    }),
    () => held,
  );
  const t = transport({ retryCount: 0 });
  await assert.rejects(
    t.request({ method: 'eth_sendRawTransaction', params: ['0x02'] }),
    /does not hold the signer lease/,
  );
  assert.equal(await t.request({ method: 'eth_chainId' }), '0x1', 'reads go through');
  held = true;
  assert.equal(await t.request({ method: 'eth_sendRawTransaction', params: ['0x02'] }), '0x1');
  assert.deepEqual(asked, ['eth_chainId', 'eth_sendRawTransaction']);
});
