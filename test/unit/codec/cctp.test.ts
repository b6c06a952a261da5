import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  encodeAbiParameters,
  encodeEventTopics,
  getAddress,
  keccak256 as viemKeccak,
  parseAbi,
  toHex,
} from 'viem/utils';
import type { Hex } from 'viem';
import {
  CCTP_V2_MESSAGE_VERSION,
  DEFAULT_CCTP_V2_TRANSMITTER,
  DEFAULT_CCTP_V2_TRANSMITTERS,
  extractMessages,
  parseCctpV2Message,
} from '../../../lib/codec/cctp.ts';
import { defaultConfig } from '../../../lib/config/parse.ts';
import { RelayError } from '../../../lib/errors/classes.ts';
import { hexToBytes } from '../../../lib/codec/hex.ts';
import type { Log } from '../../../lib/codec/abi.ts';
import type { Receipt } from '../../../lib/rpc/receipt.ts';
import type { ChainConfig } from '../../../lib/types.ts';
import { decodeCode } from '../../helpers/harness/decode-error.ts';
import * as fixtures from '../../helpers/fixtures/builders.ts';
import { burnMessageV2, cctpV2Message, libraryLog, type MessageFields } from '../../helpers/fixtures/builders.ts';

const abi = parseAbi([
  'event Dispatch(address indexed sender, uint32 indexed destination, bytes32 indexed recipient, bytes message)',
  'event DispatchId(bytes32 indexed messageId)',
  'event MessageSent(bytes message)',
]);
const bytes = (hex: Hex): Uint8Array => hexToBytes(hex)!;
const word = (byte: string): Hex => `0x${byte.repeat(32)}`;
const addr = (byte: string): Hex => `0x${byte.repeat(20)}`;
const toWord = (a: Hex): Hex => `0x${'0'.repeat(24)}${a.slice(2)}`;

// Ethereum's Mailbox (Hyperlane registry); any address works, a real one reads better.
const MAILBOX = '0xc005dc82818d67af737725bd4bf75435d065d239';
const FOREIGN = addr('ee');
const chain: ChainConfig = {
  name: 'ethereum',
  domainId: 1,
  mailbox: MAILBOX,
  cctpMessageTransmitters: [DEFAULT_CCTP_V2_TRANSMITTER],
  rpcUrls: [],
};

/** This file's message (origin 1, destination 8453 unless set): nonce 7, sender 0x51…, recipient 0x72…, body 0xbeef. */
const fields = (m: MessageFields = {}): MessageFields => ({
  nonce: 7,
  sender: addr('51'),
  recipient: word('72'),
  body: '0xbeef',
  ...m,
});
const hyperlaneMessage = (m: MessageFields = {}): Hex => fixtures.hyperlaneMessage(fields(m));

/** A Dispatch log whose topics index the message's own fields unless `topics` overrides them. */
function dispatchLog(m: MessageFields = {}, address = MAILBOX, topics: MessageFields = m): Log {
  return libraryLog(fixtures.dispatchLog(address, fields(m), fields(topics)));
}

function messageSentLog(message: Hex = cctpV2Message(), address = DEFAULT_CCTP_V2_TRANSMITTER): Log {
  return libraryLog(fixtures.messageSentLog(address, message));
}

function dispatchIdLog(id: Hex): Log {
  return {
    address: MAILBOX,
    topics: encodeEventTopics({ abi, eventName: 'DispatchId', args: { messageId: id } }) as string[],
    data: new Uint8Array(),
  };
}

/** One bridge transfer as a real transaction logs it: Dispatch, DispatchId, MessageSent. */
function transfer(m: MessageFields = {}): Log[] {
  return [dispatchLog(m), dispatchIdLog(viemKeccak(hyperlaneMessage(m))), messageSentLog()];
}

const ok = (logs: Log[]): Receipt => ({ success: true, logs });

