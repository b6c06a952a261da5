/**
 * Hyperlane message (Mailbox v3, `Message.sol`): a packed header followed by the body.
 *
 *   version u8 @0 | nonce u32 @1 | origin u32 @5 | sender bytes32 @9 |
 *   destination u32 @41 | recipient bytes32 @45 | body @77
 *
 * The id is keccak256 of the whole packed message.
 */
import type { DispatchEvent } from './abi.ts';
import { DecodeError } from '../errors/classes.ts';
import { addressWord, bytesToHex, readUint32 } from './hex.ts';
import { keccak256 } from './keccak.ts';

/** A decoded Hyperlane message (version 3). */
export interface HyperlaneMessage {
  /** keccak256 of the raw message, 0x + 64 lower-case hex. */
  id: string;
  version: number;
  nonce: number;
  origin: number;
  /** 32-byte word, 0x + 64 lower-case hex. */
  sender: string;
  destination: number;
  /** 32-byte word, 0x + 64 lower-case hex. */
  recipient: string;
  body: Uint8Array;
  raw: Uint8Array;
}

export const HYPERLANE_MESSAGE_VERSION = 3;
const HEADER_LENGTH = 77;

/** The fixed-size header of a message: everything but its id and body. */
export type HyperlaneMessageHeader = Omit<HyperlaneMessage, 'id' | 'body' | 'raw'>;

/**
 * The header alone, checked as `parseHyperlaneMessage` checks it (bytes, length, version), without
 * hashing the message: for a reader that knows the id already and wants a field or two.
 */
export function parseMessageHeader(raw: Uint8Array): HyperlaneMessageHeader {
  if (!(raw instanceof Uint8Array)) throw new DecodeError('data', 'message is not bytes');
  if (raw.length < HEADER_LENGTH) throw new DecodeError('short', `message has ${raw.length} bytes, need at least 77`);
  const version = raw[0];
  if (version !== HYPERLANE_MESSAGE_VERSION)
    throw new DecodeError('version', `message version is ${version}, expected 3`);
  return {
    version,
    nonce: readUint32(raw, 1),
    origin: readUint32(raw, 5),
    sender: bytesToHex(raw.subarray(9, 41)),
    destination: readUint32(raw, 41),
    recipient: bytesToHex(raw.subarray(45, 77)),
  };
}

export function parseHyperlaneMessage(raw: Uint8Array): HyperlaneMessage {
  const { version, nonce, origin, sender, destination, recipient } = parseMessageHeader(raw);
  const id = bytesToHex(keccak256(raw));
  return { id, version, nonce, origin, sender, destination, recipient, body: raw.slice(HEADER_LENGTH), raw };
}

/**
 * The address a 32-byte word names on an EVM chain, as the Mailbox reads a recipient
 * (`TypeCasts.bytes32ToAddress`: the low 20 bytes, the high 12 ignored): 0x + 40 lower-case hex.
 */
export function wordToAddress(word: string): string {
  if (!/^0x[0-9a-f]{64}$/i.test(word)) throw new DecodeError('data', 'not a 32-byte word');
  return `0x${word.slice(26).toLowerCase()}`;
}

/**
 * The message a Dispatch log carries, checked against the log itself: the Mailbox indexes the
 * message's own sender, destination and recipient, and stamps its own domain as origin. A log
 * where they disagree was not emitted by that Mailbox, so the RPC answer cannot be trusted.
 */
export function messageFromDispatch(event: DispatchEvent, originDomain: number): HyperlaneMessage {
  const message = parseHyperlaneMessage(event.message);
  if (message.origin !== originDomain) {
    throw new DecodeError('origin', `message origin ${message.origin} is not the chain's domain ${originDomain}`);
  }
  if (
    message.sender !== addressWord(event.sender) ||
    message.destination !== event.destination ||
    message.recipient !== event.recipient
  ) {
    throw new DecodeError('mismatch', 'message fields differ from the indexed Dispatch topics');
  }
  return message;
}
