/**
 * Property-based tests (fast-check, fixed seed, bounded runs) on everything that reads input from
 * outside: the log decoder, the message parser, the receipt parser, request validation, the config
 * loader, and the relay pipeline as a whole. Each returns a correct value or its own typed error
 * (DecodeError, RelayError, ConfigError, the fetcher's attempt failure), never anything else; and
 * where a simple independent model of the rule exists (viem's canonical ABI encoding, a DataView
 * read, a regular expression), acceptance is checked against that model exactly.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { encodeAbiParameters, keccak256 as viemKeccak, toHex, type Hex } from 'viem';
import { DecodeError, DISPATCH_TOPIC, MESSAGE_SENT_TOPIC, decodeDispatchLog, decodeMessageSentLog } from '../lib/abi.ts';
import { extractMessages } from '../lib/cctp.ts';
import { ConfigError, parseConfig } from '../lib/config.ts';
import { RelayError, RpcError, type RpcFailureCode } from '../lib/errors.ts';
import { hexToBytes } from '../lib/hex.ts';
import { createRelayApi } from '../lib/http/handler.ts';
import { parseHyperlaneMessage } from '../lib/message.ts';
import { createPolicy } from '../lib/policy.ts';
import { createRelayPipeline } from '../lib/pipeline.ts';
import { createMemoryOutbox } from '../lib/outbox.ts';
import { parseReceipt } from '../lib/receipt.ts';
import type { ChainConfig, Log, Receipt, RelayerConfig } from '../lib/types.ts';
import { parseJsonBody, validateMerkleRange, validateMerkleRequest, validateRelayRequest } from '../lib/validate.ts';
import { testConfig } from './helpers/config.ts';
import { CCTP_V2_TRANSMITTER, dispatchLog, MAILBOX, messageSentLog, rpcReceipt, transferLogs, txHash } from './helpers/fixtures.ts';

const SEED = 0x7e1a_b1e;
const RUNS = { numRuns: 300, seed: SEED };

/** Runs `fn`; a throw of one of `allowed` is returned as the error, anything else fails the property. */
function outcome<T>(fn: () => T, ...allowed: Array<abstract new (...args: never[]) => Error>): { ok: true; value: T } | { ok: false; error: Error } {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    if (allowed.some((type) => error instanceof type)) return { ok: false, error: error as Error };
    throw error;
  }
}

/** Counts accepted and refused inputs, so a property whose generator never reaches one side fails. */
function tally() {
  let accepted = 0;
  let refused = 0;
  return {
    add(ok: boolean) {
      if (ok) accepted++;
      else refused++;
    },
    expectBoth(min: number) {
      assert.ok(accepted >= min && refused >= min, `generator reach: ${accepted} accepted, ${refused} refused (want >= ${min} each)`);
    },
  };
}

const bytes = (max: number) => fc.uint8Array({ maxLength: max, size: 'max' });
const word = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => toHex(b));
const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => toHex(b));
const u32 = fc.integer({ min: 0, max: 0xffffffff });

