/**
 * Bytes are Uint8Array inside the library; hex only at the edges. Also the scalar checks every
 * input edge shares: JSON objects, uint32, hex of a length, address words and EIP-55.
 */
import { InvalidArgumentError } from '../errors/classes.ts';
import { keccak256 } from './keccak.ts';

const HEX_CHARS = '0123456789abcdef';
const BYTE_TO_HEX: string[] = [];
for (let i = 0; i < 256; i++) BYTE_TO_HEX.push(HEX_CHARS[i >> 4] + HEX_CHARS[i & 15]);

/** Lower-case hex with a 0x prefix. */
export function bytesToHex(bytes: Uint8Array): string {
  let out = '0x';
  for (let i = 0; i < bytes.length; i++) out += BYTE_TO_HEX[bytes[i]];
  return out;
}

/** Nibble value of an ASCII hex digit (either case), -1 for every other code below 128. */
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;
  NIBBLE['0123456789ABCDEF'.charCodeAt(i)] = i;
}

/**
 * Parses 0x-prefixed hex (any case, even length): the bytes, or an InvalidArgumentError naming what
 * is wrong (as viem's hexToBytes throws). Inside the library, `parseHex` reads untrusted hex and
 * lets its caller decide which error that is.
 */
export function hexToBytes(hex: string): Uint8Array {
  const bytes = parseHex(hex);
  if (bytes === undefined) {
    const what = typeof hex !== 'string' ? typeof hex : hex.length > 80 ? `${hex.slice(0, 80)}…` : hex;
    throw new InvalidArgumentError(`hexToBytes: not 0x-prefixed hex of whole bytes: ${what}`);
  }
  return bytes;
}

/** Parses 0x-prefixed hex (any case, even length); undefined on anything else. */
export function parseHex(hex: string): Uint8Array | undefined {
  if (typeof hex !== 'string' || hex.length < 2 || hex.length % 2 !== 0) return undefined;
  if (hex.charCodeAt(0) !== 48 || (hex.charCodeAt(1) | 0x20) !== 120) return undefined; // "0x" / "0X"
  const length = (hex.length - 2) >> 1;
  const out = new Uint8Array(length);
  for (let i = 0, j = 2; i < length; i++, j += 2) {
    const a = hex.charCodeAt(j);
    const b = hex.charCodeAt(j + 1);
    const hi = NIBBLE[a & 127];
    const lo = NIBBLE[b & 127];
    // A code of 128 or more is never hex, though its low 7 bits may look like a digit.
    if ((hi | lo) < 0 || (a | b) > 127) return undefined;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

export const UINT32_MAX = 0xffff_ffff;

/** A whole number from 0 to `max`; not -0 (JSON.parse reads "-0" as -0, a store would keep it as 0). */
export function isUint(value: unknown, max = UINT32_MAX): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max && !Object.is(value, -0);
}

/** The value of a decimal integer of at most 10 digits without leading zeros, else undefined. */
export function decimal(text: string): number | undefined {
  return /^(0|[1-9][0-9]{0,9})$/.test(text) ? Number(text) : undefined;
}

/** A JSON object: not null, not an array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const HEX_STRING = /^0x[0-9a-fA-F]*$/;

/** True for "0x" followed by exactly `bytes` bytes of hex, any case. */
export function isHexOfLength(value: unknown, bytes: number): value is string {
  if (typeof value !== 'string' || value.length !== 2 + bytes * 2) return false;
  return HEX_STRING.test(value); // lower-case 0x only, digits in either case
}

/** Concatenates the parts (a list, not a spread: many chunks would overflow the call stack). */
export function joinBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** Big-endian unsigned 32-bit read. */
export function readUint32(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset] << 24) | (bytes[offset + 1] << 16) | (bytes[offset + 2] << 8) | bytes[offset + 3]) >>> 0;
}

/** A lower-case 20-byte address as the 32-byte word Hyperlane uses (left-padded with zeros); a word stays as it is. */
export function addressWord(hex: string): string {
  return hex.length === 42 ? '0x' + '0'.repeat(24) + hex.slice(2) : hex;
}

/**
 * EIP-55: in a mixed-case address a letter is upper-case iff the matching nibble of
 * keccak256(lower-case hex) is >= 8. All-lower or all-upper case carries no checksum (as ethers'
 * getAddress reads it; viem's strict mode would also check all-upper).
 */
export function hasValidChecksum(address: string): boolean {
  const hex = address.slice(2);
  if (hex === hex.toLowerCase() || hex === hex.toUpperCase()) return true;
  const hash = keccak256(new TextEncoder().encode(hex.toLowerCase()));
  for (let i = 0; i < hex.length; i++) {
    const c = hex[i];
    if (c >= '0' && c <= '9') continue;
    const nibble = (hash[i >> 1] >> (i % 2 === 0 ? 4 : 0)) & 15;
    if ((c >= 'A' && c <= 'F') !== nibble >= 8) return false;
  }
  return true;
}
