/**
 * Request validation (lib/relay/validate.ts, docs/api.md#post-relay, docs/design.md#check-order,
 * #merkle-tree-insertions): the JSON body reader, POST /relay and POST /merkle_tree_insertions
 * bodies and the GET range parameters, each against a model of the rule written independently, on
 * generated input. The HTTP suites check the same rules on the wire.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { toHex } from 'viem/utils';
import { RelayError } from '../../../lib/errors/classes.ts';
import type { ChainConfig } from '../../../lib/types.ts';
import {
  parseJsonBody,
  validateMerkleRange,
  validateMerkleRequest,
  validateRelayRequest,
} from '../../../lib/relay/validate.ts';
import { testConfig } from '../../helpers/fixtures/config.ts';
import { outcome, RUNS, tally } from '../../helpers/fixtures/properties.ts';

describe('request validation (docs/api.md#post-relay, docs/design.md#check-order, #merkle-tree-insertions)', () => {
  const chains = new Map<string, ChainConfig>(Object.entries(testConfig().chains));

  test("parseJsonBody: any text gives JSON.parse's value or invalid_request", () => {
    const seen = tally();
    // Any code point but a lone surrogate, as fc.string's 'binary' unit; that unit first builds a
    // table of all 1.1 million code points (seconds of CPU), this mapping does not.
    const codePoint = fc
      .integer({ min: 0, max: 0x10ffff - 0x800 })
      .map((n) => String.fromCodePoint(n < 0xd800 ? n : n + 0x800));
    const text = fc.oneof(
      fc.string({ unit: codePoint, maxLength: 60 }),
      fc.json(),
      fc.json().map((j) => j.slice(0, -1)),
    );
    fc.assert(
      fc.property(text, (t) => {
        const result = outcome(() => parseJsonBody(t), RelayError);
        seen.add(result.ok);
        if (result.ok) assert.deepEqual(result.value, JSON.parse(t));
        else assert.equal((result.error as RelayError).code, 'invalid_request');
      }),
      { ...RUNS, numRuns: 500 },
    );
    seen.expectBoth(50);
  });

  /** The rule of docs/api.md#post-relay / docs/design.md#check-order written independently: own keys, 0x + 64 hex, a configured name. */
  function relayModel(body: unknown): { chain: ChainConfig; txHash: string } | undefined {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const originChain = Object.hasOwn(body, 'origin_chain')
      ? (body as Record<string, unknown>).origin_chain
      : undefined;
    const hash = Object.hasOwn(body, 'tx_hash') ? (body as Record<string, unknown>).tx_hash : undefined;
    if (typeof originChain !== 'string' || typeof hash !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(hash))
      return undefined;
    const chain = chains.get(originChain);
    return chain && { chain, txHash: hash.toLowerCase() };
  }

  const hexHash = fc
    .uint8Array({ minLength: 32, maxLength: 32 })
    .chain((b) =>
      fc.constantFrom(
        toHex(b),
        toHex(b).toUpperCase(),
        '0x' + toHex(b).slice(2).toUpperCase(),
        toHex(b).slice(0, -1),
        toHex(b) + '0',
        toHex(b).slice(2),
      ),
    );
  const originChain = fc.oneof(
    fc.constantFrom(
      'ethereum',
      'base',
      'Ethereum',
      'ethereum ',
      '',
      '__proto__',
      'constructor',
      'toString',
      'x'.repeat(200),
    ),
    fc.string(),
    fc.jsonValue(),
  );
  const relayBody = fc.oneof(
    fc.record(
      { origin_chain: fc.constantFrom('ethereum', 'base'), tx_hash: hexHash, extra: fc.jsonValue() },
      { requiredKeys: ['origin_chain', 'tx_hash'] },
    ),
    fc.record({ origin_chain: originChain, tx_hash: fc.oneof(hexHash, fc.jsonValue()) }, { requiredKeys: [] }),
    fc.record({ origin_chain: originChain, tx_hash: hexHash, extra: fc.jsonValue() }),
    fc.jsonValue(),
    // Bodies that carry the fields under __proto__ or constructor, parsed as JSON so the key is own.
    fc
      .record({ origin_chain: fc.oneof(fc.constant('ethereum'), originChain), tx_hash: hexHash })
      .chain((inner) =>
        fc
          .constantFrom(
            `{"__proto__":${JSON.stringify(inner)}}`,
            `{"constructor":{"prototype":${JSON.stringify(inner)}}}`,
            `{"__proto__":{"tx_hash":"x"},"origin_chain":${JSON.stringify(inner.origin_chain)},"tx_hash":${JSON.stringify(inner.tx_hash)}}`,
          )
          .map((t) => JSON.parse(t) as unknown),
      ),
  );

  test('validateRelayRequest accepts exactly what the model accepts; otherwise invalid_request', () => {
    // With the same chain and lower-case hash.
    const seen = tally();
    fc.assert(
      fc.property(relayBody, (body) => {
        const expected = relayModel(body);
        const result = outcome(() => validateRelayRequest(body, chains), RelayError);
        assert.equal(result.ok, expected !== undefined, JSON.stringify(body));
        seen.add(result.ok);
        if (result.ok) assert.deepEqual(result.value, expected);
        else assert.equal((result.error as RelayError).code, 'invalid_request');
        assert.equal(({} as Record<string, unknown>).origin_chain, undefined, 'Object.prototype untouched');
      }),
      { ...RUNS, numRuns: 1000 },
    );
    seen.expectBoth(50);
  });

  const isUint = (v: unknown, max: number) =>
    typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max && !Object.is(v, -0);

  function merkleModel(body: unknown): unknown[] | undefined {
    if (
      typeof body !== 'object' ||
      body === null ||
      Array.isArray(body) ||
      !Object.hasOwn(body, 'merkle_tree_insertions')
    )
      return undefined;
    const list = (body as Record<string, unknown>).merkle_tree_insertions;
    if (!Array.isArray(list) || list.length === 0) return undefined;
    const out: unknown[] = [];
    for (const r of list) {
      if (typeof r !== 'object' || r === null || Array.isArray(r)) return undefined;
      const get = (k: string) => (Object.hasOwn(r, k) ? (r as Record<string, unknown>)[k] : undefined);
      const id = get('message_id');
      if (
        !isUint(get('chain'), 2 ** 32 - 1) ||
        !isUint(get('insertion_block_number'), 2 ** 53 - 1) ||
        !isUint(get('leaf_index'), 2 ** 32 - 1)
      )
        return undefined;
      if (typeof id !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(id)) return undefined;
      out.push({
        chain: get('chain'),
        insertion_block_number: get('insertion_block_number'),
        leaf_index: get('leaf_index'),
        message_id: id.toLowerCase(),
      });
    }
    return out;
  }

  const hostileNumber = fc.oneof(
    fc.integer({ min: 0, max: 2 ** 32 - 1 }),
    fc.constantFrom(
      -0,
      -1,
      1.5,
      2 ** 32,
      2 ** 53 - 1,
      2 ** 53,
      2 ** 64,
      Infinity,
      -Infinity,
      NaN,
      1e-7,
      '1',
      '0x1',
      null,
      true,
    ),
    fc.double(),
    fc.jsonValue(),
  );
  const validRecord = fc.record({
    chain: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
    insertion_block_number: fc.oneof(fc.nat(), fc.constant(2 ** 53 - 1)),
    leaf_index: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
    message_id: fc
      .uint8Array({ minLength: 32, maxLength: 32 })
      .chain((b) => fc.constantFrom(toHex(b), '0x' + toHex(b).slice(2).toUpperCase())),
  });
  const FIELDS = ['chain', 'insertion_block_number', 'leaf_index', 'message_id', 'extra'] as const;
  // A valid record, or one with a single field replaced (or removed) by a hostile value.
  const record = fc.oneof(
    validRecord,
    fc
      .tuple(validRecord, fc.constantFrom(...FIELDS), fc.option(fc.oneof(hostileNumber, hexHash)))
      .map(([r, field, value]) => {
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

  test('validateRelayRequest: each refusal names what is wrong, at the bounds exactly', () => {
    const hash = `0x${'ab'.repeat(32)}`;
    const cases: [unknown, string][] = [
      [{ tx_hash: hash }, 'origin_chain is required'],
      [{ origin_chain: 5, tx_hash: hash }, 'origin_chain must be a string'],
      [{ origin_chain: 'local' }, 'tx_hash is required'],
      [{ origin_chain: 'local', tx_hash: null }, 'tx_hash must be a string'],
      [{ origin_chain: 'local', tx_hash: ` ${hash}` }, 'tx_hash must not begin or end with whitespace'],
      [{ origin_chain: 'local', tx_hash: `${hash}\n` }, 'tx_hash must not begin or end with whitespace'],
      [{ origin_chain: 'local', tx_hash: `${hash}00` }, 'tx_hash exceeds 66 characters'],
      // The bounds exactly: 67 characters exceed, 66 that are not a hash say what a hash is.
      [{ origin_chain: 'local', tx_hash: `${hash}0` }, 'tx_hash exceeds 66 characters'],
      [{ origin_chain: 'local', tx_hash: `0x${'zz'.repeat(32)}` }, 'tx_hash must be 0x followed by 64 hex digits'],
      [{ origin_chain: 'local', tx_hash: '' }, 'tx_hash must not be empty'],
      [{ origin_chain: '', tx_hash: hash }, 'origin_chain must not be empty'],
      [{ origin_chain: 'a'.repeat(129), tx_hash: hash }, 'origin_chain exceeds 128 bytes'],
      [{ origin_chain: '\u00e9'.repeat(65), tx_hash: hash }, 'origin_chain exceeds 128 bytes'], // 65 characters, 130 bytes
    ];
    for (const [body, message] of cases) {
      assert.throws(
        () => validateRelayRequest(body, chains),
        (e) => e instanceof RelayError && e.code === 'invalid_request' && e.message === message,
        JSON.stringify(body),
      );
    }
  });

  test("validateMerkleRequest accepts exactly the model's records; otherwise invalid_request", () => {
    // uint32, 0..2^53-1, 0x + 64 hex, -0 refused.
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
        } else assert.equal((result.error as RelayError).code, 'invalid_request');
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
        const read = (values: string[]) =>
          values.length === 1 && /^(0|[1-9][0-9]*)$/.test(values[0]) && Number(values[0]) <= 2 ** 32 - 1
            ? Number(values[0])
            : undefined;
        const [domain, start, end] = [read(p.domain_id), read(p.leaf_index_start), read(p.leaf_index_end)];
        const valid =
          domain !== undefined && start !== undefined && end !== undefined && start <= end && end - start < 10_000;
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

describe('validateRelayRequest takes what the config holds (docs/embedding.md#options)', () => {
  test("the config's chains object or a Map of it; a prototype's key is no chain", () => {
    const { chains } = testConfig();
    const tx = `0x${'ab'.repeat(32)}`;
    const fromObject = validateRelayRequest({ origin_chain: 'ethereum', tx_hash: tx }, chains);
    assert.equal(fromObject.chain, chains.ethereum);
    assert.deepEqual(
      validateRelayRequest({ origin_chain: 'ethereum', tx_hash: tx }, new Map(Object.entries(chains))),
      fromObject,
    );
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      assert.throws(
        () => validateRelayRequest({ origin_chain: name, tx_hash: tx }, chains),
        (e: RelayError) => e.code === 'invalid_request',
        name,
      );
    }
  });
});
