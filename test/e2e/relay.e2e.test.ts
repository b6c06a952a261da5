/**
 * POST /relay end to end: real contracts emit the events (the Hyperlane Mailbox from
 * @hyperlane-xyz/core and a CCTP V2 transmitter stand-in), a real node (anvil) serves the receipts
 * over JSON-RPC, and the real `bin/relayer-server.ts` answers over HTTP. Expected message ids come
 * from the Mailbox's own DispatchId events, expected fields from the Dispatch bytes read by the
 * test's own reader (wire.ts), never from lib/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { keccak256, toHex, type Address, type Hash, type Hex } from 'viem';
import { startLocalChain, ORIGIN_DOMAIN, type LocalChain } from '../helpers/chain/local-chains.ts';
import { mailboxLogs } from '../helpers/chain/hyperlane.ts';
import { startRpcProxy, type RpcProxy } from '../helpers/chain/rpc-proxy.ts';
import { launchRelayerServer, type RelayerProcess } from '../helpers/harness/server-process.ts';
import {
  genuineCctpMessage,
  sendForgery,
  sendForgeryAroundTransfer,
  sendRevertingTransfer,
  sendTransfer,
  type Transfer,
} from '../helpers/chain/stand-ins.ts';
import { readCctpV2Message, readHyperlaneMessage } from '../helpers/fixtures/wire.ts';
import { hyperlaneMessage } from '../helpers/fixtures/builders.ts';
import { DEV_ACCOUNT } from '../helpers/chain/clients.ts';

const ORIGIN_CHAIN = 'anvil1';
const DESTINATION_DOMAIN = 2;
/** Short, so the timeout scenario stays within the suite's budget; the 10 s default is unit-tested with a fake clock. */
const RECEIPT_TIMEOUT_SECONDS = 3;
const RECIPIENT: Address = '0x00000000000000000000000000000000000000b0';

let local: LocalChain;
let proxy: RpcProxy;
let server: RelayerProcess;

function serverConfig(): unknown {
  return {
    chains: {
      [ORIGIN_CHAIN]: {
        domainId: ORIGIN_DOMAIN,
        chainId: 31337,
        mailbox: local.hyperlane.mailbox,
        cctpMessageTransmitter: local.standIns.transmitter,
        // Through the watching proxy, so the mined-later test sees the server's polls.
        rpcUrls: [{ http: proxy.url }],
      },
      // A destination the relayer may deliver to; nothing listens on its RPC URL, nothing calls it.
      dest2: {
        domainId: DESTINATION_DOMAIN,
        chainId: 2,
        mailbox: '0x0000000000000000000000000000000000000002',
        rpcUrls: [{ http: 'http://127.0.0.1:1' }],
      },
    },
    relayChains: ['dest2'],
    relayApi: { receiptTimeoutSeconds: RECEIPT_TIMEOUT_SECONDS },
    db: ':memory:',
  };
}

interface HttpReply {
  status: number;
  headers: Headers;
  body: any;
}

