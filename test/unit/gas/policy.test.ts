/**
 * Gas payment enforcement's policy (docs/gas.md#gas-payment-enforcement,
 * docs/worker-configuration.md#gas-payment-enforcement): which entry applies to a message, and whether
 * what was paid meets it. The vectors are those of Hyperlane's relayer tests
 * (rust/main/agents/relayer/src/msg/gas_payment/mod.rs and policies/*.rs), named after them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hexToBytes } from 'viem/utils';
import { parseConfig } from '../../../lib/config/parse.ts';
import {
  checkGasPayment,
  checkGasPaymentForEstimate,
  createGasPolicySelector,
  needsPaymaster,
  parseGasPaymentEnforcement,
  processGasLimit,
  requiredGas,
  type GasPaid,
  type GasPaymentEnforcement,
} from '../../../lib/gas/policy.ts';
import { parseHyperlaneMessage } from '../../../lib/codec/message.ts';
import { hyperlaneMessage } from '../../helpers/fixtures/builders.ts';

const SENDER = '0x5b61381fc9e58e70efc13a4a97516997019198ee';
const message = (f: Parameters<typeof hyperlaneMessage>[0] = {}) =>
  parseHyperlaneMessage(hexToBytes(hyperlaneMessage(f)));
const paid = (payments: number, gasAmount: bigint | number, payment: bigint | number): GasPaid => ({
  payments,
  gasAmount: BigInt(gasAmount),
  payment: BigInt(payment),
});
const NONE: GasPaid = paid(0, 0, 0);

/** The entries as an operator writes them, read by the config loader. */
function entries(list: unknown[]): GasPaymentEnforcement[] {
  return parseConfig({ gasPaymentEnforcement: list }).gasPaymentEnforcement ?? [];
}

describe('which entry applies: the first whose matching list matches', () => {
  test('no list, or an empty one: none for every message', () => {
    for (const list of [[], undefined]) {
      const select = createGasPolicySelector(list === undefined ? [] : entries(list));
      assert.deepEqual(select(message()), { type: 'none', matchingList: [] });
    }
  });

  test('an entry without matchingList, or with [], matches all (test_empty_whitelist)', () => {
    for (const matchingList of [undefined, []]) {
      const select = createGasPolicySelector(entries([{ type: 'minimum', payment: 1, matchingList }]));
      assert.equal(select(message())?.type, 'minimum');
    }
  });

  test('the first matching entry decides, in order (test_non_empty_matching_list)', () => {
    const select = createGasPolicySelector(
      entries([
        { type: 'none', matchingList: [{ senderAddress: SENDER }] },
        { type: 'minimum', payment: 10, matchingList: [{ destinationDomain: [10, 8453] }] },
        { type: 'onChainFeeQuoting' },
      ]),
    );
    assert.equal(select(message({ sender: SENDER, destination: 8453 }))?.type, 'none');
    assert.equal(select(message({ destination: 8453 }))?.type, 'minimum');
    assert.equal(select(message({ destination: 1 }))?.type, 'onChainFeeQuoting');
  });

  test('docs/gas.md#gas-payment-enforcement: a policy of a type with no rule is refused, not passed (fails closed)', () => {
    // An embedder's object, or a type added to the parser without its rule in checkGasPayment.
    const policy = { type: 'maximum', payment: 0n, matchingList: [] } as unknown as GasPaymentEnforcement;
    const expected = {
      ok: false,
      reason: 'no_policy',
      message: 'gas payment policy type maximum has no rule here: nothing is relayed under it',
    };
    assert.deepEqual(checkGasPayment(policy, paid(1, 10 ** 6, 10 ** 18)), expected);
    assert.deepEqual(checkGasPaymentForEstimate(policy, paid(1, 10 ** 6, 10 ** 18), 50_000n), expected);
  });

  test('a list no entry matches relays nothing for that message (test_no_match)', () => {
    const select = createGasPolicySelector(entries([{ type: 'none', matchingList: [{ originDomain: 2 }] }]));
    assert.equal(select(message({ origin: 1 })), null);
    const check = checkGasPayment(null, paid(1, 10 ** 6, 10 ** 18));
    assert.deepEqual(check, {
      ok: false,
      reason: 'no_policy',
      message: 'no gasPaymentEnforcement entry matches this message',
    });
  });
});

