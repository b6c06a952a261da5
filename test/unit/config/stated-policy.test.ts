import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../../lib/errors/classes.ts';
import { createMemoryOutbox } from '../../../lib/outbox/index.ts';
import {
  effectivePolicies,
  policyOptOuts,
  unstatedPolicy,
  UnstatedPolicyError,
} from '../../../lib/config/stated-policy.ts';
import { createRelayerWorker } from '../../../lib/worker/index.ts';
import type { RelayerConfig } from '../../../lib/types.ts';
import { noGasGateConfig, testConfig } from '../../helpers/fixtures/config.ts';

const KEY = `0x${'7e'.repeat(32)}` as const;

/** testConfig's two relay chains (ethereum, base), base capped at 2 gwei. */
function config(overrides: Partial<RelayerConfig> = {}): RelayerConfig {
  const base = testConfig(overrides);
  base.chains.base = { ...base.chains.base, transactionOverrides: { gasPriceCap: 2_000_000_000n } };
  return base;
}

describe('docs/worker-configuration.md#stated-gas-policy: what a worker must be told', () => {
  test('no gasPaymentEnforcement, or an empty one, and each relay chain without a gasPriceCap: one line each', () => {
    const missing = unstatedPolicy(config());
    assert.equal(missing.length, 2, missing.join('\n'));
    assert.match(
      missing[0],
      /^gasPaymentEnforcement is not set: .*e\.g\. "gasPaymentEnforcement": \[\{"type": "onChainFeeQuoting"\}\]/,
    );
    assert.match(
      missing[1],
      /^chains\.ethereum\.transactionOverrides\.gasPriceCap is not set: .*"gasPriceCap": "100000000000"/,
    );
    assert.match(unstatedPolicy(config({ gasPaymentEnforcement: [] }))[0], /^gasPaymentEnforcement is empty: /);
    // A chain that is not a relay chain needs no cap; "none" (null) is a stated choice.
    const stated = config({ gasPaymentEnforcement: [{ type: 'none', matchingList: [] }], relayChains: ['base'] });
    assert.deepEqual(unstatedPolicy(stated), []);
    stated.relayChains = ['base', 'ethereum'];
    stated.chains.ethereum = { ...stated.chains.ethereum, transactionOverrides: { gasPriceCap: null } };
    assert.deepEqual(unstatedPolicy(stated), []);
  });

  test('each explicit opt-out is one warning; a stated policy and caps are none', () => {
    const open = noGasGateConfig(config({ transactionGasLimit: null }));
    assert.deepEqual(
      policyOptOuts(open).map((w) => w.key),
      ['gasPaymentEnforcement[0]', 'chains.ethereum.transactionOverrides.gasPriceCap', 'transactionGasLimit'],
    );
    const paid = config({
      gasPaymentEnforcement: [{ type: 'minimum', payment: 1n, matchingList: [] }],
      relayChains: ['base'],
    });
    assert.deepEqual(policyOptOuts(paid), []);
  });

  test('the effective policy per destination: the entries that may apply, the cap, the gas limit (default 3 000 000)', () => {
    const policies = effectivePolicies(
      config({
        gasPaymentEnforcement: [
          { type: 'minimum', payment: 5n, matchingList: [{ destinationDomain: 8453 }] },
          { type: 'none', matchingList: [{ destinationDomain: [7, 9] }] },
          { type: 'onChainFeeQuoting', gasFraction: { numerator: 1n, denominator: 2n }, matchingList: [] },
        ],
      }),
    );
    assert.deepEqual(policies, {
      ethereum: { gasPayment: ['onChainFeeQuoting 1/2'], gasPriceCap: 'none', transactionGasLimit: '3000000' },
      base: {
        gasPayment: ['minimum 5 wei (matchingList)', 'onChainFeeQuoting 1/2'],
        gasPriceCap: '2000000000 wei',
        transactionGasLimit: '3000000',
      },
    });
  });
});

describe('docs/worker-configuration.md#stated-gas-policy: relayer-api/worker refuses the same config', () => {
  test('createRelayerWorker throws UnstatedPolicyError (a ConfigError) before it asks any node', async () => {
    // testConfig's RPC URLs are http://rpc.invalid/…: a worker that asked a node first would fail otherwise.
    const error = await createRelayerWorker({ config: config(), outbox: createMemoryOutbox(), signerKey: KEY }).then(
      () => assert.fail('started'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof UnstatedPolicyError, String(error));
    assert.ok(error instanceof ConfigError);
    assert.equal(error.code, 'invalid_config');
    assert.deepEqual(error.problems, unstatedPolicy(config()));
    assert.equal(error.message, error.problems.join('\n'));
  });

  test('createRelayerWorker logs each opt-out at warn', async () => {
    const lines: { level: string; msg: string; key: string }[] = [];
    const at = (level: string) => (msg: string, f?: Record<string, unknown>) =>
      lines.push({ level, msg, key: String(f?.key) });
    const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
    const open = noGasGateConfig(config({ relayChains: ['ethereum'] }));
    // The chain id is in the config, so nothing is asked before the worker is built.
    const relayer = await createRelayerWorker({ config: open, outbox: createMemoryOutbox(), signerKey: KEY, logger });
    await relayer.worker.stop();
    assert.deepEqual(
      lines.filter((l) => l.msg === 'unsafe choice stated'),
      [
        { level: 'warn', msg: 'unsafe choice stated', key: 'gasPaymentEnforcement[0]' },
        { level: 'warn', msg: 'unsafe choice stated', key: 'chains.ethereum.transactionOverrides.gasPriceCap' },
      ],
    );
  });
});