test('docs/design.md#extraction-and-eligibility: the default CCTP V2 MessageTransmitter is the documented address', () => {
  // With a valid EIP-55 checksum.
  assert.equal(getAddress(DEFAULT_CCTP_V2_TRANSMITTER), '0x81D40F21F12A8F0E3252Bccb954D722d4c464B64');
});

test('MessageV2.sol layout: every field of a packed V2 burn message is read at its index', () => {
  const body = burnMessageV2({ amount: 123_456_789n, hookData: '0xdeadbeef' });
  const raw = bytes(
    cctpV2Message({
      version: CCTP_V2_MESSAGE_VERSION,
      body,
      sourceDomain: 3,
      destinationDomain: 6,
      sender: addr('d1'),
      recipient: addr('d2'),
    }),
  );
  assert.equal(raw.length, 148 + 228 + 4);
  const m = parseCctpV2Message(raw);
  assert.deepEqual(
    { ...m, body: toHex(m.body) },
    {
      version: 1,
      sourceDomain: 3,
      destinationDomain: 6,
      nonce: word('00'),
      sender: toWord(addr('d1')),
      recipient: toWord(addr('d2')),
      destinationCaller: word('00'),
      minFinalityThreshold: 2000,
      finalityThresholdExecuted: 0,
      body,
    },
  );
  // BurnMessageV2.sol: amount is the uint256 at 68 of the body, hookData from 228.
  assert.equal(BigInt(toHex(m.body.subarray(68, 100))), 123_456_789n);
  assert.equal(toHex(m.body.subarray(228)), '0xdeadbeef');
});

test('MessageV2.sol: a V1 message (version 0) or one shorter than 148 bytes is not a V2 message', () => {
  assert.equal(
    decodeCode(() => parseCctpV2Message(bytes(cctpV2Message({ version: 0, body: burnMessageV2({ amount: 1n }) })))),
    'version',
  );
  assert.equal(
    decodeCode(() => parseCctpV2Message(bytes(cctpV2Message({ body: '0x' })).subarray(0, 147))),
    'short',
  );
  assert.equal(parseCctpV2Message(bytes(cctpV2Message({ body: '0x' }))).body.length, 0);
});

test('docs/design.md#extraction-and-eligibility: one Dispatch and one MessageSent is eligible', () => {
  const [message] = extractMessages(ok(transfer()), chain, 10);
  const raw = hyperlaneMessage();
  assert.equal(message.id, viemKeccak(raw));
  assert.equal(toHex(message.raw), raw);
  assert.deepEqual([message.origin, message.destination, message.nonce], [1, 8453, 7]);
});

test('docs/design.md#extraction-and-eligibility: three transfers in one transaction are returned in log order', () => {
  const fields = [
    { nonce: 3, destination: 10 },
    { nonce: 4, destination: 8453 },
    { nonce: 5, destination: 42161 },
  ];
  const logs = fields.flatMap((m) => transfer(m));
  const messages = extractMessages(ok(logs), chain, 10);
  assert.deepEqual(
    messages.map((m) => [m.nonce, m.destination]),
    [
      [3, 10],
      [4, 8453],
      [5, 42161],
    ],
  );
  assert.deepEqual(
    messages.map((m) => m.id),
    fields.map((m) => viemKeccak(hyperlaneMessage(m))),
  );
});

test('docs/design.md#extraction-and-eligibility: a Dispatch without a MessageSent is not eligible', () => {
  assert.deepEqual(extractMessages(ok([dispatchLog()]), chain, 10), []);
});

test('docs/design.md#extraction-and-eligibility: a MessageSent without a Dispatch is not eligible', () => {
  assert.deepEqual(extractMessages(ok([messageSentLog()]), chain, 10), []);
  assert.deepEqual(extractMessages(ok([]), chain, 10), []);
});

test('docs/design.md#extraction-and-eligibility: counts that differ are not eligible', () => {
  assert.deepEqual(extractMessages(ok([...transfer(), dispatchLog({ nonce: 8 })]), chain, 10), []);
  assert.deepEqual(extractMessages(ok([...transfer(), messageSentLog()]), chain, 10), []);
});

