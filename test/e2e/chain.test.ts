/**
 * The e2e harness itself, checked with viem only (no code from lib/): the real Mailbox and the
 * CCTP V2 stand-in put into a real node's receipts exactly what the relay scenarios rely on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeEventLog, encodePacked, pad, parseAbi, toEventSelector, type Hex, type TransactionReceipt } from 'viem';
import { compiledContract } from '../helpers/chain/solidity.ts';
import { mailboxArtifact, mailboxLogs } from '../helpers/chain/hyperlane.ts';
import { startLocalChain, ORIGIN_DOMAIN, type LocalChain } from '../helpers/chain/local-chains.ts';
import {
  CCTP_LOCAL_DOMAIN,
  CCTP_REMOTE_DOMAIN,
  REMOTE_TOKEN_MESSENGER,
  sendForgery,
  sendRevertingTransfer,
  sendTransfer,
} from '../helpers/chain/stand-ins.ts';
import { DEV_ACCOUNT } from '../helpers/chain/clients.ts';
import { readBurnMessageV2, readCctpV2Message, readHyperlaneMessage } from '../helpers/fixtures/wire.ts';
import { hyperlaneMessage } from '../helpers/fixtures/builders.ts';

// Event topics as published by the projects (Hyperlane indexers, Circle's bridge tooling).
const DISPATCH_TOPIC = '0x769f711d20c679153d382254f59892613b58a97cc876b249134ac25c80f9c814';
const DISPATCH_ID_TOPIC = '0x788dbc1b7152732178210e7f4d9d010ef016f9eafbe66786bd7169f56e0c353a';
const MESSAGE_SENT_TOPIC = '0x8c5261668696ce22758910d05bab8f186d6eb247ceac2af2e82c7dc17669b036';
const INSERTED_INTO_TREE_TOPIC = toEventSelector('InsertedIntoTree(bytes32,uint32)');

const USDC_ETHEREUM = pad('0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48');
const RECIPIENT = '0x00000000000000000000000000000000000000b0' as const;

const MESSAGE_SENT_ABI = parseAbi(['event MessageSent(bytes message)']);

let local: LocalChain;

function messagesSent(receipt: TransactionReceipt): Hex[] {
  return receipt.logs
    .filter((l) => l.address.toLowerCase() === local.standIns.transmitter.toLowerCase())
    .map((l) => decodeEventLog({ abi: MESSAGE_SENT_ABI, topics: l.topics, data: l.data, strict: true }).args.message);
}

async function mailboxNonce(): Promise<number> {
  const nonce = await local.chain.publicClient.readContract({
    address: local.hyperlane.mailbox,
    abi: mailboxArtifact().abi,
    functionName: 'nonce',
  });
  return Number(nonce);
}

describe('e2e harness: real Mailbox and CCTP V2 stand-in on anvil', { timeout: 60_000 }, () => {
  before(async () => {
    local = await startLocalChain();
  });
  after(async () => {
    await local?.anvil.stop();
  });

  test('event signatures: the contracts emit the published Dispatch, DispatchId and MessageSent topics', () => {
    assert.equal(toEventSelector('Dispatch(address,uint32,bytes32,bytes)'), DISPATCH_TOPIC);
    assert.equal(toEventSelector('DispatchId(bytes32)'), DISPATCH_ID_TOPIC);
    assert.equal(toEventSelector('MessageSent(bytes)'), MESSAGE_SENT_TOPIC);
    const rogueAbi = compiledContract('RogueDispatcher').abi;
    const selectors = rogueAbi.filter((item) => item.type === 'event').map((e) => toEventSelector(e));
    assert.deepEqual(new Set(selectors), new Set([DISPATCH_TOPIC, MESSAGE_SENT_TOPIC]));
  });

  test('Mailbox (docs/design.md#tests-on-real-chains): each dispatch emits Dispatch then DispatchId, id = keccak256(message)', async () => {
    // The message has version 3 and origin 1.
    const firstNonce = await mailboxNonce();
    const receipt = await local.chain.receipt(
      await sendTransfer(local.chain, local.standIns, {
        destination: 2,
        recipient: RECIPIENT,
        amount: 500n,
        dispatches: 2,
      }),
    );
    assert.equal(receipt.status, 'success');
    const { messages, ids } = mailboxLogs(receipt, local.hyperlane.mailbox);
    assert.equal(messages.length, 2);
    assert.equal(ids.length, 2);
    for (const [i, raw] of messages.entries()) {
      const m = readHyperlaneMessage(raw);
      assert.equal(m.id, ids[i], 'DispatchId is keccak256 of the dispatched message');
      assert.equal(m.version, 3);
      assert.equal(m.nonce, firstNonce + i);
      assert.equal(m.origin, ORIGIN_DOMAIN);
      assert.equal(m.sender, pad(local.standIns.transmitter).toLowerCase());
      assert.equal(m.destination, 2);
      assert.equal(m.recipient, pad(RECIPIENT));
      // Hyperlane TokenMessage: recipient word, then the amount.
      assert.equal(m.body, encodePacked(['bytes32', 'uint256'], [pad(RECIPIENT), 500n + BigInt(i)]));
    }
    const latest = await local.chain.publicClient.readContract({
      address: local.hyperlane.mailbox,
      abi: mailboxArtifact().abi,
      functionName: 'latestDispatchedId',
    });
    assert.equal(latest, ids[1]);
    assert.equal(await mailboxNonce(), firstNonce + 2);
  });

  test('log order: per transfer MessageSent (transmitter), Dispatch and DispatchId (Mailbox), InsertedIntoTree (hook)', async () => {
    const receipt = await local.chain.receipt(
      await sendTransfer(local.chain, local.standIns, {
        destination: 2,
        recipient: RECIPIENT,
        amount: 1n,
        dispatches: 2,
      }),
    );
    const seen = receipt.logs.map((l) => [l.address.toLowerCase(), l.topics[0]]);
    const transmitter = local.standIns.transmitter.toLowerCase();
    const mailbox = local.hyperlane.mailbox.toLowerCase();
    const hook = local.hyperlane.merkleTreeHook.toLowerCase();
    const oneTransfer = [
      [transmitter, MESSAGE_SENT_TOPIC],
      [mailbox, DISPATCH_TOPIC],
      [mailbox, DISPATCH_ID_TOPIC],
      [hook, INSERTED_INTO_TREE_TOPIC],
    ];
    assert.deepEqual(seen, [...oneTransfer, ...oneTransfer]);
  });

  test('MessageV2.sol / BurnMessageV2.sol: MessageSent carries a CCTP V2 message with a BurnMessageV2 body', async () => {
    const receipt = await local.chain.receipt(
      await sendTransfer(local.chain, local.standIns, {
        destination: 2,
        recipient: RECIPIENT,
        amount: 1_000_000n,
        dispatches: 2,
      }),
    );
    const sent = messagesSent(receipt);
    assert.equal(sent.length, 2);
    for (const [i, raw] of sent.entries()) {
      const m = readCctpV2Message(raw);
      assert.equal(m.version, 1, 'MessageTransmitterV2 version');
      assert.equal(m.sourceDomain, CCTP_LOCAL_DOMAIN);
      assert.equal(m.destinationDomain, CCTP_REMOTE_DOMAIN);
      assert.equal(m.nonce, pad('0x'), 'nonce is empty when sent');
      assert.equal(m.sender, pad(local.standIns.transmitter).toLowerCase());
      assert.equal(m.recipient, REMOTE_TOKEN_MESSENGER.toLowerCase());
      assert.equal(m.destinationCaller, pad('0x'));
      assert.equal(m.minFinalityThreshold, 2000);
      assert.equal(m.finalityThresholdExecuted, 0, 'empty when sent');
      const body = readBurnMessageV2(m.messageBody as Hex);
      assert.equal(body.version, 1, 'TokenMessengerV2 message body version');
      assert.equal(body.burnToken, USDC_ETHEREUM);
      assert.equal(body.mintRecipient, pad(RECIPIENT));
      assert.equal(body.amount, 1_000_000n + BigInt(i));
      assert.equal(body.messageSender, pad(DEV_ACCOUNT).toLowerCase());
      assert.equal(body.maxFee, 0n);
      assert.equal(body.feeExecuted, 0n);
      assert.equal(body.expirationBlock, 0n);
      assert.equal(body.hookData, '0x');
      assert.equal((raw.length - 2) / 2, 148 + 228, 'header + burn message, no hook data');
    }
  });

  test('counts can differ: 2 MessageSent and 3 Dispatch in one transaction; 0 MessageSent and 1 Dispatch', async () => {
    const uneven = await local.chain.receipt(
      await sendTransfer(local.chain, local.standIns, {
        destination: 2,
        recipient: RECIPIENT,
        amount: 1n,
        burns: 2,
        dispatches: 3,
      }),
    );
    assert.equal(messagesSent(uneven).length, 2);
    assert.equal(mailboxLogs(uneven, local.hyperlane.mailbox).messages.length, 3);
    const bare = await local.chain.receipt(
      await sendTransfer(local.chain, local.standIns, {
        destination: 2,
        recipient: RECIPIENT,
        amount: 1n,
        burns: 0,
        dispatches: 1,
      }),
    );
    assert.equal(messagesSent(bare).length, 0);
    assert.equal(mailboxLogs(bare, local.hyperlane.mailbox).messages.length, 1);
  });

  test('rogue contract: its look-alike Dispatch and MessageSent have the real topics but another address', async () => {
    const forged = hyperlaneMessage({
      nonce: 7777,
      origin: ORIGIN_DOMAIN,
      sender: DEV_ACCOUNT,
      destination: 2,
      recipient: RECIPIENT,
      body: '0x01',
    });
    const receipt = await local.chain.receipt(
      await sendForgery(local.chain, local.standIns, {
        destination: 2,
        recipient: RECIPIENT,
        message: forged,
        cctpMessage: '0x01',
      }),
    );
    assert.equal(receipt.status, 'success');
    assert.deepEqual(
      receipt.logs.map((l) => [l.address.toLowerCase(), l.topics[0]]),
      [
        [local.standIns.rogue.toLowerCase(), MESSAGE_SENT_TOPIC],
        [local.standIns.rogue.toLowerCase(), DISPATCH_TOPIC],
      ],
    );
    const dispatch = decodeEventLog({
      abi: mailboxArtifact().abi,
      topics: receipt.logs[1].topics,
      data: receipt.logs[1].data,
    });
    assert.equal(
      (dispatch.args as unknown as { message: Hex }).message,
      forged,
      'decodes exactly like a Mailbox Dispatch',
    );
  });

  test('sendThenRevert: the node mines the transaction with status reverted and keeps none of its logs', async () => {
    const receipt = await local.chain.receipt(
      await sendRevertingTransfer(local.chain, local.standIns, { destination: 2, recipient: RECIPIENT, amount: 1n }),
    );
    assert.equal(receipt.status, 'reverted');
    assert.equal(receipt.logs.length, 0);
  });

  test('evm_setAutomine(false) holds a transaction unmined until evm_mine', async () => {
    await local.chain.setAutomine(false);
    try {
      const hash = await sendTransfer(local.chain, local.standIns, {
        destination: 2,
        recipient: RECIPIENT,
        amount: 1n,
      });
      const raw = (hash: Hex) =>
        local.chain.publicClient.request({ method: 'eth_getTransactionReceipt', params: [hash] });
      assert.equal(await raw(hash), null);
      await local.chain.mineBlock();
      assert.equal((await raw(hash))?.status, '0x1');
    } finally {
      await local.chain.setAutomine(true);
    }
  });
});
