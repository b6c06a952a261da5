/**
 * No silent unsafe default (docs/worker-configuration.md#stated-gas-policy): what a delivery worker must
 * be told before it starts. Its gas payment policy (`gasPaymentEnforcement`) and, for every chain it
 * delivers to, a fee ceiling (`chains.NAME.transactionOverrides.gasPriceCap`) have no default:
 * without them a worker would pay for whatever anyone relays, at any price. `[{"type": "none"}]`,
 * `"gasPriceCap": "none"` and `"transactionGasLimit": "none"` are the explicit opt-outs, warned
 * about at every start. `transactionGasLimit` defaults to DEFAULT_TRANSACTION_GAS_LIMIT.
 *
 * Pure: bin/relayer-worker.ts refuses to start (exit 2, one line per missing key) and
 * `createRelayerWorker` throws UnstatedPolicyError on the same list.
 */
import { ConfigError } from '../errors/classes.ts';
import { uint256 } from './fields.ts';
import type { MatchingRule } from '../relay/policy.ts';
import type { GasPaymentEnforcement, RelayerConfig } from '../types.ts';

/** `transactionGasLimit` when the config does not say: a CCTP `process` uses well under a million. */
export const DEFAULT_TRANSACTION_GAS_LIMIT = 3_000_000n;

/** `transactionGasLimit` from JSON: absent, the default; `"none"`, no limit (warned at every worker start); else gas ≥ 1. */
export function parseTransactionGasLimit(value: unknown, key: string): bigint | null {
  if (value === undefined) return DEFAULT_TRANSACTION_GAS_LIMIT;
  if (value === 'none') return null;
  if (value === null) throw new ConfigError(key, 'expected gas (an integer) or "none" for no limit, got null');
  return uint256(value, key, 1n);
}

/** The gas limit a worker applies: the config's, the default when absent, null when lifted ("none"). */
export function effectiveTransactionGasLimit(config: Pick<RelayerConfig, 'transactionGasLimit'>): bigint | null {
  return config.transactionGasLimit === undefined ? DEFAULT_TRANSACTION_GAS_LIMIT : config.transactionGasLimit;
}

/** The worker's configuration leaves a key unstated: one line per key, each with a safe example. */
export class UnstatedPolicyError extends ConfigError {
  override name = 'UnstatedPolicyError';
  /** One line per missing key, each naming it and giving a safe example. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super('', problems.join('\n'));
    this.problems = problems;
  }
}

/** The keys a worker delivering to `config.relayChains` needs and does not have: one line each (empty: none). */
export function unstatedPolicy(
  config: Pick<RelayerConfig, 'chains' | 'relayChains' | 'gasPaymentEnforcement'>,
): string[] {
  const problems: string[] = [];
  const enforcement = config.gasPaymentEnforcement;
  if (enforcement === undefined || enforcement.length === 0) {
    problems.push(
      `gasPaymentEnforcement is ${enforcement === undefined ? 'not set' : 'empty'}: state who pays for delivery gas, ` +
        'e.g. "gasPaymentEnforcement": [{"type": "onChainFeeQuoting"}] (senders pay on the origin chain), ' +
        'or [{"type": "none"}] to deliver unpaid messages at your cost',
    );
  }
  for (const name of config.relayChains) {
    if (config.chains[name]?.transactionOverrides?.gasPriceCap !== undefined) continue;
    problems.push(
      `chains.${name}.transactionOverrides.gasPriceCap is not set: state the most this worker pays per gas on ${name}, ` +
        'e.g. "transactionOverrides": {"gasPriceCap": "100000000000"} (100 gwei), or "none" for no ceiling',
    );
  }
  return problems;
}

/** Throws UnstatedPolicyError when `unstatedPolicy` finds a missing key. */
export function assertStatedPolicy(
  config: Pick<RelayerConfig, 'chains' | 'relayChains' | 'gasPaymentEnforcement'>,
): void {
  const problems = unstatedPolicy(config);
  if (problems.length > 0) throw new UnstatedPolicyError(problems);
}

/** The explicit opt-outs of `config`, one warning each (logged at every start). */
export function policyOptOuts(
  config: Pick<RelayerConfig, 'chains' | 'relayChains' | 'gasPaymentEnforcement' | 'transactionGasLimit'>,
): { key: string; effect: string }[] {
  const out: { key: string; effect: string }[] = [];
  (config.gasPaymentEnforcement ?? []).forEach((entry, i) => {
    if (entry.type !== 'none') return;
    out.push({
      key: `gasPaymentEnforcement[${i}]`,
      effect: `{"type": "none"}: messages it matches are delivered unpaid, at the signer's cost${entry.matchingList.length > 0 ? '' : ' (every message it is reached for)'}`,
    });
  });
  for (const name of config.relayChains) {
    if (config.chains[name]?.transactionOverrides?.gasPriceCap !== null) continue;
    out.push({
      key: `chains.${name}.transactionOverrides.gasPriceCap`,
      effect: `"none": transactions to ${name} are signed at whatever fee its node asks`,
    });
  }
  if (config.transactionGasLimit === null) {
    out.push({ key: 'transactionGasLimit', effect: '"none": a recipient may make a delivery use any amount of gas' });
  }
  return out;
}

/** Whether a rule's destination filter can let messages to `domain` through. */
function reaches(rule: MatchingRule, domain: number): boolean {
  const d = rule.destinationDomain;
  return d === undefined || d === '*' || (Array.isArray(d) ? d.includes(domain) : d === domain);
}

function describeEntry(entry: GasPaymentEnforcement): string {
  const what =
    entry.type === 'none'
      ? 'none'
      : entry.type === 'minimum'
        ? `minimum ${entry.payment} wei`
        : `onChainFeeQuoting ${entry.gasFraction.numerator}/${entry.gasFraction.denominator}`;
  return entry.matchingList.length === 0 ? what : `${what} (matchingList)`;
}

/** What one destination's deliveries are held to, for the start-up log line. */
export interface DestinationPolicy {
  /** The gasPaymentEnforcement entries that may apply to messages to it, in order. */
  gasPayment: string[];
  /** Wei, or "none". */
  gasPriceCap: string;
  /** Gas, or "none". */
  transactionGasLimit: string;
}

/** The effective policy of each relay chain (by name), for the worker's start-up line. */
export function effectivePolicies(
  config: Pick<RelayerConfig, 'chains' | 'relayChains' | 'gasPaymentEnforcement' | 'transactionGasLimit'>,
): Record<string, DestinationPolicy> {
  const limit = effectiveTransactionGasLimit(config);
  const out: Record<string, DestinationPolicy> = {};
  for (const name of config.relayChains) {
    const chain = config.chains[name];
    if (chain === undefined) continue;
    const entries = (config.gasPaymentEnforcement ?? []).filter(
      (e) => e.matchingList.length === 0 || e.matchingList.some((rule) => reaches(rule, chain.domainId)),
    );
    const cap = chain.transactionOverrides?.gasPriceCap;
    out[name] = {
      gasPayment: entries.length === 0 ? ['nothing relayed (no entry matches)'] : entries.map(describeEntry),
      gasPriceCap: cap === null || cap === undefined ? 'none' : `${cap} wei`,
      transactionGasLimit: limit === null ? 'none' : String(limit),
    };
  }
  return out;
}