test('docs/design.md#extraction-and-eligibility: 11 Dispatch messages is too_many_messages, checked before eligibility', () => {
  const eleven = Array.from({ length: 11 }, (_, i) => transfer({ nonce: i })).flat();
  for (const logs of [eleven, eleven.filter((l) => l.address === MAILBOX)]) {
    assert.throws(
      () => extractMessages(ok(logs), chain, 10),
      (error: unknown) => error instanceof RelayError && error.code === 'too_many_messages' && error.status === 400,
    );
  }
});

test('docs/design.md#extraction-and-eligibility: exactly 10 messages is accepted', () => {
  const ten = Array.from({ length: 10 }, (_, i) => transfer({ nonce: i })).flat();
  assert.deepEqual(
    extractMessages(ok(ten), chain, 10).map((m) => m.nonce),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
});

test('docs/design.md#extraction-and-eligibility: a look-alike Dispatch from a foreign address is ignored, even a malformed one', () => {
  const lookAlike = dispatchLog({ nonce: 99 }, FOREIGN);
  const broken = { ...dispatchLog({}, FOREIGN), data: new Uint8Array(3) };
  const messages = extractMessages(ok([lookAlike, ...transfer(), broken]), chain, 10);
  assert.deepEqual(
    messages.map((m) => m.nonce),
    [7],
  );
});

test('docs/design.md#extraction-and-eligibility: a MessageSent from a foreign address is ignored, even a malformed one', () => {
  const foreign = messageSentLog(undefined, FOREIGN);
  assert.deepEqual(extractMessages(ok([dispatchLog(), foreign]), chain, 10), []);
  const broken = { ...messageSentLog(undefined, FOREIGN), data: new Uint8Array(3) };
  assert.equal(extractMessages(ok([...transfer(), broken]), chain, 10).length, 1);
});

test('docs/design.md#extraction-and-eligibility: other Mailbox events (DispatchId) are not counted as Dispatch', () => {
  const logs = [dispatchIdLog(word('01')), dispatchIdLog(word('02')), ...transfer()];
  assert.equal(extractMessages(ok(logs), chain, 10).length, 1);
});

test('docs/design.md#extraction-and-eligibility: addresses compare case-insensitively', () => {
  // Checksummed and upper-case addresses, in logs and in the config.
  const upper = (a: string): string => '0x' + a.slice(2).toUpperCase();
  const logs = [
    { ...dispatchLog(), address: getAddress(MAILBOX) },
    { ...messageSentLog(), address: upper(DEFAULT_CCTP_V2_TRANSMITTER) },
  ];
  assert.equal(extractMessages(ok(logs), chain, 10).length, 1);
  const checksummedChain = {
    ...chain,
    mailbox: getAddress(MAILBOX),
    cctpMessageTransmitters: [getAddress(DEFAULT_CCTP_V2_TRANSMITTER)],
  };
  assert.equal(extractMessages(ok(transfer()), checksummedChain, 10).length, 1);
});

test('docs/design.md#extraction-and-eligibility: every configured MessageTransmitter counts', () => {
  const other = addr('cc');
  const twoTransmitters = { ...chain, cctpMessageTransmitters: [DEFAULT_CCTP_V2_TRANSMITTER, other] };
  const logs = [
    dispatchLog({ nonce: 1 }),
    messageSentLog(),
    dispatchLog({ nonce: 2 }),
    messageSentLog(undefined, other),
  ];
  assert.equal(extractMessages(ok(logs), twoTransmitters, 10).length, 2);
  assert.deepEqual(extractMessages(ok(logs), chain, 10), []);
});

test('docs/configuration.md#the-configuration-file: by default a MessageSent of any Circle V2 transmitter counts', () => {
  // Any of the three Circle V2 transmitters, as in the reference.
  const ethereum = defaultConfig().chains.ethereum;
  // Spelled as the issue gives them (the reference relayer's list), not taken from the code under test.
  for (const transmitter of [
    '0x81D40F21F12A8F0E3252Bccb954D722d4c464B64',
    '0x5b61381fc9e58e70efc13a4a97516997019198ee',
    '0xE737e5cEBEEBa77EFE34D4aa090756590b1CE275',
  ]) {
    const logs = [dispatchLog(), messageSentLog(undefined, transmitter)];
    assert.equal(extractMessages(ok(logs), ethereum, 10).length, 1, transmitter);
  }
  assert.equal(DEFAULT_CCTP_V2_TRANSMITTERS.length, 3);
  assert.deepEqual(extractMessages(ok([dispatchLog(), messageSentLog(undefined, FOREIGN)]), ethereum, 10), []);
});

test('docs/design.md#extraction-and-eligibility: a reverted receipt has no messages', () => {
  assert.deepEqual(extractMessages({ success: false, logs: transfer() }, chain, 10), []);
});

test('docs/design.md#extraction-and-eligibility: a MessageSent that is not a V2 message is not counted', () => {
  // Not V2: a V1 message (version 0), a message too short.
  const v1 = messageSentLog(cctpV2Message({ version: 0, body: burnMessageV2({ amount: 1n }) }));
  const short = messageSentLog('0x00000001');
  assert.deepEqual(extractMessages(ok([dispatchLog(), v1]), chain, 10), []);
  assert.deepEqual(extractMessages(ok([dispatchLog(), short]), chain, 10), []);
  assert.equal(extractMessages(ok([dispatchLog(), v1, messageSentLog()]), chain, 10).length, 1);
});

test('docs/design.md#extraction-and-eligibility: a Dispatch whose message origin is not the chain domain is a DecodeError', () => {
  assert.equal(
    decodeCode(() => extractMessages(ok(transfer({ origin: 2 })), chain, 10)),
    'origin',
  );
});

test('docs/design.md#extraction-and-eligibility: a Dispatch whose topics disagree with its message is a DecodeError', () => {
  const cases: MessageFields[] = [{ sender: addr('52') }, { destination: 8454 }, { recipient: word('73') }];
  for (const topics of cases) {
    const logs = [dispatchLog({}, MAILBOX, topics), messageSentLog()];
    assert.equal(
      decodeCode(() => extractMessages(ok(logs), chain, 10)),
      'mismatch',
      JSON.stringify(topics),
    );
  }
});

test('docs/design.md#extraction-and-eligibility: a Dispatch carrying a version 2 message is a DecodeError', () => {
  assert.equal(
    decodeCode(() => extractMessages(ok(transfer({ version: 2 })), chain, 10)),
    'version',
  );
});

test('docs/design.md#extraction-and-eligibility: a malformed log from a trusted address is a DecodeError, not ignored', () => {
  // A malformed Dispatch or MessageSent.
  const trailing = (log: Log): Log => ({ ...log, data: new Uint8Array([...log.data, 0]) });
  assert.equal(
    decodeCode(() => extractMessages(ok([trailing(dispatchLog()), messageSentLog()]), chain, 10)),
    'trailing',
  );
  assert.equal(
    decodeCode(() => extractMessages(ok([dispatchLog(), trailing(messageSentLog())]), chain, 10)),
    'trailing',
  );
  const threeTopics = { ...dispatchLog(), topics: dispatchLog().topics.slice(0, 3) };
  assert.equal(
    decodeCode(() => extractMessages(ok([threeTopics, messageSentLog()]), chain, 10)),
    'topic_count',
  );
  const shortMessage = { ...dispatchLog(), data: bytes(encodeAbiParameters([{ type: 'bytes' }], ['0x03'])) };
  assert.equal(
    decodeCode(() => extractMessages(ok([shortMessage, messageSentLog()]), chain, 10)),
    'short',
  );
});
