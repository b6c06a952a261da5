/**
 * The fee ceiling (docs/hostile-recipients.md#hostile-recipients): `gasPriceCap` on a first send, and
 * replacements bounded by min(3 × the fresh suggestion, cap). The escalation vectors are those of
 * Hyperlane's escalator tests (rust/main/lander/src/adapter/chains/ethereum/adapter/gas_price/
 * escalator.rs), with a 10 % bump as there; where Hyperlane keeps the old price because the bound
 * is below it, no replacement is made here (the node would refuse one that does not raise the fee).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { feesWithinCap, replacementFees, type Fees } from '../../../lib/gas/fee-ceiling.ts';

const fees = (maxFeePerGas: bigint, maxPriorityFeePerGas = 0n): Fees => ({ maxFeePerGas, maxPriorityFeePerGas });

describe('feesWithinCap: a first send', () => {
  const suggested = fees(50n * 10n ** 9n, 2n * 10n ** 9n);
  const cases: [string, bigint, bigint | undefined, Fees | 'wait'][] = [
    ['no cap: the suggestion', 30n * 10n ** 9n, undefined, suggested],
    ['a cap above the suggestion changes nothing', 30n * 10n ** 9n, 100n * 10n ** 9n, suggested],
    ['a cap below it is the max fee', 30n * 10n ** 9n, 40n * 10n ** 9n, fees(40n * 10n ** 9n, 2n * 10n ** 9n)],
    ['the tip never exceeds the capped fee', 1n * 10n ** 9n, 1n * 10n ** 9n, fees(1n * 10n ** 9n, 1n * 10n ** 9n)],
    ['a base fee equal to the cap still fits', 40n * 10n ** 9n, 40n * 10n ** 9n, fees(40n * 10n ** 9n, 2n * 10n ** 9n)],
    ['a base fee above the cap: wait', 41n * 10n ** 9n, 40n * 10n ** 9n, 'wait'],
  ];
  for (const [what, baseFee, cap, expected] of cases) {
    test(what, () => {
      const decision = feesWithinCap(suggested, baseFee, cap);
      assert.deepEqual(decision.ok ? decision.fees : 'wait', expected);
    });
  }

  test('the wait says why, for last_error', () => {
    assert.deepEqual(feesWithinCap(suggested, 41n, 40n), {
      ok: false,
      message: 'base fee 41 wei is above gasPriceCap 40 wei; waiting for it to fall',
    });
  });
});

describe('replacementFees: escalation bounded by min(3 × the fresh suggestion, cap)', () => {
  const bump = { bumpPercent: 10 };
  const cases: [string, Fees, Fees, { bumpPercent: number; cap?: bigint }, Fees | 'wait'][] = [
    [
      'test_gas_price_cap_not_applied_when_escalated_lower_than_cap: old 100, new 200',
      fees(100n),
      fees(200n),
      bump,
      fees(200n),
    ],
    [
      'test_gas_price_escalation_without_cap: old 100, new 50: bumped to 110 (under 3 × 50)',
      fees(100n),
      fees(50n),
      bump,
      fees(110n),
    ],
    [
      'test_gas_price_cap_applied_for_legacy_tx: old 1000, new 100: 1100 is above 300',
      fees(1000n),
      fees(100n),
      bump,
      'wait',
    ],
    [
      'test_gas_price_cap_applied_for_eip1559_tx: old 2000/1000, new 200/100',
      fees(2000n, 1000n),
      fees(200n, 100n),
      bump,
      'wait',
    ],
    ['test_zero_estimated_price_protection: a fresh suggestion of 0', fees(100n), fees(0n), bump, 'wait'],
    [
      "both fees bumped, rounded up (12.5 %, the sender's default)",
      fees(1_001n, 101n),
      fees(1_000n, 100n),
      { bumpPercent: 12.5 },
      fees(1_127n, 114n),
    ],
    [
      'the fresh suggestion when above the bump',
      fees(100n, 10n),
      fees(150n, 20n),
      { bumpPercent: 13 },
      fees(150n, 20n),
    ],
    [
      'the cap bounds it below 3 × the suggestion',
      fees(100n, 10n),
      fees(100n, 10n),
      { bumpPercent: 10, cap: 120n },
      fees(110n, 11n),
    ],
    ['the cap below the bumped fee: wait', fees(100n, 10n), fees(100n, 10n), { bumpPercent: 10, cap: 109n }, 'wait'],
    [
      'the cap exactly the bumped fee: it fits',
      fees(100n, 10n),
      fees(100n, 10n),
      { bumpPercent: 10, cap: 110n },
      fees(110n, 11n),
    ],
    [
      'a fresh suggestion above the cap: the cap, not the suggestion (the caller passes it uncapped)',
      fees(100n, 10n),
      fees(500n, 50n),
      { bumpPercent: 10, cap: 200n },
      fees(200n, 50n),
    ],
    [
      'a fresh tip above the capped fee: the tip at most the fee',
      fees(100n, 10n),
      fees(500n, 400n),
      { bumpPercent: 10, cap: 200n },
      fees(200n, 200n),
    ],
    [
      'a tip that bumps above the bounded fee (a tip above its fee before): wait',
      fees(100n, 105n),
      fees(100n, 100n),
      { bumpPercent: 10, cap: 110n },
      'wait',
    ],
  ];
  for (const [what, previous, fresh, opts, expected] of cases) {
    test(what, () => {
      const decision = replacementFees(previous, fresh, opts);
      assert.deepEqual(decision.ok ? decision.fees : 'wait', expected);
      if (decision.ok) {
        // Never above the bound, always a real replacement.
        const bound = opts.cap !== undefined && opts.cap < fresh.maxFeePerGas * 3n ? opts.cap : fresh.maxFeePerGas * 3n;
        assert.ok(decision.fees.maxFeePerGas <= bound);
        assert.ok(decision.fees.maxFeePerGas * 1000n >= previous.maxFeePerGas * BigInt((100 + opts.bumpPercent) * 10));
        assert.ok(decision.fees.maxPriorityFeePerGas <= decision.fees.maxFeePerGas);
      }
    });
  }

  test('a wait says what the replacement needs and what bounds it', () => {
    assert.deepEqual(replacementFees(fees(1000n), fees(100n), { bumpPercent: 10, cap: 250n }), {
      ok: false,
      message:
        "a replacement needs maxFeePerGas 1100 wei, above the bound 250 wei (min(3 × the node's 100, gasPriceCap 250)); waiting for the transaction sent",
    });
  });

  test('a wait without a cap names the bound alone; a tip that cannot be bumped says so', () => {
    assert.deepEqual(replacementFees(fees(1000n), fees(100n), { bumpPercent: 10 }), {
      ok: false,
      message:
        "a replacement needs maxFeePerGas 1100 wei, above the bound 300 wei (min(3 × the node's 100)); waiting for the transaction sent",
    });
    assert.deepEqual(replacementFees(fees(100n, 105n), fees(100n, 100n), { bumpPercent: 10, cap: 110n }), {
      ok: false,
      message:
        'a replacement needs maxPriorityFeePerGas 116 wei, above its maxFeePerGas 110 wei; waiting for the transaction sent',
    });
  });

  test('an escalation that keeps being asked for stops at the bound, never past it', () => {
    let sent = fees(10n ** 9n, 10n ** 8n);
    const fresh = fees(10n ** 9n, 10n ** 8n);
    const cap = 2n * 10n ** 9n;
    const prices: bigint[] = [sent.maxFeePerGas];
    for (let i = 0; i < 20; i++) {
      const next = replacementFees(sent, fresh, { bumpPercent: 13, cap });
      if (!next.ok) break;
      sent = next.fees;
      prices.push(sent.maxFeePerGas);
    }
    assert.ok(prices.length > 2 && prices.length < 10, `${prices.length} sends`);
    assert.ok(prices.every((p) => p <= cap));
  });
});
