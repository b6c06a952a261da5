/**
 * One validator's signed checkpoint (docs/isms.md#validators-and-checkpoints), as Hyperlane's
 * validators write it:
 * `{"value": {"checkpoint": {"merkle_tree_hook_address", "mailbox_domain", "root", "index"},
 * "message_id"}, "signature": {...}, "serialized_signature": "0x<65 bytes>"}`.
 * The signer is recovered from the digest the ISM checks (CheckpointLib):
 * `domainHash = keccak256(uint32 origin ‖ bytes32 hook ‖ "HYPERLANE")`,
 * `digest = EIP-191(keccak256(domainHash ‖ root ‖ uint32 index ‖ messageId))`.
 * Everything in it is checked: a checkpoint for another domain, hook, index or message, or signed
 * by anyone but the validator, is refused. The signature is put in the form the ISM's ECDSA
 * accepts (v 27/28, low s).
 */
import { concat, encodePacked, keccak256, recoverMessageAddress, type Address, type Hex } from 'viem';
import { isPlainObject } from '../../codec/hex.ts';

export interface SignedCheckpoint {
  hook: Hex;
  domain: number;
  root: Hex;
  index: number;
  messageId: Hex;
  /** 65 bytes, r ‖ s ‖ v with v 27/28 and low s. */
  signature: Hex;
}

const WORD = /^0x[0-9a-fA-F]{64}$/;
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** keccak256(abi.encodePacked(uint32 origin, bytes32 hook, "HYPERLANE")) */
export function checkpointDomainHash(domain: number, hook: Hex): Hex {
  return keccak256(encodePacked(['uint32', 'bytes32', 'string'], [domain, hook, 'HYPERLANE']));
}

/** The payload validators sign with EIP-191 (the ISM's digest before the prefix). */
export function checkpointPayload(c: Omit<SignedCheckpoint, 'signature'>): Hex {
  return keccak256(
    encodePacked(
      ['bytes32', 'bytes32', 'uint32', 'bytes32'],
      [checkpointDomainHash(c.domain, c.hook), c.root, c.index, c.messageId],
    ),
  );
}

/** 65 bytes with v 27/28 and s in the lower half (the same signer), or undefined. */
export function normalizeSignature(hex: unknown): Hex | undefined {
  if (typeof hex !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(hex)) return undefined;
  let v = Number.parseInt(hex.slice(130, 132), 16);
  if (v < 27) v += 27;
  if (v !== 27 && v !== 28) return undefined;
  let s = BigInt(`0x${hex.slice(66, 130)}`);
  if (s === 0n || s >= SECP256K1_N) return undefined;
  if (s > SECP256K1_N / 2n) {
    s = SECP256K1_N - s;
    v = v === 27 ? 28 : 27;
  }
  return concat([hex.slice(0, 66) as Hex, `0x${s.toString(16).padStart(64, '0')}`, `0x${v.toString(16)}`]);
}

/** The checkpoint in `text`, or why not. Shapes only; `verifyCheckpoint` checks what it says. */
export function parseCheckpoint(text: string): SignedCheckpoint | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (!isPlainObject(json) || !isPlainObject(json.value) || !isPlainObject(json.value.checkpoint))
    return 'not a checkpoint';
  const { checkpoint, message_id } = json.value;
  const { merkle_tree_hook_address: hook, mailbox_domain: domain, root, index } = checkpoint;
  if (typeof hook !== 'string' || !WORD.test(hook)) return 'bad merkle_tree_hook_address';
  if (!Number.isInteger(domain) || (domain as number) < 0 || (domain as number) > 0xffffffff)
    return 'bad mailbox_domain';
  if (typeof root !== 'string' || !WORD.test(root)) return 'bad root';
  if (!Number.isInteger(index) || (index as number) < 0 || (index as number) > 0xffffffff) return 'bad index';
  if (typeof message_id !== 'string' || !WORD.test(message_id)) return 'bad message_id';
  const signature = normalizeSignature(json.serialized_signature);
  if (!signature) return 'bad signature';
  return {
    hook: hook.toLowerCase() as Hex,
    domain: domain as number,
    root: root.toLowerCase() as Hex,
    index: index as number,
    messageId: message_id.toLowerCase() as Hex,
    signature,
  };
}

/** Null when `c` is `validator`'s signature over what was expected; else why not. */
export async function verifyCheckpoint(
  c: SignedCheckpoint,
  expected: { validator: Address; domain: number; hook: Hex; index: number; messageId?: Hex },
): Promise<string | null> {
  if (c.domain !== expected.domain) return 'another domain';
  if (c.hook !== expected.hook.toLowerCase()) return 'another merkle tree hook';
  if (c.index !== expected.index) return 'another index';
  if (expected.messageId !== undefined && c.messageId !== expected.messageId.toLowerCase()) return 'another message';
  let signer: Address;
  try {
    signer = await recoverMessageAddress({ message: { raw: checkpointPayload(c) }, signature: c.signature });
  } catch {
    return 'bad signature';
  }
  return signer.toLowerCase() === expected.validator.toLowerCase() ? null : 'bad signature';
}