describe('checkGasPayment: before anything is spent on the message', () => {
  const [none, minimum1000, minimum0, quote] = entries([
    { type: 'none' },
    { type: 'minimum', payment: 1000 },
    { type: 'minimum', payment: '0' },
    { type: 'onChainFeeQuoting' },
  ]);
  const cases: [string, GasPaymentEnforcement, GasPaid, string][] = [
    ['none, no payment (test_no_payment_found_none_policy)', none, NONE, 'ok'],
    ['none, a payment (test_payment_found_none_policy)', none, paid(1, 1, 1), 'ok'],
    ['minimum, no payment (test_no_payment_found_minimum_policy)', minimum1000, NONE, 'no_payment'],
    ['minimum 1000, paid 999 (test_gas_payment_policy_minimum)', minimum1000, paid(1, 0, 999), 'underpaid'],
    ['minimum 1000, paid 1000', minimum1000, paid(1, 0, 1000), 'ok'],
    ['minimum 1000, paid 500 + 500 (test_half_and_half_payment)', minimum1000, paid(2, 2, 1000), 'ok'],
    ['minimum 0, no payment: a payment must exist', minimum0, NONE, 'no_payment'],
    ['minimum 0, a payment of 0 (test_zero_payment_found_minimum_policy)', minimum0, paid(1, 0, 0), 'ok'],
    ['onChainFeeQuoting, no payment (test_no_payment_found_quote_policy)', quote, NONE, 'no_payment'],
    ['onChainFeeQuoting, a payment: the amount waits for the estimate', quote, paid(1, 1, 0), 'ok'],
  ];
  for (const [what, policy, payments, expected] of cases) {
    test(what, () => {
      const check = checkGasPayment(policy, payments);
      assert.equal(check.ok ? 'ok' : check.reason, expected);
    });
  }

  test('the reasons say what was paid and what is required, for last_error', () => {
    assert.deepEqual(checkGasPayment(minimum1000, paid(1, 0, 999)), {
      ok: false,
      reason: 'underpaid',
      message: 'paid 999 wei, the minimum is 1000 wei',
    });
    assert.deepEqual(checkGasPayment(minimum1000, NONE), {
      ok: false,
      reason: 'no_payment',
      message: "no payment for this message's destination on the origin's InterchainGasPaymaster",
    });
  });
});

describe('checkGasPayment with the gas spent (docs/gas.md#gas-already-spent)', () => {
  const [quote, free] = entries([{ type: 'onChainFeeQuoting' }, { type: 'onChainFeeQuoting', gasFraction: '0/1' }]);
  const underpaid = (message: string) => ({ ok: false, reason: 'underpaid', message });

  test('onChainFeeQuoting waits before metadata when what is left cannot meet even the least estimate', () => {
    // 1/2 of the least estimate of any transaction (21 000 gas): 10 500.
    assert.deepEqual(
      checkGasPayment(quote, paid(1, 70_000n, 0), 60_000n),
      underpaid('paid for 10000 gas (after 60000 spent), at least 10500 required for any estimate'),
    );
    assert.deepEqual(
      checkGasPayment(quote, paid(1, 50_000n, 0), 60_000n),
      underpaid('paid for 0 gas (after 60000 spent), at least 10500 required for any estimate'),
    );
    assert.deepEqual(checkGasPayment(quote, paid(1, 70_500n, 0), 60_000n), { ok: true });
    assert.deepEqual(
      checkGasPayment(quote, paid(1, 10_499n, 0), 0n),
      underpaid('paid for 10499 gas, at least 10500 required for any estimate'),
    );
    // Without the spent gas (as checkGasPaymentForEstimate calls it) the amount waits for the estimate.
    assert.deepEqual(checkGasPayment(quote, paid(1, 1n, 0)), { ok: true });
    // A fraction of 0 requires nothing of any estimate; other policies ignore the spent gas.
    assert.deepEqual(checkGasPayment(free, paid(1, 0n, 0), 5n), { ok: true });
    assert.deepEqual(checkGasPayment(entries([{ type: 'minimum', payment: 1 }])[0], paid(1, 0n, 1), 10n ** 9n), {
      ok: true,
    });
  });
});

