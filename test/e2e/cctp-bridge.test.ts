/**
 * Two anvil nodes and Hyperlane's real CCTP V2 token bridge between them, checked with viem and
 * the test-side wire readers (and lib/worker for the destination side): a transferRemote leaves production's call
 * graph in the origin receipt, and `Mailbox.process` on the destination delivers it through the
 * bridge's CCTP ISM with the attestation the local gateway builds (test/helpers/chain/ccip-gateway.ts), sent
 * through the worker's destination (lib/worker/chain/destination.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  decodeErrorResult,
  decodeEventLog,
  encodeFunctionData,
  encodePacked,
  getAddress,
  keccak256,
  pad,
  parseAbi,
  toEventSelector,
  toFunctionSelector,
  type Abi,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import { ccipRead, CcipReadError, decodeOffchainLookup } from '../../lib/worker/ccip/read.ts';
import { ISM_ABI, ISM_TYPE as WORKER_ISM_TYPE, MAILBOX_ABI } from '../../lib/worker/ism/metadata.ts';
import { CCTP_SERVICE_ABI, cctpAttestationMetadata } from '../helpers/chain/ccip-gateway.ts';
import {
  bridgeArtifacts,
  CIRCLE_DESTINATION_DOMAIN,
  CIRCLE_ORIGIN_DOMAIN,
  MIN_FINALITY_THRESHOLD,
  sendBridgeTransfer,
} from '../helpers/chain/cctp-bridge.ts';
import {
  deliveryDestination,
  DESTINATION_DOMAIN,
  ORIGIN_DOMAIN,
  startTwoChains,
  type TwoChains,
} from '../helpers/chain/local-chains.ts';
import { hyperlaneArtifact, mailboxLogs } from '../helpers/chain/hyperlane.ts';
import {
  deployMessageIdMultisigIsm,
  deployNoopIsm,
  deployRoutingIsm,
  deployTestRecipient,
  ismArtifacts,
  ISM_TYPE,
} from '../helpers/chain/isms.ts';
import { readBurnMessageV2, readCctpV2Message, readHyperlaneMessage } from '../helpers/fixtures/wire.ts';

const RECIPIENT: Address = '0x00000000000000000000000000000000000000b0';
const MESSAGE_SENT_ABI = parseAbi(['event MessageSent(bytes message)']);
const topic = (signature: string) => toEventSelector(signature);

let two: TwoChains;

const destination = () => deliveryDestination(two.destination);

/** moduleType() of the ISM the destination Mailbox asks for `message`'s recipient. */
async function recipientIsmType(message: Hex): Promise<number> {
  const { publicClient } = two.destination.chain;
  const recipient = getAddress(`0x${message.slice(2 + 2 * 57, 2 + 2 * 77)}`);
  const ism = await publicClient.readContract({
    address: two.destination.hyperlane.mailbox,
    abi: MAILBOX_ABI,
    functionName: 'recipientIsm',
    args: [recipient],
  });
  return publicClient.readContract({ address: ism, abi: ISM_ABI, functionName: 'moduleType' });
}

const noWait = async () => {};
/** process() as the loop calls it: simulated first, its first broadcast under a lease (the sender's own journal here). */
const processOnce = async (dest: ReturnType<typeof destination>, metadata: Hex, message: Hex) =>
  dest.process(metadata, message, await dest.simulate(metadata, message), {
    messageId: keccak256(message),
    fence: { lease: 'test', leaseMs: 60_000 },
    onWait: noWait,
  });

async function transfer(amount: bigint): Promise<{ receipt: TransactionReceipt; message: Hex; id: Hex }> {
  const hash = await sendBridgeTransfer(two.origin.chain, two.route, {
    destination: DESTINATION_DOMAIN,
    recipient: RECIPIENT,
    amount,
  });
  const receipt = await two.origin.chain.receipt(hash);
  assert.equal(receipt.status, 'success');
  const { messages, ids } = mailboxLogs(receipt, two.origin.hyperlane.mailbox);
  assert.equal(messages.length, 1);
  return { receipt, message: messages[0], id: ids[0] };
}

