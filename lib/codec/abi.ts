/**
 * Strict decoding of the EVM logs the relay reads: Hyperlane `Dispatch` and CCTP `MessageSent`,
 * and the InterchainGasPaymaster's `GasPayment` (docs/gas.md#gas-payment-enforcement).
 *
 * Strict means every byte is accounted for: exact topic count, clean high bytes in indexed words,
 * the single ABI offset equal to 32, a length that fits, zero padding to a word boundary and
 * nothing after it. A log that a real contract cannot emit is rejected, never guessed at: the
 * only thing that throws out of here for bad input is DecodeError.
 */
import { DecodeError, type DecodeCode } from '../errors/classes.ts';
import { keccak256 } from './keccak.ts';
import { bytesToHex, isHexOfLength, readUint32 } from './hex.ts';

/** An EVM log as the pipeline reads it: nothing else of the receipt matters. */
export interface Log {
  /** 20-byte address, lower-case. */
  address: string;
  /** 32-byte words, lower-case hex. */
  topics: string[];
  data: Uint8Array;
  /**
   * The log's index in its block, when the node gave a valid one (receipts and eth_getLogs
   * carry it): with the transaction hash it identifies the log.
   */
  logIndex?: number;
}

function eventTopic(signature: string): string {
  return bytesToHex(keccak256(new TextEncoder().encode(signature)));
}

export const DISPATCH_TOPIC: string = eventTopic('Dispatch(address,uint32,bytes32,bytes)');
export const MESSAGE_SENT_TOPIC: string = eventTopic('MessageSent(bytes)');
export const GAS_PAYMENT_TOPIC: string = eventTopic('GasPayment(bytes32,uint32,uint256,uint256)');

/** Mailbox.Dispatch(address indexed sender, uint32 indexed destination, bytes32 indexed recipient, bytes message). */
export interface DispatchEvent {
  /** 20-byte address, lower-case 0x hex. */
  sender: string;
  destination: number;
  /** 32-byte word, lower-case 0x hex. */
  recipient: string;
  message: Uint8Array;
}

const WORD = 32;

function isZero(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** Reads an ABI uint word that must fit in 32 bits; anything larger is `code`. */
function readSmallWord(data: Uint8Array, at: number, code: DecodeCode, what: string): number {
  if (!isZero(data, at, at + WORD - 4)) throw new DecodeError(code, `${what} does not fit in 32 bits`);
  return readUint32(data, at + WORD - 4);
}

/**
 * Decodes non-indexed event data holding exactly one `bytes` value:
 * offset word (= 32), length word, the bytes, zero padding to 32, end of data.
 */
export function decodeBytesData(data: Uint8Array): Uint8Array {
  if (!(data instanceof Uint8Array)) throw new DecodeError('data', 'log data is not bytes');
  if (data.length < 2 * WORD) throw new DecodeError('short', `log data has ${data.length} bytes, need at least 64`);
  const offset = readSmallWord(data, 0, 'offset', 'bytes offset');
  if (offset !== WORD) throw new DecodeError('offset', `bytes offset is ${offset}, must be 32`);
  const length = readSmallWord(data, WORD, 'length', 'bytes length');
  const start = 2 * WORD;
  if (length > data.length - start) throw new DecodeError('length', `bytes length ${length} runs past the data`);
  const end = start + length;
  const padded = start + Math.ceil(length / WORD) * WORD;
  if (padded > data.length) throw new DecodeError('padding', 'bytes are not padded to a 32-byte boundary');
  if (!isZero(data, end, padded)) throw new DecodeError('padding', 'bytes padding is not zero');
  if (data.length !== padded) throw new DecodeError('trailing', `${data.length - padded} bytes after the padding`);
  return data.slice(start, end);
}

/**
 * The topics as lower-case 0x hex words after checking the count, that each is a 32-byte word
 * (any hex case) and topic0. They stay strings: the decoded fields are hex strings anyway, and
 * slicing a checked string is several times cheaper than a Uint8Array per topic and back.
 */
function readTopics(log: Log, count: number, topic0: string): string[] {
  if (log === null || typeof log !== 'object' || !Array.isArray(log.topics)) {
    throw new DecodeError('topic_count', 'log has no topics array');
  }
  if (log.topics.length !== count) {
    throw new DecodeError('topic_count', `log has ${log.topics.length} topics, expected ${count}`);
  }
  const words: string[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const topic: unknown = log.topics[i];
    const word = typeof topic === 'string' ? topic.toLowerCase() : undefined;
    if (!isHexOfLength(word, WORD)) throw new DecodeError('topic', `topic ${i} is not a 32-byte word`);
    words[i] = word;
  }
  if (words[0] !== topic0) throw new DecodeError('topic0', 'topic0 is not the expected event signature');
  return words;
}

/** "0x" and `bytes` zero bytes: the clean high part of an indexed word. */
const ZERO_ADDRESS_PAD = '0x' + '00'.repeat(12);
const ZERO_UINT32_PAD = '0x' + '00'.repeat(28);

export function decodeDispatchLog(log: Log): DispatchEvent {
  const [, senderWord, destinationWord, recipientWord] = readTopics(log, 4, DISPATCH_TOPIC);
  if (!senderWord.startsWith(ZERO_ADDRESS_PAD)) throw new DecodeError('topic', 'sender topic has dirty high bytes');
  if (!destinationWord.startsWith(ZERO_UINT32_PAD))
    throw new DecodeError('topic', 'destination topic has dirty high bytes');
  return {
    sender: '0x' + senderWord.slice(ZERO_ADDRESS_PAD.length),
    destination: Number.parseInt(destinationWord.slice(ZERO_UINT32_PAD.length), 16),
    recipient: recipientWord,
    message: decodeBytesData(log.data),
  };
}

export function decodeMessageSentLog(log: Log): Uint8Array {
  readTopics(log, 1, MESSAGE_SENT_TOPIC);
  return decodeBytesData(log.data);
}

/**
 * IInterchainGasPaymaster.GasPayment(bytes32 indexed messageId, uint32 indexed destinationDomain,
 * uint256 gasAmount, uint256 payment): the gas a sender paid for on the origin chain.
 */
export interface GasPaymentEvent {
  /** 32-byte word, lower-case 0x hex. */
  messageId: string;
  destination: number;
  /** Destination gas paid for. */
  gasAmount: bigint;
  /** Paid on the origin chain, in its native token's smallest unit (wei). */
  payment: bigint;
}

function uint256At(data: Uint8Array, at: number): bigint {
  let value = 0n;
  for (let i = at; i < at + WORD; i++) value = (value << 8n) | BigInt(data[i]);
  return value;
}

export function decodeGasPaymentLog(log: Log): GasPaymentEvent {
  const [, messageId, destinationWord] = readTopics(log, 3, GAS_PAYMENT_TOPIC);
  if (!destinationWord.startsWith(ZERO_UINT32_PAD))
    throw new DecodeError('topic', 'destination topic has dirty high bytes');
  const { data } = log;
  if (!(data instanceof Uint8Array)) throw new DecodeError('data', 'log data is not bytes');
  if (data.length < 2 * WORD) throw new DecodeError('short', `log data has ${data.length} bytes, need 64`);
  if (data.length > 2 * WORD) throw new DecodeError('trailing', `${data.length - 2 * WORD} bytes after the two words`);
  return {
    messageId,
    destination: Number.parseInt(destinationWord.slice(ZERO_UINT32_PAD.length), 16),
    gasAmount: uint256At(data, 0),
    payment: uint256At(data, WORD),
  };
}