describe('checkGasPayment: minimum counts the wei already spent (docs/gas.md#gas-already-spent)', () => {
  const [minimum1000, minimum0] = entries([
    { type: 'minimum', payment: 1000 },
    { type: 'minimum', payment: 0 },
  ]);
  const underpaid = (message: string) => ({ ok: false, reason: 'underpaid', message });

  test('what our reverted transactions cost comes off the payment, whatever the minimum', () => {
    assert.deepEqual(
      checkGasPayment(minimum1000, paid(1, 0n, 1500n), 0n, 501n),
      underpaid('paid 999 wei (after 501 wei spent), the minimum is 1000 wei'),
    );
    assert.deepEqual(checkGasPayment(minimum1000, paid(1, 0n, 1500n), 0n, 500n), { ok: true });
    // Spent beyond the payment: even a minimum of 0 waits for a top-up that covers the spend.
    assert.deepEqual(
      checkGasPayment(minimum0, paid(1, 0n, 1n), 21_000n, 10n ** 15n),
      underpaid('paid 0 wei (after 1000000000000000 wei spent), the minimum is 0 wei'),
    );
    assert.deepEqual(checkGasPayment(minimum0, paid(2, 0n, 10n ** 15n), 21_000n, 10n ** 15n), { ok: true });
    // The check after the estimate applies it too; onChainFeeQuoting counts gas, not wei.
    assert.equal(checkGasPaymentForEstimate(minimum1000, paid(1, 0n, 1500n), 50_000n, 0n, 501n).ok, false);
    assert.deepEqual(checkGasPaymentForEstimate(minimum1000, paid(1, 0n, 1500n), 50_000n, 0n, 500n), {
      ok: true,
      gasLimit: 50_000n,
    });
    const [quote] = entries([{ type: 'onChainFeeQuoting' }]);
    assert.deepEqual(checkGasPayment(quote, paid(1, 100_000n, 0n), 0n, 10n ** 18n), { ok: true });
  });
});

describe('checkGasPaymentForEstimate: onChainFeeQuoting against the estimate (policies/on_chain_fee_quoting.rs)', () => {
  const [quote, minimum] = entries([{ type: 'onChainFeeQuoting' }, { type: 'minimum', payment: 1 }]);
  const MIN = 1000n;
  const ESTIMATE = 2000n; // MIN * 2
  const cases: [string, GasPaid, bigint, bigint | null][] = [
    ['test_payment_less_than_min: paid MIN - 1', paid(1, MIN - 1n, 0), 0n, null],
    ['test_payment_at_least_min: paid MIN, the estimate is the limit', paid(1, MIN, 0), 0n, ESTIMATE],
    ['test_uses_full_paid_amount: paid MIN * 2 + 300', paid(1, MIN * 2n + 300n, 0), 0n, MIN * 2n + 300n],
    ['test_accounts_for_expenditure: paid MIN + 300, 301 spent', paid(1, MIN + 300n, 0), 301n, null],
    [
      'test_accounts_for_expenditure_when_giving_full_amount: 50 spent',
      paid(1, MIN * 2n + 300n, 0),
      50n,
      MIN * 2n + 250n,
    ],
    ['spent more than paid: nothing left', paid(1, MIN, 0), MIN * 5n, null],
  ];
  for (const [what, payments, spent, limit] of cases) {
    test(what, () => {
      const check = checkGasPaymentForEstimate(quote, payments, ESTIMATE, spent);
      assert.deepEqual(check.ok ? check.gasLimit : null, limit);
      assert.equal(check.requiredGas, MIN);
    });
  }

  test('test_payment_found_quote_policy (1/2 of an estimate of 100, 50 paid): the estimate is the limit', () => {
    assert.deepEqual(checkGasPaymentForEstimate(quote, paid(1, 50, 1), 100n), {
      ok: true,
      gasLimit: 100n,
      requiredGas: 50n,
    });
  });

  test('the fraction rounds down, and any fraction applies (3/4, 0/1)', () => {
    const [threeQuarters, zero] = entries([
      { type: 'onChainFeeQuoting', gasFraction: '3/4' },
      { type: 'onChainFeeQuoting', gasFraction: '0/1' },
    ]);
    assert.equal(requiredGas({ numerator: 3n, denominator: 4n }, 1001n), 750n);
    assert.equal(checkGasPaymentForEstimate(threeQuarters, paid(1, 749, 0), 1000n).ok, false);
    assert.equal(checkGasPaymentForEstimate(threeQuarters, paid(1, 750, 0), 1000n).ok, true);
    assert.equal(checkGasPaymentForEstimate(zero, paid(1, 0, 0), 10n ** 9n).ok, true);
    assert.equal(checkGasPaymentForEstimate(zero, NONE, 1n).ok, false, 'a payment must still exist');
  });

  test('an underpayment says how much gas is paid for and required', () => {
    const check = checkGasPaymentForEstimate(quote, paid(1, MIN + 300n, 0), ESTIMATE, 301n);
    assert.deepEqual(check, {
      ok: false,
      reason: 'underpaid',
      message: 'paid for 999 gas (after 301 spent), 1000 required (estimate 2000 × 1/2)',
      requiredGas: 1000n,
    });
    // Nothing spent yet: no "after" part.
    assert.equal(
      (checkGasPaymentForEstimate(quote, paid(1, 999, 0), ESTIMATE) as { message: string }).message,
      'paid for 999 gas, 1000 required (estimate 2000 × 1/2)',
    );
  });

  test('none and minimum take the estimate as it is', () => {
    assert.deepEqual(checkGasPaymentForEstimate(minimum, paid(1, 0, 1), ESTIMATE), { ok: true, gasLimit: ESTIMATE });
    assert.deepEqual(checkGasPaymentForEstimate(null, paid(1, 0, 1), ESTIMATE).ok, false);
  });
});

