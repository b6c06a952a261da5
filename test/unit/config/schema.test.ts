/**
 * docs/configuration.md#the-configuration-file: docs/config.schema.json, the JSON Schema an editor
 * completes and checks a config file from, says what lib/config/parse.ts accepts. At every object of a
 * config that sets every key, the keys the schema lists are the keys the parser accepts (the parser's
 * refusal of an unknown key lists them: UnknownKeyError.allowed), and the other way round; a wrong
 * type at any leaf is refused by both; the example configs pass both. A key added to the parser
 * without the schema (or the reverse) fails here with its path.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parseConfig } from '../../../lib/config/parse.ts';
import { ConfigError } from '../../../lib/errors/classes.ts';
import { UnknownKeyError } from '../../../lib/config/fields.ts';

const root = join(import.meta.dirname, '..', '..', '..');
type Schema = Record<string, any>;
const schema: Schema = JSON.parse(readFileSync(join(root, 'docs', 'config.schema.json'), 'utf8'));
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);

const A = '0x00000000000000000000000000000000000000a1';
const B = '0x00000000000000000000000000000000000000b2';
const WORD = `0x${'ab'.repeat(32)}`;
const rule = {
  messageId: [WORD],
  originDomain: '*',
  senderAddress: A,
  destinationDomain: [1, '10'],
  recipientAddress: WORD,
  bodyRegex: '^00',
};

/** A config that sets every key the schema knows (the walk below fails on one it does not set). */
function full(): Record<string, any> {
  return structuredClone({
    $schema: './docs/config.schema.json',
    chains: {
      one: {
        domainId: 1,
        chainId: 1,
        mailbox: A,
        cctpMessageTransmitter: [B],
        rpcUrls: [{ http: 'https://one.example' }],
        interchainGasPaymaster: B,
        merkleTreeHook: A,
        validatorAnnounce: B,
        transactionOverrides: { gasPriceCap: '100000000000' },
        index: { chunk: 1000, from: 0, mode: 'block' },
        name: 'one',
        protocol: 'ethereum',
        displayName: 'One',
        isTestnet: false,
      },
      two: { domainId: 2, mailbox: B, rpcUrls: [{ http: 'http://127.0.0.1:8545' }] },
    },
    relayChains: ['one', 'two'],
    whitelist: [rule],
    blacklist: [{ originDomain: 7 }],
    addressBlacklist: [B],
    relayApi: {
      rateLimit: { burst: 10, perMinute: 60 },
      clientRateLimit: { burst: 1, perMinute: 6 },
      dedupWindowSeconds: 60,
      dedupCapacity: 100,
      receiptTimeoutSeconds: 5,
      maxMessagesPerTx: 3,
    },
    server: {
      host: '0.0.0.0',
      port: 8080,
      adminToken: 'a-token-of-16-chars-or-more',
      corsOrigins: ['https://app.example.org'],
      maxRelayBodyBytes: 1000,
      maxMerkleBodyBytes: 2000,
      trustedProxies: ['10.0.0.0/8'],
      readRateLimit: { burst: 60, perMinute: 600 },
      maxSubscribers: 100,
      maxSubscribersPerClient: 5,
      streamMaxSeconds: 600,
      txStreamWaitSeconds: 60,
      retentionDays: 30,
    },
    worker: {
      host: '127.0.0.1',
      port: 9191,
      batch: 5,
      concurrency: 4,
      leaseSeconds: 30,
      maxAttempts: 3,
      maxLeaseExpiries: 3,
      confirmations: 2,
      pendingDeadlineHours: 24,
      pendingRetrySeconds: 2,
      pendingRetryMaxSeconds: 30,
      retryBaseSeconds: 2,
      retryMaxSeconds: 60,
      pollMs: 500,
      gasMarginPercent: 10,
      replaceAfterSeconds: 30,
      replaceAfterBlocks: 5,
      ccipReadTimeoutSeconds: 5,
      ccipReadBudgetSeconds: 20,
      ccipReadHoldSeconds: 1,
      ccipReadAllowOrigins: ['http://127.0.0.1:8080'],
      checkpointEndpoints: { s3: 'http://127.0.0.1:9000', gcs: 'https://gcs.example/base' },
      gasPaymentDeadlineHours: 24,
      stopGraceSeconds: 10,
      heartbeatSeconds: 30,
      minSignerBalanceGwei: 1000,
    },
    gasPaymentEnforcement: [
      { type: 'minimum', payment: '1', matchingList: [{ senderAddress: A }] },
      { type: 'onChainFeeQuoting', gasFraction: '1/2', matchingList: [] },
      { type: 'none', matchingList: [{ destinationDomain: 2 }] },
    ],
    transactionGasLimit: '3000000',
    allowLocalCheckpointSyncers: false,
    db: './relayer.db',
  });
}

