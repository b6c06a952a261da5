/**
 * Configuration (docs/design.md#configuration). Expected values come from docs/design.md, the
 * EIP-55 document, viem (checksums) and the @hyperlane-xyz/registry YAML files, never from the
 * parser itself.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { getAddress, isAddress } from 'viem/utils';
import { BUILTIN_CHAINS, REGISTRY_VERSION } from '../../../lib/config/chains.generated.ts';
import { DEFAULT_CCTP_V2_TRANSMITTER, DEFAULT_CCTP_V2_TRANSMITTERS } from '../../../lib/codec/cctp.ts';
import { DEFAULTS, defaultConfig, parseConfig } from '../../../lib/config/parse.ts';
import { BaseError, ConfigError } from '../../../lib/errors/classes.ts';
import { createRelayApi } from '../../../lib/http/handler.ts';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import { createRelayPipeline } from '../../../lib/relay/pipeline.ts';
import { createPolicy } from '../../../lib/relay/policy.ts';
import type { RelayerConfig } from '../../../lib/types.ts';
import { DOCUMENTED_DEFAULTS } from '../../helpers/fixtures/config.ts';
import { CCTP_V2_TRANSMITTER, MAILBOX } from '../../helpers/fixtures/builders.ts';
import { BOUNDED, outcome, RUNS, tally } from '../../helpers/fixtures/properties.ts';

const ETH_MAILBOX = '0xc005dc82818d67AF737725bD4bf75435d065D239'; // registry chains/ethereum/addresses.yaml
const BASE_MAILBOX = '0xeA87ae93Fa0019a82A727bfd3eBd1cFCa8f64f1D'; // registry chains/base/addresses.yaml
const CCTP_DOCUMENTED = '0x81D40F21F12A8F0E3252Bccb954D722d4c464B64'; // docs/design.md#extraction-and-eligibility
// docs/configuration.md#the-configuration-file: the three Circle CCTP V2 MessageTransmitters the
// reference relayer and the Hyperlane warp UI count, spelled as the issue gives them.
const CIRCLE_V2_TRANSMITTERS = [
  '0x81D40F21F12A8F0E3252Bccb954D722d4c464B64',
  '0x5b61381fc9e58e70efc13a4a97516997019198ee',
  '0xE737e5cEBEEBa77EFE34D4aa090756590b1CE275',
];

type Json = Record<string, unknown>;

function goodConfig(): Json {
  return {
    chains: {
      ethereum: { domainId: 1, chainId: 1, mailbox: ETH_MAILBOX, rpcUrls: [{ http: 'https://eth.example.org' }] },
      base: {
        domainId: 8453,
        mailbox: BASE_MAILBOX,
        cctpMessageTransmitter: CCTP_DOCUMENTED,
        rpcUrls: [{ http: 'https://base.example.org/v1/key' }, { http: 'http://127.0.0.1:8545' }],
      },
    },
  };
}

/** goodConfig() with `value` at a dotted path ("[n]" for array slots); undefined deletes the key. */
function withValue(path: string, value: unknown, base: Json = goodConfig()): Json {
  const parts = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let node = base as Record<string, unknown>;
  for (const part of parts.slice(0, -1)) {
    if (node[part] === undefined) node[part] = /^\d+$/.test(parts[parts.indexOf(part) + 1] ?? '') ? [] : {};
    node = node[part] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1];
  if (value === undefined) delete node[last];
  else node[last] = value;
  return base;
}

/** Flips the case of the first letter of an address, which breaks an EIP-55 checksum. */
function flipFirstLetter(address: string): string {
  const i = address.slice(2).search(/[a-fA-F]/) + 2;
  const c = address[i];
  return address.slice(0, i) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + address.slice(i + 1);
}

function expectConfigError(input: unknown, key: string): void {
  assert.throws(
    () => parseConfig(input),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
      assert.equal(err.key, key, err.message);
      if (key !== '') assert.ok(err.message.includes(key), `message names the key: ${err.message}`);
      return true;
    },
  );
}

