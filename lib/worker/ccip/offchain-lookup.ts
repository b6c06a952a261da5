/**
 * EIP-3668's `OffchainLookup` revert, decoded strictly (docs/delivery.md, CCIP-read): what the
 * recipient's ISM reverts with to name the gateways that hold its metadata.
 */
import { bytesToHex, parseHex, joinBytes } from '../../codec/hex.ts';
import { keccak256 } from '../../codec/keccak.ts';

export type Hex = `0x${string}`;

/** The arguments of `error OffchainLookup(address sender, string[] urls, bytes callData, bytes4 callbackFunction, bytes extraData)`. */
export interface OffchainLookup {
  /** Lower-case 0x address. */
  sender: Hex;
  urls: string[];
  /** Lower-case 0x hex. */
  callData: Hex;
  /** Lower-case 0x hex, 4 bytes. */
  callbackFunction: Hex;
  /** Lower-case 0x hex. */
  extraData: Hex;
}

const WORD = 32;
const UTF8 = new TextDecoder('utf-8', { fatal: true });
const UTF8_ENCODER = new TextEncoder();

/** 0x556f1830, from the signature, not typed by hand. */
const SELECTOR = keccak256(UTF8_ENCODER.encode('OffchainLookup(address,string[],bytes,bytes4,bytes)')).slice(0, 4);
export const OFFCHAIN_LOOKUP_SELECTOR = bytesToHex(SELECTOR) as Hex;

/** A word as a number when it is at most `max`, else undefined (offsets and lengths). */
function smallWord(body: Uint8Array, at: number, max: number): number | undefined {
  if (at < 0 || at + WORD > body.length) return undefined;
  for (let i = at; i < at + WORD - 6; i++) if (body[i] !== 0) return undefined;
  let value = 0;
  for (let i = at + WORD - 6; i < at + WORD; i++) value = value * 256 + body[i];
  return value <= max ? value : undefined;
}

function readBytes(body: Uint8Array, at: number): Uint8Array | undefined {
  const length = smallWord(body, at, body.length);
  if (length === undefined || at + WORD + length > body.length) return undefined;
  return body.slice(at + WORD, at + WORD + length);
}

function padded(length: number): number {
  return Math.ceil(length / WORD) * WORD;
}

function uintWord(value: number): Uint8Array {
  const word = new Uint8Array(WORD);
  let v = value;
  for (let i = WORD - 1; v > 0; i--, v = Math.floor(v / 256)) word[i] = v % 256;
  return word;
}

function encodeBytes(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(WORD + padded(bytes.length));
  out.set(uintWord(bytes.length), 0);
  out.set(bytes, WORD);
  return out;
}

/** The canonical ABI encoding of the error's arguments (Solidity's own layout). */
function encodeArguments(
  sender: Uint8Array,
  urls: readonly Uint8Array[],
  callData: Uint8Array,
  callback: Uint8Array,
  extraData: Uint8Array,
): Uint8Array {
  const urlParts = urls.map(encodeBytes);
  const urlOffsets: Uint8Array[] = [];
  let urlOffset = urls.length * WORD;
  for (const part of urlParts) {
    urlOffsets.push(uintWord(urlOffset));
    urlOffset += part.length;
  }
  const urlsTail = joinBytes([uintWord(urls.length), ...urlOffsets, ...urlParts]);
  const callDataTail = encodeBytes(callData);
  const extraTail = encodeBytes(extraData);
  const head = new Uint8Array(5 * WORD);
  head.set(sender, 12);
  head.set(uintWord(5 * WORD), WORD);
  head.set(uintWord(5 * WORD + urlsTail.length), 2 * WORD);
  head.set(callback, 3 * WORD);
  head.set(uintWord(5 * WORD + urlsTail.length + callDataTail.length), 4 * WORD);
  return joinBytes([head, urlsTail, callDataTail, extraTail]);
}

/**
 * The OffchainLookup in a revert's data, or null when the data is anything else: another error,
 * a truncated or non-canonical encoding (trailing bytes, dirty padding, offsets out of order),
 * URLs that are not UTF-8. Strict by re-encoding: what is accepted is exactly what Solidity emits.
 */
export function decodeOffchainLookup(revertData: Hex): OffchainLookup | null {
  const data = parseHex(revertData);
  if (!data || data.length < 4 + 5 * WORD) return null;
  for (let i = 0; i < 4; i++) if (data[i] !== SELECTOR[i]) return null;
  const body = data.subarray(4);
  const sender = body.slice(12, WORD);
  const urlsAt = smallWord(body, WORD, body.length);
  const callDataAt = smallWord(body, 2 * WORD, body.length);
  const callback = body.slice(3 * WORD, 3 * WORD + 4);
  const extraAt = smallWord(body, 4 * WORD, body.length);
  if (urlsAt === undefined || callDataAt === undefined || extraAt === undefined) return null;
  const count = smallWord(body, urlsAt, (body.length - urlsAt) / WORD);
  if (count === undefined) return null;
  const urlBytes: Uint8Array[] = [];
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    const relative = smallWord(body, urlsAt + WORD + i * WORD, body.length);
    if (relative === undefined) return null;
    const bytes = readBytes(body, urlsAt + WORD + relative);
    if (!bytes) return null;
    try {
      urls.push(UTF8.decode(bytes));
    } catch {
      return null;
    }
    urlBytes.push(bytes);
  }
  const callData = readBytes(body, callDataAt);
  const extraData = readBytes(body, extraAt);
  if (!callData || !extraData) return null;
  const canonical = encodeArguments(sender, urlBytes, callData, callback, extraData);
  if (canonical.length !== body.length) return null;
  for (let i = 0; i < body.length; i++) if (canonical[i] !== body[i]) return null;
  return {
    sender: bytesToHex(sender) as Hex,
    urls,
    callData: bytesToHex(callData) as Hex,
    callbackFunction: bytesToHex(callback) as Hex,
    extraData: bytesToHex(extraData) as Hex,
  };
}