/** Breaks a byte array a little: flip, truncate, extend, or overwrite a word. */
const mutation = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.noBias(fc.nat()), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.noBias(fc.nat()) }),
  fc.record({ kind: fc.constant('extend' as const), extra: bytes(40) }),
  fc.record({ kind: fc.constant('word' as const), at: fc.noBias(fc.nat()), value: fc.uint8Array({ minLength: 32, maxLength: 32 }) }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(data: Uint8Array, m: Mutation): Uint8Array {
  const out = data.slice();
  if (m.kind === 'flip') {
    if (out.length > 0) out[m.at % out.length] ^= 1 << m.bit;
    return out;
  }
  if (m.kind === 'truncate') return out.slice(0, out.length === 0 ? 0 : m.at % out.length);
  if (m.kind === 'extend') return Uint8Array.from([...out, ...m.extra]);
  const words = Math.floor(out.length / 32);
  if (words > 0) out.set(m.value, (m.at % words) * 32);
  return out;
}

function canonicalBytesData(message: Uint8Array): Uint8Array {
  return hexToBytes(encodeAbiParameters([{ type: 'bytes' }], [toHex(message)]))!;
}

describe('log decoder (DESIGN 3: strict decoding)', () => {
  test('a mutated Dispatch log decodes only if its data is exactly the canonical ABI encoding of what was decoded (viem), otherwise DecodeError', () => {
    const seen = tally();
    fc.assert(
      fc.property(address, u32, word, bytes(300), fc.option(fc.array(mutation, { minLength: 1, maxLength: 2 })), (sender, destination, recipient, message, mutations) => {
        const rpc = dispatchLog(MAILBOX, { sender, destination, recipient: ('0x' + recipient.slice(26)) as Hex });
        const canonical = canonicalBytesData(message);
        const data = mutations === null ? canonical : mutations.reduce(mutate, canonical);
        const log: Log = { address: MAILBOX, topics: rpc.topics, data };
        const result = outcome(() => decodeDispatchLog(log), DecodeError);
        if (mutations === null) assert.ok(result.ok, 'a canonical log decodes');
        else seen.add(result.ok);
        if (!result.ok) return;
        assert.deepEqual(data, canonicalBytesData(result.value.message), 'accepted data is canonical');
        assert.equal(result.value.sender, sender.toLowerCase());
        assert.equal(result.value.destination, destination);
      }),
      RUNS,
    );
    seen.expectBoth(20);
  });

  test('a valid MessageSent log always decodes to its message; a mutated one decodes only when canonical', () => {
    const seen = tally();
    fc.assert(
      fc.property(bytes(400), fc.option(fc.array(mutation, { minLength: 1, maxLength: 2 })), (message, mutations) => {
        const canonical = canonicalBytesData(message);
        const data = mutations === null ? canonical : mutations.reduce(mutate, canonical);
        const result = outcome(() => decodeMessageSentLog({ address: CCTP_V2_TRANSMITTER, topics: [MESSAGE_SENT_TOPIC], data }), DecodeError);
        if (mutations === null) assert.ok(result.ok && toHex(result.value) === toHex(message), 'a valid log decodes to its message');
        if (mutations !== null) seen.add(result.ok);
        if (result.ok) assert.deepEqual(data, canonicalBytesData(result.value));
      }),
      RUNS,
    );
    seen.expectBoth(10);
  });

  test('logs of arbitrary shape (any JSON in every field) give a value or DecodeError, never another exception', () => {
    const field = fc.oneof(fc.anything(), fc.constant(DISPATCH_TOPIC), word, bytes(100));
    fc.assert(
      fc.property(field, fc.oneof(fc.array(field, { maxLength: 5 }), fc.anything()), field, (addr, topics, data) => {
        const log = { address: addr, topics, data } as unknown as Log;
        outcome(() => decodeDispatchLog(log), DecodeError);
        outcome(() => decodeMessageSentLog(log), DecodeError);
      }),
      RUNS,
    );
  });
});

describe('message parser (Hyperlane v3)', () => {
  test('arbitrary bytes: accepted exactly when >= 77 bytes and version 3; fields equal a DataView read, id equals viem keccak256', () => {
    const seen = tally();
    // Lengths drawn evenly (not biased to short), half of them stamped with version 3.
    const raw = fc.tuple(fc.boolean(), fc.uint8Array({ maxLength: 200, size: 'max' })).map(([v3, b]) => (v3 && b.length > 0 ? Uint8Array.from([3, ...b.subarray(1)]) : b));
    fc.assert(
      fc.property(raw, (input) => {
        const result = outcome(() => parseHyperlaneMessage(input), DecodeError);
        assert.equal(result.ok, input.length >= 77 && input[0] === 3);
        seen.add(result.ok);
        if (!result.ok) return;
        const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
        const m = result.value;
        assert.equal(m.id, viemKeccak(input));
        assert.equal(m.nonce, view.getUint32(1));
        assert.equal(m.origin, view.getUint32(5));
        assert.equal(m.sender, toHex(input.subarray(9, 41)));
        assert.equal(m.destination, view.getUint32(41));
        assert.equal(m.recipient, toHex(input.subarray(45, 77)));
        assert.equal(toHex(m.body), toHex(input.subarray(77)));
      }),
      { ...RUNS, numRuns: 500 },
    );
    seen.expectBoth(50);
  });
});

describe('receipt parser (DESIGN 3: read only status and logs)', () => {
  const TX = txHash(0xbeef);

  /** Replaces the value at a random path of `value` with `replacement` (undefined deletes). */
  function replaceAt(value: unknown, path: number[], replacement: unknown): unknown {
    if (path.length === 0 || typeof value !== 'object' || value === null) return replacement;
    const keys = Object.keys(value);
    if (keys.length === 0) return replacement;
    const key = keys[path[0] % keys.length];
    const next = replaceAt((value as Record<string, unknown>)[key], path.slice(1), replacement);
    // JSON has no holes in arrays: deleting an element removes it.
    if (Array.isArray(value)) return next === undefined ? value.filter((_, i) => i !== Number(key)) : value.map((v, i) => (i === Number(key) ? next : v));
    const copy: Record<string, unknown> = { ...value };
    if (next === undefined) delete copy[key];
    else copy[key] = next;
    return copy;
  }


  // A receipt that does not parse is a failure of that endpoint (the fetcher fails over).
  const RPC_RECEIPT_CODES: ReadonlySet<RpcFailureCode> = new Set(['malformed_receipt', 'wrong_transaction']);

  test('mutated and arbitrary receipts give a Receipt (lower-case, well-formed logs) or the attempt failure that makes the fetcher fail over', () => {
    const seen = tally();
    const base = rpcReceipt(TX, [messageSentLog(), dispatchLog(MAILBOX)]);
    const receipt = fc.oneof(
      fc.tuple(fc.array(fc.nat(), { maxLength: 4 }), fc.oneof(fc.jsonValue(), fc.constant(undefined))).map(([path, v]) => replaceAt(base, path, v)),
      fc.jsonValue(),
    );
    fc.assert(
      fc.property(receipt, (value) => {
        let parsed: Receipt;
        try {
          parsed = parseReceipt(value, TX);
        } catch (error) {
          assert.ok(error instanceof RpcError && RPC_RECEIPT_CODES.has(error.code), `unexpected ${String(error)}`);
          seen.add(false);
          return;
        }
        seen.add(true);
        assert.equal(typeof parsed.success, 'boolean');
        for (const log of parsed.logs) {
          assert.match(log.address, /^0x[0-9a-f]{40}$/);
          assert.ok(log.topics.length <= 4);
          for (const t of log.topics) assert.match(t, /^0x[0-9a-f]{64}$/);
          assert.ok(log.data instanceof Uint8Array);
        }
      }),
      { ...RUNS, numRuns: 500 },
    );
    seen.expectBoth(50);
  });
});

describe('request validation (spec 2.4, DESIGN 3-4)', () => {
  const chains = new Map<string, ChainConfig>(Object.entries(testConfig().chains));

  test('parseJsonBody: any text gives JSON.parse\'s value or invalid_request', () => {
    const seen = tally();
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.json(), fc.json().map((j) => j.slice(0, -1)));
    fc.assert(
      fc.property(text, (t) => {
        const result = outcome(() => parseJsonBody(t), RelayError);
        seen.add(result.ok);
        if (result.ok) assert.deepEqual(result.value, JSON.parse(t));
        else assert.equal((result.error as RelayError).reason, 'invalid_request');
      }),
      { ...RUNS, numRuns: 500 },
    );
    seen.expectBoth(50);
  });

  /** The rule of spec 2.4 / DESIGN 3 written independently: own keys, 0x + 64 hex, a configured name. */
  function relayModel(body: unknown): { chain: ChainConfig; txHash: string } | undefined {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const originChain = Object.hasOwn(body, 'origin_chain') ? (body as Record<string, unknown>).origin_chain : undefined;
    const hash = Object.hasOwn(body, 'tx_hash') ? (body as Record<string, unknown>).tx_hash : undefined;
    if (typeof originChain !== 'string' || typeof hash !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(hash)) return undefined;
    const chain = chains.get(originChain);
    return chain && { chain, txHash: hash.toLowerCase() };
  }

  const hexHash = fc.uint8Array({ minLength: 32, maxLength: 32 }).chain((b) =>
    fc.constantFrom(toHex(b), toHex(b).toUpperCase(), '0x' + toHex(b).slice(2).toUpperCase(), toHex(b).slice(0, -1), toHex(b) + '0', toHex(b).slice(2)),
  );
  const originChain = fc.oneof(
    fc.constantFrom('ethereum', 'base', 'Ethereum', 'ethereum ', '', '__proto__', 'constructor', 'toString', 'x'.repeat(200)),
    fc.string(),
    fc.jsonValue(),
  );
  const relayBody = fc.oneof(
    fc.record({ origin_chain: fc.constantFrom('ethereum', 'base'), tx_hash: hexHash, extra: fc.jsonValue() }, { requiredKeys: ['origin_chain', 'tx_hash'] }),
    fc.record({ origin_chain: originChain, tx_hash: fc.oneof(hexHash, fc.jsonValue()) }, { requiredKeys: [] }),
    fc.record({ origin_chain: originChain, tx_hash: hexHash, extra: fc.jsonValue() }),
    fc.jsonValue(),
    // Bodies that carry the fields under __proto__ or constructor, parsed as JSON so the key is own.
    fc.record({ origin_chain: fc.oneof(fc.constant('ethereum'), originChain), tx_hash: hexHash }).chain((inner) =>
      fc.constantFrom(`{"__proto__":${JSON.stringify(inner)}}`, `{"constructor":{"prototype":${JSON.stringify(inner)}}}`, `{"__proto__":{"tx_hash":"x"},"origin_chain":${JSON.stringify(inner.origin_chain)},"tx_hash":${JSON.stringify(inner.tx_hash)}}`).map((t) => JSON.parse(t) as unknown),
    ),
  );

  test('validateRelayRequest accepts exactly what the model accepts, with the same chain and lower-case hash; otherwise invalid_request', () => {
    const seen = tally();
    fc.assert(
      fc.property(relayBody, (body) => {
        const expected = relayModel(body);
        const result = outcome(() => validateRelayRequest(body, chains), RelayError);
        assert.equal(result.ok, expected !== undefined, JSON.stringify(body));
        seen.add(result.ok);
        if (result.ok) assert.deepEqual(result.value, expected);
        else assert.equal((result.error as RelayError).reason, 'invalid_request');
        assert.equal(({} as Record<string, unknown>).origin_chain, undefined, 'Object.prototype untouched');
      }),
      { ...RUNS, numRuns: 1000 },
    );
    seen.expectBoth(50);
  });

  const isUint = (v: unknown, max: number) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max && !Object.is(v, -0);

  function merkleModel(body: unknown): unknown[] | undefined {
    if (typeof body !== 'object' || body === null || Array.isArray(body) || !Object.hasOwn(body, 'merkle_tree_insertions')) return undefined;
    const list = (body as Record<string, unknown>).merkle_tree_insertions;
    if (!Array.isArray(list) || list.length === 0) return undefined;
    const out: unknown[] = [];
    for (const r of list) {
      if (typeof r !== 'object' || r === null || Array.isArray(r)) return undefined;
      const get = (k: string) => (Object.hasOwn(r, k) ? (r as Record<string, unknown>)[k] : undefined);
      const id = get('message_id');
      if (!isUint(get('chain'), 2 ** 32 - 1) || !isUint(get('insertion_block_number'), 2 ** 53 - 1) || !isUint(get('leaf_index'), 2 ** 32 - 1)) return undefined;
      if (typeof id !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(id)) return undefined;
      out.push({ chain: get('chain'), insertion_block_number: get('insertion_block_number'), leaf_index: get('leaf_index'), message_id: id.toLowerCase() });
    }
    return out;
  }

  const hostileNumber = fc.oneof(
    fc.integer({ min: 0, max: 2 ** 32 - 1 }),
    fc.constantFrom(-0, -1, 1.5, 2 ** 32, 2 ** 53 - 1, 2 ** 53, 2 ** 64, Infinity, -Infinity, NaN, 1e-7, '1', '0x1', null, true),
    fc.double(),
    fc.jsonValue(),
  );
  const validRecord = fc.record({
    chain: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
    insertion_block_number: fc.oneof(fc.nat(), fc.constant(2 ** 53 - 1)),
    leaf_index: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
    message_id: fc.uint8Array({ minLength: 32, maxLength: 32 }).chain((b) => fc.constantFrom(toHex(b), '0x' + toHex(b).slice(2).toUpperCase())),
  });
  const FIELDS = ['chain', 'insertion_block_number', 'leaf_index', 'message_id', 'extra'] as const;
  // A valid record, or one with a single field replaced (or removed) by a hostile value.
  const record = fc.oneof(
    validRecord,
    fc.tuple(validRecord, fc.constantFrom(...FIELDS), fc.option(fc.oneof(hostileNumber, hexHash))).map(([r, field, value]) => {
      const copy: Record<string, unknown> = { ...r };
      if (value === null) delete copy[field];
      else copy[field] = value;
      return copy;
    }),
  );
  const merkleBody = fc.oneof(
    fc.record({ merkle_tree_insertions: fc.array(record, { maxLength: 4 }) }),
    fc.record({ merkle_tree_insertions: fc.array(fc.oneof(record, fc.jsonValue()), { maxLength: 3 }) }),
    fc.jsonValue(),
  );

  test('validateMerkleRequest accepts exactly the model\'s records (uint32, 0..2^53-1, 0x + 64 hex, -0 refused); otherwise invalid_request', () => {
    const seen = tally();
    fc.assert(
      fc.property(merkleBody, (body) => {
        const expected = merkleModel(body);
        const result = outcome(() => validateMerkleRequest(body), RelayError);
        assert.equal(result.ok, expected !== undefined);
        seen.add(result.ok);
        if (result.ok) {
          assert.deepEqual(result.value.records, expected);
          assert.equal(result.value.sent, (body as { merkle_tree_insertions: unknown[] }).merkle_tree_insertions);
        } else assert.equal((result.error as RelayError).reason, 'invalid_request');
      }),
      { ...RUNS, numRuns: 1000 },
    );
    seen.expectBoth(20);
  });

  test('validateMerkleRange accepts exactly canonical decimal uint32 values once each, start <= end, at most 10 000 leaves', () => {
    const seen = tally();
    const value = fc.oneof(
      { arbitrary: fc.integer({ min: 0, max: 20_000 }).map(String), weight: 6 },
      fc.constantFrom('0', '4294967295', '4294967296', '-0', '01', '+1', ' 1', '1e3', '0x10', '1.0', '', 'NaN', '١'),
      fc.string({ maxLength: 12 }),
    );
    const once = fc.oneof({ arbitrary: value.map((v) => [v]), weight: 8 }, fc.array(value, { maxLength: 2 }));
    const params = fc.record({ domain_id: once, leaf_index_start: once, leaf_index_end: once });
    fc.assert(
      fc.property(params, (p) => {
        const search = new URLSearchParams();
        for (const [k, values] of Object.entries(p)) for (const v of values) search.append(k, v);
        const read = (values: string[]) => (values.length === 1 && /^(0|[1-9][0-9]*)$/.test(values[0]) && Number(values[0]) <= 2 ** 32 - 1 ? Number(values[0]) : undefined);
        const [domain, start, end] = [read(p.domain_id), read(p.leaf_index_start), read(p.leaf_index_end)];
        const valid = domain !== undefined && start !== undefined && end !== undefined && start <= end && end - start < 10_000;
        const result = outcome(() => validateMerkleRange(search), RelayError);
        assert.equal(result.ok, valid, search.toString());
        seen.add(result.ok);
        if (result.ok) assert.deepEqual(result.value, { domain, start, end });
      }),
      { ...RUNS, numRuns: 1000 },
    );
    seen.expectBoth(20);
  });
});