describe('processGasLimit: the transaction gas limit within transactionGasLimit', () => {
  test('the estimate plus the margin, or the gas paid for when larger, capped; an estimate above the limit is refused', () => {
    const limit = (estimate: bigint, policyGasLimit: bigint, transactionGasLimit: bigint | null) =>
      processGasLimit({ estimate, policyGasLimit, marginPercent: 20, transactionGasLimit });
    assert.deepEqual(limit(100_000n, 100_000n, null), { ok: true, gasLimit: 120_000n });
    assert.deepEqual(
      limit(100_000n, 100_000n, 3_000_000n),
      { ok: true, gasLimit: 120_000n },
      'a limit above: not used',
    );
    assert.deepEqual(limit(100_000n, 500_000n, null), { ok: true, gasLimit: 500_000n });
    assert.deepEqual(limit(100_000n, 500_000n, 300_000n), { ok: true, gasLimit: 300_000n });
    assert.deepEqual(limit(290_000n, 290_000n, 300_000n), { ok: true, gasLimit: 300_000n });
    assert.deepEqual(limit(300_000n, 300_000n, 300_000n), { ok: true, gasLimit: 300_000n });
    assert.deepEqual(limit(20_000_000n, 20_000_000n, 3_000_000n), {
      ok: false,
      message: 'estimate 20000000 exceeds transactionGasLimit 3000000',
    });
  });
});

describe('needsPaymaster: the origins a payment is asked from', () => {
  test('an entry asking for payment covers an origin unless its matching list names other origins only', () => {
    const list = entries([
      { type: 'none', matchingList: [{ originDomain: 5 }] },
      {
        type: 'minimum',
        payment: 1,
        matchingList: [{ originDomain: [1, 2] }, { originDomain: 3, senderAddress: SENDER }],
      },
      { type: 'onChainFeeQuoting', matchingList: [{ destinationDomain: 9 }] },
    ]);
    assert.equal(needsPaymaster(list, 1), 1);
    assert.equal(needsPaymaster(list, 3), 1);
    assert.equal(needsPaymaster(list, 5), 2, 'the catch-all of destination 9 covers every origin');
    assert.equal(needsPaymaster(entries([{ type: 'none' }]), 1), undefined);
    assert.equal(needsPaymaster(entries([{ type: 'minimum', payment: 1 }]), 7), 0, 'no matching list: every origin');
    assert.equal(
      needsPaymaster(entries([{ type: 'minimum', payment: 1, matchingList: [{ originDomain: '*' }] }]), 7),
      0,
      'originDomain "*": every origin',
    );
    assert.equal(
      needsPaymaster(entries([{ type: 'minimum', payment: 1, matchingList: [{ originDomain: 2 }] }]), 1),
      undefined,
    );
  });
});

/**
 * The config parser of `gasPaymentEnforcement` (docs/worker-configuration.md#gas-payment-enforcement):
 * what it accepts, and the exact key and text of what it refuses. Checked here, among the files
 * `npm run mutate` runs for lib/gas/policy.ts (CONTRIBUTING.md#mutation-testing).
 */
