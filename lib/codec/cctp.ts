/**
 * Circle CCTP V2 messages and the fast-relay eligibility rule
 * (docs/design.md#extraction-and-eligibility): a transaction qualifies when the Mailbox's
 * Dispatch events and the V2 MessageTransmitter's MessageSent events are equally many (and there
 * is at least one).
 */
import {
  DISPATCH_TOPIC,
  MESSAGE_SENT_TOPIC,
  decodeDispatchLog,
  decodeMessageSentLog,
  type DispatchEvent,
} from './abi.ts';
import { DecodeError, RelayError } from '../errors/classes.ts';
import { bytesToHex, readUint32 } from './hex.ts';
import { messageFromDispatch, type HyperlaneMessage } from './message.ts';
import type { Receipt } from '../rpc/receipt.ts';
import type { ChainConfig } from '../types.ts';

/** The CCTP V2 MessageTransmitter, deployed at the same address on every EVM chain Circle supports. */
export const DEFAULT_CCTP_V2_TRANSMITTER = '0x81d40f21f12a8f0e3252bccb954d722d4c464b64';

/**
 * Every address whose `MessageSent` counts by default: the V2 MessageTransmitter above and the two
 * other Circle CCTP V2 transmitters the reference relayer and the Hyperlane warp UI also count, so
 * a transfer eligible there is eligible here.
 */
export const DEFAULT_CCTP_V2_TRANSMITTERS: readonly string[] = Object.freeze([
  DEFAULT_CCTP_V2_TRANSMITTER,
  '0x5b61381fc9e58e70efc13a4a97516997019198ee',
  '0xe737e5cebeeba77efe34d4aa090756590b1ce275',
]);

/** `MessageV2.sol`: the version a V2 MessageTransmitter stamps on what it sends (V1 sends 0). */
export const CCTP_V2_MESSAGE_VERSION = 1;
const BODY_INDEX = 148;

export interface CctpV2Message {
  version: number;
  sourceDomain: number;
  destinationDomain: number;
  /** bytes32, zero when sent (Circle's attestation service assigns it). */
  nonce: string;
  sender: string;
  recipient: string;
  destinationCaller: string;
  minFinalityThreshold: number;
  finalityThresholdExecuted: number;
  body: Uint8Array;
}

/** Layout of circlefin/evm-cctp-contracts `src/messages/v2/MessageV2.sol`. */
export function parseCctpV2Message(raw: Uint8Array): CctpV2Message {
  if (!(raw instanceof Uint8Array)) throw new DecodeError('data', 'message is not bytes');
  if (raw.length < BODY_INDEX)
    throw new DecodeError('short', `CCTP message has ${raw.length} bytes, need at least 148`);
  const version = readUint32(raw, 0);
  if (version !== CCTP_V2_MESSAGE_VERSION)
    throw new DecodeError('version', `CCTP message version is ${version}, expected 1`);
  return {
    version,
    sourceDomain: readUint32(raw, 4),
    destinationDomain: readUint32(raw, 8),
    nonce: bytesToHex(raw.subarray(12, 44)),
    sender: bytesToHex(raw.subarray(44, 76)),
    recipient: bytesToHex(raw.subarray(76, 108)),
    destinationCaller: bytesToHex(raw.subarray(108, 140)),
    minFinalityThreshold: readUint32(raw, 140),
    finalityThresholdExecuted: readUint32(raw, 144),
    body: raw.slice(BODY_INDEX),
  };
}

/**
 * A MessageSent payload that is not a V2 message (too short, or V1's version 0 from a
 * misconfigured transmitter address) is not a V2 transfer, so it is not counted: only V2
 * transfers are eligible, and the rest is omitted, not rejected
 * (docs/design.md#extraction-and-eligibility).
 */
function isCctpV2Message(raw: Uint8Array): boolean {
  return raw.length >= BODY_INDEX && readUint32(raw, 0) === CCTP_V2_MESSAGE_VERSION;
}

function topic0Of(topics: unknown): string | undefined {
  const first = Array.isArray(topics) ? topics[0] : undefined;
  return typeof first === 'string' ? first.toLowerCase() : undefined;
}

/**
 * The Hyperlane messages of an eligible transaction, in log order; [] when it is not eligible.
 * Throws DecodeError for a malformed log from a trusted address (the RPC is lying: a 500) and
 * RelayError('too_many_messages') for more than `maxMessages` Dispatch events.
 */
export function extractMessages(receipt: Receipt, chain: ChainConfig, maxMessages: number): HyperlaneMessage[] {
  if (!receipt.success) return [];
  const mailbox = chain.mailbox.toLowerCase();
  const transmitters = new Set(chain.cctpMessageTransmitters.map((a) => a.toLowerCase()));
  const dispatches: DispatchEvent[] = [];
  let cctpTransfers = 0;
  for (const log of receipt.logs) {
    const address = typeof log.address === 'string' ? log.address.toLowerCase() : '';
    const topic0 = topic0Of(log.topics);
    if (address === mailbox && topic0 === DISPATCH_TOPIC) {
      dispatches.push(decodeDispatchLog(log));
    } else if (transmitters.has(address) && topic0 === MESSAGE_SENT_TOPIC) {
      if (isCctpV2Message(decodeMessageSentLog(log))) cctpTransfers++;
    }
  }
  if (dispatches.length > maxMessages) {
    throw new RelayError(
      'too_many_messages',
      `transaction has ${dispatches.length} messages, at most ${maxMessages} allowed`,
    );
  }
  const messages = dispatches.map((event) => messageFromDispatch(event, chain.domainId));
  return messages.length > 0 && messages.length === cctpTransfers ? messages : [];
}
