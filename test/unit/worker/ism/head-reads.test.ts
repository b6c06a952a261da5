/**
 * The recipient's ISM and module types read once per head (lib/worker/ism/head-reads.ts,
 * docs/delivery.md#throughput): shared by the messages that start together and reused at the same
 * head for ISM_FRESH_MS, read again at a new head, after that time, or when no head is known; a
 * failed read is not kept. Through a destination (lib/worker/chain/destination.ts): its prefetch beside
 * delivered(id) and its metadata build share the reads, and an ISM changed at a new head is seen.
 * The node is a scripted JSON-RPC transport; the clock is injected.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createPublicClient,
  custom,
  decodeFunctionData,
  encodeAbiParameters,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { createMailboxDestination } from '../../../../lib/worker/chain/destination.ts';
import { ISM_ABI, MAILBOX_ABI } from '../../../../lib/worker/ism/abi.ts';
import { createIsmReads, ISM_FRESH_MS } from '../../../../lib/worker/ism/head-reads.ts';
import { headsOf } from '../../../../lib/worker/tx/heads.ts';
import type { TransactionSender } from '../../../../lib/worker/tx/sender.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';
import { hyperlaneMessage } from '../../../helpers/fixtures/builders.ts';

const MAILBOX = `0x${'aa'.repeat(20)}` as Address;
const RECIPIENT = `0x${'bb'.repeat(20)}` as Address;
const ISM_A = `0x${'a1'.repeat(20)}` as Address;
const ISM_B = `0x${'b2'.repeat(20)}` as Address;

/** A node whose readContract counts reads by function and can be told to fail the next one. */
function node() {
  const n = { reads: [] as string[], fail: false, ism: ISM_A, client: undefined as unknown as PublicClient };
  n.client = {
    async readContract({ functionName }: { functionName: string }) {
      n.reads.push(functionName);
      if (n.fail) {
        n.fail = false;
        throw new Error('socket hang up');
      }
      return functionName === 'recipientIsm' ? n.ism : 6;
    },
  } as unknown as PublicClient;
  return n;
}

describe('ISM reads per head (docs/delivery.md#throughput)', () => {
  test('shared at one head within ISM_FRESH_MS; read again at a new head, once stale, or with no head known', async () => {
    const clock = createFakeClock(0);
    const n = node();
    let head: bigint | undefined = 10n;
    const reads = createIsmReads({
      publicClient: n.client,
      mailbox: MAILBOX,
      head: () => head,
      now: () => clock.now(),
    });
    const together = await Promise.all(Array.from({ length: 5 }, () => reads.recipientIsm(RECIPIENT)));
    assert.deepEqual(new Set(together), new Set([ISM_A]));
    assert.deepEqual(n.reads, ['recipientIsm'], 'five messages to one recipient, one read');
    await clock.advance(ISM_FRESH_MS - 1);
    await reads.recipientIsm(RECIPIENT.toUpperCase().replace('0X', '0x') as Address);
    assert.equal(n.reads.length, 1, 'still fresh at the same head, whatever the case of the address');
    await reads.moduleType(ISM_A);
    await reads.moduleType(ISM_A);
    assert.deepEqual(n.reads, ['recipientIsm', 'moduleType'], 'module types are shared too');
    head = 11n;
    await reads.recipientIsm(RECIPIENT);
    assert.equal(n.reads.length, 3, 'a new head reads again');
    await clock.advance(ISM_FRESH_MS);
    await reads.recipientIsm(RECIPIENT);
    assert.equal(n.reads.length, 4, 'read again once stale at the same head');
    await reads.recipientIsm(`0x${'cc'.repeat(20)}`);
    assert.equal(n.reads.length, 5, 'another recipient is its own read');
    head = undefined;
    await reads.recipientIsm(RECIPIENT);
    await reads.recipientIsm(RECIPIENT);
    assert.equal(n.reads.length, 7, 'no head known: a finished read is not reused');
    await Promise.all([reads.recipientIsm(RECIPIENT), reads.recipientIsm(RECIPIENT)]);
    assert.equal(n.reads.length, 8, 'no head known: concurrent reads still share one');
  });

  test('a failed read is not kept: the next caller reads again', async () => {
    const clock = createFakeClock(0);
    const n = node();
    const reads = createIsmReads({ publicClient: n.client, mailbox: MAILBOX, head: () => 10n, now: () => clock.now() });
    n.fail = true;
    await assert.rejects(reads.moduleType(ISM_A), /socket hang up/);
    assert.equal(await reads.moduleType(ISM_A), 6);
    assert.equal(n.reads.length, 2);
  });

  test("a destination's prefetch and metadata build share one read each; an ISM changed at a new head is seen", async () => {
    const clock = createFakeClock(0);
    let head = 10;
    let ism = ISM_A;
    const calls: string[] = [];
    const publicClient = createPublicClient({
      transport: custom({
        async request({ method, params }: { method: string; params: [{ to: Address; data: Hex }] }) {
          if (method === 'eth_blockNumber') return `0x${head.toString(16)}`;
          if (method !== 'eth_call') throw new Error(`unexpected ${method}`);
          const { to, data } = params[0];
          if (to.toLowerCase() === MAILBOX) {
            const { functionName } = decodeFunctionData({ abi: MAILBOX_ABI, data });
            calls.push(functionName);
            return encodeAbiParameters([{ type: 'address' }], [ism]);
          }
          const { functionName } = decodeFunctionData({ abi: ISM_ABI, data });
          calls.push(`${functionName}@${to.toLowerCase() === ISM_A ? 'A' : 'B'}`);
          // ISM A is NULL (6); ISM B is of a type the worker does not build (3).
          return encodeAbiParameters([{ type: 'uint8' }], [to.toLowerCase() === ISM_A ? 6 : 3]);
        },
      }),
    });
    // The sender's head watcher has read block 10 (sends are waiting: the steady state).
    const primed = headsOf(publicClient, clock).after(undefined, 1_000);
    await clock.advance(0);
    await primed;
    const destination = createMailboxDestination({
      name: 'anvil2',
      domain: 2,
      mailbox: MAILBOX,
      publicClient,
      sender: {} as TransactionSender,
      clock,
    });
    const message = hyperlaneMessage({ recipient: RECIPIENT });
    const prefetched = destination.prefetch?.(message);
    assert.equal(await destination.metadata(message), '0x');
    assert.equal(await prefetched, '0x', "a NULL ISM's metadata comes with the prefetch");
    assert.deepEqual(calls, ['recipientIsm', 'moduleType@A'], 'one read each for the prefetch and the build');
    // The recipient moves to ISM B in block 11: the build at that head reads it, and fails on its type.
    ism = ISM_B;
    head = 11;
    const next = headsOf(publicClient, clock).after(10n, 1_000);
    await clock.advance(250);
    await next;
    assert.equal(await destination.prefetch?.(message), undefined, 'another type: built by metadata()');
    await assert.rejects(destination.metadata(message), /unsupported ISM type 3/);
    assert.deepEqual(calls.slice(2), ['recipientIsm', 'moduleType@B']);
  });
});
