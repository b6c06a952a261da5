/**
 * Following a send (lib/worker/tx/follow.ts; docs/delivery.md#throughput, docs/transactions.md#gaps):
 * a transaction just broadcast cannot be in a block read before it, so its receipt is first asked
 * after the next head, not at once (one request fewer per message); then, at every head, what the
 * node holds decides: replaced with bumped fees (blocks, time, below the base fee; within the cap;
 * from the fees a refused "underpriced" replacement had), given back to the node where it lost it
 * (a gap, and later nonces lost with it), a free nonce below filled with a self-transfer, or the
 * end: mined (with its confirmations; at once when reverted, its gas counted within what it was
 * signed with), dropped (the nonce used by another transaction) or timed out. The first test's node
 * is a scripted JSON-RPC transport; the others run on the model node of
 * test/helpers/fakes/tx-node.ts, which checks each replacement as geth's pool does and whose blocks
 * the test mines. The clock is injected.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPublicClient, custom, keccak256, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { headsOf } from '../../../../lib/worker/tx/heads.ts';
import type { TransactionError } from '../../../../lib/worker/errors.ts';
import { createTransactionSender } from '../../../../lib/worker/tx/sender.ts';
import { rpcReceipt } from '../../../helpers/fixtures/builders.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';
import { BUMPED, FIRST, ID, SELF, senderHarness as setup, TO, type TxNode } from '../../../helpers/fakes/tx-node.ts';

const hex = (n: number | bigint) => `0x${n.toString(16)}`;

/**
 * A free nonce under a send: the first send's broadcast is refused for good ("insufficient
 * funds", checked), so nonce 0 is freed under the second send's nonce 1. Later broadcasts meet
 * `refuse` (none refused by default). Resolves with the second send still going (wrapped: awaiting
 * this does not await it).
 */
async function gapUnderSecondSend(s: ReturnType<typeof setup>, refuse: TxNode['refuse'] = () => undefined) {
  s.node.refuse = (t) =>
    t.nonce === 0 && s.node.sent.length === 1
      ? { code: -32000, message: 'insufficient funds for gas * price + value' }
      : refuse?.(t);
  const [a, b] = [s.send(), s.send()];
  const refused = await a.then(
    () => assert.fail('refused'),
    (e: TransactionError) => e.code,
  );
  assert.equal(refused, 'insufficient_funds');
  return { second: b };
}

describe('following a send (docs/delivery.md#throughput)', () => {
  test('the receipt of a transaction just broadcast is first asked after the next head, then found at once', async () => {
    const clock = createFakeClock(0);
    const account = privateKeyToAccount(`0x${'ad'.repeat(32)}`);
    let head = 10;
    let sent: Hex | undefined;
    /** The head each receipt request was made at. */
    const receiptsAt: number[] = [];
    const publicClient = createPublicClient({
      transport: custom({
        async request({ method, params }: { method: string; params: unknown[] }) {
          switch (method) {
            case 'eth_chainId':
              return '0x7a69';
            case 'eth_getTransactionCount':
              return '0x0';
            case 'eth_blockNumber':
              return hex(head);
            case 'eth_getBlockByNumber':
              return { number: hex(head), hash: `0x${'0b'.repeat(32)}`, baseFeePerGas: '0x1', transactions: [] };
            case 'eth_maxPriorityFeePerGas':
              return '0x1';
            case 'eth_sendRawTransaction':
              sent = keccak256(params[0] as Hex);
              return sent;
            case 'eth_getTransactionReceipt': {
              receiptsAt.push(head);
              // Mined in block 11, the block after the broadcast.
              if (params[0] !== sent || head < 11) return null;
              return { ...rpcReceipt(String(sent), []), blockNumber: '0xb' };
            }
            default:
              throw new Error(`unexpected ${method}`);
          }
        },
      }),
    });
    // Other sends are waiting (the steady state): the head watcher has read block 10 already.
    const primed = headsOf(publicClient, clock).after(undefined, 1_000);
    await clock.advance(0);
    await primed;
    assert.equal(headsOf(publicClient, clock).latest(), 10n);
    const sender = createTransactionSender({ publicClient, account, clock });
    const sending = sender.send(
      { to: `0x${'66'.repeat(20)}`, data: '0x' },
      { simulated: { estimate: 21_000n, gas: 21_000n } },
    );
    // Block 11 comes half a second after the broadcast (within pollMs, 1 s).
    let done = false;
    void sending.finally(() => (done = true)).catch(() => {});
    for (let ms = 0; !done && ms < 30_000; ms += 250) {
      if (ms === 500) head = 11;
      await clock.advance(250);
    }
    const result = await sending;
    assert.equal(result.hash, sent);
    assert.deepEqual(receiptsAt, [11], 'one receipt request, at the head after the broadcast');
  });
});