// [what, config, key the error must name]
const BAD: [string, unknown, string][] = [
  // the root
  ['root is null', null, ''],
  ['root is an array', [], ''],
  ['root is a string', '{}', ''],
  // unknown keys at every level
  ['unknown top-level key', withValue('chain', {}), 'chain'],
  ['unknown chain key (typo)', withValue('chains.ethereum.mialbox', ETH_MAILBOX), 'chains.ethereum.mialbox'],
  [
    'unknown Hyperlane metadata key in a chain',
    withValue('chains.ethereum.blocks', { confirmations: 1 }),
    'chains.ethereum.blocks',
  ],
  [
    'unknown rpcUrls entry key',
    withValue('chains.ethereum.rpcUrls[0].webSocket', 'wss://x.org'),
    'chains.ethereum.rpcUrls[0].webSocket',
  ],
  ['unknown relayApi key', withValue('relayApi.rateLimits', {}), 'relayApi.rateLimits'],
  ['unknown relayApi.rateLimit key', withValue('relayApi.rateLimit.refill', 1), 'relayApi.rateLimit.refill'],
  ['unknown server key', withValue('server.tls', true), 'server.tls'],
  ['unknown worker key (typo)', withValue('worker.maxAttempt', 3), 'worker.maxAttempt'],
  ['worker is not an object', withValue('worker', 5), 'worker'],
  ['worker.maxAttempts zero', withValue('worker.maxAttempts', 0), 'worker.maxAttempts'],
  ['worker.leaseSeconds fractional', withValue('worker.leaseSeconds', 1.5), 'worker.leaseSeconds'],
  ['worker.port above 65535', withValue('worker.port', 65_536), 'worker.port'],
  ['worker.confirmations as a string', withValue('worker.confirmations', '2'), 'worker.confirmations'],
  ['worker.host empty', withValue('worker.host', ''), 'worker.host'],
  ['worker.retryMaxSeconds below retryBaseSeconds', withValue('worker.retryMaxSeconds', 1), 'worker.retryMaxSeconds'],
  ['unknown matching rule key', withValue('whitelist', [{ originChain: 'ethereum' }]), 'whitelist[0].originChain'],
  // chains
  ['chains is an array', withValue('chains', []), 'chains'],
  ['chains is empty', withValue('chains', {}), 'chains'],
  ['chain name with capitals', withValue('chains.Ethereum', goodConfig().chains), 'chains.Ethereum'],
  ['chain name with a dash', withValue('chains.eth-main', {}), 'chains.eth-main'],
  ['chain entry not an object', withValue('chains.ethereum', 'ethereum'), 'chains.ethereum'],
  ['domainId missing', withValue('chains.ethereum.domainId', undefined), 'chains.ethereum.domainId'],
  ['domainId as a string', withValue('chains.ethereum.domainId', '1'), 'chains.ethereum.domainId'],
  ['domainId negative', withValue('chains.ethereum.domainId', -1), 'chains.ethereum.domainId'],
  ['domainId above uint32', withValue('chains.ethereum.domainId', 2 ** 32), 'chains.ethereum.domainId'],
  ['domainId fractional', withValue('chains.ethereum.domainId', 1.5), 'chains.ethereum.domainId'],
  ['duplicate domainId', withValue('chains.base.domainId', 1), 'chains.base.domainId'],
  ['chainId zero', withValue('chains.ethereum.chainId', 0), 'chains.ethereum.chainId'],
  ['chainId as a string', withValue('chains.ethereum.chainId', '1'), 'chains.ethereum.chainId'],
  ['mailbox missing', withValue('chains.ethereum.mailbox', undefined), 'chains.ethereum.mailbox'],
  ['mailbox of 19 bytes', withValue('chains.ethereum.mailbox', ETH_MAILBOX.slice(0, 40)), 'chains.ethereum.mailbox'],
  ['mailbox without 0x', withValue('chains.ethereum.mailbox', ETH_MAILBOX.slice(2)), 'chains.ethereum.mailbox'],
  ['mailbox with 0X', withValue('chains.ethereum.mailbox', '0X' + ETH_MAILBOX.slice(2)), 'chains.ethereum.mailbox'],
  [
    'mailbox as a 32-byte word',
    withValue('chains.ethereum.mailbox', '0x' + '0'.repeat(24) + ETH_MAILBOX.slice(2)),
    'chains.ethereum.mailbox',
  ],
  ['mailbox not hex', withValue('chains.ethereum.mailbox', '0x' + 'g'.repeat(40)), 'chains.ethereum.mailbox'],
  [
    'mailbox with a broken checksum',
    withValue('chains.ethereum.mailbox', flipFirstLetter(ETH_MAILBOX)),
    'chains.ethereum.mailbox',
  ],
  ['mailbox a number', withValue('chains.ethereum.mailbox', 1), 'chains.ethereum.mailbox'],
  [
    'cctp transmitter bad',
    withValue('chains.base.cctpMessageTransmitter', '0x1234'),
    'chains.base.cctpMessageTransmitter',
  ],
  [
    'cctp transmitter list with a bad entry',
    withValue('chains.base.cctpMessageTransmitter', [CCTP_DOCUMENTED, flipFirstLetter(CCTP_DOCUMENTED)]),
    'chains.base.cctpMessageTransmitter[1]',
  ],
  ['rpcUrls missing', withValue('chains.ethereum.rpcUrls', undefined), 'chains.ethereum.rpcUrls'],
  ['rpcUrls empty', withValue('chains.ethereum.rpcUrls', []), 'chains.ethereum.rpcUrls'],
  ['rpcUrls as one string', withValue('chains.ethereum.rpcUrls', 'https://eth.example.org'), 'chains.ethereum.rpcUrls'],
  [
    'rpcUrls entry a bare string',
    withValue('chains.ethereum.rpcUrls', ['https://eth.example.org']),
    'chains.ethereum.rpcUrls[0]',
  ],
  ['rpcUrls entry without http', withValue('chains.ethereum.rpcUrls', [{}]), 'chains.ethereum.rpcUrls[0].http'],
  [
    'rpc URL not http(s)',
    withValue('chains.base.rpcUrls[1].http', 'wss://base.example.org'),
    'chains.base.rpcUrls[1].http',
  ],
  ['rpc URL not a URL', withValue('chains.base.rpcUrls[1].http', 'base.example.org'), 'chains.base.rpcUrls[1].http'],
  ['protocol not ethereum', withValue('chains.ethereum.protocol', 'sealevel'), 'chains.ethereum.protocol'],
  ['name differs from the key', withValue('chains.ethereum.name', 'base'), 'chains.ethereum.name'],
  ['displayName not a string', withValue('chains.ethereum.displayName', 1), 'chains.ethereum.displayName'],
  ['isTestnet not a boolean', withValue('chains.ethereum.isTestnet', 'no'), 'chains.ethereum.isTestnet'],
  // relayChains
  ['relayChains names an unknown chain', withValue('relayChains', ['ethereum', 'solana']), 'relayChains[1]'],
  ['relayChains string names an unknown chain', withValue('relayChains', 'ethereum,solana'), 'relayChains'],
  ['relayChains names a built-in chain the file replaced', withValue('relayChains', ['arbitrum']), 'relayChains[0]'],
  ['relayChains empty', withValue('relayChains', []), 'relayChains'],
  ['relayChains empty string', withValue('relayChains', ''), 'relayChains'],
  ['relayChains a number', withValue('relayChains', 1), 'relayChains'],
  ['relayChains entry a number', withValue('relayChains', [1]), 'relayChains[0]'],
  ['relayChains unknown with built-in chains', { relayChains: ['notachain'] }, 'relayChains[0]'],
  // matching lists
  ['whitelist not an array', withValue('whitelist', {}), 'whitelist'],
  ['whitelist rule not an object', withValue('whitelist', ['*']), 'whitelist[0]'],
  ['messageId of 20 bytes', withValue('whitelist', [{ messageId: ETH_MAILBOX }]), 'whitelist[0].messageId'],
  [
    'messageId list with a bad entry',
    withValue('whitelist', [{ messageId: ['0x' + '1'.repeat(64), '0x12'] }]),
    'whitelist[0].messageId[1]',
  ],
  ['originDomain negative', withValue('whitelist', [{}, { originDomain: -1 }]), 'whitelist[1].originDomain'],
  ['originDomain not decimal', withValue('blacklist', [{ originDomain: 'abc' }]), 'blacklist[0].originDomain'],
  [
    'destinationDomain above uint32',
    withValue('blacklist', [{ destinationDomain: ['4294967296'] }]),
    'blacklist[0].destinationDomain[0]',
  ],
  ['"*" inside a list', withValue('blacklist', [{ destinationDomain: ['*'] }]), 'blacklist[0].destinationDomain[0]'],
  [
    'senderAddress of 21 bytes',
    withValue('blacklist', [{ senderAddress: '0x' + '1'.repeat(42) }]),
    'blacklist[0].senderAddress',
  ],
  [
    'recipientAddress bad checksum',
    withValue('whitelist', [{ recipientAddress: [flipFirstLetter(BASE_MAILBOX)] }]),
    'whitelist[0].recipientAddress[0]',
  ],
  ['bodyRegex does not compile', withValue('whitelist', [{ bodyRegex: '(' }]), 'whitelist[0].bodyRegex'],
  ['bodyRegex invalid under the u flag', withValue('whitelist', [{ bodyRegex: '\\a' }]), 'whitelist[0].bodyRegex'],
  ['bodyRegex not a string', withValue('whitelist', [{ bodyRegex: 5 }]), 'whitelist[0].bodyRegex'],
  // addressBlacklist
  ['addressBlacklist not an array', withValue('addressBlacklist', ETH_MAILBOX), 'addressBlacklist'],
  ['addressBlacklist entry of 32 bytes', withValue('addressBlacklist', ['0x' + '1'.repeat(64)]), 'addressBlacklist[0]'],
  [
    'addressBlacklist entry bad checksum',
    withValue('addressBlacklist', [ETH_MAILBOX, flipFirstLetter(BASE_MAILBOX)]),
    'addressBlacklist[1]',
  ],
  // relayApi
  ['relayApi an array', withValue('relayApi', []), 'relayApi'],
  ['rateLimit null', withValue('relayApi.rateLimit', null), 'relayApi.rateLimit'],
  ['burst zero', withValue('relayApi.rateLimit.burst', 0), 'relayApi.rateLimit.burst'],
  ['perMinute as a string', withValue('relayApi.rateLimit.perMinute', '100'), 'relayApi.rateLimit.perMinute'],
  [
    'dedupWindowSeconds beyond a timer',
    withValue('relayApi.dedupWindowSeconds', 3_000_000),
    'relayApi.dedupWindowSeconds',
  ],
  ['dedupCapacity zero', withValue('relayApi.dedupCapacity', 0), 'relayApi.dedupCapacity'],
  [
    'receiptTimeoutSeconds fractional',
    withValue('relayApi.receiptTimeoutSeconds', 0.5),
    'relayApi.receiptTimeoutSeconds',
  ],
  ['maxMessagesPerTx negative', withValue('relayApi.maxMessagesPerTx', -1), 'relayApi.maxMessagesPerTx'],
  // server
  ['server a string', withValue('server', '127.0.0.1:9090'), 'server'],
  ['port above 65535', withValue('server.port', 65_536), 'server.port'],
  ['port negative', withValue('server.port', -1), 'server.port'],
  ['port fractional', withValue('server.port', 80.5), 'server.port'],
  ['port as a string', withValue('server.port', '9090'), 'server.port'],
  ['host empty', withValue('server.host', ''), 'server.host'],
  ['host a number', withValue('server.host', 127), 'server.host'],
  ['adminToken too short', withValue('server.adminToken', 'short'), 'server.adminToken'],
  ['adminToken with a space', withValue('server.adminToken', 'a very long token here'), 'server.adminToken'],
  // biome-ignore lint/correctness/noPrecisionLoss: any number is refused, exact or not
  ['adminToken a number', withValue('server.adminToken', 1234567890123456789), 'server.adminToken'],
  ['corsOrigins a string', withValue('server.corsOrigins', 'https://app.example.org'), 'server.corsOrigins'],
  [
    'cors origin with a path',
    withValue('server.corsOrigins', ['https://app.example.org/app']),
    'server.corsOrigins[0]',
  ],
  ['cors origin not http(s)', withValue('server.corsOrigins', ['*', 'ftp://app.example.org']), 'server.corsOrigins[1]'],
  [
    'cors origin with credentials',
    withValue('server.corsOrigins', ['https://user@app.example.org']),
    'server.corsOrigins[0]',
  ],
  [
    'cors origin with a query',
    withValue('server.corsOrigins', ['https://app.example.org?x=1']),
    'server.corsOrigins[0]',
  ],
  ['maxRelayBodyBytes zero', withValue('server.maxRelayBodyBytes', 0), 'server.maxRelayBodyBytes'],
  ['maxMerkleBodyBytes as text', withValue('server.maxMerkleBodyBytes', '16MiB'), 'server.maxMerkleBodyBytes'],
  // db
  ['db empty', withValue('db', ''), 'db'],
  ['db a number', withValue('db', 5), 'db'],
  // docs/worker-configuration.md#gas-payment-enforcement
  ['gasPaymentEnforcement not an array', withValue('gasPaymentEnforcement', { type: 'none' }), 'gasPaymentEnforcement'],
  [
    'gasPaymentEnforcement entry not an object',
    withValue('gasPaymentEnforcement', ['none']),
    'gasPaymentEnforcement[0]',
  ],
  [
    'gasPaymentEnforcement unknown type',
    withValue('gasPaymentEnforcement', [{ type: 'onchainFeeQuoting' }]),
    'gasPaymentEnforcement[0].type',
  ],
  [
    'gasPaymentEnforcement minimum without payment',
    withValue('gasPaymentEnforcement', [{ type: 'minimum' }]),
    'gasPaymentEnforcement[0].payment',
  ],
  ...([-1, 1.5, '1e18', '0x10', '01', '', ' 5', 2 ** 53, '1'.repeat(79), `${2n ** 256n}`] as unknown[]).map(
    (payment): [string, unknown, string] => [
      `gasPaymentEnforcement minimum payment ${JSON.stringify(payment)}`,
      withValue('gasPaymentEnforcement', [{ type: 'minimum', payment }]),
      'gasPaymentEnforcement[0].payment',
    ],
  ),
  ...(['1/0', '1', '/2', 'a/b', '-1/2', '1.5/2', '1/2/3', 1, '18446744073709551616/1'] as unknown[]).map(
    (gasFraction): [string, unknown, string] => [
      `gasPaymentEnforcement gasFraction ${JSON.stringify(gasFraction)}`,
      withValue('gasPaymentEnforcement', [{ type: 'none' }, { type: 'onChainFeeQuoting', gasFraction }]),
      'gasPaymentEnforcement[1].gasFraction',
    ],
  ),
  [
    'a key of another policy type (none has no payment)',
    withValue('gasPaymentEnforcement', [{ type: 'none', payment: '1' }]),
    'gasPaymentEnforcement[0].payment',
  ],
  [
    'onChainFeeQuoting has no payment',
    withValue('gasPaymentEnforcement', [{ type: 'onChainFeeQuoting', payment: '1' }]),
    'gasPaymentEnforcement[0].payment',
  ],
  [
    'feeToken (ERC-20 gas payments) is not supported',
    withValue('gasPaymentEnforcement', [{ type: 'minimum', payment: 1, feeToken: ETH_MAILBOX }]),
    'gasPaymentEnforcement[0].feeToken',
  ],
  [
    'a bad matching rule in a gas policy',
    withValue('gasPaymentEnforcement', [{ type: 'none', matchingList: [{ originChain: 'ethereum' }] }]),
    'gasPaymentEnforcement[0].matchingList[0].originChain',
  ],
  ['transactionGasLimit zero', withValue('transactionGasLimit', 0), 'transactionGasLimit'],
  ['transactionGasLimit null (no limit is "none")', withValue('transactionGasLimit', null), 'transactionGasLimit'],
  ['transactionGasLimit "None"', withValue('transactionGasLimit', 'None'), 'transactionGasLimit'],
  ['transactionGasLimit negative', withValue('transactionGasLimit', -21_000), 'transactionGasLimit'],
  ['transactionGasLimit fractional', withValue('transactionGasLimit', 1.5), 'transactionGasLimit'],
  ['transactionGasLimit hex', withValue('transactionGasLimit', '0x1e8480'), 'transactionGasLimit'],
  [
    'interchainGasPaymaster not an address',
    withValue('chains.ethereum.interchainGasPaymaster', '0x1234'),
    'chains.ethereum.interchainGasPaymaster',
  ],
  [
    'interchainGasPaymaster with a bad checksum',
    withValue(
      'chains.ethereum.interchainGasPaymaster',
      flipFirstLetter(getAddress('0x9e6b1022be9bbf5afd152483dad9b88911bc8611')),
    ),
    'chains.ethereum.interchainGasPaymaster',
  ],
  [
    'transactionOverrides not an object',
    withValue('chains.ethereum.transactionOverrides', 5),
    'chains.ethereum.transactionOverrides',
  ],
  [
    'a transactionOverrides key not supported (gasPrice)',
    withValue('chains.ethereum.transactionOverrides.gasPrice', '1000000000'),
    'chains.ethereum.transactionOverrides.gasPrice',
  ],
  [
    'gasPriceCap zero',
    withValue('chains.ethereum.transactionOverrides.gasPriceCap', 0),
    'chains.ethereum.transactionOverrides.gasPriceCap',
  ],
  [
    'gasPriceCap in gwei text',
    withValue('chains.ethereum.transactionOverrides.gasPriceCap', '50 gwei'),
    'chains.ethereum.transactionOverrides.gasPriceCap',
  ],
  ['index.chunk zero', withValue('chains.ethereum.index', { chunk: 0 }), 'chains.ethereum.index.chunk'],
  ['index.chunk as text', withValue('chains.ethereum.index', { chunk: '2000' }), 'chains.ethereum.index.chunk'],
  ['index.mode unknown', withValue('chains.ethereum.index', { mode: 'rate' }), 'chains.ethereum.index.mode'],
  ['an index key Hyperlane lacks', withValue('chains.ethereum.index', { step: 5 }), 'chains.ethereum.index.step'],
  [
    'ccipReadAllowOrigins not an array',
    withValue('worker.ccipReadAllowOrigins', 'http://10.0.0.5:8080'),
    'worker.ccipReadAllowOrigins',
  ],
  ['ccipReadAllowOrigins "*"', withValue('worker.ccipReadAllowOrigins', ['*']), 'worker.ccipReadAllowOrigins[0]'],
  [
    'ccipReadAllowOrigins with a path',
    withValue('worker.ccipReadAllowOrigins', ['http://10.0.0.5:8080/cctp']),
    'worker.ccipReadAllowOrigins[0]',
  ],
  [
    'ccipReadAllowOrigins with credentials',
    withValue('worker.ccipReadAllowOrigins', ['http://user:key@10.0.0.5']),
    'worker.ccipReadAllowOrigins[0]',
  ],
  [
    'ccipReadAllowOrigins not http',
    withValue('worker.ccipReadAllowOrigins', ['ftp://10.0.0.5']),
    'worker.ccipReadAllowOrigins[0]',
  ],
  ['ccipReadBudgetSeconds zero', withValue('worker.ccipReadBudgetSeconds', 0), 'worker.ccipReadBudgetSeconds'],
  ['ccipReadHoldSeconds zero', withValue('worker.ccipReadHoldSeconds', 0), 'worker.ccipReadHoldSeconds'],
  ['ccipReadHoldSeconds fractional', withValue('worker.ccipReadHoldSeconds', 1.5), 'worker.ccipReadHoldSeconds'],
  ['gasPaymentDeadlineHours zero', withValue('worker.gasPaymentDeadlineHours', 0), 'worker.gasPaymentDeadlineHours'],
];

