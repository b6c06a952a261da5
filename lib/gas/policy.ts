/**
 * Gas payment enforcement (docs/gas.md#gas-payment-enforcement, docs/worker-configuration.md): who
 * pays for a message's delivery gas. The config's `gasPaymentEnforcement` is an ordered list of
 * policies, each with an optional MatchingList (lib/relay/policy.ts's grammar); the first that matches a
 * message decides. The policies and their arithmetic are those of Hyperlane's relayer
 * (rust/main/agents/relayer/src/msg/gas_payment/: none, minimum, onChainFeeQuoting):
 *
 * - `none`: no payment needed.
 * - `minimum {payment}`: a payment must exist on the origin's InterchainGasPaymaster, and the
 *   payments summed, less the wei the relayer's own reverted transactions already spent on the
 *   message, must be at least `payment` wei (a payment of 0 meets `payment: 0` before any spend).
 * - `onChainFeeQuoting {gasFraction: "n/d"}` (default "1/2"): a payment must exist, and the gas
 *   paid for (summed `gasAmount`, less gas the relayer already spent on the message) must be at
 *   least the `process` estimate × n / d; the transaction may then use up to the gas paid for.
 *
 * Absent or empty `gasPaymentEnforcement` is `none` for every message; a non-empty list that no
 * entry matches relays nothing for that message (Hyperlane's rule: add a catch-all entry last).
 * Pure: the amounts paid come from lib/gas/payment.ts, the estimate from the worker.
 */
import { ConfigError } from '../errors/classes.ts';
import { array, join, object, string, uint256, type Obj } from '../config/fields.ts';
import type { HyperlaneMessage } from '../codec/message.ts';
import { compileMatchingList, parseMatchingList, type MatchingRule } from '../relay/policy.ts';
import type { GasFraction, GasPaymentEnforcement, GasPolicyType } from '../types.ts';

export type { GasFraction, GasPaymentEnforcement, GasPolicyType };

/** What the payments for a message add up to (lib/gas/payment.ts sums them). */
export interface GasPaid {
  /** Payment logs counted. */
  payments: number;
  /** Destination gas paid for, summed `gasAmount`. */
  gasAmount: bigint;
  /** Wei paid on the origin chain, summed `payment`. */
  payment: bigint;
}

export const DEFAULT_GAS_FRACTION = '1/2';
const U64_MAX = 2n ** 64n - 1n;

// ---------------------------------------------------------------------------------------------
// Configuration

/** `"n/d"` (spaces ignored, as Hyperlane does), n and d unsigned 64-bit, d > 0. */
function parseGasFraction(value: unknown, key: string): GasFraction {
  const text = string(value, key).replaceAll(' ', '');
  const match = /^(0|[1-9][0-9]{0,19})\/([1-9][0-9]{0,19})$/.exec(text);
  if (!match || BigInt(match[1]) > U64_MAX || BigInt(match[2]) > U64_MAX) {
    throw new ConfigError(
      key,
      `expected "numerator/denominator" (e.g. "1/2", denominator not 0), got ${JSON.stringify(value)}`,
    );
  }
  return { numerator: BigInt(match[1]), denominator: BigInt(match[2]) };
}

const KEYS: Record<GasPolicyType, readonly string[]> = {
  none: ['type', 'matchingList'],
  minimum: ['type', 'matchingList', 'payment'],
  onChainFeeQuoting: ['type', 'matchingList', 'gasFraction'],
};

/**
 * The policy types the parser accepts, in order: docs/config.schema.json and docs/openapi.json
 * list the same (test/unit/docs-lists.test.ts compares them: CONTRIBUTING.md#adding-a-gas-policy-type).
 */
export const GAS_POLICY_TYPES = Object.keys(KEYS) as readonly GasPolicyType[];
const TYPE_NAMES = GAS_POLICY_TYPES.map((t) => JSON.stringify(t));
const EXPECTED_TYPE = `expected ${TYPE_NAMES.slice(0, -1).join(', ')} or ${TYPE_NAMES.at(-1)}`;

