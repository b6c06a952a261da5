/**
 * lib/worker/tx/sender.ts against a real node (anvil) and the real Mailbox (docs/transactions.md,
 * Transactions): a transaction held unmined is replaced with bumped fees and the replacement's
 * receipt returned; concurrent sends take consecutive nonces; a nonce used behind the sender's
 * back is re-read; simulation surfaces the Mailbox's revert reasons. Waiting runs on the injected
 * clock: the test moves time, never sleeps for it.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  createWalletClient,
  encodeFunctionData,
  http,
  type Address,
  type Hash,
  type Hex,
  type PublicClient,
  parseTransaction,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  createTransactionSender,
  TransactionError,
  type TransactionSenderOptions,
} from '../../lib/worker/tx/sender.ts';
import { DeliveryError } from '../../lib/worker/errors.ts';
import { createProcessJournal } from '../../lib/worker/tx/journal.ts';
import { createFakeClock, type FakeClock } from '../helpers/fakes/clock.ts';
import { hyperlaneMessage } from '../helpers/fixtures/builders.ts';
import { startAnvil, type Anvil } from '../helpers/chain/anvil.ts';
import { startRpcProxy } from '../helpers/chain/rpc-proxy.ts';
import { anvilChain, connectChain, type Chain } from '../helpers/chain/clients.ts';
import {
  deployHyperlane,
  hyperlaneArtifact,
  mailboxArtifact,
  type HyperlaneDeployment,
} from '../helpers/chain/hyperlane.ts';

// anvil's dev account 1 (mnemonic "test … junk"): the signer under test, signing locally.
const SIGNER_KEY: Hex = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const signer = privateKeyToAccount(SIGNER_KEY);
const PAYEE: Address = '0x00000000000000000000000000000000000000c1';
const LOCAL_DOMAIN = 1;

let anvil: Anvil;
let chain: Chain;
let hyperlane: HyperlaneDeployment;
let recipient: Address;

interface Broadcast {
  hash: Hash;
  nonce?: number;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
}

/**
 * The node as the sender sees it (`publicClient`, default the test's), with every broadcast the
 * sender makes recorded (observed, not altered): `sent` holds those the node took, `refused` counts
 * those it refused.
 */
function observedNode(publicClient: PublicClient = chain.publicClient): {
  client: PublicClient;
  sent: Broadcast[];
  refused: () => number;
} {
  const sent: Broadcast[] = [];
  let refused = 0;
  const request = publicClient.request.bind(publicClient) as (args: unknown, options?: unknown) => Promise<unknown>;
  const client = Object.assign(Object.create(publicClient) as PublicClient, {
    request: async (args: { method: string; params?: unknown[] }, options?: unknown) => {
      if (args.method !== 'eth_sendRawTransaction') return request(args, options);
      let hash: Hash;
      try {
        hash = (await request(args, options)) as Hash;
      } catch (err) {
        refused += 1;
        throw err;
      }
      const tx = parseTransaction(args.params?.[0] as Hex);
      sent.push({
        hash,
        nonce: tx.nonce,
        maxFeePerGas: tx.maxFeePerGas,
        maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
      });
      return hash;
    },
  });
  return { client, sent, refused: () => refused };
}

function sender(node: PublicClient, over: Partial<TransactionSenderOptions> = {}) {
  return createTransactionSender({ publicClient: node, account: signer, ...over });
}

/**
 * Until the sender waits on the clock (its poll timer is scheduled): real I/O with the node runs
 * meanwhile. Bounded in real time; a test that gets here never waits for a timeout.
 */
async function untilWaiting(clock: FakeClock): Promise<void> {
  return untilWaitingOr(clock, () => false);
}

/**
 * Until the sender waits on the fake clock (`timers` timers set), or `finished`. A wait for the
 * next head sets two: its bound, at once, and the next read of the head once the read in flight is
 * answered; counting only the bound, a test moving the clock would reach it while the node is
 * still answering (under load), and see the send at the bound instead of at the next head.
 */