describe('docs/design.md#configuration: invalid configurations are refused, naming the key', () => {
  for (const [what, input, key] of BAD) {
    test(`docs/design.md#configuration: ${what} -> ConfigError at ${key === '' ? '(root)' : key}`, () =>
      expectConfigError(input, key));
  }

  test('docs/design.md#configuration: ConfigError is an Error with a stable name', () => {
    const err = new ConfigError('server.port', 'must be between 0 and 65535');
    assert.ok(err instanceof Error);
    assert.ok(err instanceof BaseError);
    assert.equal(err.code, 'invalid_config');
    assert.equal(err.name, 'ConfigError');
    assert.equal(err.key, 'server.port');
  });
});

describe('docs/design.md#configuration: valid configurations are normalised', () => {
  test('docs/design.md#configuration: a file with chains replaces the built-in table; defaults fill everything else', () => {
    const config = parseConfig(goodConfig());
    assert.deepEqual(Object.keys(config.chains), ['ethereum', 'base']);
    assert.deepEqual(
      { ...config.chains.ethereum },
      {
        name: 'ethereum',
        domainId: 1,
        chainId: 1,
        mailbox: ETH_MAILBOX.toLowerCase(),
        cctpMessageTransmitters: CIRCLE_V2_TRANSMITTERS.map((a) => a.toLowerCase()),
        rpcUrls: ['https://eth.example.org'],
      },
    );
    assert.deepEqual(
      { ...config.chains.base },
      {
        name: 'base',
        domainId: 8453,
        mailbox: BASE_MAILBOX.toLowerCase(),
        cctpMessageTransmitters: [CCTP_DOCUMENTED.toLowerCase()],
        rpcUrls: ['https://base.example.org/v1/key', 'http://127.0.0.1:8545'],
      },
    );
    assert.deepEqual(config.relayChains, ['ethereum', 'base'], 'default: all chains');
    assert.deepEqual(config.whitelist, []);
    assert.deepEqual(config.blacklist, []);
    assert.deepEqual(config.addressBlacklist, []);
    assert.deepEqual(config.relayApi, DOCUMENTED_DEFAULTS.relayApi);
    assert.deepEqual(config.server, DOCUMENTED_DEFAULTS.server);
    assert.equal(config.db, './relayer.db');
  });

  test('docs/design.md#configuration: a file without chains uses the built-in table', () => {
    const config = parseConfig({ relayChains: 'ethereum, base', db: ':memory:' });
    assert.equal(Object.keys(config.chains).length, BUILTIN_CHAINS.length);
    assert.deepEqual(config.relayChains, ['ethereum', 'base']);
    assert.equal(config.db, ':memory:');
  });

  test('docs/design.md#configuration: relayChains as array or comma-separated string, duplicates dropped', () => {
    assert.deepEqual(parseConfig(withValue('relayChains', 'base,ethereum , base')).relayChains, ['base', 'ethereum']);
    assert.deepEqual(parseConfig(withValue('relayChains', ['base', 'base'])).relayChains, ['base']);
  });

  test('docs/design.md#configuration: addresses of any case are stored lower-case', () => {
    const input = withValue('addressBlacklist', [BASE_MAILBOX.toUpperCase().replace('0X', '0x'), ETH_MAILBOX]);
    withValue('chains.ethereum.cctpMessageTransmitter', [CCTP_DOCUMENTED, CCTP_DOCUMENTED.toLowerCase()], input);
    const config = parseConfig(input);
    assert.deepEqual(config.addressBlacklist, [BASE_MAILBOX.toLowerCase(), ETH_MAILBOX.toLowerCase()]);
    assert.deepEqual(
      config.chains.ethereum.cctpMessageTransmitters,
      [CCTP_DOCUMENTED.toLowerCase()],
      'duplicates dropped',
    );
  });

  test('docs/design.md#configuration: cctpMessageTransmitter may be an empty list (no CCTP on that chain)', () => {
    assert.deepEqual(
      parseConfig(withValue('chains.base.cctpMessageTransmitter', [])).chains.base.cctpMessageTransmitters,
      [],
    );
  });

  test('docs/design.md#configuration: matching rules keep their shape, lower-case hex, domains as numbers', () => {
    const word = '0x000000000000000000000000' + BASE_MAILBOX.slice(2).toUpperCase();
    const input = withValue('whitelist', [
      {},
      { originDomain: '*', destinationDomain: [1, '8453'], senderAddress: ETH_MAILBOX, bodyRegex: '^00' },
      { messageId: '0x' + 'AB'.repeat(32), recipientAddress: [word, BASE_MAILBOX] },
    ]);
    withValue('blacklist', [{ originDomain: '9913372' }], input);
    const config = parseConfig(input);
    assert.deepEqual(config.whitelist, [
      {},
      { originDomain: '*', destinationDomain: [1, 8453], senderAddress: ETH_MAILBOX.toLowerCase(), bodyRegex: '^00' },
      { messageId: '0x' + 'ab'.repeat(32), recipientAddress: [word.toLowerCase(), BASE_MAILBOX.toLowerCase()] },
    ]);
    assert.deepEqual(config.blacklist, [{ originDomain: 9913372 }]);
  });

  test('docs/design.md#configuration: partial relayApi and server sections keep the other defaults', () => {
    const input = withValue('relayApi', { rateLimit: { burst: 5 }, maxMessagesPerTx: 3 });
    withValue(
      'server',
      {
        port: 0,
        adminToken: 'x'.repeat(16),
        corsOrigins: ['https://App.Example.org:443/', '*', 'http://localhost:3000'],
      },
      input,
    );
    const config = parseConfig(input);
    assert.deepEqual(config.relayApi, {
      ...DEFAULTS.relayApi,
      rateLimit: { burst: 5, perMinute: 100 },
      maxMessagesPerTx: 3,
    });
    assert.equal(config.server.port, 0);
    assert.equal(config.server.host, '127.0.0.1');
    assert.equal(config.server.adminToken, 'x'.repeat(16));
    assert.deepEqual(config.server.corsOrigins, ['https://app.example.org', '*', 'http://localhost:3000']);
  });

  test('docs/design.md#configuration: tolerated Hyperlane chain-metadata keys are checked and dropped', () => {
    const input = goodConfig();
    Object.assign((input.chains as Json).ethereum as Json, {
      name: 'ethereum',
      protocol: 'ethereum',
      displayName: 'Ethereum',
      isTestnet: false,
    });
    assert.deepEqual(Object.keys(parseConfig(input).chains.ethereum).sort(), [
      'cctpMessageTransmitters',
      'chainId',
      'domainId',
      'mailbox',
      'name',
      'rpcUrls',
    ]);
  });

  test('docs/design.md#check-order: chain lookups by request name cannot reach Object.prototype', () => {
    const config = parseConfig(withValue('chains.constructor', undefined));
    assert.equal(config.chains['constructor' as string], undefined);
    // biome-ignore lint/suspicious/noProto: the hostile key under test
    assert.equal(config.chains['__proto__' as string], undefined);
    assert.equal(defaultConfig().chains['toString' as string], undefined);
  });

  test('docs/design.md#configuration: a chain may be named like an Object.prototype member', () => {
    const input = withValue('chains.constructor', {
      domainId: 7,
      mailbox: ETH_MAILBOX,
      rpcUrls: [{ http: 'https://x.example.org' }],
    });
    const name: string = 'constructor';
    assert.equal(parseConfig(input).chains[name].domainId, 7);
  });
});

