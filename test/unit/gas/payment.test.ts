/**
 * The InterchainGasPaymaster's GasPayment logs (docs/gas.md#gas-payment-enforcement): strict
 * decoding cross-checked against viem on random logs encoded by viem, the payments of a receipt
 * that count for a message (its destination only, each log once) and their sums.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { keccak_256 } from '@noble/hashes/sha3.js';
import fc from 'fast-check';
import type { Hex } from 'viem';
import { decodeEventLog, encodeAbiParameters, encodeEventTopics, hexToBytes, pad, parseAbi, toHex } from 'viem/utils';
import { decodeGasPaymentLog, GAS_PAYMENT_TOPIC, type Log } from '../../../lib/codec/abi.ts';
import { DecodeError } from '../../../lib/errors/classes.ts';
import {
  gasPaymentLogFilter,
  gasPaymentsFromJson,
  gasPaymentsIn,
  sumGasPayments,
  type GasPayment,
} from '../../../lib/gas/payment.ts';
import { bytesToHex } from '../../../lib/codec/hex.ts';
import { hyperlaneArtifact } from '../../helpers/chain/hyperlane.ts';
import { BOUNDED } from '../../helpers/fixtures/properties.ts';

// IInterchainGasPaymaster.sol of @hyperlane-xyz/core, as written there.
const IGP_ABI = parseAbi([
  'event GasPayment(bytes32 indexed messageId, uint32 indexed destinationDomain, uint256 gasAmount, uint256 payment)',
]);
const IGP = '0x6cb503b2b1e3e4e5e0e4e1bca6e7f1a3f1d2c0b9';
const TX = `0x${'ab'.repeat(32)}`;
const ID_A = `0x${'a1'.repeat(32)}`;
const ID_B = `0x${'b2'.repeat(32)}`;

function paymentLog(
  f: { messageId?: string; destination?: number; gasAmount?: bigint; payment?: bigint; address?: string },
  logIndex?: number,
): Log {
  const topics = encodeEventTopics({
    abi: IGP_ABI,
    eventName: 'GasPayment',
    args: { messageId: (f.messageId ?? ID_A) as Hex, destinationDomain: f.destination ?? 8453 },
  }) as string[];
  const data = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }],
    [f.gasAmount ?? 50_000n, f.payment ?? 10n ** 15n],
  );
  const log: Log = { address: f.address ?? IGP, topics, data: hexToBytes(data) };
  if (logIndex !== undefined) log.logIndex = logIndex;
  return log;
}

function decodeCodeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof DecodeError, String(error));
    return error.code;
  }
  return 'no error';
}

describe('decodeGasPaymentLog (strict, cross-checked with viem)', () => {
  test('the topic is keccak256 of the event signature (noble), as in the IGP contract ABI of @hyperlane-xyz/core', () => {
    const signature = 'GasPayment(bytes32,uint32,uint256,uint256)';
    assert.equal(GAS_PAYMENT_TOPIC, bytesToHex(keccak_256(new TextEncoder().encode(signature))));
    const { abi } = hyperlaneArtifact('hooks/igp/InterchainGasPaymaster');
    const event = abi.find(
      (item: { type: string; name?: string }) => item.type === 'event' && item.name === 'GasPayment',
    );
    assert.ok(event, 'the IGP emits GasPayment');
    assert.equal(encodeEventTopics({ abi: [event], eventName: 'GasPayment' })[0], GAS_PAYMENT_TOPIC);
  });

  test('agrees with viem on random payments (uint256 amounts, any destination)', () => {
    const uint256 = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n });
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        uint256,
        uint256,
        (id, destination, gasAmount, payment) => {
          const log = paymentLog({ messageId: toHex(id), destination, gasAmount, payment });
          const ours = decodeGasPaymentLog(log);
          const { args } = decodeEventLog({
            abi: IGP_ABI,
            topics: log.topics as [Hex],
            data: toHex(log.data),
            strict: true,
          });
          assert.ok(args);
          assert.deepEqual(ours, {
            messageId: args.messageId,
            destination: args.destinationDomain,
            gasAmount: args.gasAmount,
            payment: args.payment,
          });
        },
      ),
      { ...BOUNDED, numRuns: 500 },
    );
  });

  test('what a paymaster cannot emit is refused', () => {
    const good = paymentLog({});
    const cases: [string, Log, string][] = [
      ['two topics', { ...good, topics: good.topics.slice(0, 2) }, 'topic_count'],
      ['four topics', { ...good, topics: [...good.topics, good.topics[1]] }, 'topic_count'],
      ['another event', { ...good, topics: [`0x${'00'.repeat(32)}`, ...good.topics.slice(1)] }, 'topic0'],
      ['destination above uint32', { ...good, topics: [good.topics[0], good.topics[1], pad('0x0100000000')] }, 'topic'],
      [
        'a topic of 31 bytes',
        { ...good, topics: [good.topics[0], good.topics[1].slice(0, 64)].concat(good.topics[2]) },
        'topic',
      ],
      ['63 bytes of data', { ...good, data: good.data.slice(0, 63) }, 'short'],
      ['no data', { ...good, data: new Uint8Array(0) }, 'short'],
      ['65 bytes of data', { ...good, data: new Uint8Array([...good.data, 0]) }, 'trailing'],
      ['three words', { ...good, data: new Uint8Array(96) }, 'trailing'],
    ];
    for (const [what, log, code] of cases)
      assert.equal(
        decodeCodeOf(() => decodeGasPaymentLog(log)),
        code,
        what,
      );
  });
});

describe('gasPaymentsIn: the payments of a receipt that count', () => {
  const messages = [
    { id: ID_A, destination: 8453 },
    { id: ID_B, destination: 10 },
  ];

  test('for a listed message and its own destination, from the paymaster only, each log once, in log order', () => {
    const logs = [
      paymentLog({ messageId: ID_A, gasAmount: 1n, payment: 2n }, 3),
      paymentLog({ messageId: ID_A, destination: 10 }, 4), // another destination
      paymentLog({ messageId: ID_B, destination: 10, gasAmount: 5n, payment: 6n }, 5),
      paymentLog({ messageId: `0x${'cc'.repeat(32)}` }, 6), // another message
      paymentLog({ messageId: ID_A, address: '0x000000000000000000000000000000000000dead' }, 7), // another contract
      { ...paymentLog({ messageId: ID_A }, 3) }, // the same log again (a lying node)
      { address: IGP, topics: [`0x${'11'.repeat(32)}`], data: new Uint8Array(0), logIndex: 8 }, // another event of the IGP
    ];
    const found = gasPaymentsIn(
      logs,
      TX.toUpperCase().replace('0X', '0x'),
      IGP.toUpperCase().replace('0X', '0x'),
      messages,
    );
    assert.deepEqual(found, [
      { messageId: ID_A, destination: 8453, gasAmount: 1n, payment: 2n, txHash: TX, logIndex: 3 },
      { messageId: ID_B, destination: 10, gasAmount: 5n, payment: 6n, txHash: TX, logIndex: 5 },
    ]);
  });

  test('a malformed GasPayment log of the paymaster, or one without a log index, is a DecodeError', () => {
    assert.equal(
      decodeCodeOf(() => gasPaymentsIn([paymentLog({})], TX, IGP, messages)),
      'data',
    );
    assert.throws(() => gasPaymentsIn([paymentLog({})], TX, IGP, messages), {
      message: 'GasPayment log without a log index',
    });
    const bad = { ...paymentLog({}, 1), data: new Uint8Array(10) };
    assert.equal(
      decodeCodeOf(() => gasPaymentsIn([bad], TX, IGP, messages)),
      'short',
    );
    // The same shape from any other address is not looked at.
    assert.deepEqual(gasPaymentsIn([{ ...bad, address: `0x${'12'.repeat(20)}` }], TX, IGP, messages), []);
  });
});

describe('sumGasPayments', () => {
  const p = (over: Partial<GasPayment>): GasPayment => ({
    messageId: ID_A,
    destination: 8453,
    gasAmount: 100n,
    payment: 1_000n,
    txHash: TX,
    logIndex: 0,
    ...over,
  });

  test('sums the message’s payments for its destination, each (tx hash, log index) once', () => {
    const payments = [
      p({}),
      p({ logIndex: 1, gasAmount: 2n ** 200n, payment: 2n ** 255n }),
      p({ txHash: `0x${'cd'.repeat(32)}`, logIndex: 0, gasAmount: 7n, payment: 9n }), // a top-up in another transaction
      p({ logIndex: 1 }), // counted already
      p({ txHash: TX.toUpperCase().replace('0X', '0x') }), // the same log, another spelling
      p({ destination: 10, logIndex: 9 }), // another destination
      p({ messageId: ID_B, logIndex: 10 }), // another message
    ];
    assert.deepEqual(sumGasPayments(payments, { id: ID_A.toUpperCase().replace('0X', '0x'), destination: 8453 }), {
      payments: 3,
      gasAmount: 100n + 2n ** 200n + 7n,
      payment: 1_000n + 2n ** 255n + 9n,
    });
    assert.deepEqual(sumGasPayments([], { id: ID_A, destination: 8453 }), { payments: 0, gasAmount: 0n, payment: 0n });
  });
});

describe('gasPaymentsFromJson: the rows the versioned reads select with a message', () => {
  test('as text (SQLite) or parsed (PostgreSQL), numbers as numbers or text, amounts as decimal text; none is []', () => {
    const row = {
      tx_hash: TX,
      log_index: 3,
      message_id: ID_A,
      destination: 8453,
      gas_amount: '50000',
      payment: String(2n ** 255n),
    };
    const payment: GasPayment = {
      messageId: ID_A,
      destination: 8453,
      gasAmount: 50_000n,
      payment: 2n ** 255n,
      txHash: TX,
      logIndex: 3,
    };
    assert.deepEqual(gasPaymentsFromJson(JSON.stringify([row])), [payment]);
    assert.deepEqual(gasPaymentsFromJson([{ ...row, log_index: '3', destination: '8453' }]), [payment]);
    assert.deepEqual(gasPaymentsFromJson(null), []);
    assert.deepEqual(gasPaymentsFromJson('[]'), []);
  });
});

describe('gasPaymentLogFilter: the eth_getLogs filter for top-ups', () => {
  test('topic1 is the message id, topic2 its destination, as viem encodes them', () => {
    const filter = gasPaymentLogFilter(
      IGP.toUpperCase().replace('0X', '0x'),
      { id: ID_B, destination: 8453 },
      0x1234n,
      0x2000n,
    );
    assert.deepEqual(filter, {
      address: IGP,
      topics: encodeEventTopics({
        abi: IGP_ABI,
        eventName: 'GasPayment',
        args: { messageId: ID_B as Hex, destinationDomain: 8453 },
      }),
      fromBlock: '0x1234',
      toBlock: '0x2000',
    });
    assert.deepEqual(
      [gasPaymentLogFilter(IGP, { id: ID_B, destination: 1 }, 0n, 0n)].map((f) => [f.fromBlock, f.toBlock]),
      [['0x0', '0x0']],
      'block numbers in JSON-RPC quantity form, 0 as 0x0',
    );
  });
});
