/**
 * Request validation for both POST endpoints. Pure functions from parsed JSON to typed values, or a
 * RelayError 'invalid_request' whose message names the offending field. Unknown keys are ignored
 * (as the reference relayer's serde structs do); only own properties are read, so `__proto__` or
 * `constructor` keys in a body can neither match nor pollute anything.
 */
import { RelayError } from '../errors/classes.ts';
import { decimal, isHexOfLength, isPlainObject, isUint, UINT32_MAX } from '../codec/hex.ts';
import type { ChainConfig, MerkleInsertion } from '../types.ts';

export const MAX_ORIGIN_CHAIN_BYTES = 128;

const utf8 = new TextEncoder();

function invalid(message: string): RelayError {
  return new RelayError('invalid_request', message);
}

function own(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/**
 * A client's string shown back in an error message: at most 64 characters, quoted, every character
 * outside printable ASCII escaped (no control or bidi characters reach a terminal or a log).
 */
function quoteForMessage(value: string): string {
  const chars = Array.from(value);
  const shown = chars.length > 64 ? chars.slice(0, 64).join('') + '…' : value;
  return JSON.stringify(shown).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Parses a request body; malformed JSON is the client's error, never a 500. */
export function parseJsonBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw invalid('request body is not valid JSON');
  }
}

export interface ValidRelayRequest {
  chain: ChainConfig;
  /** lower-case, the dedup key's second half */
  txHash: string;
}

/**
 * POST /relay body (docs/api.md#post-relay, docs/design.md#check-order). `chains` is the config's
 * own `chains` object (or a Map of it); only its own keys name chains, never a prototype's.
 */
export function validateRelayRequest(
  body: unknown,
  chains: ReadonlyMap<string, ChainConfig> | Readonly<Record<string, ChainConfig>>,
): ValidRelayRequest {
  if (!isPlainObject(body)) throw invalid('request body must be a JSON object');
  const originChain = own(body, 'origin_chain');
  const txHash = own(body, 'tx_hash');
  if (originChain === undefined) throw invalid('origin_chain is required');
  if (typeof originChain !== 'string') throw invalid('origin_chain must be a string');
  if (originChain.length === 0) throw invalid('origin_chain must not be empty');
  if (utf8.encode(originChain).length > MAX_ORIGIN_CHAIN_BYTES) {
    throw invalid(`origin_chain exceeds ${MAX_ORIGIN_CHAIN_BYTES} bytes`);
  }
  if (txHash === undefined) throw invalid('tx_hash is required');
  if (typeof txHash !== 'string') throw invalid('tx_hash must be a string');
  if (txHash.length === 0) throw invalid('tx_hash must not be empty');
  // A hash pasted with a space or a newline is 0x + 64 hex otherwise: say what is wrong with it.
  if (/^\s|\s$/.test(txHash)) throw invalid('tx_hash must not begin or end with whitespace');
  if (txHash.length > 66) throw invalid('tx_hash exceeds 66 characters');
  const lower = txHash.toLowerCase();
  if (!txHash.startsWith('0x') || !isHexOfLength(lower, 32)) {
    throw invalid('tx_hash must be 0x followed by 64 hex digits');
  }
  const chain =
    chains instanceof Map
      ? chains.get(originChain)
      : Object.hasOwn(chains, originChain)
        ? (chains as Readonly<Record<string, ChainConfig>>)[originChain]
        : undefined;
  if (chain === undefined) {
    throw invalid(
      `origin_chain ${quoteForMessage(originChain)} is not a chain known to this relayer; GET /chains lists the chains it knows`,
    );
  }
  return { chain, txHash: lower };
}

/** POST /merkle_tree_insertions body (docs/api.md#post-merkle_tree_insertions, docs/design.md#merkle-tree-insertions). */
export function validateMerkleRequest(body: unknown): { records: MerkleInsertion[]; sent: unknown[] } {
  if (!isPlainObject(body)) throw invalid('request body must be a JSON object');
  const list = own(body, 'merkle_tree_insertions');
  if (!Array.isArray(list)) throw invalid('merkle_tree_insertions must be an array');
  if (list.length === 0) throw invalid('merkle_tree_insertions must hold at least one record');
  const records: MerkleInsertion[] = new Array(list.length);
  // A body holds up to ~10 000 records: the loop builds no string unless a record is refused.
  for (let i = 0; i < list.length; i++) {
    const item: unknown = list[i];
    if (!isPlainObject(item)) throw invalidRecord(i, ' must be an object');
    const chain = own(item, 'chain');
    const block = own(item, 'insertion_block_number');
    const leaf = own(item, 'leaf_index');
    const id = own(item, 'message_id');
    if (!isUint(chain, UINT32_MAX)) throw invalidRecord(i, `.chain must be an integer from 0 to ${UINT32_MAX}`);
    if (!isUint(block, Number.MAX_SAFE_INTEGER)) {
      throw invalidRecord(i, `.insertion_block_number must be an integer from 0 to ${Number.MAX_SAFE_INTEGER}`);
    }
    if (!isUint(leaf, UINT32_MAX)) throw invalidRecord(i, `.leaf_index must be an integer from 0 to ${UINT32_MAX}`);
    if (!isHexOfLength(id, 32)) throw invalidRecord(i, '.message_id must be 0x followed by 64 hex digits');
    records[i] = { chain, insertion_block_number: block, leaf_index: leaf, message_id: id.toLowerCase() };
  }
  return { records, sent: list };
}

/** `problem` follows the record's path as written: ".chain must …" or " must …". */
function invalidRecord(index: number, problem: string): RelayError {
  return invalid(`merkle_tree_insertions[${index}]${problem}`);
}

export interface MerkleRange {
  domain: number;
  start: number;
  end: number;
}

export const MAX_MERKLE_LIST = 10_000;

/** GET /merkle_tree_insertions query (docs/design.md#merkle-tree-insertions). */
export function validateMerkleRange(params: URLSearchParams): MerkleRange {
  const read = (name: string): number => {
    const values = params.getAll(name);
    if (values.length !== 1) throw invalid(`${name} is required exactly once`);
    const value = decimal(values[0]);
    if (value === undefined || value > UINT32_MAX) throw invalid(`${name} must be an integer from 0 to ${UINT32_MAX}`);
    return value;
  };
  const domain = read('domain_id');
  const start = read('leaf_index_start');
  const end = read('leaf_index_end');
  if (start > end) throw invalid('leaf_index_start must not exceed leaf_index_end');
  if (end - start + 1 > MAX_MERKLE_LIST) throw invalid(`at most ${MAX_MERKLE_LIST} leaves per query`);
  return { domain, start, end };
}