describe('config loader (DESIGN 5)', () => {
  function validConfig(): Record<string, unknown> {
    return {
      chains: {
        ethereum: { domainId: 1, chainId: 1, mailbox: '0xc005dc82818d67AF737725bD4bf75435d065D239', rpcUrls: [{ http: 'https://eth.example.org/v3/key' }] },
        base: { domainId: 8453, mailbox: MAILBOX, cctpMessageTransmitter: [CCTP_V2_TRANSMITTER], rpcUrls: [{ http: 'http://127.0.0.1:8545' }] },
      },
      relayChains: ['ethereum', 'base'],
      whitelist: [{ originDomain: [1, '8453'], senderAddress: '*', bodyRegex: '^00' }],
      blacklist: [{ recipientAddress: '0x' + '22'.repeat(32) }],
      addressBlacklist: ['0x' + '33'.repeat(20)],
      relayApi: { rateLimit: { burst: 10, perMinute: 60 }, dedupWindowSeconds: 300, dedupCapacity: 100, receiptTimeoutSeconds: 10, maxMessagesPerTx: 10 },
      server: { host: '127.0.0.1', port: 9090, adminToken: null, corsOrigins: ['https://app.example.org'], maxRelayBodyBytes: 65536, maxMerkleBodyBytes: 1 << 24 },
      db: ':memory:',
    };
  }

  /** Every path of the valid config (objects and arrays), to aim mutations at real keys. */
  function paths(value: unknown, prefix: string[] = []): string[][] {
    const out = [prefix];
    if (typeof value === 'object' && value !== null) {
      for (const key of Object.keys(value)) out.push(...paths((value as Record<string, unknown>)[key], [...prefix, key]));
    }
    return out;
  }
  const PATHS = paths(validConfig()).filter((p) => p.length > 0);

  function setAt(root: Record<string, unknown>, path: string[], value: unknown): void {
    let node = root as Record<string, unknown>;
    for (const key of path.slice(0, -1)) {
      if (typeof node[key] !== 'object' || node[key] === null) return;
      node = node[key] as Record<string, unknown>;
    }
    const last = path[path.length - 1];
    // JSON has no holes in arrays: deleting an element removes it.
    if (value === undefined && Array.isArray(node)) node.splice(Number(last), 1);
    else if (value === undefined) delete node[last];
    else node[last] = value;
  }

  const hostileValue = fc.oneof(
    fc.jsonValue(),
    fc.constant(undefined),
    fc.constantFrom(-0, -1, 1.5, 2 ** 31, 2 ** 53, Infinity, NaN, '', ' ', '*', '0x', '0X' + '11'.repeat(20), '0xC005dc82818d67AF737725bD4bf75435d065D239',
      'ftp://x', 'http://', 'https://u:p@h/p?q', '(', '(a+)+$', '[', 'ethereum', 'Base', 'a'.repeat(2000), { http: 'ws://x' }, [], {}),
  );

  function checkInvariants(config: RelayerConfig): void {
    const names = Object.keys(config.chains);
    assert.ok(names.length >= 1);
    const domains = new Set<number>();
    for (const name of names) {
      const c = config.chains[name];
      assert.match(name, /^[a-z][a-z0-9]*$/);
      assert.equal(c.name, name);
      assert.ok(Number.isInteger(c.domainId) && c.domainId >= 0 && c.domainId <= 0xffffffff);
      assert.ok(!domains.has(c.domainId), 'domain ids are unique');
      domains.add(c.domainId);
      assert.match(c.mailbox, /^0x[0-9a-f]{40}$/);
      for (const t of c.cctpMessageTransmitters) assert.match(t, /^0x[0-9a-f]{40}$/);
      assert.ok(c.rpcUrls.length >= 1);
      for (const u of c.rpcUrls) assert.match(new URL(u).protocol, /^https?:$/);
    }
    assert.ok(config.relayChains.length >= 1);
    assert.equal(new Set(config.relayChains).size, config.relayChains.length);
    for (const n of config.relayChains) assert.ok(Object.hasOwn(config.chains, n));
    const api = config.relayApi;
    for (const v of [api.rateLimit.burst, api.rateLimit.perMinute, api.dedupCapacity, api.maxMessagesPerTx]) assert.ok(Number.isSafeInteger(v) && v >= 1);
    for (const v of [api.dedupWindowSeconds, api.receiptTimeoutSeconds]) assert.ok(Number.isInteger(v) && v >= 1 && v * 1000 <= 2 ** 31 - 1);
    const s = config.server;
    assert.ok(Number.isInteger(s.port) && s.port >= 0 && s.port <= 65535);
    assert.ok(s.adminToken === null || /^[\x21-\x7e]{16,1024}$/.test(s.adminToken));
    assert.ok(s.maxRelayBodyBytes >= 1 && s.maxMerkleBodyBytes >= 1);
  }

  test('a valid config with 1-3 keys replaced by hostile values: ConfigError naming a key, or a config whose invariants hold and that builds a policy, pipeline and API', () => {
    const seen = tally();
    const edit = fc.tuple(fc.constantFrom(...PATHS), hostileValue);
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 3 }), (edits) => {
        const input = validConfig();
        for (const [path, value] of edits) setAt(input, path, value);
        const result = outcome(() => parseConfig(structuredClone(input)), ConfigError);
        seen.add(result.ok);
        if (!result.ok) {
          assert.equal(typeof (result.error as ConfigError).key, 'string');
          return;
        }
        checkInvariants(result.value);
        createPolicy(result.value);
        createRelayPipeline({ config: result.value, queue: createMemoryOutbox(), fetchReceipt: async () => ({ success: true, logs: [] }) });
        createRelayApi({ config: result.value });
      }),
      { ...RUNS, numRuns: 400 },
    );
    seen.expectBoth(50);
  });

  test('arbitrary JSON as a whole config, or as any one section: ConfigError or a config, nothing else', () => {
    const section = fc.constantFrom('chains', 'relayChains', 'whitelist', 'blacklist', 'addressBlacklist', 'relayApi', 'server', 'db');
    fc.assert(
      fc.property(fc.jsonValue(), section, fc.jsonValue(), (whole, key, value) => {
        outcome(() => parseConfig(whole), ConfigError);
        const result = outcome(() => parseConfig({ ...validConfig(), [key]: value }), ConfigError);
        if (result.ok) checkInvariants(result.value);
      }),
      RUNS,
    );
  });
});