describe('following a slot: replacements, gaps, ends (docs/transactions.md#gaps)', () => {
  test('not mined 3 heads after it was sent: replaced at the same nonce, both fees +12.5 %, the replacement is the result', async () => {
    const s = setup();
    const sending = s.send();
    // A block every second that mines nothing (the first transaction's tip is outbid, say), then
    // two more after the replacement (fewer than 3 since it was sent: not replaced again), then one
    // that mines it.
    let after = 0;
    const r = await s.drive(sending, (ms) => {
      if (ms > 0 && ms % 1_000 === 0) {
        if (s.node.sent.length === 2 && ++after === 3) s.node.mine();
        else s.node.head++;
      }
    });
    const [first, second] = s.node.sent;
    assert.deepEqual(
      [first.nonce, first.maxFeePerGas, first.maxPriorityFeePerGas, first.gas],
      [0, 1_300n, 100n, 50_000n],
    );
    assert.deepEqual(
      [second.nonce, second.maxFeePerGas, second.maxPriorityFeePerGas, second.gas, second.to, second.data],
      [0, BUMPED.maxFeePerGas, BUMPED.maxPriorityFeePerGas, 50_000n, TO, '0x1234'],
    );
    assert.equal(s.node.sent.length, 2);
    assert.deepEqual([r.hash, r.nonce], [second.hash, 0]);
    assert.deepEqual(s.kinds(), [
      ['broadcast', 0, undefined],
      ['replacement', 0, 'blocks'],
    ]);
    assert.deepEqual(s.events[1], {
      kind: 'replacement',
      nonce: 0,
      hash: second.hash,
      ...BUMPED,
      messageId: ID,
      reason: 'blocks',
      chainId: 31337,
      signer: SELF,
    });
    assert.deepEqual(s.calls, [
      ['record', ID, 0, first.hash],
      ['record', ID, 0, second.hash],
      ['close', 0, { outcome: 'mined', hash: second.hash }],
    ]);
  });

  test('no new head, none known, or no block readable: replaced replaceAfterMs after each send, bumped from the last', async () => {
    for (const failing of ['none', 'eth_blockNumber', 'eth_getBlockByNumber']) {
      const s = setup({ replaceAfterMs: 10_000, timeoutMs: 25_000 });
      const at: number[] = [];
      s.node.refuse = () => {
        at.push(s.clock.now());
        // From the first broadcast on (its fees were read from the latest block).
        s.node.failing.add(failing);
        return undefined;
      };
      const err = await s.drive(s.send()).then(
        () => assert.fail('not mined'),
        (e: TransactionError) => e,
      );
      assert.deepEqual(at, [0, 10_000, 20_000], `sent at 0, replaced at 10 s and 20 s (failing: ${failing})`);
      assert.deepEqual(
        s.node.sent.map((t) => [t.nonce, t.maxFeePerGas, t.maxPriorityFeePerGas]),
        [
          [0, 1_300n, 100n],
          [0, 1_463n, 113n],
          [0, 1_646n, 128n],
        ],
        failing,
      );
      assert.deepEqual(
        s.kinds(),
        [
          ['broadcast', 0, undefined],
          ['replacement', 0, 'time'],
          ['replacement', 0, 'time'],
        ],
        failing,
      );
      assert.equal(err.code, 'timeout');
      assert.equal(err.message, 'not mined within 25000 ms (nonce 0)');
      assert.equal(err.hash, s.node.sent[2].hash, 'the last sent, which may still land');
      assert.deepEqual(
        s.calls.map(([op]) => op),
        ['record', 'record', 'record'],
        'a slot that timed out stays open in the journal',
      );
    }
  });

  test('no head known yet: only the wall-time rule, no gap looked for', async () => {
    const s = setup({ replaceAfterMs: 10_000, timeoutMs: 15_000 });
    s.node.failing.add('eth_blockNumber');
    // Lost by the node at once: without a head nothing looks for it, until replaceAfterMs.
    await s
      .drive(s.send(), (ms) => {
        if (ms === 250) s.node.pool.clear();
      })
      .catch(() => {});
    assert.deepEqual(s.kinds(), [
      ['broadcast', 0, undefined],
      ['replacement', 0, 'time'],
    ]);
  });

  test('while the base fee is above gasPriceCap nothing is replaced; below it again, replaced at its fees', async () => {
    const s = setup({ gasPriceCap: 3_000n, replaceAfterBlocks: 100 });
    let sentAtHighFee = 0;
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 250) s.node.baseFee = 3_500n;
      if (ms > 0 && ms % 1_000 === 0) s.node.head++;
      if (ms === 6_000) {
        sentAtHighFee = s.node.sent.length;
        s.node.baseFee = 2_000n;
      }
      if (ms === 8_000) s.node.mine();
    });
    assert.equal(sentAtHighFee, 1, 'nothing sent for 5 heads above the cap');
    // At base fee 2 000: 1.2 × 2 000 + 100 = 2 500, under the cap.
    assert.deepEqual(
      s.node.sent.map((t) => t.maxFeePerGas),
      [1_300n, 2_500n],
    );
    assert.equal(r.hash, s.node.sent[1].hash);
    assert.deepEqual(s.kinds().at(-1), ['replacement', 0, 'below-base-fee']);
  });

  test('onWait is called at every look; an error it throws ends the wait with that error, the slot left open', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    const stop = new Error('lease lost');
    let waits = 0;
    const err = await s
      .drive(
        s.send({
          onWait: async () => {
            if (++waits === 4) throw stop;
          },
        }),
        (ms) => {
          if (ms > 0 && ms % 1_000 === 0) s.node.head++;
        },
      )
      .then(
        () => assert.fail('stopped'),
        (e: unknown) => e,
      );
    assert.equal(err, stop);
    assert.equal(waits, 4);
    assert.deepEqual(
      s.calls.map(([op]) => op),
      ['record'],
      'the slot stays open for the next holder',
    );
    assert.equal(s.sender.lowestOpen(), undefined, 'no longer followed here');
  });

  test("below the base fee at a head: replaced at once at the node's fees when above the bump", async () => {
    const s = setup();
    const r = await s.drive(s.send(), (ms) => {
      // The base fee doubles in block 11; the replacement is mined in block 12.
      if (ms === 500) {
        s.node.baseFee = 2_000n;
        s.node.head++;
      }
      if (ms === 1_500) s.node.mine();
    });
    // 1.2 × 2 000 + 100 = 2 500, above 1 300 + 12.5 %; the tip bumped (113 > the node's 100).
    assert.deepEqual(
      s.node.sent.map((t) => [t.nonce, t.maxFeePerGas, t.maxPriorityFeePerGas]),
      [
        [0, 1_300n, 100n],
        [0, 2_500n, 113n],
      ],
    );
    assert.deepEqual(s.kinds(), [
      ['broadcast', 0, undefined],
      ['replacement', 0, 'below-base-fee'],
    ]);
    assert.equal(r.hash, s.node.sent[1].hash);
  });

  test('a replacement whose fee read fails bumps the fees it had; one that does not fit under gasPriceCap is not sent', async () => {
    const s = setup({ replaceAfterBlocks: 1, gasPriceCap: 1_500n, timeoutMs: 10_000 });
    const r = s.drive(s.send(), (ms) => {
      if (ms === 250) s.node.failing.add('eth_maxPriorityFeePerGas');
      if (ms > 0 && ms % 1_000 === 0) s.node.head++;
    });
    const err = await r.then(
      () => assert.fail('not mined'),
      (e: TransactionError) => e,
    );
    // 1 463 fits under the cap of 1 500; 1 646 does not: the second stays the newest.
    assert.deepEqual(
      s.node.sent.map((t) => [t.maxFeePerGas, t.maxPriorityFeePerGas]),
      [
        [1_300n, 100n],
        [1_463n, 113n],
      ],
    );
    assert.deepEqual([err.code, err.message], ['timeout', 'not mined within 10000 ms (nonce 0)']);
  });

  test('a replacement refused as underpriced raises the fees anyway (the next bumps from it); another refusal does not', async () => {
    for (const [refusal, third] of [
      ['replacement transaction underpriced', 1_646n],
      ['insufficient funds for gas * price + value', 1_463n],
    ] as const) {
      const s = setup();
      s.node.refuse = () => (s.node.sent.length === 2 ? { code: -32000, message: refusal } : undefined);
      const r = await s.drive(s.send(), (ms) => {
        if (ms > 0 && ms % 1_000 === 0) {
          if (s.node.sent.length === 3) s.node.mine();
          else s.node.head++;
        }
      });
      assert.deepEqual(
        s.node.sent.map((t) => t.maxFeePerGas),
        [1_300n, 1_463n, third],
        refusal,
      );
      assert.equal(r.hash, s.node.sent[2].hash);
      assert.deepEqual(s.kinds(), [
        ['broadcast', 0, undefined],
        ['replacement', 0, 'blocks'],
      ]);
      assert.deepEqual(
        s.calls.map(([op, , , hash]) => [op, hash]),
        [
          ['record', s.node.sent[0].hash],
          ['record', s.node.sent[1].hash],
          ['forget', undefined],
          ['record', s.node.sent[2].hash],
          ['close', undefined],
        ],
        'the refused one recorded, then forgotten',
      );
    }
  });

  test('the nonce taken by another transaction: dropped, the slot closed dropped, nothing counted as spent', async () => {
    const s = setup();
    const err = await s
      .drive(s.send(), (ms) => {
        if (ms === 500) s.node.useNonce();
      })
      .then(
        () => assert.fail('dropped'),
        (e: TransactionError) => e,
      );
    assert.deepEqual(
      [err.code, err.message, err.hash],
      ['nonce', "nonce 0 was used by another transaction; none of this send's was mined", s.node.sent[0].hash],
    );
    assert.deepEqual(s.calls.slice(1), [['close', 0, { outcome: 'dropped' }]]);
    assert.deepEqual(s.spends, []);
    assert.equal(s.node.sent.length, 1);
  });

  test('mined between the receipt read and the look at the head: found, not taken for dropped', async () => {
    const s = setup();
    let receipts = 0;
    s.node.before = (method) => {
      if (method === 'eth_getTransactionReceipt') receipts++;
      // Block 11 mines it right after its first receipt read said "not mined".
      if (method === 'eth_getTransactionCount' && receipts === 1 && s.node.mined === 0) s.node.mine();
    };
    const r = await s.drive(s.send());
    assert.deepEqual([r.hash, r.nonce, r.receipt.blockNumber], [s.node.sent[0].hash, 0, 11n]);
    assert.equal(receipts, 2, 'the receipt found by the look is not asked again');
    assert.deepEqual(s.calls.slice(1), [['close', 0, { outcome: 'mined', hash: s.node.sent[0].hash }]]);
  });

  test('the node loses it at the nonce the chain waits on: a gap said once, the same bytes given again, then mined', async () => {
    const s = setup();
    const r = await s.drive(s.send(), (ms) => {
      // Lost from the pool right after the broadcast; block 11 mines nothing.
      if (ms === 250) {
        s.node.drop(s.node.sent[0].hash);
        s.node.head++;
      }
      if (ms === 2_000) s.node.mine();
    });
    const [first, again] = s.node.sent;
    assert.equal(s.node.sent.length, 2);
    assert.equal(again.raw, first.raw, 'the same signed bytes');
    assert.equal(r.hash, first.hash);
    assert.deepEqual(s.events.slice(1), [
      {
        kind: 'gap',
        nonce: 0,
        messageId: ID,
        reason: 'the node holds none of its transactions',
        chainId: 31337,
        signer: SELF,
      },
      {
        kind: 'rebroadcast',
        nonce: 0,
        messageId: ID,
        hash: first.hash,
        ...FIRST,
        reason: 'gap',
        chainId: 31337,
        signer: SELF,
      },
    ]);
    assert.deepEqual(
      s.calls.map(([op]) => op),
      ['record', 'close'],
      'nothing new in the journal',
    );
  });

  test('lost bytes the node refuses, or that pay less than the base fee: replaced (reason gap); the gap said once', async () => {
    for (const why of ['refused', 'below the base fee'] as const) {
      const s = setup({ replaceAfterBlocks: 100 });
      s.node.refuse = (t) =>
        why === 'refused' && s.node.sent.length > 1 && t.maxFeePerGas === FIRST.maxFeePerGas
          ? { code: -32000, message: 'transaction underpriced' }
          : undefined;
      const r = await s.drive(s.send(), (ms) => {
        if (ms === 250) {
          s.node.drop(s.node.sent[0].hash);
          if (why !== 'refused') s.node.baseFee = 1_400n;
          s.node.head++;
        }
        if (ms === 3_000) s.node.mine();
      });
      const newest = s.node.sent.at(-1)!;
      assert.equal(r.hash, newest.hash, why);
      // 1.2 × 1 400 + 100 = 1 780 when the base fee rose; 1 300 + 12.5 % otherwise.
      assert.deepEqual(
        [newest.nonce, newest.maxFeePerGas, newest.maxPriorityFeePerGas],
        [0, why === 'refused' ? 1_463n : 1_780n, 113n],
        why,
      );
      assert.deepEqual(
        s.kinds(),
        [
          ['broadcast', 0, undefined],
          ['gap', 0, 'the node holds none of its transactions'],
          ['replacement', 0, 'gap'],
        ],
        why,
      );
      assert.equal(s.events[2].messageId, ID);
    }
  });

  test('a gap healed by a replacement, then lost again: a second gap said, the replacement given back', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    s.node.refuse = (t) =>
      s.node.sent.length > 1 && t.maxFeePerGas === FIRST.maxFeePerGas
        ? { code: -32000, message: 'transaction underpriced' }
        : undefined;
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 250) {
        s.node.drop(s.node.sent[0].hash);
        s.node.head++;
      }
      if (ms === 2_250) s.node.pool.clear();
      if (ms === 3_000) s.node.head++;
      if (ms === 6_000) s.node.mine();
    });
    const replacement = s.node.sent.find((t) => t.maxFeePerGas === BUMPED.maxFeePerGas)!;
    assert.equal(r.hash, replacement.hash);
    assert.deepEqual(s.kinds(), [
      ['broadcast', 0, undefined],
      ['gap', 0, 'the node holds none of its transactions'],
      ['replacement', 0, 'gap'],
      ['gap', 0, 'the node holds none of its transactions'],
      ['rebroadcast', 0, 'gap'],
    ]);
    assert.equal(s.events[4].hash, replacement.hash);
  });

  test('a gap whose bytes and replacements the node refuses is said once while it lasts', async () => {
    const s = setup({ timeoutMs: 5_000 });
    s.node.refuse = () => (s.node.sent.length > 1 ? { code: -32000, message: 'transaction underpriced' } : undefined);
    await s
      .drive(s.send(), (ms) => {
        if (ms === 250) s.node.drop(s.node.sent[0].hash);
        if (ms > 0 && ms % 1_000 === 0) s.node.head++;
      })
      .catch(() => {});
    assert.ok(s.node.sent.length >= 5, `re-sent at every head: ${s.node.sent.length}`);
    assert.deepEqual(s.kinds(), [
      ['broadcast', 0, undefined],
      ['gap', 0, 'the node holds none of its transactions'],
    ]);
  });

  test('a later nonce the node lost too is given back at the same head (reason lost), not replaced', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    const both = Promise.all([s.send(), s.send()]);
    const r = await s.drive(both, (ms) => {
      if (ms === 250) {
        // The node restarts: both gone; block 11 mines nothing.
        s.node.pool.clear();
        s.node.head++;
      }
      if (ms === 2_000) s.node.mine();
    });
    assert.deepEqual(
      r.map((x) => x.nonce),
      [0, 1],
    );
    assert.deepEqual(
      s.node.sent.map((t) => t.hash).sort(),
      [s.node.sent[0].hash, s.node.sent[0].hash, s.node.sent[1].hash, s.node.sent[1].hash].sort(),
      'each sent once more, the same bytes',
    );
    assert.deepEqual(
      s.events
        .filter((e) => e.kind === 'rebroadcast')
        .map((e) => [e.nonce, e.reason, e.messageId, e.hash])
        .sort(),
      [
        [0, 'gap', ID, s.node.sent[0].hash],
        [1, 'lost', ID, s.node.sent[1].hash],
      ],
    );
    assert.equal(s.events.filter((e) => e.kind === 'replacement').length, 0);
    assert.deepEqual(
      s.events.filter((e) => e.kind === 'gap').map((e) => e.nonce),
      [0],
      'the gap is nonce 0 only',
    );
  });

  test('a later nonce whose bytes the node refuses when given back is not replaced: it waits for the gap below', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    let refused = 0;
    s.node.refuse = (t) =>
      t.nonce === 1 && s.node.sent.length > 2 && refused++ === 0
        ? { code: -32000, message: 'transaction underpriced' }
        : undefined;
    const both = Promise.all([s.send(), s.send()]);
    await s.drive(both, (ms) => {
      if (ms === 250) {
        s.node.pool.clear();
        s.node.head++;
      }
      if (ms === 3_000 || ms === 6_000) s.node.mine();
      else if (ms > 0 && ms % 1_000 === 0) s.node.head++;
    });
    assert.equal(refused > 0, true, 'the re-sent bytes were refused once');
    assert.deepEqual(
      s.kinds().filter(([kind]) => kind === 'replacement'),
      [],
    );
    assert.deepEqual(
      [...s.node.receipts.values()].map((m) => [m.nonce, m.hash]),
      [
        [0, s.node.sent[0].hash],
        [1, s.node.sent[1].hash],
      ],
    );
  });

  test('a pending count past a lost gap (another backend holds it): later nonces wait while it lasts, replaced once it ends', async () => {
    const s = setup({ replaceAfterBlocks: 2 });
    // Nonce 0's bytes given back and its replacements are refused: the gap stays open.
    s.node.refuse = (t) =>
      t.nonce === 0 && s.node.sent.length > 3 ? { code: -32000, message: 'transaction underpriced' } : undefined;
    const sends = [s.send(), s.send(), s.send()];
    let replacedDuringGap = -1;
    const ended = await s.drive(Promise.allSettled(sends), (ms) => {
      if (ms === 250) {
        s.node.drop(s.node.sent[0].hash);
        s.node.pendingOver = 3;
      }
      if (ms > 0 && ms % 1_000 === 0 && ms <= 5_000) s.node.head++;
      if (ms === 5_500) {
        replacedDuringGap = s.events.filter((e) => e.kind === 'replacement').length;
        // The gap ends without us: another transaction of the key takes nonce 0 (block 16).
        s.node.pendingOver = undefined;
        s.node.useNonce();
      }
      // Six heads since they were sent: nonces 1 and 2 are replaced at block 16's look, then mined.
      if (ms === 7_000) s.node.mine();
    });
    assert.equal(replacedDuringGap, 0, 'nothing replaced while the gap lasted (5 heads)');
    assert.deepEqual(
      ended.map((e) => e.status),
      ['rejected', 'fulfilled', 'fulfilled'],
    );
    assert.deepEqual(
      s.kinds().filter(([kind, nonce]) => nonce !== 0 && kind !== 'broadcast'),
      [
        ['replacement', 1, 'blocks'],
        ['replacement', 2, 'blocks'],
      ],
    );
  });

  test('a free nonce below a slot is filled with a zero-value self-transfer of 21 000 gas, not in the journal', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    const { second: b } = await gapUnderSecondSend(s);
    const r = await s.drive(b, (ms) => {
      if (ms === 2_000) s.node.mine();
    });
    assert.equal(r.nonce, 1);
    const fill = s.node.sent[2];
    assert.deepEqual(
      [
        fill.nonce,
        fill.to.toLowerCase(),
        fill.value,
        fill.data,
        fill.gas,
        fill.maxFeePerGas,
        fill.maxPriorityFeePerGas,
      ],
      [0, SELF, 0n, '0x', 21_000n, FIRST.maxFeePerGas, FIRST.maxPriorityFeePerGas],
    );
    assert.deepEqual(s.events, [
      { kind: 'broadcast', nonce: 1, hash: s.node.sent[1].hash, ...FIRST, messageId: ID, chainId: 31337, signer: SELF },
      {
        kind: 'gap',
        nonce: 0,
        reason: 'no transaction may land at it: filled with a self-transfer',
        chainId: 31337,
        signer: SELF,
      },
      { kind: 'fill', nonce: 0, hash: fill.hash, ...FIRST, chainId: 31337, signer: SELF },
    ]);
    assert.ok(
      s.calls.every(([op, , , hash]) => op !== 'record' || hash !== fill.hash),
      'the filler is not journaled',
    );
    assert.deepEqual(s.node.receipts.get(fill.hash)?.nonce, 0, 'mined');
  });

  test('a free nonce another transaction used: the look at the head moves the book past it, the next send takes the next', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    const { second: b } = await gapUnderSecondSend(s);
    let c: ReturnType<typeof s.send> | undefined;
    const r = await s.drive(b, (ms) => {
      // Before the first look, another process of the same key sends at nonce 0 (block 11). After
      // a look at block 11, a third send while ours waits; block 12 mines both.
      if (ms === 0) s.node.useNonce();
      if (ms === 2_000) c = s.send();
      if (ms === 5_000) s.node.mine();
    });
    assert.equal(r.nonce, 1);
    assert.equal((await c)?.nonce, 2);
    assert.deepEqual(
      s.node.sent.map((t) => t.nonce),
      [0, 1, 2],
      'nonce 0 neither filled nor sent again',
    );
    assert.deepEqual(
      s.kinds().filter(([kind]) => kind !== 'broadcast'),
      [],
    );
  });

  test('a filler the node refuses gives its nonce back: the next head fills it again', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    let fillers = 0;
    const { second: b } = await gapUnderSecondSend(s, (t) =>
      t.gas === 21_000n && ++fillers === 1 ? { code: -32000, message: 'transaction underpriced' } : undefined,
    );
    const r = await s.drive(b, (ms) => {
      if (ms > 0 && ms % 1_000 === 0) {
        if (fillers === 2) s.node.mine();
        else s.node.head++;
      }
    });
    assert.equal(r.nonce, 1);
    assert.equal(fillers, 2, 'filled again after the refusal');
    const filled = s.node.sent[3];
    assert.deepEqual([s.node.sent.length, filled.nonce, filled.gas], [4, 0, 21_000n], 'one filler refused, one sent');
    // The refused filler is neither told as a fill nor followed (no gap found at it, nothing given back).
    assert.deepEqual(s.kinds(), [
      ['broadcast', 1, undefined],
      ['gap', 0, 'no transaction may land at it: filled with a self-transfer'],
      ['gap', 0, 'no transaction may land at it: filled with a self-transfer'],
      ['fill', 0, undefined],
    ]);
    assert.equal(s.events[3].hash, filled.hash);
    assert.equal(s.node.receipts.get(filled.hash)?.nonce, 0, 'the second filler mined');
  });

  test('a free nonce while the base fee is above gasPriceCap: no filler signed, nothing said; filled once the fees fit', async () => {
    const s = setup({ gasPriceCap: 3_000n, replaceAfterBlocks: 100 });
    const { second: b } = await gapUnderSecondSend(s);
    let sentAtHighFee = 0;
    const r = await s.drive(b, (ms) => {
      if (ms === 0) s.node.baseFee = 3_500n;
      if (ms > 0 && ms % 1_000 === 0) s.node.head++;
      if (ms === 5_000) {
        sentAtHighFee = s.node.sent.length;
        s.node.baseFee = 1_000n;
      }
      if (ms === 8_000) s.node.mine();
    });
    assert.equal(sentAtHighFee, 2, 'no filler for 4 heads above the cap');
    assert.equal(r.nonce, 1);
    const filler = s.node.sent[2];
    assert.deepEqual([filler.nonce, filler.gas, filler.maxFeePerGas], [0, 21_000n, FIRST.maxFeePerGas]);
    assert.deepEqual(s.kinds(), [
      ['broadcast', 1, undefined],
      ['gap', 0, 'no transaction may land at it: filled with a self-transfer'],
      ['fill', 0, undefined],
    ]);
    assert.equal(s.node.receipts.get(filler.hash)?.nonce, 0, 'the filler mined');
  });

  test('a filler timed out (a fee spike above gasPriceCap) and then evicted: its nonce freed, filled again once the fees fit', async () => {
    const s = setup({ gasPriceCap: 3_000n, replaceAfterBlocks: 100, timeoutMs: 5_000 });
    const { second: b } = await gapUnderSecondSend(s);
    // The filler goes out at the first look (block 11); then the base fee stays above the cap:
    // nothing can be mined or replaced, and the send of nonce 1 times out.
    const timedOut = await s
      .drive(b, (ms) => {
        if (ms === 1_000) s.node.head++;
        if (ms === 1_500) s.node.baseFee = 3_500n;
      })
      .then(
        () => assert.fail('timed out'),
        (e: TransactionError) => e.code,
      );
    assert.equal(timedOut, 'timeout');
    const filler = s.node.sent[2];
    assert.deepEqual([filler.nonce, filler.gas], [0, 21_000n]);
    // The next holder follows nonce 1's journaled slot; the filler's own wait ends, then the pool
    // evicts it; the base fee falls.
    const entries = await s.journal.openBroadcasts({ chainId: 31337, signer: SELF });
    const r = await s.drive(s.sender.follow(entries), (ms) => {
      if (ms === 2_000) s.node.drop(filler.hash);
      if (ms === 3_000) s.node.baseFee = 1_000n;
      if (ms > 0 && ms % 1_000 === 0 && ms !== 4_500) s.node.head++;
      if (ms === 4_500) s.node.mine();
    });
    assert.equal(r.nonce, 1);
    const refill = s.node.sent.at(-1)!;
    assert.deepEqual([refill.nonce, refill.gas], [0, 21_000n]);
    assert.equal(s.node.receipts.get(refill.hash)?.nonce, 0, 'a new filler mined at nonce 0');
    assert.deepEqual(
      s.events.filter((e) => e.kind === 'fill').map((e) => [e.nonce, e.hash]),
      [
        [0, filler.hash],
        [0, refill.hash],
      ],
    );
  });

  test('a filler whose reply is lost counts as sent: told, followed and given back at the gap, not filled again', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    // The filler's connection is cut at both tries: the node never got it, the sender cannot tell.
    s.node.cut = (t) => t.gas === 21_000n && s.node.sent.length <= 4;
    const { second: b } = await gapUnderSecondSend(s);
    const r = await s.drive(b, (ms) => {
      if (ms > 0 && ms % 1_000 === 0) {
        if (s.node.pool.size === 2) s.node.mine();
        else s.node.head++;
      }
    });
    assert.equal(r.nonce, 1);
    const filler = s.node.sent[2];
    assert.deepEqual(
      s.node.sent.slice(2).map((t) => t.hash),
      [filler.hash, filler.hash, filler.hash],
      'the same bytes: cut twice, then given back',
    );
    assert.deepEqual(s.kinds(), [
      ['broadcast', 1, undefined],
      ['gap', 0, 'no transaction may land at it: filled with a self-transfer'],
      ['fill', 0, undefined],
      ['gap', 0, 'the node holds none of its transactions'],
      ['rebroadcast', 0, 'gap'],
    ]);
    assert.equal(s.node.receipts.get(filler.hash)?.nonce, 0, 'the filler mined');
  });

  test('a filler not mined is replaced like any slot: bumped, still not journaled, no message named', async () => {
    const s = setup({ replaceAfterBlocks: 1 });
    const { second: b } = await gapUnderSecondSend(s);
    const fillerReplaced = () =>
      s.node.sent.some((t) => t.nonce === 0 && t.gas === 21_000n && t.maxFeePerGas > FIRST.maxFeePerGas);
    await s.drive(b, (ms) => {
      if (ms === 0 || ms % 1_000 !== 0) return;
      if (fillerReplaced()) s.node.mine();
      else s.node.head++;
    });
    const fills = s.node.sent.filter((t) => t.nonce === 0 && t.gas === 21_000n);
    assert.deepEqual(
      fills.map((t) => [t.to.toLowerCase(), t.value, t.maxFeePerGas, t.maxPriorityFeePerGas]),
      [
        [SELF, 0n, FIRST.maxFeePerGas, FIRST.maxPriorityFeePerGas],
        [SELF, 0n, BUMPED.maxFeePerGas, BUMPED.maxPriorityFeePerGas],
      ],
    );
    const recorded = new Set(s.calls.filter(([op]) => op === 'record').map(([, , , hash]) => hash));
    assert.deepEqual(
      fills.map((t) => recorded.has(t.hash)),
      [false, false],
      'neither journaled',
    );
    const replaced = s.events.find((e) => e.kind === 'replacement' && e.nonce === 0);
    assert.deepEqual([replaced?.hash, replaced?.messageId, replaced?.reason], [fills[1].hash, undefined, 'blocks']);
    assert.equal(s.node.receipts.get(fills[1].hash)?.nonce, 0, 'the replacement mined');
  });

  test('mined with confirmations 2: the result once the next head is read, not at the block that mined it', async () => {
    const s = setup({ confirmations: 2 });
    let headWhenDone = 0;
    const r = await s.drive(
      s.send().then((x) => ((headWhenDone = s.node.head), x)),
      (ms) => {
        if (ms === 500) s.node.mine();
        if (ms === 3_000) s.node.head++;
      },
    );
    assert.deepEqual([r.hash, r.receipt.blockNumber, headWhenDone], [s.node.sent[0].hash, 11n, 12]);
  });

  test('a replacement mined reverted: the end at once (no confirmations waited), its gas counted within what it was signed with', async () => {
    const s = setup({ confirmations: 3 });
    s.node.reverts.add(0);
    // A lying node: more gas used than the limit, a price above the replacement's maxFeePerGas.
    s.node.receiptOver = { gasUsed: '0x3b9aca00', effectiveGasPrice: '0xe8d4a51000' };
    // No head after the block that mines it: 3 confirmations would never come.
    const err = await s
      .drive(s.send(), (ms) => {
        if (ms > 0 && ms % 1_000 === 0 && s.node.receipts.size === 0) {
          if (s.node.sent.length === 2) s.node.mine();
          else s.node.head++;
        }
      })
      .then(
        () => assert.fail('reverted'),
        (e: TransactionError) => e,
      );
    const replacement = s.node.sent[1];
    // All of the 50 000 signed used (by the node's word): out of gas.
    assert.deepEqual([err.code, err.hash], ['out_of_gas', replacement.hash]);
    assert.deepEqual(s.spends, [
      { messageId: ID, txHash: replacement.hash, gasUsed: 50_000n, cost: 50_000n * BUMPED.maxFeePerGas },
    ]);
    assert.deepEqual(s.calls.at(-1), ['close', 0, { outcome: 'mined', hash: replacement.hash }]);
  });

  test('timed out: "not mined" or "not confirmed", with how many receipt polls the node failed', async () => {
    const cases = [
      { failFor: 0, confirm: 1, message: 'not mined within 3000 ms (nonce 0)' },
      { failFor: 1, confirm: 1, message: 'not mined within 3000 ms (nonce 0); the node failed 1 poll' },
      { failFor: 99, confirm: 1, message: 'not mined within 3000 ms (nonce 0); the node failed 4 polls' },
      { failFor: 0, confirm: 3, message: 'not confirmed within 3000 ms (nonce 0)' },
    ];
    for (const c of cases) {
      const s = setup({ timeoutMs: 3_000, confirmations: c.confirm, replaceAfterBlocks: 100 });
      // The wait is counted from the send, not from the clock's start.
      await s.clock.advance(100_000);
      let receipts = 0;
      s.node.before = (method) => {
        if (method !== 'eth_getTransactionReceipt') return;
        if (++receipts <= c.failFor) s.node.failing.add(method);
        else s.node.failing.delete(method);
      };
      const err = await s
        .drive(s.send(), (ms) => {
          if (ms === 500 && c.confirm > 1) s.node.mine();
        })
        .then(
          () => assert.fail('timed out'),
          (e: TransactionError) => e,
        );
      assert.deepEqual([err.code, err.message], ['timeout', c.message]);
    }
  });

  test('a receipt read refused for another reason than a failing node ends the wait with that error', async () => {
    const s = setup();
    s.node.refuse = undefined;
    s.node.before = (method) => {
      if (method === 'eth_getTransactionReceipt')
        s.node.receiptError = { code: -32000, message: 'insufficient funds for gas' };
    };
    const err = await s.drive(s.send()).then(
      () => assert.fail('refused'),
      (e: TransactionError) => e,
    );
    assert.deepEqual(
      [err.code, err.message, err.hash],
      ['insufficient_funds', 'waiting for the receipt: the signer cannot pay for gas', s.node.sent[0].hash],
    );
  });

  test('a journaled slot followed again: its receipt asked at once, before any head (it may be mined already)', async () => {
    const s = setup();
    const first = await s.drive(s.send(), (ms) => {
      if (ms === 500) s.node.mine();
    });
    const entry = {
      messageId: ID,
      chainId: 31337,
      signer: SELF,
      nonce: 0,
      hash: first.hash,
      raw: s.node.sent[0].raw,
      sentAt: 0,
    };
    const again = setup({}, s.node);
    s.node.asked.length = 0;
    const r = await again.drive(again.sender.follow([entry]));
    assert.equal(r.hash, first.hash);
    assert.equal(s.node.asked.includes('eth_blockNumber'), false, 'no head read');
  });

  test('the nonce used while a replacement is made: ours mined is the result; another ends the slot at that look', async () => {
    for (const by of ['ours', 'another'] as const) {
      const s = setup({ replaceAfterBlocks: 1 });
      let endedAt = -1;
      // Between the look that decides to replace (its last question: does the node hold it?) and
      // the replacement's own read of the mined count.
      let armed = false;
      /** The requests from the replacement's read of the mined count on. */
      let since = -1;
      s.node.before = (method) => {
        if (method === 'eth_getTransactionByHash' && s.node.head > 10) armed = true;
        if (method !== 'eth_getTransactionCount' || !armed || s.node.mined > 0) return;
        since = s.node.asked.length - 1;
        if (by === 'ours') s.node.mine();
        else s.node.useNonce();
      };
      const end = await s
        .drive(
          s.send().finally(() => (endedAt = s.clock.now())),
          (ms) => {
            if (ms > 0 && ms % 1_000 === 0) s.node.head++;
          },
        )
        .then(
          (r) => r.hash,
          (e: TransactionError) => e.code,
        );
      assert.equal(s.node.sent.length, 1, `${by}: nothing replaced`);
      if (by === 'ours') assert.equal(end, s.node.sent[0].hash);
      else {
        assert.deepEqual([end, endedAt], ['nonce', 1_250], 'dropped at the head it was found');
        assert.deepEqual(
          s.node.asked.slice(since).filter((m) => m !== 'eth_blockNumber'),
          ['eth_getTransactionCount', 'eth_getTransactionReceipt'],
          'ended there: one look at its receipts, no other look at the head',
        );
      }
    }
  });

  test('a replaced slot the node loses is given back as its newest bytes', async () => {
    const s = setup({ replaceAfterBlocks: 1 });
    let dropped = false;
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 0 || ms % 1_000 !== 0) return;
      const replacement = s.node.sent[1];
      if (replacement && !dropped) {
        dropped = true;
        s.node.drop(replacement.hash);
      }
      if (dropped && s.node.sent.length > 2) s.node.mine();
      else s.node.head++;
    });
    const [, replacement, again] = s.node.sent;
    assert.equal(again.raw, replacement.raw, 'the bytes sent again');
    assert.equal(r.nonce, 0);
    assert.deepEqual(
      s.events.slice(1, 4).map((e) => [e.kind, e.reason, e.hash]),
      [
        ['replacement', 'blocks', replacement.hash],
        ['gap', 'the node holds none of its transactions', undefined],
        ['rebroadcast', 'gap', replacement.hash],
      ],
    );
  });

  test('lost at the head it was sent (no new block): given back at the next look, not a block later', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    let headWhenGivenBack = 0;
    s.node.before = (method) => {
      if (method === 'eth_sendRawTransaction' && s.node.sent.length === 1) headWhenGivenBack = s.node.head;
    };
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 250) s.node.drop(s.node.sent[0].hash);
      if (ms === 5_000) s.node.mine();
    });
    assert.equal(headWhenGivenBack, 10, 'still at head 10');
    assert.equal(r.hash, s.node.sent[0].hash);
  });

  test('a later nonce not behind a gap is replaced by blocks like the first', async () => {
    const s = setup();
    let after = 0;
    await s.drive(Promise.all([s.send(), s.send()]), (ms) => {
      if (ms > 0 && ms % 1_000 === 0) {
        if (s.node.sent.length === 4 && ++after === 1) s.node.mine();
        else s.node.head++;
      }
    });
    assert.deepEqual(
      s.events
        .filter((e) => e.kind === 'replacement')
        .map((e) => [e.nonce, e.reason, e.maxFeePerGas])
        .sort(),
      [
        [0, 'blocks', BUMPED.maxFeePerGas],
        [1, 'blocks', BUMPED.maxFeePerGas],
      ],
    );
  });

  test('a replacement whose reply is lost counts as sent: told, the next bumps from it; the node holding the first is no gap', async () => {
    const s = setup();
    // The replacement's connection is cut (both tries): the node never got it and still holds the first.
    s.node.cut = (t) => t.maxFeePerGas === BUMPED.maxFeePerGas;
    const r = await s.drive(s.send(), (ms) => {
      if (ms > 0 && ms % 1_000 === 0) {
        if (s.node.sent.length === 4) s.node.mine();
        else s.node.head++;
      }
    });
    assert.deepEqual(
      s.node.sent.map((t) => t.maxFeePerGas),
      [1_300n, 1_463n, 1_463n, 1_646n],
      'sent twice, then the next replacement bumped from it',
    );
    assert.deepEqual(s.kinds(), [
      ['broadcast', 0, undefined],
      ['replacement', 0, 'blocks'],
      ['replacement', 0, 'blocks'],
    ]);
    assert.equal(r.hash, s.node.sent[3].hash);
  });

  test('bytes given back at a gap whose reply is lost count as given back: not replaced', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    s.node.cut = () => s.node.sent.length === 2 || s.node.sent.length === 3;
    await s.drive(s.send(), (ms) => {
      if (ms === 250) {
        s.node.drop(s.node.sent[0].hash);
        s.node.head++;
      }
      if (ms === 5_000) s.node.mine();
    });
    assert.deepEqual(s.kinds().slice(0, 3), [
      ['broadcast', 0, undefined],
      ['gap', 0, 'the node holds none of its transactions'],
      ['rebroadcast', 0, 'gap'],
    ]);
    assert.deepEqual(
      s.kinds().filter(([kind]) => kind === 'replacement'),
      [],
    );
  });

  test('a later nonce is looked up at the node only once a head passed without it; the nonce the chain waits on at every look', async () => {
    const s = setup({ replaceAfterBlocks: 100, pollMs: 1_000 });
    const both = Promise.all([s.send(), s.send()]);
    /** Lookups of each nonce's hash before head 11 (polls at head 10 only) and after it. */
    const before: number[] = [];
    await s.drive(both, (ms) => {
      if (ms === 3_000) {
        const [zero, one] = s.node.sent;
        before.push(...[zero, one].map((t) => s.node.lookedUp.filter((h) => h === t.hash).length));
        s.node.head++;
      }
      if (ms === 4_000) s.node.mine();
    });
    const one = s.node.sent[1];
    assert.ok(before[0] >= 2, `nonce 0 (the chain waits on it) looked up at each poll: ${before[0]}`);
    assert.equal(before[1], 0, 'nonce 1 not looked up while no head passed');
    assert.ok(
      s.node.lookedUp.filter((h) => h === one.hash).length >= 1,
      'nonce 1 looked up once head 11 passed without it',
    );
    assert.equal(s.node.sent.length, 2, 'both held by the node: nothing sent again');
  });

  test('a node that cannot say whether it holds the transaction: no gap, nothing sent again', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    s.node.failing.add('eth_getTransactionByHash');
    await s.drive(s.send(), (ms) => {
      if (ms > 0 && ms % 1_000 === 0) s.node.head++;
      if (ms === 5_000) s.node.mine();
    });
    assert.deepEqual(s.kinds(), [['broadcast', 0, undefined]]);
    assert.equal(s.node.sent.length, 1);
  });

  test('lost again after it was given back: a second gap said', async () => {
    const s = setup({ replaceAfterBlocks: 100 });
    await s.drive(s.send(), (ms) => {
      if (ms === 250 || ms === 2_250) s.node.pool.clear();
      if (ms > 0 && ms % 1_000 === 0) s.node.head++;
      if (ms === 5_000) s.node.mine();
    });
    assert.deepEqual(
      s.kinds().filter(([kind]) => kind === 'gap'),
      [
        ['gap', 0, 'the node holds none of its transactions'],
        ['gap', 0, 'the node holds none of its transactions'],
      ],
    );
  });
});