describe('parseGasPaymentEnforcement: the entries as written', () => {
  const KEY = 'gasPaymentEnforcement';
  const parse = (list: unknown) => parseGasPaymentEnforcement(list, KEY);
  const fraction = (gasFraction: string) => {
    const [entry] = parse([{ type: 'onChainFeeQuoting', gasFraction }]);
    assert.equal(entry.type, 'onChainFeeQuoting');
    return entry.type === 'onChainFeeQuoting' ? entry.gasFraction : undefined;
  };
  const refused = (list: unknown, key: string, problem: string) =>
    assert.throws(() => parse(list), { name: 'ConfigError', key, message: `${key}: ${problem}` });
  const U64_MAX = '18446744073709551615'; // 2^64 - 1
  const U64_OVER = '18446744073709551616'; // 2^64

  test('every key an entry of each type may have, and what it reads', () => {
    assert.deepEqual(parse([]), []);
    assert.deepEqual(
      parse([
        { type: 'none', matchingList: [{ originDomain: 1 }] },
        { type: 'minimum', payment: '7', matchingList: [] },
        { type: 'onChainFeeQuoting', gasFraction: '3/4', matchingList: [{ destinationDomain: 2 }] },
        { type: 'onChainFeeQuoting' },
      ]),
      [
        { type: 'none', matchingList: [{ originDomain: 1 }] },
        { type: 'minimum', payment: 7n, matchingList: [] },
        {
          type: 'onChainFeeQuoting',
          gasFraction: { numerator: 3n, denominator: 4n },
          matchingList: [{ destinationDomain: 2 }],
        },
        { type: 'onChainFeeQuoting', gasFraction: { numerator: 1n, denominator: 2n }, matchingList: [] },
      ],
    );
  });

  test("without type: an entry with payment is minimum, any other none (Hyperlane's rule)", () => {
    assert.deepEqual(parse([{ payment: 5 }, {}, { matchingList: [] }]), [
      { type: 'minimum', payment: 5n, matchingList: [] },
      { type: 'none', matchingList: [] },
      { type: 'none', matchingList: [] },
    ]);
  });

  test('a key another type has is refused, naming the keys of this one', () => {
    refused(
      [{ type: 'none', gasFraction: '1/2' }],
      `${KEY}[0].gasFraction`,
      'unknown key; the keys here: type, matchingList',
    );
    refused(
      [{ type: 'minimum', payment: 1, gasFraction: '1/2' }],
      `${KEY}[0].gasFraction`,
      'unknown key; the keys here: type, matchingList, payment',
    );
    refused(
      [{ type: 'onChainFeeQuoting', payment: '1' }],
      `${KEY}[0].payment`,
      'unknown key; the keys here: type, matchingList, gasFraction',
    );
  });

  test('the type, the payment and the matching list: exact key and text', () => {
    refused({ type: 'none' }, KEY, 'expected an array, got a object');
    refused([{ type: 'none' }, 'none'], `${KEY}[1]`, 'expected an object, got a string');
    refused([{ type: 1 }], `${KEY}[0].type`, 'expected a string, got a number');
    for (const type of ['onchainFeeQuoting', 'toString', '']) {
      refused(
        [{ type: 'none' }, { type }],
        `${KEY}[1].type`,
        `expected "none", "minimum" or "onChainFeeQuoting", got ${JSON.stringify(type)}`,
      );
    }
    refused([{ type: 'minimum' }], `${KEY}[0].payment`, 'required (the minimum payment in wei)');
    refused(
      [{ type: 'minimum', payment: '-1' }],
      `${KEY}[0].payment`,
      'expected an integer or a decimal string, got "-1"',
    );
    refused([{ type: 'none', matchingList: 'x' }], `${KEY}[0].matchingList`, 'expected an array, got a string');
  });

  test('gasFraction: n/d, each from 0 (n) or 1 (d) to 2^64 - 1, spaces ignored', () => {
    assert.deepEqual(fraction('0/1'), { numerator: 0n, denominator: 1n });
    assert.deepEqual(fraction(' 3 / 4 '), { numerator: 3n, denominator: 4n });
    assert.deepEqual(fraction('10/90'), { numerator: 10n, denominator: 90n });
    assert.deepEqual(fraction(`${U64_MAX}/${U64_MAX}`), {
      numerator: 2n ** 64n - 1n,
      denominator: 2n ** 64n - 1n,
    });
    assert.deepEqual(fraction(`1/${U64_MAX}`), { numerator: 1n, denominator: 2n ** 64n - 1n });
  });

  test('gasFraction refused: exact key and text', () => {
    const bad = [
      '1/0',
      '01/2',
      '1/02',
      '00/1',
      '-1/2',
      '1/-2',
      'x1/2',
      '1/2x',
      '1/2/3',
      '1',
      '/2',
      '1/',
      '1.5/2',
      'a/b',
      '',
      `${U64_OVER}/1`,
      `1/${U64_OVER}`,
      `99999999999999999999/1`,
      `1/99999999999999999999`,
      `1${U64_MAX}/1`,
    ];
    for (const gasFraction of bad) {
      refused(
        [{ type: 'none' }, { type: 'onChainFeeQuoting', gasFraction }],
        `${KEY}[1].gasFraction`,
        `expected "numerator/denominator" (e.g. "1/2", denominator not 0), got ${JSON.stringify(gasFraction)}`,
      );
    }
    refused(
      [{ type: 'onChainFeeQuoting', gasFraction: 3 }],
      `${KEY}[0].gasFraction`,
      'expected a string, got a number',
    );
  });
});