describe('the relay pipeline as a whole (spec 4.5.4, DESIGN 3)', () => {
  const FOREIGN = '0x' + 'ee'.repeat(20);
  const config = testConfig({ blacklist: [{ recipientAddress: '0x' + '99'.repeat(20) }] });

  /** One log of a random kind: real, foreign, mutated, from another chain, blacklisted. */
  const log = fc.oneof(
    fc.record({ nonce: u32, destination: fc.constantFrom(1, 8453, 10), recipient: fc.constantFrom('0x' + '22'.repeat(20), '0x' + '99'.repeat(20)) }).map((f) =>
      dispatchLog(MAILBOX, { ...f, recipient: f.recipient as Hex }),
    ),
    fc.constant(messageSentLog()),
    fc.constantFrom({ ...messageSentLog(), address: FOREIGN }, { ...dispatchLog(FOREIGN), address: FOREIGN }, dispatchLog(MAILBOX, { origin: 8453 })),
    fc.tuple(fc.boolean(), mutation).map(([dispatch, m]) => {
      const base = dispatch ? dispatchLog(MAILBOX) : messageSentLog();
      return { ...base, data: toHex(mutate(hexToBytes(base.data)!, m)) };
    }),
    fc.record({ topics: fc.array(fc.oneof(word, fc.constant(DISPATCH_TOPIC as string)), { maxLength: 5 }), data: bytes(80).map((b) => toHex(b)) }).map((r) => ({ address: MAILBOX, ...r })),
  );

  test('any receipt: 200 with every listed message enqueued and the pair kept, or a RelayError with nothing enqueued and the reservation released', async () => {
    const seen = tally();
    const receiptLogs = fc.oneof(
      fc.array(log, { maxLength: 14 }),
      // Real transfers (up to 12: past the limit of 10 too) with stray logs mixed in.
      fc.tuple(fc.integer({ min: 1, max: 12 }), fc.nat({ max: 2 ** 31 }), fc.array(log, { maxLength: 3 })).map(([n, nonce, extra]) => [...transferLogs(n, { nonce }), ...extra]),
    );
    await fc.assert(
      fc.asyncProperty(receiptLogs, fc.boolean(), async (logs, success) => {
        const hash = txHash(1);
        let receipt: Receipt;
        try {
          receipt = parseReceipt(rpcReceipt(hash, logs, success ? '0x1' : '0x0'), hash);
        } catch {
          return; // the fetcher fails over on a receipt it cannot parse (tested above)
        }
        const outbox = createMemoryOutbox();
        const pipeline = createRelayPipeline({ config, queue: outbox, fetchReceipt: async () => receipt });
        let response;
        try {
          response = await pipeline.relay({ origin_chain: 'ethereum', tx_hash: hash });
        } catch (error) {
          assert.ok(error instanceof RelayError, `unexpected ${String(error)}`);
          seen.add(false);
          assert.equal(await outbox.depth(), 0, 'nothing enqueued on failure');
          assert.equal(pipeline.dedup.size(), 0, 'reservation released');
          return;
        }
        seen.add(response.messages.length > 0);
        assert.equal(pipeline.dedup.size(), 1, 'a success keeps the pair');
        assert.equal(await outbox.depth(), response.messages.length);
        for (const m of response.messages) {
          assert.ok(await outbox.get(m.message_id));
          assert.equal(m.origin, 1);
        }
        if (!success) assert.deepEqual(response.messages, []);
        // Cross-check with the extraction alone: the same messages in the same order.
        const direct = extractMessages(receipt, config.chains.ethereum, config.relayApi.maxMessagesPerTx);
        assert.deepEqual(response.messages.map((m) => m.message_id), direct.map((m) => m.id));
      }),
      RUNS,
    );
    seen.expectBoth(20);
  });
});