async function untilWaitingOr(clock: FakeClock, finished: () => boolean, timers = 1): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (clock.keepingAlive() < timers && !finished()) {
    if (Date.now() > deadline) throw new Error('the sender never went back to waiting');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const processCall = (metadata: Hex, message: Hex) =>
  encodeFunctionData({ abi: mailboxArtifact().abi, functionName: 'process', args: [metadata, message] });

describe('e2e: transaction sender on anvil (lib/worker/tx/sender.ts)', { timeout: 90_000 }, () => {
  before(async () => {
    anvil = await startAnvil();
    chain = connectChain(anvil.rpcUrl);
    hyperlane = await deployHyperlane(chain, LOCAL_DOMAIN);
    const recipientA = hyperlaneArtifact('test/TestRecipient');
    recipient = await chain.deploy(recipientA.abi, recipientA.bytecode);
  });
  after(async () => {
    await anvil?.stop();
  });

  test("simulation surfaces the Mailbox's revert reasons; nothing is signed for them", async () => {
    const { client, sent } = observedNode();
    const s = sender(client);
    const message = hyperlaneMessage({ origin: 5, destination: LOCAL_DOMAIN, recipient, nonce: 7, body: '0x01' });
    const badVersion = hyperlaneMessage({ version: 2, origin: 5, destination: LOCAL_DOMAIN, recipient });
    await assert.rejects(s.send({ to: hyperlane.mailbox, data: processCall('0x', badVersion) }), (e) => {
      assert.ok(e instanceof TransactionError);
      assert.equal(e.code, 'revert');
      assert.equal(e.reason, 'Mailbox: bad version');
      assert.doesNotMatch(e.message, /127\.0\.0\.1|http/);
      return true;
    });
    assert.equal(sent.length, 0, 'a reverting call is never signed');

    const { gas, estimate } = await s.simulate({ to: hyperlane.mailbox, data: processCall('0x', message) });
    assert.equal(gas, (estimate * 12_000n + 9_999n) / 10_000n, 'the estimate plus 20 %');
    const { receipt } = await s.send({ to: hyperlane.mailbox, data: processCall('0x', message) });
    assert.equal(receipt.status, 'success');
    assert.equal(receipt.gasUsed < gas, true);
    await assert.rejects(s.simulate({ to: hyperlane.mailbox, data: processCall('0x', message) }), (e) => {
      assert.ok(e instanceof TransactionError);
      assert.equal(e.code, 'revert');
      assert.equal(e.reason, 'Mailbox: already delivered');
      return true;
    });
  });

  test('a send asks the node for each thing once', async (t) => {
    // Given the simulation it does not estimate again, nothing is filled by the node before signing, and the
    // receipt is read once at one confirmation.
    // The first receipt read of each transaction finds none, as it does on anvil now and then
    // (it answers a send before its block is written): the count below holds either way.
    const proxy = await startRpcProxy(anvil.rpcUrl, { firstReceiptNull: true });
    t.after(() => proxy.close());
    const node = connectChain(proxy.url);
    const s = createTransactionSender({ publicClient: node.publicClient, account: signer, pollMs: 20 });
    const estimates = (methods: string[]) =>
      methods.filter((m) => m === 'eth_estimateGas' || m === 'eth_fillTransaction').length;

    const alone = await s.send({ to: PAYEE, data: '0x', value: 4n });
    assert.equal(alone.receipt.status, 'success');
    assert.equal(estimates(proxy.methods()), 1, 'a send on its own simulates once (its gas limit)');

    const request = { to: PAYEE, data: '0x' as Hex, value: 5n };
    const simulated = await s.simulate(request);
    const from = proxy.methods().length;
    const { receipt } = await s.send(request, { simulated });
    assert.equal(receipt.status, 'success');
    assert.equal(receipt.gasUsed < simulated.gas, true);
    const asked = proxy.methods().slice(from);
    assert.equal(estimates(asked), 0, `given the simulation, no estimate: ${asked.join(', ')}`);
    assert.equal(asked.filter((m) => m === 'eth_sendRawTransaction').length, 1, asked.join(', '));
    // A read that finds no receipt yet is the node's answer, not a read the sender repeats: once
    // a receipt is found it is not read again.
    const receipts = proxy.receiptAnswers(receipt.transactionHash);
    assert.equal(receipts.nulls, 1);
    assert.equal(receipts.total - receipts.nulls, 1, 'mined is one confirmation: the receipt is read once');
    assert.equal(
      asked.filter((m) => m === 'eth_getTransactionReceipt').length,
      receipts.total,
      'no other receipt is read',
    );
    // The head is read to wait for a block before a receipt is read (after the send, and after a
    // read that found none, unless the look at the head already shows the nonce used:
    // docs/transactions.md#gaps), never to count the depth of one confirmation: no head read after
    // the receipt is found, and none that no receipt read follows. How many the waits take depends on
    // when anvil writes the block it mines on the send (it may answer the send, then a head read,
    // before that block is written), so the count is bounded by the receipt reads, not fixed.
    const heads = asked.filter((m) => m === 'eth_blockNumber').length;
    assert.ok(heads <= receipts.total, asked.join(', '));
    assert.equal(
      asked.slice(asked.lastIndexOf('eth_getTransactionReceipt')).includes('eth_blockNumber'),
      false,
      asked.join(', '),
    );
    const tx = await chain.publicClient.getTransaction({ hash: receipt.transactionHash });
    assert.equal(tx.gas, simulated.gas, "the simulation's gas limit was signed");
  });

  test('a send sees its transaction mined at the next read of the head (headPollMs), not at the bound of its wait (pollMs)', async () => {
    const clock = createFakeClock();
    const { client } = observedNode();
    const s = sender(client, { clock, pollMs: 10_000, headPollMs: 250 });
    await chain.setAutomine(false);
    try {
      let done = false;
      const result = s.send({ to: PAYEE, data: '0x', value: 1n }).finally(() => (done = true));
      // Waiting for the block after the one its receipt was not in: the bound and the next head read.
      await untilWaitingOr(clock, () => false, 2);
      await chain.mineBlock();
      const mined = clock.now();
      while (!done && clock.now() - mined < 10_000) {
        await clock.advance(250);
        await untilWaitingOr(clock, () => done, 2);
      }
      const { receipt } = await result;
      assert.equal(receipt.status, 'success');
      assert.ok(clock.now() - mined <= 500, `seen ${clock.now() - mined} ms after its block, not at the 10 s bound`);
    } finally {
      await chain.setAutomine(true);
    }
  });

  test('a transaction not mined in time is re-sent with the same nonce and bumped fees', async () => {
    // The mined replacement's receipt is returned.
    const clock = createFakeClock();
    const { client, sent } = observedNode();
    const s = sender(client, { clock, pollMs: 1_000, replaceAfterMs: 5_000 });
    let waits = 0;
    await chain.setAutomine(false);
    try {
      const result = s.send({ to: PAYEE, data: '0x', value: 1n }, { onWait: async () => void waits++ });
      await untilWaiting(clock);
      assert.equal(sent.length, 1);
      for (let t = 0; t < 4; t++) {
        await clock.advance(1_000);
        await untilWaiting(clock);
      }
      assert.equal(sent.length, 1, 'not replaced before 5 s');
      await clock.advance(1_000);
      await untilWaiting(clock);
      assert.equal(sent.length, 2, 'replaced after 5 s');
      const [first, second] = sent;
      assert.equal(second.nonce, first.nonce);
      assert.ok(
        second.maxFeePerGas! >= (first.maxFeePerGas! * 1125n) / 1000n,
        `${second.maxFeePerGas} >= 1.125 x ${first.maxFeePerGas}`,
      );
      assert.ok(second.maxPriorityFeePerGas! >= (first.maxPriorityFeePerGas! * 1125n) / 1000n);

      await chain.mineBlock();
      await clock.advance(1_000);
      const { hash, receipt } = await result;
      assert.equal(hash, second.hash);
      assert.equal(receipt.transactionHash, second.hash);
      assert.equal(receipt.status, 'success');
      assert.ok(waits >= 6, `onWait called while waiting (${waits})`);
      const mined = await chain.publicClient.getTransaction({ hash });
      assert.equal(mined.nonce, first.nonce);
      await assert.rejects(
        chain.publicClient.getTransactionReceipt({ hash: first.hash }),
        /could not be found/,
        'the first was replaced, never mined',
      );
    } finally {
      await chain.setAutomine(true);
    }
  });

  test('gasPriceCap: a base fee above it waits (fee), nothing signed; then nothing signed above it, replacements too', async () => {
    // docs/hostile-recipients.md#hostile-recipients: the cap bounds the first send and every replacement
    // (min(3 × the fresh suggestion, cap)); a replacement that cannot fit is not made.
    const gwei = 1_000_000_000n;
    const cap = 3n * gwei;
    const clock = createFakeClock();
    const { client, sent } = observedNode();
    const s = sender(client, { clock, pollMs: 1_000, replaceAfterMs: 5_000, gasPriceCap: cap });
    await chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${(10n * gwei).toString(16)}`]);
    await chain.mineBlock();
    await assert.rejects(
      s.send({ to: PAYEE, data: '0x', value: 1n }),
      (e: unknown) =>
        e instanceof DeliveryError &&
        e.code === 'fee' &&
        /^base fee 10000000000 wei is above gasPriceCap 3000000000 wei/.test(e.message),
    );
    assert.equal(sent.length, 0, 'nothing signed while the base fee is above the cap');

    // Fees fall: sent within the cap, replaced while unmined until the bump no longer fits.
    await chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${gwei.toString(16)}`]);
    await chain.mineBlock();
    await chain.setAutomine(false);
    try {
      const result = s.send({ to: PAYEE, data: '0x', value: 1n });
      await untilWaiting(clock);
      for (let i = 0; i < 12; i++) {
        await clock.advance(5_000);
        await untilWaiting(clock);
      }
      assert.ok(sent.length >= 2, `replaced at least once (${sent.length} sent)`);
      for (const b of sent) assert.ok(b.maxFeePerGas! <= cap, `maxFeePerGas ${b.maxFeePerGas} <= cap ${cap}`);
      assert.ok(sent.length < 13, `escalation stopped at the bound (${sent.length} sent)`);
      await chain.mineBlock();
      await clock.advance(1_000);
      const { receipt } = await result;
      assert.equal(receipt.status, 'success');
    } finally {
      await chain.setAutomine(true);
    }
  });

  test('a send that timed out stays in the journal: a restarted signer replaces it at the same nonce', async () => {
    // The signer restarted on the same journal then sends the next transaction after it.
    const clock = createFakeClock();
    const journal = createProcessJournal(() => clock.now());
    const { client, sent } = observedNode(connectChain(anvil.rpcUrl).publicClient);
    const before = sent.length;
    await chain.setAutomine(false);
    try {
      const s = sender(client, { clock, journal, pollMs: 1_000, timeoutMs: 3_000, replaceAfterMs: 60_000 });
      let done = false;
      const timedOut = assert
        .rejects(
          s.send({ to: PAYEE, data: '0x', value: 30n }),
          (e) => e instanceof TransactionError && e.code === 'timeout',
        )
        .finally(() => (done = true));
      await untilWaiting(clock);
      for (let i = 0; i < 4 && !done; i++) {
        await clock.advance(1_000);
        await untilWaitingOr(clock, () => done);
      }
      await timedOut;
      const [stuck] = sent.slice(before);
      const open = journal.openBroadcasts({ chainId: anvil.chainId, signer: signer.address.toLowerCase() });
      assert.deepEqual(
        (await open).map((e) => [e.nonce, e.hash]),
        [[stuck.nonce, stuck.hash]],
        'still open in the journal: it may land',
      );

      // The same key in a new process (a new client: a book of its own), on the same journal.
      const later = createFakeClock(clock.now() + 5_000);
      const { client: node, sent: resent } = observedNode(connectChain(anvil.rpcUrl).publicClient);
      const restarted = sender(node, { clock: later, journal, pollMs: 1_000, replaceAfterMs: 2_000 });
      assert.equal(await restarted.recover(), 1, 'one transaction to follow');
      const replacements = () => resent.filter((b) => b.nonce === stuck.nonce && b.hash !== stuck.hash);
      // Its last broadcast is older than replaceAfterMs: the follower replaces it at once (real I/O).
      const deadline = Date.now() + 10_000;
      while (replacements().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      const replaced = replacements();
      assert.ok(replaced.length >= 1, 'replaced at the same nonce');
      const next = restarted.send({ to: PAYEE, data: '0x', value: 31n });
      while (!resent.some((b) => b.nonce === stuck.nonce! + 1) && Date.now() < deadline + 10_000)
        await new Promise((r) => setTimeout(r, 10));
      assert.ok(replaced[0].maxFeePerGas! > stuck.maxFeePerGas!, 'with higher fees');
      await chain.mineBlock();
      let settled = false;
      void next.finally(() => (settled = true)).catch(() => {});
      for (let i = 0; i < 10 && !settled; i++) {
        await later.advance(1_000);
        await untilWaitingOr(later, () => settled);
      }
      const { receipt } = await next;
      assert.equal(receipt.status, 'success');
      const mined = await chain.publicClient.getTransaction({ hash: receipt.transactionHash });
      assert.equal(mined.nonce, stuck.nonce! + 1, 'the next send went after it, not around it');
      const first = await chain.publicClient.getTransactionCount({ address: signer.address });
      assert.equal(first, stuck.nonce! + 2, 'both mined, no gap');
    } finally {
      await chain.setAutomine(true);
    }
  });

  test('recover(signal): following the journal ends at the next look after the abort, reporting nothing, no timer left', async () => {
    const clock = createFakeClock();
    const journal = createProcessJournal(() => clock.now());
    const { client } = observedNode(connectChain(anvil.rpcUrl).publicClient);
    await chain.setAutomine(false);
    try {
      const s = sender(client, { clock, journal, pollMs: 1_000, timeoutMs: 2_000, replaceAfterMs: 60_000 });
      let done = false;
      const timedOut = assert.rejects(s.send({ to: PAYEE, data: '0x', value: 32n })).finally(() => (done = true));
      await untilWaiting(clock);
      for (let i = 0; i < 3 && !done; i++) {
        await clock.advance(1_000);
        await untilWaitingOr(clock, () => done);
      }
      await timedOut;
      // A restarted worker follows it in the background, then stops.
      const later = createFakeClock(clock.now() + 5_000);
      const reported: string[] = [];
      const restarted = sender(connectChain(anvil.rpcUrl).publicClient, {
        clock: later,
        journal,
        pollMs: 1_000,
        timeoutMs: 600_000,
        replaceAfterMs: 600_000,
        onRecovered: (nonce, outcome) => reported.push(`${nonce} ${outcome}`),
      });
      const stop = new AbortController();
      assert.equal(await restarted.recover(stop.signal), 1);
      await untilWaiting(later);
      stop.abort();
      // Its next look ends it: no timer set again for half a second of real time (the node answers
      // in milliseconds); a follow that goes on sets its next wait at once.
      let quiet = false;
      for (let i = 0; i < 5 && !quiet; i++) {
        await later.advance(1_000);
        const until = Date.now() + 500;
        while (later.keepingAlive() === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
        quiet = later.keepingAlive() === 0;
      }
      assert.ok(quiet, 'the follow ended: no timer left');
      assert.deepEqual(reported, [], 'a stop is not an outcome');
      const open = await journal.openBroadcasts({ chainId: anvil.chainId, signer: signer.address.toLowerCase() });
      assert.equal(open.length, 1, 'still open in the journal, for the next start');
    } finally {
      await chain.mineBlock();
      await chain.setAutomine(true);
    }
  });

  test('N confirmations: the send returns once the block is N deep, extending (onWait) meanwhile', async () => {
    const clock = createFakeClock();
    const { client } = observedNode();
    const s = sender(client, { clock, pollMs: 1_000, confirmations: 3 });
    let settled = false;
    let waits = 0;
    const result = s
      .send({ to: PAYEE, data: '0x', value: 2n }, { onWait: async () => void waits++ })
      .finally(() => (settled = true));
    await untilWaiting(clock); // mined (automine), 1 confirmation
    await chain.mineBlock();
    await clock.advance(1_000);
    await untilWaiting(clock); // 2
    assert.equal(settled, false);
    await chain.mineBlock();
    await clock.advance(1_000);
    const { receipt } = await result; // 3
    assert.equal(receipt.status, 'success');
    assert.equal((await chain.publicClient.getBlockNumber({ cacheTime: 0 })) - receipt.blockNumber + 1n, 3n);
    // Once per look at the receipts: at the next block (read every headPollMs), or after pollMs.
    assert.ok(waits >= 2, `onWait called while waiting (${waits})`);
  });

  test('a node that fails while the sender waits for confirmations is waited out (until timeoutMs)', async (t) => {
    // A pass-through to anvil that can be switched to answering 503.
    let down = false;
    const proxy = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (down) return void res.writeHead(503).end();
      const upstream = await fetch(anvil.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      });
      res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
    const node = connectChain(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);

    const clock = createFakeClock();
    const { client, sent } = observedNode(node.publicClient);
    const s = createTransactionSender({
      publicClient: client,
      account: signer,
      clock,
      pollMs: 1_000,
      confirmations: 2,
      timeoutMs: 10_000,
    });
    const result = s.send({ to: PAYEE, data: '0x', value: 3n });
    await untilWaiting(clock); // mined: 1 confirmation
    down = true;
    for (let i = 0; i < 3; i++) {
      await clock.advance(1_000);
      await untilWaiting(clock);
    }
    down = false;
    await chain.mineBlock();
    await clock.advance(1_000);
    const { receipt } = await result;
    assert.equal(receipt.status, 'success');

    // Down for good: the send ends at timeoutMs, naming the failures, with the hash sent.
    let done = false;
    const stuck = s.send({ to: PAYEE, data: '0x', value: 4n }).finally(() => (done = true));
    await untilWaiting(clock);
    // anvil answers the send before its block is written, so the sender's first poll may have
    // found no receipt: one more poll once the receipt exists, and the sender has seen it mined.
    await chain.receipt(sent[sent.length - 1].hash);
    await clock.advance(1_000);
    await untilWaiting(clock);
    down = true;
    const ended = assert.rejects(stuck, (e) => {
      assert.ok(e instanceof TransactionError);
      assert.equal(e.code, 'timeout');
      assert.match(e.message, /not confirmed within 10000 ms .*the node failed \d+ polls/);
      assert.match(e.hash ?? '', /^0x[0-9a-f]{64}$/);
      return true;
    });
    for (let i = 0; i < 12 && !done; i++) {
      await clock.advance(1_000);
      await untilWaitingOr(clock, () => done);
    }
    await ended;
    down = false;
  });

  test('concurrent sends of one signer take consecutive nonces', async () => {
    // A fresh client (earlier tests used the key through others); a second sender on the same
    // client and signer shares the sequence.
    const { client: publicClient, sent, refused } = observedNode(connectChain(anvil.rpcUrl).publicClient);
    const s = createTransactionSender({ publicClient, account: signer, pollMs: 10 });
    const t = createTransactionSender({ publicClient, account: signer, pollMs: 10 });
    const start = await chain.publicClient.getTransactionCount({ address: signer.address, blockTag: 'pending' });
    // Blocks keep coming, as on a real chain: concurrent broadcasts may reach anvil out of nonce
    // order, and with automine alone a transaction queued behind the gap waits for the next send
    // (here: a replacement a minute later, which made this test flaky).
    let sending = true;
    const blocks = (async () => {
      while (sending) {
        await chain.mineBlock();
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const results = await Promise.all(
      [s, t, s, t, s].map((x, i) => x.send({ to: PAYEE, data: '0x', value: BigInt(10 + i) })),
    ).finally(() => {
      sending = false;
    });
    await blocks;
    const nonces = (await Promise.all(results.map((r) => chain.publicClient.getTransaction({ hash: r.hash }))))
      .map((tx) => tx.nonce)
      .sort((a, b) => a - b);
    assert.deepEqual(nonces, [start, start + 1, start + 2, start + 3, start + 4]);
    assert.equal(sent.length, 5);
    assert.equal(refused(), 0, 'no nonce conflict, no retry');
  });

  test('a nonce used behind the sender\'s back ("nonce too low") is re-read from the node and the send goes through', async () => {
    // A fresh client: its own sequence, initialised by the first send.
    const { client, sent, refused } = observedNode(connectChain(anvil.rpcUrl).publicClient);
    const s = createTransactionSender({ publicClient: client, account: signer, pollMs: 10 });
    await s.send({ to: PAYEE, data: '0x', value: 20n });
    // Another process signs with the same key.
    const other = createWalletClient({
      chain: anvilChain(),
      transport: http(anvil.rpcUrl, { retryCount: 0 }),
      account: signer,
    });
    const behind = await chain.receipt(await other.sendTransaction({ to: PAYEE, value: 21n, chain: anvilChain() }));
    const behindNonce = (await chain.publicClient.getTransaction({ hash: behind.transactionHash })).nonce;
    const before = sent.length;
    const { hash, receipt } = await s.send({ to: PAYEE, data: '0x', value: 22n });
    assert.equal(receipt.status, 'success');
    assert.equal((await chain.publicClient.getTransaction({ hash })).nonce, behindNonce + 1);
    // The stale nonce was refused, then the re-read one was sent.
    assert.equal(sent.length - before, 1);
    assert.equal(refused(), 1);
  });

  test('a node that cannot be reached is an rpc error that does not name the URL', async () => {
    const down = connectChain('http://127.0.0.1:1/secret-key');
    const s = createTransactionSender({ publicClient: down.publicClient, account: signer });
    await assert.rejects(s.simulate({ to: PAYEE, data: '0x' }), (e) => {
      assert.ok(e instanceof TransactionError);
      assert.equal(e.code, 'rpc');
      assert.doesNotMatch(e.message, /secret-key|127\.0\.0\.1/);
      return true;
    });
  });
});