function parseEntry(value: unknown, key: string): GasPaymentEnforcement {
  const obj: Obj = object(value, key);
  // Hyperlane's rule: without `type`, an entry with `payment` is `minimum`, any other `none`.
  const type =
    obj.type === undefined ? (obj.payment === undefined ? 'none' : 'minimum') : string(obj.type, join(key, 'type'));
  if (!Object.hasOwn(KEYS, type)) {
    throw new ConfigError(join(key, 'type'), `${EXPECTED_TYPE}, got ${JSON.stringify(type)}`);
  }
  object(value, key, KEYS[type as GasPolicyType]);
  const matchingList =
    obj.matchingList === undefined ? [] : parseMatchingList(obj.matchingList, join(key, 'matchingList'));
  switch (type as GasPolicyType) {
    case 'none':
      return { type: 'none', matchingList };
    case 'minimum':
      if (obj.payment === undefined)
        throw new ConfigError(join(key, 'payment'), 'required (the minimum payment in wei)');
      return { type: 'minimum', payment: uint256(obj.payment, join(key, 'payment')), matchingList };
    case 'onChainFeeQuoting':
      return {
        type: 'onChainFeeQuoting',
        gasFraction: parseGasFraction(obj.gasFraction ?? DEFAULT_GAS_FRACTION, join(key, 'gasFraction')),
        matchingList,
      };
  }
}

/** `gasPaymentEnforcement` from JSON; throws ConfigError naming the key (`gasPaymentEnforcement[1].gasFraction`). */
export function parseGasPaymentEnforcement(value: unknown, key: string): GasPaymentEnforcement[] {
  return array(value, key).map((entry, i) => parseEntry(entry, `${key}[${i}]`));
}

/**
 * Whether some entry that asks for a payment could apply to messages from `originDomain` (its
 * matching list names no origin, `"*"`, or that domain): that origin then needs an
 * InterchainGasPaymaster, or its messages could never be paid for.
 */
