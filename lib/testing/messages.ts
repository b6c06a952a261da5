/**
 * Hyperlane messages for tests (docs/embedding.md#test-tooling), encoded with the package's own hex
 * and keccak code so `relayer-api/testing` needs nothing outside the package; the package's tests
 * check each builder against viem's encoding (test/unit/testing/messages.test.ts).
 */
import { bytesToHex, parseHex, joinBytes } from '../codec/hex.ts';
import { InvalidArgumentError, OutOfRangeError } from '../errors/classes.ts';
import { keccak256 } from '../codec/keccak.ts';

export interface MessageFields {
  /** Message.sol VERSION is 3; anything else only to test that it is refused. */
  version?: number;
  nonce?: number;
  origin?: number;
  /** A 20-byte address (left-padded to a word, as Mailbox.dispatch does) or a 32-byte word. */
  sender?: string;
  destination?: number;
  /** A 20-byte address or a 32-byte word. */
  recipient?: string;
  body?: string;
}

export const DEFAULT_SENDER = '0x1111111111111111111111111111111111111111';
export const DEFAULT_RECIPIENT = '0x2222222222222222222222222222222222222222';

/** The bytes of 0x-hex, or an InvalidArgumentError naming `what`. */
export function bytesOf(hex: string, what: string): Uint8Array {
  const bytes = parseHex(hex);
  if (bytes === undefined) throw new InvalidArgumentError(`${what}: not 0x-prefixed hex of whole bytes: ${hex}`);
  return bytes;
}

/** Big-endian bytes of `value` in `size` bytes. */
export function uintBytes(value: number | bigint, size: number): Uint8Array {
  let v = BigInt(value);
  if (v < 0n || v >= 1n << BigInt(size * 8)) throw new OutOfRangeError(`${value} does not fit ${size} bytes`);
  const out = new Uint8Array(size);
  for (let i = size - 1; i >= 0; i--, v >>= 8n) out[i] = Number(v & 0xffn);
  return out;
}

/** A 20-byte address left-padded to the 32-byte word Hyperlane uses; a word is kept as it is. */
export function word(hex: string, what = 'word'): Uint8Array {
  const bytes = bytesOf(hex, what);
  if (bytes.length > 32) throw new OutOfRangeError(`${what}: more than 32 bytes`);
  const out = new Uint8Array(32);
  out.set(bytes, 32 - bytes.length);
  return out;
}

/** A Hyperlane message packed as Message.sol `formatMessage` does, lower-case 0x-hex. */
export function hyperlaneMessage(f: MessageFields = {}): string {
  return bytesToHex(
    joinBytes([
      uintBytes(f.version ?? 3, 1),
      uintBytes(f.nonce ?? 0, 4),
      uintBytes(f.origin ?? 1, 4),
      word(f.sender ?? DEFAULT_SENDER, 'sender'),
      uintBytes(f.destination ?? 8453, 4),
      word(f.recipient ?? DEFAULT_RECIPIENT, 'recipient'),
      bytesOf(f.body ?? '0x68656c6c6f', 'body'),
    ]),
  );
}

/** A message's id: keccak256 of its bytes, lower-case 0x-hex. */
export function messageId(message: string): string {
  return bytesToHex(keccak256(bytesOf(message, 'message')));
}

/** Transaction hash number `n`: `n` as a 32-byte word. */
export function txHash(n: number): string {
  return '0x' + n.toString(16).padStart(64, '0');
}