describe('docs/design.md#configuration: EIP-55 checksums on addresses', () => {
  // The examples of EIP-55 (https://eips.ethereum.org/EIPS/eip-55).
  const EIP55 = [
    '0x52908400098527886E0F7030069857D2E4169EE7',
    '0x8617E340B3D01FA5F11F306F4090FD50E238070D',
    '0xde709f2102306220921060314715629080e2fb77',
    '0x27b1fdb04752bbc536007a920d24acb045561c26',
    '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
    '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
    '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
  ];

  test('docs/design.md#configuration: the EIP-55 examples are accepted and stored lower-case', () => {
    const config = parseConfig(withValue('addressBlacklist', EIP55));
    assert.deepEqual(
      config.addressBlacklist,
      EIP55.map((a) => a.toLowerCase()),
    );
  });

  test('docs/design.md#configuration: a mixed-case EIP-55 example with one letter flipped is refused', () => {
    for (const address of EIP55.slice(4))
      expectConfigError(withValue('addressBlacklist', [flipFirstLetter(address)]), 'addressBlacklist[0]');
  });

  // Mixed case is checked, as ethers' getAddress does; viem's strict isAddress also checks an
  // all-upper-case address, which ethers (and we) read as unchecksummed. Compare on mixed case.
  const isMixedCase = (a: string) => /[a-f]/.test(a.slice(2)) && /[A-F]/.test(a.slice(2));

  test('docs/design.md#configuration: checksum acceptance agrees with viem on random mixed-case addresses', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 20, maxLength: 20 }),
        fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
        (bytes, upper) => {
          const lower = '0x' + Buffer.from(bytes).toString('hex');
          const cased = '0x' + [...lower.slice(2)].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
          for (const candidate of [getAddress(lower), cased]) {
            const viemAccepts = isMixedCase(candidate) ? isAddress(candidate, { strict: true }) : true;
            let ours = true;
            try {
              parseConfig(withValue('addressBlacklist', [candidate]));
            } catch (err) {
              if (!(err instanceof ConfigError)) throw err;
              ours = false;
            }
            assert.equal(ours, viemAccepts, candidate);
          }
        },
      ),
      { ...BOUNDED, numRuns: 300 },
    );
  });

  test('docs/design.md#configuration: addresses without mixed case carry no checksum and are accepted', () => {
    const config = parseConfig(
      withValue('addressBlacklist', [
        '0x000000000000000000000000000000007D000004',
        '0x' + 'AB'.repeat(20),
        '0x' + '12'.repeat(20),
      ]),
    );
    assert.deepEqual(config.addressBlacklist, [
      '0x000000000000000000000000000000007d000004',
      '0x' + 'ab'.repeat(20),
      '0x' + '12'.repeat(20),
    ]);
  });
});

