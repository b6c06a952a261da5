/**
 * The transaction sender's own steps (lib/worker/tx/sender.ts, docs/transactions.md#transactions):
 * its options and defaults, the simulation and the gas limit it signs, the first broadcast of a
 * send (the journal first, a nonce the node says is used, a refusal that frees its nonce), a
 * journaled slot followed again, the recovery of a signer's open slots and the age of the lowest
 * one. The node is the model node of test/helpers/fakes/tx-node.ts (geth's pool rules, blocks
 * mined by the test); the clock is injected. What follows a broadcast: follow.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defineChain, encodeErrorResult } from 'viem';
import { OutOfRangeError } from '../../../../lib/errors/classes.ts';
import { DeliveryError, TransactionError } from '../../../../lib/worker/errors.ts';
import type { JournalEntry } from '../../../../lib/worker/tx/journal.ts';
import { createTransactionSender } from '../../../../lib/worker/tx/sender.ts';
import { signerContext } from '../../../../lib/worker/tx/signer.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';
import {
  ACCOUNT,
  BUMPED,
  CHAIN_ID,
  createTxNode,
  FIRST,
  ID,
  SELF,
  SIMULATED,
  senderHarness as setup,
  TO,
} from '../../../helpers/fakes/tx-node.ts';

/** The error `p` rejects with (fails when it resolves). */
const failure = <E = TransactionError>(p: Promise<unknown>): Promise<E> =>
  p.then(
    () => assert.fail('expected a failure'),
    (e: E) => e,
  );

