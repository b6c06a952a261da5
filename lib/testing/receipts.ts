/**
 * Transaction receipts as a JSON-RPC node returns them, holding CCTP V2 transfers (MessageSent then
 * Mailbox Dispatch) or plain Hyperlane messages (docs/embedding.md#test-tooling): what POST /relay
 * reads. Encoded with the package's own code; the package's tests check them against viem
 * (test/unit/testing/fake-node.test.ts).
 */
import { DISPATCH_TOPIC, MESSAGE_SENT_TOPIC } from '../codec/abi.ts';
import { DEFAULT_CCTP_V2_TRANSMITTER } from '../codec/cctp.ts';
import { bytesToHex, joinBytes } from '../codec/hex.ts';
import {
  bytesOf,
  DEFAULT_RECIPIENT,
  DEFAULT_SENDER,
  hyperlaneMessage,
  type MessageFields,
  uintBytes,
  word,
} from './messages.ts';

/** A log as a JSON-RPC receipt carries it: hex strings. */
export interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  [extra: string]: unknown;
}

/** The Mailbox the builders default to (any address works: the config names the real one). */
export const DEFAULT_MAILBOX = '0xc005dc82818d67af737725bd4bf75435d065d239';

/** ABI encoding of one `bytes` argument: offset, length, data padded to whole words. */
function abiBytes(data: Uint8Array): string {
  const padded = new Uint8Array(Math.ceil(data.length / 32) * 32);
  padded.set(data);
  return bytesToHex(joinBytes([uintBytes(32, 32), uintBytes(data.length, 32), padded]));
}

/**
 * Mailbox `Dispatch(address indexed sender, uint32 indexed destination, bytes32 indexed recipient,
 * bytes message)` for the message of `fields` (or a message given whole, as 0x-hex).
 */
export function dispatchLog(mailbox: string = DEFAULT_MAILBOX, fields: MessageFields | string = {}): RpcLog {
  const f = typeof fields === 'string' ? {} : fields;
  const message = typeof fields === 'string' ? fields : hyperlaneMessage(fields);
  return {
    address: mailbox,
    topics: [
      DISPATCH_TOPIC,
      bytesToHex(word(f.sender ?? DEFAULT_SENDER)),
      bytesToHex(uintBytes(f.destination ?? 8453, 32)),
      bytesToHex(word(f.recipient ?? DEFAULT_RECIPIENT)),
    ],
    data: abiBytes(bytesOf(message, 'message')),
  };
}

export interface CctpFields {
  /** MessageV2.sol version is 1; 0 is a V1 message. */
  version?: number;
  sourceDomain?: number;
  destinationDomain?: number;
  sender?: string;
  recipient?: string;
  /** The message body (a BurnMessageV2 by default). */
  body?: string;
}

const TOKEN_MESSENGER_V2 = '0x28b5a0e9c621a5badaa536219b3a228c8168cf5d';

/** A BurnMessageV2 body as TokenMessengerV2 packs it (feeExecuted and expirationBlock zero). */
export function burnMessageV2(
  amount = 1_000_000n,
  mintRecipient = '0x3333333333333333333333333333333333333333',
): string {
  return bytesToHex(
    joinBytes([
      uintBytes(1, 4),
      word('0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48'),
      word(mintRecipient),
      uintBytes(amount, 32),
      word('0x4444444444444444444444444444444444444444'),
      uintBytes(0, 32),
      uintBytes(0, 32),
      uintBytes(0, 32),
    ]),
  );
}

/** A CCTP V2 message as MessageV2.sol `_formatMessageForRelay` packs it (nonce and finalityThresholdExecuted zero). */
export function cctpV2Message(f: CctpFields = {}): string {
  return bytesToHex(
    joinBytes([
      uintBytes(f.version ?? 1, 4),
      uintBytes(f.sourceDomain ?? 0, 4),
      uintBytes(f.destinationDomain ?? 6, 4),
      new Uint8Array(32),
      word(f.sender ?? TOKEN_MESSENGER_V2),
      word(f.recipient ?? TOKEN_MESSENGER_V2),
      new Uint8Array(32),
      uintBytes(2000, 4),
      uintBytes(0, 4),
      bytesOf(f.body ?? burnMessageV2(), 'body'),
    ]),
  );
}

/** MessageTransmitterV2 `MessageSent(bytes message)`. */
export function messageSentLog(transmitter: string = DEFAULT_CCTP_V2_TRANSMITTER, message = cctpV2Message()): RpcLog {
  return { address: transmitter, topics: [MESSAGE_SENT_TOPIC], data: abiBytes(bytesOf(message, 'message')) };
}

/** `count` CCTP V2 transfers: a MessageSent then a Dispatch each (nonces from `fields.nonce`), as a bridge emits them. */
export function transferLogs(count: number, fields: MessageFields = {}, mailbox: string = DEFAULT_MAILBOX): RpcLog[] {
  const logs: RpcLog[] = [];
  for (let i = 0; i < count; i++) {
    logs.push(messageSentLog());
    logs.push(dispatchLog(mailbox, { ...fields, nonce: (fields.nonce ?? 0) + i }));
  }
  return logs;
}

/** A receipt as an Ethereum node returns it for `txHash`, with `logs` (status 0x1: succeeded). */
export function rpcReceipt(
  txHash: string,
  logs: RpcLog[],
  status: '0x1' | '0x0' = '0x1',
  block = 0x100,
): Record<string, unknown> {
  const hex = (n: number) => `0x${n.toString(16)}`;
  return {
    transactionHash: txHash,
    transactionIndex: '0x0',
    blockHash: `0x${block.toString(16).padStart(64, '0')}`,
    blockNumber: hex(block),
    from: '0x5555555555555555555555555555555555555555',
    to: '0x6666666666666666666666666666666666666666',
    cumulativeGasUsed: '0x5208',
    gasUsed: '0x5208',
    contractAddress: null,
    logs: logs.map((log, i) => ({ ...log, logIndex: hex(i), removed: false, transactionHash: txHash })),
    logsBloom: `0x${'0'.repeat(512)}`,
    status,
    type: '0x2',
    effectiveGasPrice: '0x1',
  };
}