async function delivered(id: Hex): Promise<boolean> {
  const { chain, hyperlane } = two.destination;
  return chain.publicClient.readContract({
    address: hyperlane.mailbox,
    abi: MAILBOX_ABI,
    functionName: 'delivered',
    args: [id],
  });
}

async function processIdLogs(id: Hex) {
  const { chain, hyperlane } = two.destination;
  return chain.publicClient.getContractEvents({
    address: hyperlane.mailbox,
    abi: MAILBOX_ABI,
    eventName: 'ProcessId',
    args: { messageId: id },
    fromBlock: 0n,
  });
}

describe('e2e: Hyperlane TokenBridgeCctpV2 between two anvil nodes', { timeout: 90_000 }, () => {
  before(async () => {
    two = await startTwoChains();
  });
  after(async () => {
    await two?.stop();
  });

  test('transferRemote: burn through the CCTP V2 transmitter (MessageSent), then Mailbox dispatch, in production order', async () => {
    const { receipt, message, id } = await transfer(1_000_000n);
    const origin = two.route.origin;
    const mailbox = two.origin.hyperlane.mailbox.toLowerCase();
    const seen = receipt.logs.map((l) => [l.address.toLowerCase(), l.topics[0]]);
    const transferTopic = topic('Transfer(address,address,uint256)');
    assert.deepEqual(seen, [
      [origin.token, topic('Approval(address,address,uint256)')], // transferFrom spends the user's allowance
      [origin.token, transferTopic], // user → router (transferRemote pulls the amount)
      [origin.token, transferTopic], // router → messenger (depositForBurn)
      [origin.token, transferTopic], // burn: messenger → 0
      [origin.transmitter, topic('MessageSent(bytes)')],
      [
        origin.tokenMessenger,
        topic('DepositForBurn(address,uint256,address,bytes32,uint32,bytes32,bytes32,uint256,uint32,bytes)'),
      ],
      [origin.router, topic('SentTransferRemote(uint32,bytes32,uint256)')],
      [mailbox, topic('Dispatch(address,uint32,bytes32,bytes)')],
      [mailbox, topic('DispatchId(bytes32)')],
      [two.origin.hyperlane.merkleTreeHook.toLowerCase(), topic('InsertedIntoTree(bytes32,uint32)')],
    ]);

    const h = readHyperlaneMessage(message);
    assert.equal(h.id, id);
    assert.equal(h.origin, ORIGIN_DOMAIN);
    assert.equal(h.destination, DESTINATION_DOMAIN);
    assert.equal(h.sender, pad(origin.router));
    assert.equal(h.recipient, pad(two.route.destination.router));
    assert.equal(h.body, encodePacked(['bytes32', 'uint256'], [pad(RECIPIENT), 1_000_000n]));

    const sentLog = receipt.logs.find((l) => l.address.toLowerCase() === origin.transmitter)!;
    const sent = decodeEventLog({ abi: MESSAGE_SENT_ABI, topics: sentLog.topics, data: sentLog.data, strict: true })
      .args.message;
    const cctp = readCctpV2Message(sent);
    assert.equal(cctp.version, 1);
    assert.equal(cctp.sourceDomain, CIRCLE_ORIGIN_DOMAIN);
    assert.equal(cctp.destinationDomain, CIRCLE_DESTINATION_DOMAIN);
    assert.equal(cctp.nonce, pad('0x'), 'empty when sent');
    assert.equal(cctp.recipient, pad(two.route.destination.tokenMessenger), 'the remote TokenMessenger');
    assert.equal(cctp.destinationCaller, pad(two.route.destination.router), 'only the destination router may receive');
    assert.equal(cctp.minFinalityThreshold, MIN_FINALITY_THRESHOLD);
    const burn = readBurnMessageV2(cctp.messageBody);
    assert.equal(burn.version, 1);
    assert.equal(burn.burnToken, pad(origin.token));
    assert.equal(burn.mintRecipient, pad(RECIPIENT));
    assert.equal(burn.amount, 1_000_000n);
    assert.equal(burn.messageSender, pad(origin.router), 'the Hyperlane router burns');
    assert.equal(burn.maxFee, 0n);
  });

  test('call graph (debug_traceTransaction): transferRemote → depositForBurn → sendMessage, then → Mailbox.dispatch → hooks', async () => {
    const { receipt } = await transfer(3_000_000n);
    interface Frame {
      type: string;
      to: string;
      input: Hex;
      calls?: Frame[];
    }
    const trace = (await two.origin.chain.rpc('debug_traceTransaction', [
      receipt.transactionHash,
      { tracer: 'callTracer' },
    ])) as Frame;
    const origin = two.origin;
    const route = two.route.origin;
    const names = new Map<string, string>(
      [
        [route.router, 'router'],
        [route.token, 'token'],
        [route.tokenMessenger, 'tokenMessenger'],
        [route.transmitter, 'transmitter'],
        [origin.hyperlane.mailbox, 'mailbox'],
        [origin.hyperlane.merkleTreeHook, 'merkleTreeHook'],
        [origin.hyperlane.testPostDispatchHook, 'testPostDispatchHook'],
      ].map(([a, n]) => [a.toLowerCase(), n]),
    );
    const fns = [
      'transferRemote(uint32,bytes32,uint256)',
      'transferFrom(address,address,uint256)',
      'depositForBurn(uint256,uint32,bytes32,address,bytes32,uint256,uint32)',
      'burn(uint256)',
      'sendMessage(uint32,bytes32,bytes32,uint32,bytes)',
      'dispatch(uint32,bytes32,bytes,bytes,address)',
      'quoteDispatch(bytes,bytes)',
      'postDispatch(bytes,bytes)',
      'latestDispatchedId()',
    ];
    const selectors = new Map(fns.map((f) => [toFunctionSelector(f), f.slice(0, f.indexOf('('))]));
    const lines: string[] = [];
    const walk = (frame: Frame, depth: number) => {
      // The proxy's DELEGATECALL goes to the implementation, whose address the route does not keep.
      const to = frame.type === 'DELEGATECALL' ? 'implementation' : (names.get(frame.to.toLowerCase()) ?? frame.to);
      lines.push(
        `${'  '.repeat(depth)}${frame.type} ${to}.${selectors.get(frame.input.slice(0, 10) as Hex) ?? frame.input.slice(0, 10)}`,
      );
      for (const call of frame.calls ?? []) walk(call, depth + 1);
    };
    walk(trace, 0);
    assert.deepEqual(lines, [
      'CALL router.transferRemote',
      '  DELEGATECALL implementation.transferRemote',
      '    CALL token.transferFrom',
      '    CALL tokenMessenger.depositForBurn',
      '      CALL token.transferFrom',
      '      CALL token.burn',
      '      CALL transmitter.sendMessage',
      '    CALL mailbox.dispatch',
      '      STATICCALL testPostDispatchHook.quoteDispatch',
      '      CALL testPostDispatchHook.postDispatch',
      '      CALL merkleTreeHook.postDispatch',
      '        STATICCALL mailbox.latestDispatchedId',
    ]);
  });

  test('Mailbox.process through the CCTP ISM: a forged burn is refused, the attested one delivers, a second process reverts', async () => {
    const { receipt, message, id } = await transfer(2_500_000n);
    const dest = destination();
    assert.equal(
      await recipientIsmType(message),
      WORKER_ISM_TYPE.CCIP_READ,
      'the bridge router is its own CCIP-read ISM',
    );
    const transmitters = [two.route.origin.transmitter];

    // The same transaction's attestation, for a message with one more unit: the ISM compares the
    // burn with the token message, so this must revert and deliver nothing.
    const forged = `${message.slice(0, -64)}${2_500_001n.toString(16).padStart(64, '0')}` as Hex;
    await assert.rejects(
      cctpAttestationMetadata(two.origin.chain.publicClient, transmitters, receipt.transactionHash, forged),
      /no CCTP burn/,
    );
    const honest = await cctpAttestationMetadata(
      two.origin.chain.publicClient,
      transmitters,
      receipt.transactionHash,
      message,
    );
    await assert.rejects(dest.simulate(honest, forged), (e: Error & { code?: string }) => e.code === 'revert');
    assert.equal(await delivered(id), false);

    const first = await processOnce(dest, honest, message);
    assert.equal(first.status, 'success');
    assert.equal(await delivered(id), true);
    assert.equal(await dest.deliveredBy(id), first.hash, 'the ProcessId log names the delivering transaction');
    const processed = await two.destination.chain.receipt(first.hash);
    const routerAbi = bridgeArtifacts.router().abi;
    const received = processed.logs
      .filter((l) => l.address.toLowerCase() === two.route.destination.router)
      .map((l) => decodeEventLog({ abi: routerAbi, topics: l.topics as [Hex, ...Hex[]], data: l.data, strict: true }))
      .find((e) => e.eventName === 'ReceivedTransferRemote');
    assert.deepEqual(received?.args, { origin: ORIGIN_DOMAIN, recipient: pad(RECIPIENT), amountOrId: 2_500_000n });

    await assert.rejects(
      dest.simulate(honest, message),
      (e: Error & { reason?: string }) => e.reason === 'Mailbox: already delivered',
      'a second process would revert: never sent',
    );
    assert.equal((await processIdLogs(id)).length, 1, 'delivered exactly once');
  });

  test('a plain message to a TestRecipient (NoopIsm, the Mailbox default) delivers with empty metadata', async () => {
    const recipientA = hyperlaneArtifact('test/TestRecipient');
    const recipient = await two.destination.chain.deploy(recipientA.abi, recipientA.bytecode);
    const mailboxA = hyperlaneArtifact('Mailbox');
    const receipt = await two.origin.chain.callAndWait(two.origin.hyperlane.mailbox, mailboxA.abi, 'dispatch', [
      DESTINATION_DOMAIN,
      pad(recipient),
      '0x68656c6c6f',
    ]);
    const { messages, ids } = mailboxLogs(receipt, two.origin.hyperlane.mailbox);
    const dest = destination();
    assert.equal(await recipientIsmType(messages[0]), WORKER_ISM_TYPE.NULL);
    const outcome = await processOnce(dest, '0x', messages[0]);
    assert.equal(outcome.status, 'success');
    assert.equal(await delivered(ids[0]), true);
    const lastData = await two.destination.chain.publicClient.readContract({
      address: recipient,
      abi: recipientA.abi,
      functionName: 'lastData',
    });
    assert.equal(lastData, '0x68656c6c6f');
  });

  test('CCIP-read through the real router: the gateway named by its OffchainLookup answers pending, then the metadata passes', async () => {
    // The gateway answers pending first, then the metadata it gives makes process() accept
    // (lib/worker/ccip/read.ts).
    const { message, id } = await transfer(3_000_000n);
    const router = two.route.destination.router;
    const routerAbi = bridgeArtifacts.router().abi;
    const revert = await revertData(
      two.destination.anvil.rpcUrl,
      router,
      encodeFunctionData({ abi: routerAbi, functionName: 'getOffchainVerifyInfo', args: [message] }),
    );
    const lookup = decodeOffchainLookup(revert);
    assert.ok(lookup, 'the router reverts with OffchainLookup');
    // Cross-check with viem's decoder and the contract's own definitions (AbstractCcipReadIsm).
    const byViem = decodeErrorResult({ abi: routerAbi, data: revert });
    assert.equal(byViem.errorName, 'OffchainLookup');
    assert.deepEqual(byViem.args, [
      getAddress(lookup.sender),
      lookup.urls,
      lookup.callData,
      lookup.callbackFunction,
      lookup.extraData,
    ]);
    assert.equal(lookup.sender, router.toLowerCase());
    assert.deepEqual(lookup.urls, [two.gateway.url], 'setUrls pointed the router at the gateway');
    assert.equal(
      lookup.callData,
      encodeFunctionData({ abi: CCTP_SERVICE_ABI, functionName: 'getCCTPAttestation', args: [message] }),
    );
    assert.equal(lookup.callbackFunction, toFunctionSelector('verify(bytes,bytes)'));
    assert.equal(lookup.extraData, message);

    // The gateway is on loopback: asked only as an allowed origin (worker.ccipReadAllowOrigins).
    const allowOrigins = [new URL(two.gateway.url).origin];
    const asked = two.gateway.requests();
    two.gateway.respond('pending-500', 1);
    await assert.rejects(
      ccipRead(lookup, { contract: router, allowOrigins }),
      (e) => e instanceof CcipReadError && e.code === 'pending',
    );
    two.gateway.respond('pending-404', 1);
    await assert.rejects(
      ccipRead(lookup, { contract: router, allowOrigins }),
      (e) => e instanceof CcipReadError && e.code === 'pending',
    );
    const metadata = await ccipRead(lookup, { contract: router, allowOrigins });
    // The GET form of the same service answers the same bytes.
    assert.equal(
      await ccipRead({ ...lookup, urls: [two.gateway.getUrl] }, { contract: router, allowOrigins }),
      metadata,
    );
    assert.equal(two.gateway.requests() - asked, 4);

    const mailboxA = hyperlaneArtifact('Mailbox');
    const processed = await two.destination.chain.callAndWait(
      two.destination.hyperlane.mailbox,
      mailboxA.abi,
      'process',
      [metadata, message],
    );
    assert.equal(processed.status, 'success');
    assert.equal(await delivered(id), true);
  });

  test('ISM fixtures: a TestRecipient behind a DomainRoutingIsm that routes the origin to a NoopIsm; a multisig ISM is type 5', async () => {
    const chain = two.destination.chain;
    const noop = await deployNoopIsm(chain);
    const routing = await deployRoutingIsm(chain, new Map([[ORIGIN_DOMAIN, noop]]));
    const recipient = await deployTestRecipient(chain, routing);
    const multisig = await deployMessageIdMultisigIsm(chain);
    const mailboxA = hyperlaneArtifact('Mailbox');
    const receipt = await two.origin.chain.callAndWait(two.origin.hyperlane.mailbox, mailboxA.abi, 'dispatch', [
      DESTINATION_DOMAIN,
      pad(recipient),
      '0x726f75746564',
    ]);
    const { messages, ids } = mailboxLogs(receipt, two.origin.hyperlane.mailbox);
    const read = (address: Address, abi: Abi, functionName: string, args: readonly unknown[] = []) =>
      chain.publicClient.readContract({ address, abi, functionName, args });
    assert.equal(
      (
        (await read(two.destination.hyperlane.mailbox, mailboxA.abi, 'recipientIsm', [recipient])) as Address
      ).toLowerCase(),
      routing.toLowerCase(),
    );
    const routingAbi = ismArtifacts.routing().abi;
    assert.equal(await read(routing, routingAbi, 'moduleType'), ISM_TYPE.ROUTING);
    assert.equal(
      ((await read(routing, routingAbi, 'route', [messages[0]])) as Address).toLowerCase(),
      noop.toLowerCase(),
    );
    assert.equal(await read(noop, ismArtifacts.noop().abi, 'moduleType'), ISM_TYPE.NULL);
    assert.equal(
      await read(multisig, ismArtifacts.messageIdMultisig().abi, 'moduleType'),
      ISM_TYPE.MESSAGE_ID_MULTISIG,
    );
    const processed = await chain.callAndWait(two.destination.hyperlane.mailbox, mailboxA.abi, 'process', [
      '0x',
      messages[0],
    ]);
    assert.equal(processed.status, 'success');
    assert.equal(await delivered(ids[0]), true);
    assert.equal(await read(recipient, ismArtifacts.recipient().abi, 'lastData'), '0x726f75746564');
  });
});

/** The revert data of an eth_call (anvil: JSON-RPC error code 3 with `data`). */
async function revertData(rpcUrl: string, to: Address, data: Hex): Promise<Hex> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ to, data }, 'latest'] }),
  });
  const reply = (await response.json()) as { error?: { data?: Hex } };
  assert.ok(reply.error?.data, 'the call reverted with data');
  return reply.error.data;
}