/** A schema node with its $ref followed. */
function resolve(node: Schema): Schema {
  let n = node;
  while (typeof n.$ref === 'string') {
    const path = n.$ref.replace(/^#\//, '').split('/');
    n = path.reduce((at: Schema, part: string) => at[part], schema);
  }
  return n;
}

/** The branch of a node that describes `value`'s kind (oneOf: null | object, value | array …). */
function branchFor(node: Schema, value: unknown): Schema {
  const n = resolve(node);
  if (!Array.isArray(n.oneOf)) return n;
  const kind = Array.isArray(value) ? 'array' : value !== null && typeof value === 'object' ? 'object' : 'scalar';
  const found = n.oneOf
    .map(resolve)
    .find((b: Schema) => (kind === 'scalar' ? !b.items && !b.properties : b.type === kind));
  return found ?? n;
}

interface Level {
  path: string;
  at: (string | number)[];
  properties: string[];
}

/** Every object of `value` the schema lists properties for, with the schema's keys; `seen` collects the keys set. */
function levels(
  node: Schema,
  value: unknown,
  path: string,
  at: (string | number)[],
  seen: Map<Schema, Set<string>>,
): Level[] {
  const n = branchFor(node, value);
  const out: Level[] = [];
  if (Array.isArray(value)) {
    const items = n.items ?? {};
    for (const [i, v] of value.entries()) out.push(...levels(items, v, `${path}[${i}]`, [...at, i], seen));
  } else if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const join = (k: string) => (path === '' ? k : `${path}.${k}`);
    if (n.properties) {
      out.push({ path, at, properties: Object.keys(n.properties) });
      const keys = seen.get(n) ?? new Set();
      seen.set(n, keys);
      for (const k of Object.keys(obj)) {
        keys.add(k);
        assert.ok(n.properties[k], `${join(k)}: set by the test config but not in the schema`);
        out.push(...levels(n.properties[k], obj[k], join(k), [...at, k], seen));
      }
    } else if (n.additionalProperties && typeof n.additionalProperties === 'object') {
      for (const k of Object.keys(obj)) out.push(...levels(n.additionalProperties, obj[k], join(k), [...at, k], seen));
    }
  }
  return out;
}

function setAt(config: Record<string, any>, at: (string | number)[], value: unknown): Record<string, any> {
  let node: any = config;
  for (const part of at.slice(0, -1)) node = node[part];
  node[at.at(-1)!] = value;
  return config;
}

function getAt(config: Record<string, any>, at: (string | number)[]): any {
  return at.reduce((node: any, part) => node[part], config);
}

