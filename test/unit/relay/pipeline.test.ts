/**
 * The relay pipeline as a whole (lib/relay/pipeline.ts, docs/design.md#deduplication, #rate-limit) on
 * generated receipts: every outcome is a 200 whose messages are all enqueued with the pair kept,
 * or a RelayError with nothing enqueued and the reservation released.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { toHex } from 'viem/utils';
import type { Hex } from 'viem';
import { DISPATCH_TOPIC } from '../../../lib/codec/abi.ts';
import { extractMessages } from '../../../lib/codec/cctp.ts';
import { RelayError } from '../../../lib/errors/classes.ts';
import { hexToBytes } from '../../../lib/codec/hex.ts';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { createRelayPipeline } from '../../../lib/relay/pipeline.ts';
import { parseReceipt } from '../../../lib/rpc/receipt.ts';
import type { Receipt } from '../../../lib/rpc/receipt.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import {
  dispatchLog,
  MAILBOX,
  messageSentLog,
  rpcReceipt,
  transferLogs,
  txHash,
} from '../../helpers/fixtures/builders.ts';
import { bytes, mutate, mutation, RUNS, tally, u32, word } from '../../helpers/fixtures/properties.ts';

describe('the relay pipeline as a whole (docs/design.md#deduplication, #post-relay)', () => {
  const FOREIGN = '0x' + 'ee'.repeat(20);
  const config = testConfig({ blacklist: [{ recipientAddress: '0x' + '99'.repeat(20) }] });

  /** One log of a random kind: real, foreign, mutated, from another chain, blacklisted. */
  const log = fc.oneof(
    fc
      .record({
        nonce: u32,
        destination: fc.constantFrom(1, 8453, 10),
        recipient: fc.constantFrom('0x' + '22'.repeat(20), '0x' + '99'.repeat(20)),
      })
      .map((f) => dispatchLog(MAILBOX, { ...f, recipient: f.recipient as Hex })),
    fc.constant(messageSentLog()),
    fc.constantFrom(
      { ...messageSentLog(), address: FOREIGN },
      { ...dispatchLog(FOREIGN), address: FOREIGN },
      dispatchLog(MAILBOX, { origin: 8453 }),
    ),
    fc.tuple(fc.boolean(), mutation).map(([dispatch, m]) => {
      const base = dispatch ? dispatchLog(MAILBOX) : messageSentLog();
      return { ...base, data: toHex(mutate(hexToBytes(base.data)!, m)) };
    }),
    fc
      .record({
        topics: fc.array(fc.oneof(word, fc.constant(DISPATCH_TOPIC as string)), { maxLength: 5 }),
        data: bytes(80).map((b) => toHex(b)),
      })
      .map((r) => ({ address: MAILBOX, ...r })),
  );

  test('any receipt: 200 with every listed message enqueued, or a RelayError with nothing enqueued', async () => {
    // On 200 the pair is kept; on a RelayError the reservation is released.
    const seen = tally();
    const receiptLogs = fc.oneof(
      fc.array(log, { maxLength: 14 }),
      // Real transfers (up to 12: past the limit of 10 too) with stray logs mixed in.
      fc
        .tuple(fc.integer({ min: 1, max: 12 }), fc.nat({ max: 2 ** 31 }), fc.array(log, { maxLength: 3 }))
        .map(([n, nonce, extra]) => [...transferLogs(n, { nonce }), ...extra]),
    );
    await fc.assert(
      fc.asyncProperty(receiptLogs, fc.boolean(), async (logs, success) => {
        const hash = txHash(1);
        let receipt: Receipt;
        try {
          receipt = parseReceipt(rpcReceipt(hash, logs, success ? '0x1' : '0x0'), hash);
        } catch {
          return; // the fetcher fails over on a receipt it cannot parse (tested above)
        }
        const outbox = createMemoryOutbox();
        const pipeline = createRelayPipeline({ config, queue: outbox, fetchReceipt: async () => receipt });
        let response: Awaited<ReturnType<typeof pipeline.relay>> | undefined;
        try {
          response = await pipeline.relay({ origin_chain: 'ethereum', tx_hash: hash });
        } catch (error) {
          assert.ok(error instanceof RelayError, `unexpected ${String(error)}`);
          seen.add(false);
          assert.equal(await outbox.depth(), 0, 'nothing enqueued on failure');
          assert.equal(pipeline.dedup.size(), 0, 'reservation released');
          return;
        }
        seen.add(response.messages.length > 0);
        assert.equal(pipeline.dedup.size(), 1, 'a success keeps the pair');
        assert.equal(await outbox.depth(), response.messages.length);
        for (const m of response.messages) {
          assert.ok(await outbox.get(m.message_id));
          assert.equal(m.origin, 1);
        }
        if (!success) assert.deepEqual(response.messages, []);
        // Cross-check with the extraction alone: the same messages in the same order.
        const direct = extractMessages(receipt, config.chains.ethereum, config.relayApi.maxMessagesPerTx);
        assert.deepEqual(
          response.messages.map((m) => m.message_id),
          direct.map((m) => m.id),
        );
      }),
      RUNS,
    );
    seen.expectBoth(20);
  });
});

test('the pipeline reports the valid request through onValid (before the receipt), and writes into nothing it is given', async () => {
  const hash = txHash(7);
  const seen: unknown[] = [];
  let receiptAsked = false;
  const options = {
    onValid: (request: { originChain: string; txHash: string }) => seen.push({ ...request, receiptAsked }),
  };
  const pipeline = createRelayPipeline({
    config: testConfig(),
    queue: createMemoryOutbox(),
    fetchReceipt: async () => {
      receiptAsked = true;
      return parseReceipt(rpcReceipt(hash, []), hash);
    },
  });
  await pipeline.relay({ origin_chain: 'ethereum', tx_hash: hash.toUpperCase().replace('0X', '0x') }, options);
  assert.deepEqual(seen, [{ originChain: 'ethereum', txHash: hash.toLowerCase(), receiptAsked: false }]);
  assert.deepEqual(Object.keys(options), ['onValid']);
  // An invalid request is never reported.
  await assert.rejects(pipeline.relay({ origin_chain: 'nowhere', tx_hash: hash }, options), RelayError);
  assert.equal(seen.length, 1);
});