async function relay(txHash: string, originChain = ORIGIN_CHAIN): Promise<HttpReply> {
  const res = await fetch(`${server.url}/relay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin_chain: originChain, tx_hash: txHash }),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // left as text: the assertion shows it
  }
  return { status: res.status, headers: res.headers, body };
}

/** What the server must answer for a mined transaction: the Mailbox's own account of it. */
async function expectedMessages(hash: Hash) {
  const receipt = await local.chain.receipt(hash);
  assert.equal(receipt.status, 'success', 'the transfer itself was mined');
  const { messages, ids } = mailboxLogs(receipt, local.hyperlane.mailbox);
  assert.equal(messages.length, ids.length, 'one DispatchId per Dispatch');
  return messages.map((raw, i) => {
    const m = readHyperlaneMessage(raw);
    assert.equal(m.id, ids[i], 'DispatchId = keccak256(message)');
    return { message_id: ids[i].toLowerCase(), origin: m.origin, destination: m.destination, nonce: m.nonce };
  });
}

async function mined(t: Transfer): Promise<Hash> {
  const hash = await sendTransfer(local.chain, local.standIns, t);
  await local.chain.receipt(hash);
  return hash;
}

function assertError(reply: HttpReply, status: number, reason: string): void {
  assert.equal(reply.status, status, `expected ${status} ${reason}, got ${reply.status} ${JSON.stringify(reply.body)}`);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(reply.body.reason, reason);
  assert.equal(typeof reply.body.message, 'string');
}

function assertMessages(reply: HttpReply, expected: unknown[]): void {
  assert.equal(reply.status, 200, `expected 200, got ${reply.status} ${JSON.stringify(reply.body)}`);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(reply.body, { messages: expected });
}

const transfer = (extra: Partial<Transfer> = {}): Transfer => ({
  destination: DESTINATION_DOMAIN,
  recipient: RECIPIENT,
  amount: 1_000_000n,
  ...extra,
});

describe('POST /relay end to end: anvil, the real Mailbox, bin/relayer-server.ts', { timeout: 60_000 }, () => {
  before(async () => {
    local = await startLocalChain();
    proxy = await startRpcProxy(local.anvil.rpcUrl);
    server = await launchRelayerServer(['--host', '127.0.0.1', '--db', ':memory:'], { config: serverConfig() });
  });

  after(async () => {
    // Each step runs even when an earlier one throws: nothing may outlive the suite.
    const steps = [() => server?.stop(), () => proxy?.close(), () => local?.anvil.stop()];
    const results = await Promise.allSettled(steps.map((step) => step()));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  });

  // The timeout scenario waits out receiptTimeoutSeconds on the clock (a spawned server's time is
  // not injected); it runs beside the chain scenarios instead of after them. It shares only the
  // server and the proxy with them, and asks about a hash no one sends.
  describe('beside each other', { concurrency: 2 }, () => {
    describe('on the chain, one after another', () => {
      test('docs/api.md#get-relay-get-ready: GET /relay on the started server answers 200 up', async () => {
        const res = await fetch(`${server.url}/relay`);
        assert.equal(res.status, 200);
        assert.equal(await res.text(), 'up');
      });

      test('docs/api.md#post-relay: one CCTP V2 transfer is relayed; message_id is the Mailbox DispatchId', async () => {
        const hash = await mined(transfer());
        const expected = await expectedMessages(hash);
        assert.equal(expected.length, 1);
        assert.equal(expected[0].origin, ORIGIN_DOMAIN);
        assert.equal(expected[0].destination, DESTINATION_DOMAIN);
        assertMessages(await relay(hash), expected);
      });

      test('docs/design.md#deduplication: the same transaction again within the window is 429 duplicate_tx with Retry-After', async () => {
        const hash = await mined(transfer());
        assertMessages(await relay(hash), await expectedMessages(hash));
        // Upper-case hex names the same transaction (docs/design.md#deduplication: the dedup key is
        // lower-cased).
        const again = await relay(`0x${hash.slice(2).toUpperCase()}`);
        assertError(again, 429, 'duplicate_tx');
        const retryAfter = Number(again.headers.get('retry-after'));
        assert.ok(retryAfter > 0 && retryAfter <= 300, `Retry-After ${again.headers.get('retry-after')}`);
      });

      test('docs/design.md#extraction-and-eligibility: several transfers in one transaction are all relayed, in transaction order', async () => {
        const hash = await mined(transfer({ dispatches: 3 }));
        const expected = await expectedMessages(hash);
        assert.equal(expected.length, 3);
        assert.deepEqual(
          expected.map((m) => m.nonce),
          [expected[0].nonce, expected[0].nonce + 1, expected[0].nonce + 2],
        );
        assertMessages(await relay(hash), expected);
      });

      test('docs/design.md#extraction-and-eligibility: 10 transfers in one transaction (the limit) are all relayed', async () => {
        const hash = await mined(transfer({ dispatches: 10 }));
        const expected = await expectedMessages(hash);
        assert.equal(expected.length, 10);
        assertMessages(await relay(hash), expected);
      });

      test('docs/design.md#extraction-and-eligibility: 11 transfers in one transaction is 400 too_many_messages', async () => {
        const hash = await mined(transfer({ dispatches: 11 }));
        assert.equal((await expectedMessages(hash)).length, 11);
        assertError(await relay(hash), 400, 'too_many_messages');
      });

      test('docs/design.md#extraction-and-eligibility: a Dispatch without MessageSent is not eligible: 200 with no messages', async () => {
        const hash = await mined(transfer({ burns: 0, dispatches: 1 }));
        assert.equal((await expectedMessages(hash)).length, 1, 'the Mailbox did dispatch');
        assertMessages(await relay(hash), []);
      });

      test('docs/design.md#extraction-and-eligibility: MessageSent and Dispatch counts that differ (2 vs 3, 3 vs 2) are not eligible', async () => {
        for (const [burns, dispatches] of [
          [2, 3],
          [3, 2],
        ]) {
          const hash = await mined(transfer({ burns, dispatches }));
          assert.equal((await expectedMessages(hash)).length, dispatches);
          assertMessages(await relay(hash), []);
        }
      });

      test('docs/design.md#extraction-and-eligibility: look-alike Dispatch and MessageSent from a rogue contract are ignored', async () => {
        const forgery = {
          destination: DESTINATION_DOMAIN,
          recipient: RECIPIENT,
          // A well-formed message claiming our origin: only its emitter gives it away.
          message: hyperlaneMessage({
            nonce: 424242,
            origin: ORIGIN_DOMAIN,
            sender: DEV_ACCOUNT,
            destination: DESTINATION_DOMAIN,
            recipient: RECIPIENT,
            body: '0x',
          }),
          // A valid V2 message with a BurnMessageV2 body, as the real transmitter would emit.
          cctpMessage: await genuineCctpMessage(local.chain, local.standIns, RECIPIENT, 5n),
        };
        assert.equal(readCctpV2Message(forgery.cctpMessage).version, 1);
        // Next to one genuine transfer: counting both forgeries would list two messages, counting
        // one kind only would make the counts differ and list none; the genuine one alone is right.
        const around = await sendForgeryAroundTransfer(local.chain, local.standIns, forgery, 5n);
        const expected = await expectedMessages(around);
        assert.equal(expected.length, 1);
        assertMessages(await relay(around), expected);
        // Forgeries alone: nothing from the Mailbox, nothing to relay.
        const alone = await sendForgery(local.chain, local.standIns, forgery);
        assert.equal((await expectedMessages(alone)).length, 0);
        assertMessages(await relay(alone), []);
      });

      test('docs/design.md#deduplication: a destination that is not configured is 400 unsupported_destination', async () => {
        // A retry is not duplicate_tx.
        // 999 is no chain at all; 1 is a known chain (the origin) that is not in relayChains.
        for (const destination of [999, ORIGIN_DOMAIN]) {
          const hash = await mined(transfer({ destination }));
          assert.equal((await expectedMessages(hash))[0].destination, destination);
          assertError(await relay(hash), 400, 'unsupported_destination');
          assertError(await relay(hash), 400, 'unsupported_destination');
        }
      });

      test('docs/design.md#check-order: an origin_chain that is not configured is 400 invalid_request', async () => {
        const hash = await mined(transfer());
        assertError(await relay(hash, 'dest3'), 400, 'invalid_request');
      });

      test('docs/design.md#extraction-and-eligibility: a reverted transaction has no messages: 200 with an empty list', async () => {
        const hash = await sendRevertingTransfer(local.chain, local.standIns, transfer({ dispatches: 2 }));
        const receipt = await local.chain.receipt(hash);
        assert.equal(receipt.status, 'reverted');
        assertMessages(await relay(hash), []);
      });

      test('docs/design.md#receipt: a transaction not mined yet is waited for and relayed once a block is mined', async () => {
        await local.chain.setAutomine(false);
        let hash: Hash;
        let pending: Promise<HttpReply>;
        try {
          hash = await sendTransfer(local.chain, local.standIns, transfer({ dispatches: 2 }));
          pending = relay(hash);
          // Mine only after the server has been told "not mined yet"; fail fast if it answered instead.
          const early = await Promise.race([
            proxy.nullReceiptServed(hash).then(() => undefined),
            pending.then((reply) => reply),
          ]);
          assert.equal(
            early,
            undefined,
            `the server answered before the transaction was mined: ${JSON.stringify(early)}`,
          );
          await local.chain.mineBlock();
        } finally {
          await local.chain.setAutomine(true);
        }
        const reply = await pending;
        const expected = await expectedMessages(hash);
        assert.equal(expected.length, 2);
        assertMessages(reply, expected);
        const answers = proxy.receiptAnswers(hash);
        assert.ok(answers.nulls >= 1 && answers.total > answers.nulls, `receipt answers: ${JSON.stringify(answers)}`);
      });
    });

    test('docs/design.md#receipt: a hash that never appears is 408 timeout with Retry-After, after the configured wait', async () => {
      const hash: Hex = keccak256(toHex(`never sent ${Date.now()}`));
      const started = performance.now();
      const reply = await relay(hash);
      const elapsedMs = performance.now() - started;
      assertError(reply, 408, 'timeout');
      assert.ok(Number(reply.headers.get('retry-after')) > 0, `Retry-After ${reply.headers.get('retry-after')}`);
      // The configured wait, not the default 10 s: at least that long, and the deadline the server
      // says it used ("not found": the node answered null; "not fetched": its answer came too late,
      // at a heavy load). An upper bound in wall time and "polled at least twice" (the first poll
      // answered after 2.5 s at load 20 left one) were speed bounds; the polling every 500 ms is
      // test/unit/rpc/receipt.test.ts's, on a fake clock.
      assert.ok(elapsedMs >= RECEIPT_TIMEOUT_SECONDS * 1000 - 100, `answered after ${elapsedMs} ms`);
      assert.match(
        String(reply.body.message),
        new RegExp(`^transaction receipt not (found|fetched) within ${RECEIPT_TIMEOUT_SECONDS} seconds\\b`),
      );
    });
  });

  test('docs/design.md#the-server-binary: SIGTERM stops the server with exit code 0', async () => {
    assert.equal(await server.stop(), 0, server.output());
  });
});