const parses = (config: unknown): true | ConfigError => {
  try {
    parseConfig(config);
    return true;
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
};

test('docs/configuration.md#the-configuration-file: a config that sets every key passes the schema and the parser', () => {
  const config = full();
  assert.equal(validate(config), true, JSON.stringify(validate.errors));
  assert.equal(parses(config), true);
  const seen = new Map<Schema, Set<string>>();
  levels(schema, config, '', [], seen);
  // Every property of every object schema reached is set somewhere: the probes below see them all.
  for (const [node, keys] of seen) {
    const missing = Object.keys(node.properties).filter((k) => !keys.has(k));
    assert.deepEqual(missing, [], `the test config sets every key of ${Object.keys(node.properties).join(', ')}`);
  }
});

test('docs/worker-configuration.md#gas-payment-enforcement: the test config has an entry of each policy type of the schema', () => {
  // With one entry of each type, the probes below check each type's keys against the parser's. That
  // the schema's types are the parser's is checked in test/unit/docs-lists.test.ts.
  const listed = [...schema.$defs.gasPolicy.properties.type.enum].sort();
  const set = [...new Set(full().gasPaymentEnforcement.map((e: { type: string }) => e.type))].sort();
  assert.deepEqual(
    set,
    listed,
    "full()'s gasPaymentEnforcement (actual) has an entry, every key set, of each type docs/config.schema.json lists",
  );
});

test('docs/configuration.md#the-configuration-file: at every level the schema lists exactly the keys the parser accepts', () => {
  const all = levels(schema, full(), '', [], new Map());
  assert.ok(all.length >= 20, `${all.length} objects probed`);
  // Gas policy entries: the parser's keys depend on the entry's type; the schema lists their union.
  const union = new Map<string, Set<string>>();
  for (const level of all) {
    const probed = level.path === '' ? '__probe__' : `${level.path}.__probe__`;
    const config = full();
    setAt(config, [...level.at, '__probe__'], 1);
    const refused = parses(config);
    assert.ok(refused instanceof UnknownKeyError, `${probed}: refused as an unknown key (${String(refused)})`);
    assert.equal(refused.key, probed);
    const gas = /^gasPaymentEnforcement\[\d+\]$/.test(level.path);
    if (gas) {
      const keys = union.get('gas') ?? new Set();
      for (const k of refused.allowed) keys.add(k);
      union.set('gas', keys);
      for (const k of refused.allowed) assert.ok(level.properties.includes(k), `${level.path}.${k}: in the schema`);
      continue;
    }
    assert.deepEqual(
      [...refused.allowed].sort(),
      [...level.properties].sort(),
      `${level.path || '(top level)'}: the parser's keys (actual) and docs/config.schema.json's (expected): a key of the parser belongs in the schema too`,
    );
  }
  const gasLevel = all.find((l) => l.path === 'gasPaymentEnforcement[0]')!;
  assert.deepEqual([...union.get('gas')!].sort(), [...gasLevel.properties].sort());
});

/** Leaves of a config: paths to values that are not objects or arrays. */
function leaves(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...at, i]));
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => leaves(v, [...at, k]));
  return [at];
}

test('docs/configuration.md#the-configuration-file: a wrong type at any leaf is refused by the schema and by the parser', () => {
  const paths = leaves(full()).filter((at) => at[0] !== '$schema');
  assert.ok(paths.length >= 80, `${paths.length} leaves`);
  for (const at of paths) {
    const original = getAt(full(), at);
    for (const wrong of [{ wrong: true }, typeof original === 'string' ? 12.5 : 'wrong']) {
      const config = setAt(full(), at, wrong);
      const where = at.join('.');
      const parsed = parses(config);
      assert.ok(parsed !== true, `${where} = ${JSON.stringify(wrong)}: the parser refuses it`);
      assert.equal(validate(config), false, `${where} = ${JSON.stringify(wrong)}: the schema refuses it`);
    }
  }
});

test('docs/worker-configuration.md#stated-gas-policy: "none" lifts the gas limit and fee ceiling in both; a null limit neither', () => {
  const none = full();
  none.transactionGasLimit = 'none';
  none.chains.one.transactionOverrides.gasPriceCap = 'none';
  assert.equal(validate(none), true, JSON.stringify(validate.errors));
  assert.equal(parses(none), true);
  for (const [at, value] of [
    [['transactionGasLimit'], null],
    [['transactionGasLimit'], 'None'],
    [['chains', 'one', 'transactionOverrides', 'gasPriceCap'], null],
  ] as const) {
    const config = setAt(full(), [...at], value);
    assert.ok(parses(config) !== true, `${at.join('.')} = ${JSON.stringify(value)}: the parser refuses it`);
    assert.equal(validate(config), false, `${at.join('.')} = ${JSON.stringify(value)}: the schema refuses it`);
  }
});

test('docs/deploy.md#example-configs: each example config passes the schema and the parser, and names the schema', () => {
  const dir = join(root, 'examples');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 3, files.join(', '));
  for (const file of files) {
    const config = JSON.parse(readFileSync(join(dir, file), 'utf8'));
    assert.equal(validate(config), true, `${file}: ${JSON.stringify(validate.errors)}`);
    assert.equal(parses(config), true, `${file}: ${String(parses(config))}`);
    assert.equal(config.$schema, '../docs/config.schema.json', `${file} names the schema for an editor`);
  }
});
