/** Bytes are Uint8Array inside the library; hex only at the edges. */

const HEX_CHARS = '0123456789abcdef';
const BYTE_TO_HEX: string[] = [];
for (let i = 0; i < 256; i++) BYTE_TO_HEX.push(HEX_CHARS[i >> 4] + HEX_CHARS[i & 15]);

/** Lower-case hex with a 0x prefix. */
export function bytesToHex(bytes: Uint8Array): string {
  let out = '0x';
  for (let i = 0; i < bytes.length; i++) out += BYTE_TO_HEX[bytes[i]];
  return out;
}

function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48; // 0-9
  if (code >= 97 && code <= 102) return code - 87; // a-f
  if (code >= 65 && code <= 70) return code - 55; // A-F
  return -1;
}

/**
 * Parses 0x-prefixed hex (any case, even length). Returns undefined on anything else, so callers
 * decide which error that is.
 */
export function hexToBytes(hex: string): Uint8Array | undefined {
  if (typeof hex !== 'string' || hex.length < 2 || hex.length % 2 !== 0) return undefined;
  if (hex.charCodeAt(0) !== 48 || (hex.charCodeAt(1) | 0x20) !== 120) return undefined; // "0x" / "0X"
  const out = new Uint8Array((hex.length - 2) / 2);
  for (let i = 0, j = 2; i < out.length; i++, j += 2) {
    const hi = nibble(hex.charCodeAt(j));
    const lo = nibble(hex.charCodeAt(j + 1));
    if (hi < 0 || lo < 0) return undefined;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

/** True for "0x" followed by exactly `bytes` bytes of hex, any case. */
export function isHexOfLength(value: unknown, bytes: number): value is string {
  if (typeof value !== 'string' || value.length !== 2 + bytes * 2) return false;
  if (value.charCodeAt(0) !== 48 || value.charCodeAt(1) !== 120) return false; // lower-case 0x only
  for (let i = 2; i < value.length; i++) if (nibble(value.charCodeAt(i)) < 0) return false;
  return true;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
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

/** A 20-byte address as the 32-byte word Hyperlane uses (left-padded with zeros). */
export function addressToWord(address: Uint8Array): Uint8Array {
  if (address.length === 32) return address;
  const word = new Uint8Array(32);
  word.set(address, 32 - address.length);
  return word;
}

/**
 * Normalises an address given as 20-byte or 32-byte hex (any case) to lower-case 32-byte word hex.
 * Returns undefined when it is neither.
 */
export function normalizeAddressWord(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const lower = value.toLowerCase();
  if (isHexOfLength(lower, 20)) return '0x' + '0'.repeat(24) + lower.slice(2);
  if (isHexOfLength(lower, 32)) return lower;
  return undefined;
}
