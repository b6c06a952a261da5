/**
 * relayer-api/testing's receipts and fake node (lib/testing/receipts.ts, lib/testing/fake-node.ts):
 * the logs are checked against the viem builders of test/helpers/fixtures/builders.ts (an independent
 * encoder), and the core's own pipeline relays from the fake node.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRelayPipeline } from '../../../lib/relay/pipeline.ts';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { createFakeClock } from '../../../lib/testing/clock.ts';
import { createFakeNode } from '../../../lib/testing/fake-node.ts';
import * as ours from '../../../lib/testing/receipts.ts';
import * as viemBuilt from '../../helpers/fixtures/builders.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';

test('docs/embedding.md#test-tooling: Dispatch, MessageSent and transfer logs encode as viem encodes them', () => {
  const fields = {
    nonce: 9,
    origin: 1,
    destination: 10,
    recipient: '0x' + 'ab'.repeat(32),
    body: '0x' + 'ff'.repeat(45),
  };
  assert.deepEqual(
    ours.dispatchLog(viemBuilt.MAILBOX, fields),
    viemBuilt.dispatchLog(viemBuilt.MAILBOX, fields as never),
  );
  assert.deepEqual(ours.messageSentLog(), viemBuilt.messageSentLog());
  assert.equal(
    ours.cctpV2Message({ sourceDomain: 3, destinationDomain: 2 }),
    viemBuilt.cctpV2Message({ sourceDomain: 3, destinationDomain: 2 }),
  );
  assert.deepEqual(ours.transferLogs(3, { nonce: 4 }), viemBuilt.transferLogs(3, { nonce: 4 }));
  const receipt = ours.rpcReceipt(viemBuilt.txHash(5), ours.transferLogs(1));
  assert.equal(receipt.status, '0x1');
  assert.deepEqual(
    (receipt.logs as Record<string, unknown>[]).map((l) => [l.logIndex, l.transactionHash]),
    [
      ['0x0', viemBuilt.txHash(5)],
      ['0x1', viemBuilt.txHash(5)],
    ],
  );
});

test('docs/embedding.md#test-tooling: the fake node answers receipts, fails on request and waits on its clock', async () => {
  const clock = createFakeClock();
  const node = createFakeNode({ clock, chainId: 8453 });
  const hash = viemBuilt.txHash(7);
  node.receipts.set(hash.toUpperCase().replace('0X', '0x'), ours.rpcReceipt(hash, ours.transferLogs(2)));
  const call = async (method: string, params: unknown[] = []) => {
    const res = await node.fetch('http://node', {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method, params }),
    });
    return { status: res.status, text: await res.text() };
  };
  assert.equal(JSON.parse((await call('eth_chainId')).text).result, '0x2105');
  assert.equal(JSON.parse((await call('eth_getTransactionReceipt', [hash])).text).result.logs.length, 4);
  assert.equal(JSON.parse((await call('eth_getTransactionReceipt', [viemBuilt.txHash(8)])).text).result, null);
  node.fail('http_500', 1);
  assert.equal((await call('eth_chainId')).status, 500);
  assert.equal((await call('eth_chainId')).status, 200, 'one failure only');
  node.fail('network');
  await assert.rejects(call('eth_chainId'), TypeError);
  await assert.rejects(call('eth_chainId'), TypeError);
  node.fail();
  node.delay(2_000);
  let answered = false;
  const pending = call('eth_chainId').then(() => (answered = true));
  await clock.advance(1_999);
  assert.equal(answered, false, 'waits on the clock');
  await clock.advance(1);
  await pending;
  assert.equal(answered, true);
  assert.equal(node.calls.length, 8);
});

test('docs/embedding.md#test-tooling: the pipeline relays a CCTP V2 transfer from the fake node', async () => {
  const config = testConfig();
  const clock = createFakeClock();
  const node = createFakeNode({ clock });
  const hash = viemBuilt.txHash(11);
  node.receipts.set(hash, ours.rpcReceipt(hash, ours.transferLogs(1, { nonce: 11 }, config.chains.ethereum.mailbox)));
  const outbox = createMemoryOutbox({ clock });
  const pipeline = createRelayPipeline({ config, queue: outbox, clock, fetch: node.fetch });
  const { messages } = await pipeline.relay({ origin_chain: 'ethereum', tx_hash: hash });
  assert.equal(messages.length, 1);
  assert.equal(messages[0].nonce, 11);
  assert.equal(outbox.depth(), 1);
});