describe('the transaction sender (docs/transactions.md#transactions)', () => {
  test('feeBumpPercent below 10 (or not a number) is refused when the sender is built; 10 bumps by 10 %', async () => {
    const { client } = createTxNode();
    for (const feeBumpPercent of [9.99, Number.NaN])
      assert.throws(
        () => createTransactionSender({ publicClient: client, account: ACCOUNT, feeBumpPercent }),
        (e: Error) =>
          e instanceof OutOfRangeError &&
          e.message === 'feeBumpPercent must be at least 10 (nodes refuse smaller replacements)',
      );
    const s = setup({ feeBumpPercent: 10, replaceAfterBlocks: 1 });
    await s.drive(s.send(), (ms) => {
      if (ms > 0 && ms % 1_000 === 0) {
        if (s.node.sent.length === 2) s.node.mine();
        else s.node.head++;
      }
    });
    assert.deepEqual(
      s.node.sent.map((t) => [t.maxFeePerGas, t.maxPriorityFeePerGas]),
      [
        [1_300n, 100n],
        [1_430n, 110n],
      ],
    );
  });

  test('the defaults: replaced 60 s after the send when no head is known, given up after 10 minutes', async () => {
    const s = setup();
    s.node.failing.add('eth_blockNumber');
    const at: number[] = [];
    s.node.refuse = () => void at.push(s.clock.now());
    const err = await failure(s.drive(s.send(), undefined, { limitMs: 700_000, stepMs: 10_000 }));
    assert.deepEqual(at.slice(0, 3), [0, 60_000, 120_000]);
    assert.deepEqual([err.code, err.message], ['timeout', 'not mined within 600000 ms (nonce 0)']);
  });

  test('confirmations 0 is taken as 1: the block that mines it is enough', async () => {
    const s = setup({ confirmations: 0 });
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 500) s.node.mine();
    });
    assert.equal(r.receipt.blockNumber, 11n);
  });

  test('headPollMs: the head is read that often while a send waits (250 ms by default), the fee reads before it', async () => {
    for (const [headPollMs, interval] of [
      [undefined, 250],
      [1_000, 1_000],
    ] as const) {
      const s = setup({ headPollMs, replaceAfterBlocks: 100 });
      const at: number[] = [];
      s.node.before = (m) => void (m === 'eth_blockNumber' && at.push(s.clock.now()));
      await s.drive(s.send(), (ms) => {
        if (ms === 4_000) s.node.mine();
      });
      const times = [...new Set(at)];
      assert.ok(times.length >= 5, `${times.length} head reads`);
      assert.deepEqual(
        new Set(times.slice(1).map((t, i) => t - times[i])),
        new Set([interval]),
        `headPollMs ${headPollMs}: read at ${times.join(', ')}`,
      );
    }
  });

  test("the chain id signed: the chain option's, else the client's chain's, else the node's (asked once)", async () => {
    const ten = defineChain({
      id: 10,
      name: 'ten',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: ['http://127.0.0.1:1'] } },
    });
    const node = createTxNode();
    for (const [over, chainId, asked] of [
      [{ chain: ten }, 10, 0],
      [{ publicClient: node.connect(ten) }, 10, 0],
      [{}, CHAIN_ID, 1],
    ] as const) {
      const s = setup(over, node);
      const before = node.asked.length;
      await s.drive(s.send(), (ms) => {
        if (ms === 500) node.mine();
      });
      assert.equal(node.sent.at(-1)?.chainId, chainId);
      assert.equal(node.asked.slice(before).filter((m) => m === 'eth_chainId').length, asked);
    }
  });

  test('simulate: eth_estimateGas alone, the gas limit the estimate plus the margin (20 % by default), rounded up', async () => {
    const s = setup();
    s.node.estimate = 100_001n;
    assert.deepEqual(await s.sender.simulate({ to: TO, data: '0x1234', value: 5n }), {
      estimate: 100_001n,
      gas: 120_002n,
    });
    assert.deepEqual(s.node.estimated, [{ from: ACCOUNT.address, to: TO, data: '0x1234', value: '0x5' }]);
    const wide = setup({ gasMarginPercent: 50 }, s.node);
    assert.equal((await wide.sender.simulate({ to: TO, data: '0x' })).gas, 150_002n);
    assert.equal(s.node.sent.length, 0, 'nothing signed');
  });

  test('simulate: a call that would revert is a TransactionError revert with its reason, nothing signed', async () => {
    const s = setup();
    const abi = [{ type: 'error', name: 'Error', inputs: [{ name: 'm', type: 'string' }] }] as const;
    const data = encodeErrorResult({ abi, errorName: 'Error', args: ['Mailbox: already delivered'] });
    s.node.estimate = { code: 3, message: 'execution reverted: Mailbox: already delivered', data };
    const err = await failure(s.sender.simulate({ to: TO, data: '0x1234' }));
    assert.deepEqual(
      [err.code, err.message, err.reason],
      ['revert', 'simulation reverted: Mailbox: already delivered', 'Mailbox: already delivered'],
    );
    const sent = await failure(s.drive(s.sender.send({ to: TO, data: '0x1234' })));
    assert.equal(sent.code, 'revert', 'send simulates when not given the simulation');
    assert.equal(s.node.sent.length, 0);
  });

  test('send without a simulation estimates and signs estimate + margin; above transactionGasLimit nothing is sent', async () => {
    const s = setup({ maxGas: 119_999n });
    const err = await failure<DeliveryError>(s.drive(s.sender.send({ to: TO, data: '0x1234' })));
    assert.ok(err instanceof DeliveryError);
    assert.deepEqual(
      [err.code, err.message],
      ['gas', 'gas limit 120000 exceeds transactionGasLimit 119999: nothing sent'],
    );
    assert.equal(s.node.sent.length, 0);
    const at = setup({ maxGas: 120_000n }, s.node);
    const r = await at.drive(at.sender.send({ to: TO, data: '0x1234' }), (ms) => {
      if (ms === 500) s.node.mine();
    });
    assert.deepEqual(
      s.node.sent.map((t) => [t.nonce, t.gas, t.to, t.data]),
      [[0, 120_000n, TO, '0x1234']],
    );
    assert.equal(r.hash, s.node.sent[0].hash);
  });

  test('the first send signs at most gasPriceCap (the base fee under it)', async () => {
    const s = setup({ gasPriceCap: 1_250n });
    await s.drive(s.send(), (ms) => {
      if (ms === 500) s.node.mine();
    });
    assert.equal(s.node.sent[0].maxFeePerGas, 1_250n);
  });

  test('the journal refuses the record (lease lost) or fails: nothing sent, the nonce given to the next send', async () => {
    const s = setup();
    let answer: () => boolean = () => false;
    const record = s.journal.recordBroadcast;
    s.journal.recordBroadcast = (b, fence) => answer() && record(b, fence);
    const lost = await failure<DeliveryError>(s.drive(s.send()));
    assert.ok(lost instanceof DeliveryError);
    assert.deepEqual([lost.code, lost.message], ['stopped', 'lease lost before the broadcast: nothing sent']);
    const cause = new Error('disk full');
    answer = () => {
      throw cause;
    };
    const failed = await failure<DeliveryError>(s.drive(s.send()));
    assert.ok(failed instanceof DeliveryError);
    assert.deepEqual(
      [failed.code, failed.message, failed.cause],
      ['stopped', 'the journal could not record the transaction: nothing sent', cause],
    );
    // A TransactionError from below is passed on as it is.
    const own = new TransactionError('rpc', 'reading the nonce: node unreachable or failing');
    answer = () => {
      throw own;
    };
    assert.equal(await failure(s.drive(s.send())), own);
    assert.equal(s.node.sent.length, 0);
    answer = () => true;
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 500) s.node.mine();
    });
    assert.equal(r.nonce, 0, 'nonce 0 was never used');
  });

  test('a broadcast the node refuses frees its nonce: the next send takes it', async () => {
    const s = setup();
    s.node.refuse = () =>
      s.node.sent.length === 1 ? { code: -32000, message: 'insufficient funds for gas * price + value' } : undefined;
    const err = await failure(s.drive(s.send()));
    assert.equal(err.code, 'insufficient_funds');
    assert.deepEqual(s.events, [], 'no broadcast told');
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 500) s.node.mine();
    });
    assert.deepEqual(
      s.node.sent.map((t) => t.nonce),
      [0, 0],
    );
    assert.equal(r.nonce, 0);
    assert.deepEqual(s.events, [
      {
        kind: 'broadcast',
        nonce: 0,
        hash: s.node.sent[1].hash,
        ...FIRST,
        messageId: ID,
        chainId: CHAIN_ID,
        signer: SELF,
      },
    ]);
  });

  test('a broadcast whose answers are lost (the node took it, its lookups failing meanwhile): followed, ends mined with its hash', async () => {
    const s = setup();
    // The node takes the transaction, but neither answer to eth_sendRawTransaction (the same bytes
    // sent twice) comes back, and its first two hash lookups fail: the sender cannot tell it went out.
    s.node.lose = () => s.node.sent.length <= 2;
    s.node.failing.add('eth_getTransactionByHash');
    let lookups = 0;
    s.node.before = (m) => {
      if (m === 'eth_getTransactionByHash' && ++lookups > 2) s.node.failing.delete(m);
    };
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 500) s.node.mine();
    });
    const { hash } = s.node.sent[0];
    assert.deepEqual(
      s.node.sent.map((t) => t.hash),
      [hash, hash],
      'the same bytes twice, nothing else signed',
    );
    assert.deepEqual([r.hash, r.nonce, r.receipt.status], [hash, 0, 'success']);
    assert.deepEqual(
      s.events.map((e) => [e.kind, e.hash]),
      [['broadcast', hash]],
    );
    assert.deepEqual(s.calls, [
      ['record', ID, 0, hash],
      ['close', 0, { outcome: 'mined', hash }],
    ]);
  });

  test('another refusal (insufficient funds) while the mined count is past the nonce: thrown, no other nonce tried', async () => {
    const s = setup();
    s.node.refuse = () => {
      s.node.mined = 2;
      return { code: -32000, message: 'insufficient funds for gas * price + value' };
    };
    const err = await failure(s.drive(s.send()));
    assert.equal(err.code, 'insufficient_funds');
    assert.deepEqual(
      s.node.sent.map((t) => t.nonce),
      [0],
    );
  });

  test('"nonce too low" with the mined count past the nonce: the book moves past it and the send goes out at the mined count', async () => {
    const node = createTxNode();
    const harnessed = { publicClient: node.connect(), account: ACCOUNT, chain: undefined };
    const s = setup({ publicClient: harnessed.publicClient }, node);
    await s.drive(s.send(), (ms) => {
      if (ms === 500) s.node.mine();
    });
    // Another process of the same key sends nonces 1 and 2, behind this one's back.
    s.node.useNonce();
    s.node.useNonce();
    const r = await s.drive(s.send(), (ms) => {
      if (ms === 500) s.node.mine();
    });
    assert.deepEqual(
      s.node.sent.map((t) => t.nonce),
      [0, 1, 3],
    );
    assert.equal(r.nonce, 3);
    // The book holds no nonce the chain has used (nonce 1 went to the other process).
    const book = await signerContext({ ...harnessed, journal: s.journal, clock: s.clock, errorAbi: undefined }).book();
    assert.deepEqual(book.state(), { mined: 4, next: 4, held: [], freed: [] });
    assert.deepEqual(
      s.calls.filter(([op]) => op !== 'close').map(([op, a, nonce]) => [op, op === 'forget' ? a : nonce]),
      [
        ['record', 0],
        ['record', 1],
        ['forget', s.node.sent[1].hash],
        ['record', 3],
      ],
    );
  });

  test('"nonce too low" again and again: 4 nonces tried, then TransactionError nonce and the last freed', async () => {
    const s = setup();
    // Each refusal comes with a mined count one past the nonce refused (another sender racing);
    // after 10 refusals the node takes the send (a sender that never gave up would end there).
    let refusals = 0;
    s.node.refuse = (t) => {
      if (++refusals > 10) return undefined;
      s.node.mined = t.nonce + 1;
      return { code: -32000, message: 'nonce too low' };
    };
    const err = await failure(s.drive(s.send()));
    assert.deepEqual([err.code, err.message], ['nonce', 'sending: nonce refused by the node']);
    assert.deepEqual(
      s.node.sent.map((t) => t.nonce),
      [0, 1, 2, 3],
    );
  });

  test('"nonce too low" from a node whose mined count is not past the nonce (stale), or unreadable: refused, the nonce freed', async () => {
    for (const unreadable of [false, true]) {
      const s = setup();
      s.node.refuse = (t) => {
        if (s.node.sent.length > 1) return undefined;
        if (unreadable) s.node.failing.add('eth_getTransactionCount');
        return t.nonce === 0 ? { code: -32000, message: 'nonce too low' } : undefined;
      };
      const err = await failure(s.drive(s.send()));
      assert.equal(err.code, 'nonce');
      s.node.failing.clear();
      const r = await s.drive(s.send(), (ms) => {
        if (ms === 500) s.node.mine();
      });
      assert.equal(r.nonce, 0, 'nonce 0 freed');
    }
  });

  test('settledByRecord: a success is left for the caller to settle; a revert is settled here', async () => {
    const s = setup();
    await s.drive(s.send({ settledByRecord: true }), (ms) => {
      if (ms === 500) s.node.mine();
    });
    assert.deepEqual(
      s.calls.map(([op]) => op),
      ['record'],
    );
    s.node.reverts.add(1);
    await failure(
      s.drive(s.send({ settledByRecord: true }), (ms) => {
        if (ms === 500) s.node.mine();
      }),
    );
    assert.deepEqual(s.calls.at(-1), ['close', 1, { outcome: 'mined', hash: s.node.sent[1].hash }]);
  });

  test('a send without a message: journaled under its own hash, no gas book for its revert', async () => {
    const s = setup();
    s.node.reverts.add(0);
    const err = await failure(
      s.drive(s.sender.send({ to: TO, data: '0x1234' }, { simulated: { estimate: 1n, gas: 50_000n } }), (ms) => {
        if (ms === 500) s.node.mine();
      }),
    );
    assert.equal(err.code, 'revert');
    const hash = s.node.sent[0].hash;
    assert.deepEqual(s.calls, [
      ['record', hash, 0, hash],
      ['close', 0, { outcome: 'mined', hash }],
    ]);
    assert.deepEqual(s.spends, []);
    assert.equal(s.events[0].messageId, undefined);
  });
});