describe('docs/design.md#configuration: the built-in default configuration', () => {
  const registryChains = dirname(fileURLToPath(import.meta.resolve('@hyperlane-xyz/registry/chains/schema.json')));
  const yamlField = (chain: string, file: string, field: string): string | undefined =>
    new RegExp(`^${field}: "?([^"\\n]+)"?$`, 'm').exec(readFileSync(join(registryChains, chain, file), 'utf8'))?.[1];

  test('docs/design.md#configuration: ethereum is domain 1 with the registry Mailbox and the default CCTP transmitter', () => {
    const config = defaultConfig();
    const eth = config.chains.ethereum;
    assert.equal(eth.domainId, 1);
    assert.equal(eth.chainId, 1);
    assert.equal(yamlField('ethereum', 'addresses.yaml', 'mailbox'), ETH_MAILBOX);
    assert.equal(eth.mailbox, ETH_MAILBOX.toLowerCase());
    assert.deepEqual(
      eth.cctpMessageTransmitters,
      CIRCLE_V2_TRANSMITTERS.map((a) => a.toLowerCase()),
    );
    assert.ok(eth.rpcUrls.length > 0 && eth.rpcUrls.every((u) => u.startsWith('https://')));
  });

  test('docs/configuration.md#the-configuration-file: by default every chain counts the three Circle CCTP V2 transmitters', () => {
    // The config still overrides them.
    const expected = CIRCLE_V2_TRANSMITTERS.map((a) => getAddress(a.toLowerCase()));
    assert.deepEqual(
      DEFAULT_CCTP_V2_TRANSMITTERS.map((a) => getAddress(a)),
      expected,
    );
    for (const a of DEFAULT_CCTP_V2_TRANSMITTERS) assert.equal(a, a.toLowerCase(), 'stored lower-case');
    for (const chain of Object.values(defaultConfig().chains)) {
      assert.deepEqual(
        chain.cctpMessageTransmitters,
        CIRCLE_V2_TRANSMITTERS.map((a) => a.toLowerCase()),
        chain.name,
      );
    }
    const overridden = parseConfig(withValue('chains.ethereum.cctpMessageTransmitter', CIRCLE_V2_TRANSMITTERS[2]));
    assert.deepEqual(overridden.chains.ethereum.cctpMessageTransmitters, [CIRCLE_V2_TRANSMITTERS[2].toLowerCase()]);
    assert.deepEqual(
      parseConfig(withValue('chains.ethereum.cctpMessageTransmitter', [])).chains.ethereum.cctpMessageTransmitters,
      [],
    );
  });

  test('docs/design.md#extraction-and-eligibility: DEFAULT_CCTP_V2_TRANSMITTER is the documented address, lower-case', () => {
    assert.equal(DEFAULT_CCTP_V2_TRANSMITTER, CCTP_DOCUMENTED.toLowerCase());
    assert.equal(getAddress(DEFAULT_CCTP_V2_TRANSMITTER), CCTP_DOCUMENTED, 'the documented spelling is its checksum');
  });

  test('docs/design.md#configuration: every built-in chain matches the registry YAML (domain, chain id, Mailbox, EVM mainnet)', () => {
    assert.ok(BUILTIN_CHAINS.length >= 50, `only ${BUILTIN_CHAINS.length} chains`);
    for (const chain of BUILTIN_CHAINS) {
      assert.equal(yamlField(chain.name, 'metadata.yaml', 'protocol'), 'ethereum', chain.name);
      assert.notEqual(yamlField(chain.name, 'metadata.yaml', 'isTestnet'), 'true', chain.name);
      assert.equal(Number(yamlField(chain.name, 'metadata.yaml', 'domainId')), chain.domainId, chain.name);
      assert.equal(Number(yamlField(chain.name, 'metadata.yaml', 'chainId')), chain.chainId, chain.name);
      assert.equal(yamlField(chain.name, 'addresses.yaml', 'mailbox')?.toLowerCase(), chain.mailbox, chain.name);
      const igp = yamlField(chain.name, 'addresses.yaml', 'interchainGasPaymaster')?.toLowerCase();
      assert.equal(
        chain.interchainGasPaymaster,
        igp === undefined || /^0x0{40}$/.test(igp) ? undefined : igp,
        chain.name,
      );
    }
    // Gas payment enforcement reads the registry's paymaster on the chains that list one.
    assert.equal(
      BUILTIN_CHAINS.find((c) => c.name === 'ethereum')?.interchainGasPaymaster,
      '0x9e6b1022be9bbf5afd152483dad9b88911bc8611',
    );
    for (const name of ['arbitrum', 'base', 'optimism', 'polygon', 'bsc', 'avalanche']) {
      assert.ok(
        BUILTIN_CHAINS.some((c) => c.name === name),
        `${name} is built in`,
      );
    }
  });

  test('docs/design.md#configuration: lib/config/chains.generated.ts is up to date with the installed registry', () => {
    const script = fileURLToPath(new URL('../../../scripts/gen-chains.ts', import.meta.url));
    const run = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    const pkg = JSON.parse(readFileSync(join(registryChains, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    assert.equal(REGISTRY_VERSION, pkg.version);
  });

  test('docs/design.md#configuration: defaultConfig is what parseConfig makes of its own table written as a file', () => {
    const config = defaultConfig();
    const asFile = {
      chains: Object.fromEntries(
        Object.values(config.chains).map((c) => [
          c.name,
          {
            domainId: c.domainId,
            chainId: c.chainId,
            mailbox: getAddress(c.mailbox),
            ...(c.interchainGasPaymaster ? { interchainGasPaymaster: getAddress(c.interchainGasPaymaster) } : {}),
            rpcUrls: c.rpcUrls.map((http) => ({ http })),
          },
        ]),
      ),
    };
    assert.deepEqual(
      { ...parseConfig(asFile), chains: { ...parseConfig(asFile).chains } },
      { ...config, chains: { ...config.chains } },
    );
  });

  test('docs/design.md#configuration: defaults are the documented values, relay to every chain, ./relayer.db', () => {
    const config = defaultConfig();
    assert.deepEqual(
      config.relayChains,
      BUILTIN_CHAINS.map((c) => c.name),
    );
    assert.deepEqual(config.relayApi, DOCUMENTED_DEFAULTS.relayApi);
    assert.deepEqual(config.server, DOCUMENTED_DEFAULTS.server);
    assert.equal(config.db, './relayer.db');
    assert.deepEqual(config.worker, DOCUMENTED_DEFAULTS.worker);
    assert.deepEqual(
      { relayApi: config.relayApi, server: config.server, worker: config.worker, db: config.db },
      { ...DEFAULTS },
    );
  });

  test('docs/worker-configuration.md#gas-payment-enforcement: the hostile-recipient keys, normalised', () => {
    const config = parseConfig({
      ...goodConfig(),
      gasPaymentEnforcement: [
        { type: 'minimum', payment: '1000000000000000', matchingList: [{ originDomain: 1 }] },
        { type: 'onChainFeeQuoting', gasFraction: ' 3 / 4 ', matchingList: [] },
        { type: 'onChainFeeQuoting' },
        { payment: 7 },
        {},
      ],
      transactionGasLimit: '3000000',
      worker: {
        ccipReadAllowOrigins: ['HTTP://10.0.0.5:80/', 'https://[::1]:8443'],
        ccipReadBudgetSeconds: 12,
        ccipReadHoldSeconds: 5,
      },
    });
    assert.deepEqual(config.gasPaymentEnforcement, [
      { type: 'minimum', payment: 10n ** 15n, matchingList: [{ originDomain: 1 }] },
      { type: 'onChainFeeQuoting', gasFraction: { numerator: 3n, denominator: 4n }, matchingList: [] },
      { type: 'onChainFeeQuoting', gasFraction: { numerator: 1n, denominator: 2n }, matchingList: [] },
      { type: 'minimum', payment: 7n, matchingList: [] },
      { type: 'none', matchingList: [] },
    ]);
    assert.equal(config.transactionGasLimit, 3_000_000n);
    assert.deepEqual(config.worker.ccipReadAllowOrigins, ['http://10.0.0.5', 'https://[::1]:8443']);
    assert.equal(config.worker.ccipReadBudgetSeconds, 12);
    assert.equal(config.worker.ccipReadHoldSeconds, 5);
    assert.equal(config.worker.gasPaymentDeadlineHours, 168);
    const chains = parseConfig(
      withValue(
        'chains.ethereum.transactionOverrides',
        { gasPriceCap: `${2n ** 256n - 1n}` },
        withValue('chains.ethereum.interchainGasPaymaster', '0x9e6B1022bE9BBF5aFd152483DAD9b88911bC8611'),
      ),
    ).chains;
    assert.equal(chains.ethereum.interchainGasPaymaster, '0x9e6b1022be9bbf5afd152483dad9b88911bc8611');
    assert.deepEqual(chains.ethereum.transactionOverrides, { gasPriceCap: 2n ** 256n - 1n });
    assert.equal(chains.base.interchainGasPaymaster, undefined);
    // Hyperlane's index: chunk kept (the top-up search), from and mode checked and dropped.
    const indexed = parseConfig(withValue('chains.ethereum.index', { from: 1_000, chunk: 500, mode: 'block' })).chains;
    assert.deepEqual(indexed.ethereum.index, { chunk: 500 });
    assert.equal(indexed.base.index, undefined);
    // Absent: no payment policy (a worker refuses to start: docs/worker-configuration.md#stated-gas-policy),
    // the gas limit 3 000 000; "none" lifts the limit and the fee ceiling.
    const plain = parseConfig(goodConfig());
    assert.equal(plain.gasPaymentEnforcement, undefined);
    assert.equal(plain.transactionGasLimit, 3_000_000n);
    assert.equal(parseConfig({ ...goodConfig(), transactionGasLimit: 'none' }).transactionGasLimit, null);
    const uncapped = parseConfig(withValue('chains.ethereum.transactionOverrides', { gasPriceCap: 'none' })).chains;
    assert.deepEqual(uncapped.ethereum.transactionOverrides, { gasPriceCap: null });
  });

  test('docs/worker-configuration.md#gas-payment-enforcement: its example is a valid config', () => {
    const text = readFileSync(new URL('../../../docs/worker-configuration.md', import.meta.url), 'utf8');
    const block = /## Gas payment enforcement\n[\s\S]*?```json\n([\s\S]*?)```/.exec(text);
    assert.ok(block, 'the example is there');
    const config = parseConfig({ ...goodConfig(), ...JSON.parse(block[1]) });
    assert.deepEqual(
      config.gasPaymentEnforcement?.map((e) => e.type),
      ['minimum', 'onChainFeeQuoting'],
    );
  });

  test('worker section: given values are kept, the rest defaulted', () => {
    const config = parseConfig(
      withValue('worker', {
        host: '0.0.0.0',
        port: 0,
        maxAttempts: 8,
        confirmations: 3,
        pendingDeadlineHours: 1,
        pollMs: 50,
      }),
    );
    assert.equal(config.worker.host, '0.0.0.0');
    assert.equal(config.worker.port, 0);
    assert.equal(config.worker.maxAttempts, 8);
    assert.equal(config.worker.confirmations, 3);
    assert.equal(config.worker.pendingDeadlineHours, 1);
    assert.equal(config.worker.pollMs, 50);
    assert.equal(config.worker.leaseSeconds, DEFAULTS.worker.leaseSeconds);
  });

  test('docs/design.md#configuration: each defaultConfig() is a fresh object; DEFAULTS cannot be changed', () => {
    const a: RelayerConfig = defaultConfig();
    a.chains.ethereum.rpcUrls.push('http://mutated.example.org');
    a.server.corsOrigins.push('*');
    a.relayApi.rateLimit.burst = 1;
    const b = defaultConfig();
    assert.ok(!b.chains.ethereum.rpcUrls.includes('http://mutated.example.org'));
    assert.deepEqual(b.server.corsOrigins, []);
    assert.equal(b.relayApi.rateLimit.burst, 100);
    assert.ok(
      Object.isFrozen(DEFAULTS) &&
        Object.isFrozen(DEFAULTS.relayApi.rateLimit) &&
        Object.isFrozen(DEFAULTS.server.corsOrigins),
    );
  });
});

describe('config loader (docs/design.md#configuration)', () => {
  function validConfig(): Record<string, unknown> {
    return {
      chains: {
        ethereum: {
          domainId: 1,
          chainId: 1,
          mailbox: '0xc005dc82818d67AF737725bD4bf75435d065D239',
          rpcUrls: [{ http: 'https://eth.example.org/v3/key' }],
        },
        base: {
          domainId: 8453,
          mailbox: MAILBOX,
          cctpMessageTransmitter: [CCTP_V2_TRANSMITTER],
          rpcUrls: [{ http: 'http://127.0.0.1:8545' }],
        },
      },
      relayChains: ['ethereum', 'base'],
      whitelist: [{ originDomain: [1, '8453'], senderAddress: '*', bodyRegex: '^00' }],
      blacklist: [{ recipientAddress: '0x' + '22'.repeat(32) }],
      addressBlacklist: ['0x' + '33'.repeat(20)],
      relayApi: { ...DOCUMENTED_DEFAULTS.relayApi, rateLimit: { burst: 10, perMinute: 60 }, dedupCapacity: 100 },
      server: { ...structuredClone(DOCUMENTED_DEFAULTS.server), corsOrigins: ['https://app.example.org'] },
      db: ':memory:',
    };
  }

  /** Every path of the valid config (objects and arrays), to aim mutations at real keys. */
  function paths(value: unknown, prefix: string[] = []): string[][] {
    const out = [prefix];
    if (typeof value === 'object' && value !== null) {
      for (const key of Object.keys(value))
        out.push(...paths((value as Record<string, unknown>)[key], [...prefix, key]));
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
    fc.constantFrom(
      -0,
      -1,
      1.5,
      2 ** 31,
      2 ** 53,
      Infinity,
      NaN,
      '',
      ' ',
      '*',
      '0x',
      '0X' + '11'.repeat(20),
      '0xC005dc82818d67AF737725bD4bf75435d065D239',
      'ftp://x',
      'http://',
      'https://u:p@h/p?q',
      '(',
      '(a+)+$',
      '[',
      'ethereum',
      'Base',
      'a'.repeat(2000),
      { http: 'ws://x' },
      [],
      {},
    ),
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
    for (const v of [api.rateLimit.burst, api.rateLimit.perMinute, api.dedupCapacity, api.maxMessagesPerTx])
      assert.ok(Number.isSafeInteger(v) && v >= 1);
    for (const v of [api.dedupWindowSeconds, api.receiptTimeoutSeconds])
      assert.ok(Number.isInteger(v) && v >= 1 && v * 1000 <= 2 ** 31 - 1);
    const s = config.server;
    assert.ok(Number.isInteger(s.port) && s.port >= 0 && s.port <= 65535);
    assert.ok(s.adminToken === null || /^[\x21-\x7e]{16,1024}$/.test(s.adminToken));
    assert.ok(s.maxRelayBodyBytes >= 1 && s.maxMerkleBodyBytes >= 1);
  }

  test('a valid config with 1-3 keys made hostile: a ConfigError naming a key, or a config that holds and builds', () => {
    // Either a ConfigError naming a key, or a config whose invariants hold and that builds a policy, pipeline
    // and API.
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
        createRelayPipeline({
          config: result.value,
          queue: createMemoryOutbox(),
          fetchReceipt: async () => ({ success: true, logs: [] }),
        });
        createRelayApi({ config: result.value });
      }),
      { ...RUNS, numRuns: 400 },
    );
    seen.expectBoth(50);
  });

  test('arbitrary JSON as a whole config, or as any one section: ConfigError or a config, nothing else', () => {
    // Every section a valid file has (validConfig's keys).
    const section = fc.constantFrom(...Object.keys(validConfig()));
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