export function needsPaymaster(entries: readonly GasPaymentEnforcement[], originDomain: number): number | undefined {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    if (entry.type === 'none') continue;
    const rules = entry.matchingList;
    const covers = (rule: MatchingRule) =>
      rule.originDomain === undefined ||
      rule.originDomain === '*' ||
      (Array.isArray(rule.originDomain)
        ? rule.originDomain.includes(originDomain)
        : rule.originDomain === originDomain);
    if (rules.length === 0 || rules.some(covers)) return i;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The policy

/** Picks a message's policy: the first entry whose matching list matches. */
export type GasPolicySelector = (message: HyperlaneMessage) => GasPaymentEnforcement | null;

/**
 * Compiles the list once. Empty: `none` for every message. Otherwise the first entry that
 * matches (an empty matching list matches all), or null when none does.
 */
export function createGasPolicySelector(entries: readonly GasPaymentEnforcement[]): GasPolicySelector {
  if (entries.length === 0) {
    const none: GasPaymentEnforcement = { type: 'none', matchingList: [] };
    return () => none;
  }
  const compiled = entries.map((entry, i) => ({
    entry,
    list:
      entry.matchingList.length === 0
        ? null
        : compileMatchingList(entry.matchingList, `gasPaymentEnforcement[${i}].matchingList`),
  }));
  return (message) => compiled.find(({ list }) => list === null || list.matches(message))?.entry ?? null;
}

/** Why a message may not be sent yet; its text heads `last_error` as `gas_payment: …`. */
export interface GasPaymentShortfall {
  ok: false;
  reason: 'no_policy' | 'no_payment' | 'underpaid';
  message: string;
}

export type GasPaymentCheck = { ok: true } | GasPaymentShortfall;

/** The least any transaction's estimate can be: the intrinsic gas of a call. */
export const MIN_ESTIMATE = 21_000n;

/**
 * The check made before anything is spent on a message (no gateway request, no estimate): under
 * `minimum`, whether the payments, less `spentWei` (what the relayer's own reverted transactions
 * for it cost, docs/gas.md#gas-already-spent), meet it; under `onChainFeeQuoting`, whether a payment exists
 * (the amount is checked against the estimate by `checkGasPaymentForEstimate`) and, given
 * `spentGas` (docs/gas.md#gas-already-spent), whether the gas paid for and not spent could
 * meet even the smallest estimate (MIN_ESTIMATE × n / d): a message paid for too little gas, or
 * whose reverted transactions used up its payment, waits without a gateway request or an
 * estimate, as an unpaid one does.
 */
export function checkGasPayment(
  policy: GasPaymentEnforcement | null,
  paid: GasPaid,
  spentGas?: bigint,
  spentWei = 0n,
): GasPaymentCheck {
  if (policy === null) {
    return {
      ok: false,
      reason: 'no_policy',
      message: 'no gasPaymentEnforcement entry matches this message',
    };
  }
  if (policy.type === 'none') return { ok: true };
  if (policy.type !== 'minimum' && policy.type !== 'onChainFeeQuoting') return noRule(policy);
  if (paid.payments === 0) {
    return {
      ok: false,
      reason: 'no_payment',
      message: "no payment for this message's destination on the origin's InterchainGasPaymaster",
    };
  }
  // What was spent comes off what was paid: a message whose reverts cost more than its payment
  // waits for a top-up, whatever its minimum (0 included).
  if (policy.type === 'minimum' && paid.payment - spentWei < policy.payment) {
    return {
      ok: false,
      reason: 'underpaid',
      message:
        spentWei > 0n
          ? `paid ${paid.payment > spentWei ? paid.payment - spentWei : 0n} wei (after ${spentWei} wei spent), the minimum is ${policy.payment} wei`
          : `paid ${paid.payment} wei, the minimum is ${policy.payment} wei`,
    };
  }
  if (policy.type === 'onChainFeeQuoting' && spentGas !== undefined) {
    const left = gasLeft(paid, spentGas);
    const least = requiredGas(policy.gasFraction, MIN_ESTIMATE);
    if (left < least) {
      return {
        ok: false,
        reason: 'underpaid',
        message: `paid for ${left} gas${spentGas > 0n ? ` (after ${spentGas} spent)` : ''}, at least ${least} required for any estimate`,
      };
    }
  }
  return { ok: true };
}

/**
 * A policy of a type this check has no rule for (an embedder's object, or a type added to the
 * parser without its rule: CONTRIBUTING.md#adding-a-gas-policy-type) is refused, never passed:
 * `policy` is typed `never` here, so a type added to `GasPaymentEnforcement` without a rule above
 * fails the typecheck too.
 */
function noRule(policy: never): GasPaymentShortfall {
  const type = String((policy as { type?: unknown }).type);
  return {
    ok: false,
    reason: 'no_policy',
    message: `gas payment policy type ${type} has no rule here: nothing is relayed under it`,
  };
}

/** The gas paid for and not yet spent by the relayer's own transactions. */
function gasLeft(paid: GasPaid, spentGas: bigint): bigint {
  return paid.gasAmount > spentGas ? paid.gasAmount - spentGas : 0n;
}

/** The destination gas `onChainFeeQuoting` requires for an estimate: estimate × n / d, rounded down. */
export function requiredGas(fraction: GasFraction, estimate: bigint): bigint {
  return (estimate * fraction.numerator) / fraction.denominator;
}

/**
 * The check once `process` is estimated. Approved: the gas limit the policy allows (Hyperlane's:
 * the estimate, or under `onChainFeeQuoting` the larger of it and the gas paid for and not yet
 * spent). `spentGas` is what the relayer's own mined transactions for the message already used,
 * `spentWei` what they cost (`minimum` counts it against the payment).
 */
export function checkGasPaymentForEstimate(
  policy: GasPaymentEnforcement | null,
  paid: GasPaid,
  estimate: bigint,
  spentGas = 0n,
  spentWei = 0n,
): ({ ok: true; gasLimit: bigint } | GasPaymentShortfall) & { requiredGas?: bigint } {
  const first = checkGasPayment(policy, paid, undefined, spentWei);
  if (!first.ok) return first;
  if (policy!.type !== 'onChainFeeQuoting') return { ok: true, gasLimit: estimate };
  const required = requiredGas(policy!.gasFraction, estimate);
  const left = gasLeft(paid, spentGas);
  if (left < required) {
    return {
      ok: false,
      reason: 'underpaid',
      message: `paid for ${left} gas${spentGas > 0n ? ` (after ${spentGas} spent)` : ''}, ${required} required (estimate ${estimate} × ${policy!.gasFraction.numerator}/${policy!.gasFraction.denominator})`,
      requiredGas: required,
    };
  }
  return { ok: true, gasLimit: left > estimate ? left : estimate, requiredGas: required };
}

/**
 * The gas limit of a `process` transaction: the estimate plus the worker's margin, or the policy's
 * limit when that is larger (gas paid for), never above `transactionGasLimit`; a message whose bare estimate is above it is not sent at all
 * (`gas: estimate N exceeds transactionGasLimit M`). Hyperlane refuses any limit above its
 * transactionGasLimit, an overpaid message included; here a payment above the limit only stops
 * adding to it.
 */
export function processGasLimit(opts: {
  estimate: bigint;
  policyGasLimit: bigint;
  marginPercent: number;
  transactionGasLimit: bigint | null;
}): { ok: true; gasLimit: bigint } | { ok: false; message: string } {
  const { estimate, transactionGasLimit } = opts;
  if (transactionGasLimit !== null && estimate > transactionGasLimit) {
    return { ok: false, message: `estimate ${estimate} exceeds transactionGasLimit ${transactionGasLimit}` };
  }
  const withMargin = (estimate * BigInt(100 + opts.marginPercent)) / 100n;
  const wanted = opts.policyGasLimit > withMargin ? opts.policyGasLimit : withMargin;
  const gasLimit = transactionGasLimit !== null && wanted > transactionGasLimit ? transactionGasLimit : wanted;
  return { ok: true, gasLimit };
}