describe('a journaled slot followed again (docs/transactions.md#the-transaction-journal)', () => {
  /** `count` sends broadcast by a process that then stopped (its clock never moves again): their node. */
  async function sentByAnother(count = 1, reverts: number[] = []) {
    const before = setup();
    for (const n of reverts) before.node.reverts.add(n);
    for (let i = 0; i < count; i++) void before.send().catch(() => {});
    await before.clock.advance(0);
    assert.equal(before.node.sent.length, count);
    return before.node;
  }

  /** The journal entries of nonce `nonce` as `sent` by an earlier sender on the same node. */
  const entriesOf = (sent: { hash: string; raw: string; nonce: number }[], messageId: string, sentAt: number[]) =>
    sent.map(
      (t, i): JournalEntry => ({
        messageId,
        chainId: CHAIN_ID,
        signer: SELF,
        nonce: t.nonce,
        hash: t.hash,
        raw: t.raw,
        sentAt: sentAt[i],
      }),
    );

  test('nothing to follow is an error', async () => {
    const err = await failure(setup().sender.follow([]));
    assert.deepEqual([err.code, err.message], ['rpc', 'no journaled transaction to follow']);
  });

  test('replaced at once when sent longer than replaceAfterMs ago by its journal time; a future time counts as now', async () => {
    for (const [sentAt, replacedAt] of [
      [-61_000, 0],
      [3_600_000, 60_000],
    ]) {
      // Sent by an earlier process, which stopped; the node still holds it, unmined.
      const node = await sentByAnother();
      const s = setup({ replaceAfterBlocks: 100 }, node);
      const at: number[] = [];
      node.refuse = () => void at.push(s.clock.now());
      const r = await s.drive(s.sender.follow(entriesOf(node.sent, ID, [sentAt])), (ms) => {
        if (at.length === 1 && ms % 1_000 === 0) node.mine();
      });
      assert.deepEqual(at, [replacedAt], `sent at ${sentAt}`);
      assert.equal(r.hash, node.sent[1].hash);
      assert.deepEqual(
        s.events.map((e) => [e.kind, e.reason, e.messageId]),
        [['replacement', 'time', ID]],
      );
    }
  });

  test("its nonce is held: the next send takes the one after; its age is the lowest open nonce's", async () => {
    const node = await sentByAnother();
    // The node lost it in its restart: its pending count no longer covers nonce 0.
    node.drop(node.sent[0].hash);
    const s = setup({}, node);
    assert.equal(s.sender.lowestOpen(), undefined, 'nothing followed yet');
    await s.clock.advance(10_000);
    // Two broadcasts at nonce 0, the first 9 s ago by the journal.
    const entries = entriesOf([node.sent[0], node.sent[0]], ID, [1_000, 5_000]);
    const following = s.sender.follow(entries);
    await s.clock.advance(0);
    assert.deepEqual(s.sender.lowestOpen(), { nonce: 0, ageMs: 9_000 });
    // Another message's send (other bytes than the slot's).
    const next = s.sender.send({ to: TO, data: '0xabcd' }, { simulated: SIMULATED });
    await s.clock.advance(0);
    assert.deepEqual(
      node.sent.map((t) => [t.nonce, t.data]).sort((a, b) => Number(a[0]) - Number(b[0])),
      [
        [0, '0x1234'],
        [0, '0x1234'],
        [1, '0xabcd'],
      ],
      'the slot given back to the node; the next send takes nonce 1',
    );
    await s.clock.advance(2_000);
    assert.deepEqual(s.sender.lowestOpen(), { nonce: 0, ageMs: 11_000 });
    await s.drive(Promise.all([following, next]), (ms) => {
      if (ms === 500) node.mine();
    });
    assert.equal(s.sender.lowestOpen(), undefined, 'none open');
  });

  test('a send without a message followed again: no gas book for its revert', async () => {
    const node = await sentByAnother(1, [0]);
    node.mine();
    const hash = node.sent[0].hash;
    for (const [messageId, spends] of [
      [hash, 0],
      [ID, 1],
    ] as const) {
      const s = setup({}, node);
      assert.equal((await failure(s.drive(s.sender.follow(entriesOf(node.sent, messageId, [0]))))).code, 'revert');
      assert.equal(s.spends.length, spends, messageId);
    }
  });

  test('recover: every open slot of the signer followed in the background, each end told (mined, dropped, failed)', async () => {
    const node = await sentByAnother(3, [2]);
    const s = setup({ onRecovered: (nonce, outcome, detail) => told.push([nonce, outcome, detail]) }, node);
    const told: Array<[number, string, string]> = [];
    for (const e of entriesOf(node.sent, ID, [0, 0, 0])) await s.journal.recordBroadcast(e);
    // Another signer's slot is not this sender's to follow.
    await s.journal.recordBroadcast({ ...entriesOf(node.sent, ID, [0])[0], signer: `0x${'00'.repeat(20)}` });
    assert.equal(await s.sender.recover(), 3);
    // Nonce 0 mined, nonce 1 taken by another transaction, nonce 2 mined reverted.
    node.drop(node.sent[1].hash);
    node.mine();
    node.useNonce();
    node.mine();
    for (let i = 0; i < 20 && told.length < 3; i++) await s.clock.advance(1_000);
    told.sort((a, b) => a[0] - b[0]);
    assert.deepEqual(told, [
      [0, 'mined', node.sent[0].hash],
      [1, 'dropped', "nonce 1 was used by another transaction; none of this send's was mined"],
      [2, 'failed', 'the transaction reverted'],
    ]);
  });

  test('recover with a signal: an abort ends the follows at their next look, nothing told, the slots still open', async () => {
    const node = await sentByAnother();
    const told: unknown[] = [];
    const s = setup({ onRecovered: (...a) => told.push(a) }, node);
    for (const e of entriesOf(node.sent, ID, [0])) await s.journal.recordBroadcast(e);
    const stop = new AbortController();
    assert.equal(await s.sender.recover(stop.signal), 1);
    await s.clock.advance(1_000);
    stop.abort();
    for (let i = 0; i < 5; i++) await s.clock.advance(1_000);
    assert.deepEqual(told, []);
    assert.equal(s.sender.lowestOpen(), undefined, 'the follow ended');
    assert.equal((await s.journal.openBroadcasts({ chainId: CHAIN_ID, signer: SELF })).length, 1);
  });

  test('two journaled broadcasts of a slot: the newer one is the slot’s (its hash on a dropped slot, its receipt when mined)', async () => {
    for (const end of ['dropped', 'mined'] as const) {
      const node = await sentByAnother();
      // The earlier process replaced it (same nonce, fees 12.5 % up) before it stopped.
      const raw = await ACCOUNT.signTransaction({
        chainId: CHAIN_ID,
        type: 'eip1559',
        to: TO,
        data: '0x1234',
        gas: SIMULATED.gas,
        nonce: 0,
        ...BUMPED,
      });
      await node.client.request({ method: 'eth_sendRawTransaction', params: [raw] });
      const [older, newer] = node.sent.map((t) => t.hash);
      assert.deepEqual([...node.pool.keys()], [newer]);
      const s = setup({}, node);
      const following = s.sender.follow(entriesOf(node.sent, ID, [0, 0]));
      if (end === 'dropped') {
        node.useNonce();
        const err = await failure(s.drive(following));
        assert.deepEqual([err.code, err.hash], ['nonce', newer], 'the newer hash');
      } else {
        node.mine();
        const r = await s.drive(following);
        assert.equal(r.hash, newer);
      }
      assert.notEqual(older, newer);
    }
  });

  test('recover without onRecovered: each slot followed to its end, nothing left rejected', async () => {
    const node = await sentByAnother(2, [1]);
    const s = setup({}, node);
    const unhandled: unknown[] = [];
    const listen = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', listen);
    try {
      for (const e of entriesOf(node.sent, ID, [0, 0])) await s.journal.recordBroadcast(e);
      assert.equal(await s.sender.recover(), 2);
      // Nonce 0 mined, nonce 1 mined reverted: a success and a failure, neither told to anyone.
      node.mine();
      const open = () => s.journal.openBroadcasts({ chainId: CHAIN_ID, signer: SELF });
      for (let i = 0; i < 20 && (await open()).length > 0; i++) await s.clock.advance(1_000);
      assert.deepEqual(await open(), [], 'both slots closed');
      await s.clock.advance(1_000);
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', listen);
    }
  });

  test('without a journal: the process journal keeps a broadcast with the clock’s time, and recover follows it from then', async () => {
    const node = createTxNode();
    const clock = createFakeClock(0);
    const sender = createTransactionSender({ publicClient: node.connect(), account: ACCOUNT, clock });
    await clock.advance(3_000);
    // The caller stops waiting at its first wait (the worker stops): the slot stays open.
    const stop = new Error('stopping');
    const stopped = failure<Error>(
      sender.send(
        { to: TO, data: '0x1234' },
        {
          simulated: SIMULATED,
          onWait: async () => {
            throw stop;
          },
        },
      ),
    );
    await clock.advance(1_000);
    assert.equal(await stopped, stop);
    await clock.advance(6_000);
    assert.equal(await sender.recover(), 1);
    await clock.advance(0);
    assert.deepEqual(sender.lowestOpen(), { nonce: 0, ageMs: 7_000 }, 'first sent at 3 s, now 10 s');
    node.mine();
    for (let i = 0; i < 10 && sender.lowestOpen(); i++) await clock.advance(1_000);
    assert.equal(sender.lowestOpen(), undefined);
    assert.equal(node.sent.length, 1);
  });
});
