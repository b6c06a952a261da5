/**
 * Gas payments at intake, end to end (docs/gas.md#gas-payment-enforcement): Hyperlane's real
 * InterchainGasPaymaster and StorageGasOracle on anvil, transfers that pay it in the same
 * transaction (paid, unpaid, underpaid, paid for another destination) and a top-up sent later,
 * relayed by the real bin/relayer-server.ts; GET /relay/{id} shows what the paymaster logged.
 * Then the gas book in the delivery worker (docs/gas.md#gas-already-spent), under
 * onChainFeeQuoting: GET /relay/{id} shows the gas the worker's estimate required, and the gas a
 * transaction of ours spent when a recipient made it revert once mined, deducted from the gas paid
 * for; under minimum, the wei it cost deducted from the payment. Expected amounts come from the paymaster's own quote, the GasPayment logs decoded by viem,
 * our own eth_estimateGas and the chain's receipts, never from lib/.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { decodeEventLog, encodeFunctionData, hexToBytes, type Address, type Hash, type Hex } from 'viem';
import { systemClock } from '../../lib/clock.ts';
import { parseConfig } from '../../lib/config/parse.ts';
import { gasPaymentLogFilter, gasPaymentsIn, sumGasPayments } from '../../lib/gas/payment.ts';
import { bytesToHex } from '../../lib/codec/hex.ts';
import { createMemoryOutbox, type OutboxMessage, type OutboxRecord } from '../../lib/outbox/index.ts';
import { DEV_ACCOUNT, FIXED_GAS } from '../helpers/chain/clients.ts';
import { mailboxArtifact, mailboxLogs } from '../helpers/chain/hyperlane.ts';
import { deployGasPayment, igpArtifacts, type GasPaymentFixture } from '../helpers/chain/igp.ts';
import { ORIGIN_DOMAIN, startLocalChain, type LocalChain } from '../helpers/chain/local-chains.ts';
import { compiledContract } from '../helpers/chain/solidity.ts';
import {
  DESTINATION,
  killWorkers,
  startInProcessWorker,
  startWorkerBench,
  until,
  type InProcessWorker,
  type WorkerBench,
} from '../helpers/chain/worker-chain.ts';
import { startApi, type StartedApi } from '../helpers/harness/server.ts';
import { launchRelayerServer, type RelayerProcess } from '../helpers/harness/server-process.ts';

const ORIGIN_CHAIN = 'anvil1';
const DESTINATION_DOMAIN = 2;
const OTHER_DOMAIN = 3;
const RECIPIENT: Address = '0x00000000000000000000000000000000000000b0';
/** What senders must pay: the quote for 100 000 gas to the destination (set in `before`). */
let minimum: bigint;

let local: LocalChain;
let fixture: GasPaymentFixture;
let server: RelayerProcess;
let amount = 1_000_000n;

async function relay(txHash: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}/relay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin_chain: ORIGIN_CHAIN, tx_hash: txHash }),
  });
  return { status: res.status, body: await res.json() };
}

async function gasPaymentOf(id: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}/relay/${id}`);
  assert.equal(res.status, 200);
  return ((await res.json()) as { gas_payment: Record<string, unknown> }).gas_payment;
}

/** The paymaster's GasPayment logs in a receipt, decoded by viem. */
async function paymentsLogged(hash: Hash) {
  const receipt = await local.chain.receipt(hash);
  const { abi } = igpArtifacts.paymaster();
  return receipt.logs
    .filter((log) => log.address.toLowerCase() === fixture.igp.toLowerCase())
    .map((log) => decodeEventLog({ abi, topics: log.topics as [Hex], data: log.data, strict: true }))
    .filter((e) => e.eventName === 'GasPayment')
    .map((e) => e.args as unknown as { messageId: Hex; destinationDomain: number; gasAmount: bigint; payment: bigint });
}

/** A transfer paying for `gas` (for `payDestination`), relayed: its message id (from the Mailbox's DispatchId). */
async function paidTransfer(gas: bigint, payDestination = DESTINATION_DOMAIN): Promise<{ id: string; hash: Hash }> {
  const hash = await fixture.sendPaid({
    destination: DESTINATION_DOMAIN,
    recipient: RECIPIENT,
    amount: amount++,
    gas,
    payDestination,
  });
  const { ids } = mailboxLogs(await local.chain.receipt(hash), local.hyperlane.mailbox);
  assert.equal(ids.length, 1);
  const reply = await relay(hash);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.deepEqual(
    reply.body.messages.map((m: { message_id: string }) => m.message_id),
    [ids[0].toLowerCase()],
  );
  return { id: ids[0].toLowerCase(), hash };
}

describe('gas payments at intake: the real InterchainGasPaymaster on anvil, bin/relayer-server.ts', {
  timeout: 90_000,
}, () => {
  before(async () => {
    local = await startLocalChain();
    fixture = await deployGasPayment(local.chain, local.hyperlane.mailbox, [DESTINATION_DOMAIN, OTHER_DOMAIN]);
    minimum = await fixture.quote(DESTINATION_DOMAIN, 100_000n);
    const config = {
      chains: {
        [ORIGIN_CHAIN]: {
          domainId: ORIGIN_DOMAIN,
          chainId: 31337,
          mailbox: local.hyperlane.mailbox,
          cctpMessageTransmitter: [local.standIns.transmitter, fixture.payer],
          interchainGasPaymaster: fixture.igp,
          rpcUrls: [{ http: local.anvil.rpcUrl }],
        },
        dest2: {
          domainId: DESTINATION_DOMAIN,
          chainId: 2,
          mailbox: '0x0000000000000000000000000000000000000002',
          rpcUrls: [{ http: 'http://127.0.0.1:1' }],
        },
      },
      relayChains: ['dest2'],
      gasPaymentEnforcement: [{ type: 'minimum', payment: String(minimum) }],
      db: ':memory:',
    };
    server = await launchRelayerServer(['--host', '127.0.0.1', '--db', ':memory:'], { config });
  });

  after(async () => {
    await server?.stop();
    await local?.anvil.stop();
  });

  test('paid: the payment in the transfer is stored and shown, as the paymaster logged it', async () => {
    const { id, hash } = await paidTransfer(200_000n);
    const [logged] = await paymentsLogged(hash);
    assert.equal(logged.messageId.toLowerCase(), id);
    assert.equal(logged.gasAmount, 200_000n);
    assert.equal(logged.payment, await fixture.quote(DESTINATION_DOMAIN, 200_000n));
    assert.deepEqual(await gasPaymentOf(id), {
      policy: 'minimum',
      payments: 1,
      gas_amount: '200000',
      payment: String(logged.payment),
      required_payment: String(minimum),
      required_gas_amount: null,
      gas_spent: '0',
      gas_spent_wei: '0',
    });
    assert.ok(logged.payment >= minimum, 'paid at least the minimum');
  });

  test('unpaid: nothing stored, nothing shown paid', async () => {
    const { id, hash } = await paidTransfer(0n);
    assert.deepEqual(await paymentsLogged(hash), []);
    assert.deepEqual(await gasPaymentOf(id), {
      policy: 'minimum',
      payments: 0,
      gas_amount: '0',
      payment: '0',
      required_payment: String(minimum),
      required_gas_amount: null,
      gas_spent: '0',
      gas_spent_wei: '0',
    });
  });

  test('underpaid: shown with what it paid, below what is required', async () => {
    const { id, hash } = await paidTransfer(1_000n);
    const [logged] = await paymentsLogged(hash);
    assert.ok(logged.payment < minimum);
    const shown = await gasPaymentOf(id);
    assert.equal(shown.payments, 1);
    assert.equal(shown.gas_amount, '1000');
    assert.equal(shown.payment, String(logged.payment));
  });

  test('paid for another destination: the paymaster logged it, it does not count', async () => {
    const { id, hash } = await paidTransfer(500_000n, OTHER_DOMAIN);
    const [logged] = await paymentsLogged(hash);
    assert.equal(logged.messageId.toLowerCase(), id);
    assert.equal(logged.destinationDomain, OTHER_DOMAIN);
    assert.equal((await gasPaymentOf(id)).payments, 0);
  });

  test('topped up later: the top-up transaction relays no message; eth_getLogs with the worker’s filter finds it, counted once', async () => {
    const { id } = await paidTransfer(1_000n);
    const topUp = await fixture.topUp(id as Hex, DESTINATION_DOMAIN, 150_000n);
    // A payForGas transaction has no Dispatch: nothing to accept.
    assert.deepEqual((await relay(topUp)).body, { messages: [] });
    assert.equal((await gasPaymentOf(id)).payments, 1, 'the intake saw only the payment in the transfer');
    // What the worker will do for top-ups: the filter, on the real node.
    const message = { id, destination: DESTINATION_DOMAIN };
    const head = BigInt((await local.chain.rpc('eth_blockNumber', [])) as Hex);
    const filter = gasPaymentLogFilter(fixture.igp, message, 0n, head);
    const found = (await local.chain.rpc('eth_getLogs', [filter])) as {
      address: string;
      topics: string[];
      data: Hex;
      logIndex: Hex;
      transactionHash: string;
    }[];
    assert.equal(found.length, 2, 'the payment in the transfer and the top-up');
    const payments = found.flatMap((log) =>
      gasPaymentsIn(
        [{ address: log.address, topics: log.topics, data: hexToBytes(log.data), logIndex: Number(log.logIndex) }],
        log.transactionHash,
        fixture.igp,
        [message],
      ),
    );
    const paid = sumGasPayments([...payments, ...payments], message);
    assert.equal(paid.payments, 2);
    assert.equal(paid.gasAmount, 151_000n);
    assert.equal(
      paid.payment,
      (await fixture.quote(DESTINATION_DOMAIN, 1_000n)) + (await fixture.quote(DESTINATION_DOMAIN, 150_000n)),
    );
  });
});

describe('the gas book in the delivery worker: onChainFeeQuoting and minimum on anvil with the real paymaster', {
  timeout: 120_000,
}, () => {
  let bench: WorkerBench;
  let paymaster: GasPaymentFixture;
  let revertSwitch: Address;
  /** A second RevertSwitch: messages to it are under `minimum` (MINIMUM_GAS's quote in wei). */
  let minimumSwitch: Address;
  const MINIMUM_GAS = 100_000n;
  let minimumWei: bigint;
  let worker: InProcessWorker;
  let api: StartedApi<typeof systemClock>;
  const outbox = createMemoryOutbox();
  const cleanups: (() => unknown)[] = [];
  const record = (id: string) => outbox.get(id) as OutboxRecord;
  const switchAbi = () => compiledContract('RevertSwitch').abi;

  before(async () => {
    bench = await startWorkerBench();
    paymaster = await deployGasPayment(bench.chain, bench.origin.mailbox, [DESTINATION.domain]);
    const c = compiledContract('RevertSwitch');
    revertSwitch = await bench.chain.deploy(c.abi, c.bytecode);
    minimumSwitch = await bench.chain.deploy(c.abi, c.bytecode);
    minimumWei = await paymaster.quote(DESTINATION.domain, MINIMUM_GAS);
    const path = bench.writeConfig(
      ':memory:',
      { pendingRetrySeconds: 1, pendingRetryMaxSeconds: 1, retryBaseSeconds: 1, retryMaxSeconds: 1, maxAttempts: 100 },
      {
        gasPaymentEnforcement: [
          { type: 'minimum', payment: String(minimumWei), matchingList: [{ recipientAddress: minimumSwitch }] },
          { type: 'onChainFeeQuoting' },
        ],
      },
    );
    const config = JSON.parse(readFileSync(path, 'utf8'));
    config.chains.anvil1.interchainGasPaymaster = paymaster.igp;
    writeFileSync(path, JSON.stringify(config));
    worker = await startInProcessWorker(path, outbox);
    // GET /relay/{id} over HTTP, on the worker's outbox and the same config.
    api = await startApi(
      { after: (fn) => cleanups.push(fn) },
      { outbox, config: parseConfig(config), clock: systemClock },
    );
  });
  after(async () => {
    for (const fn of cleanups) await fn();
    await killWorkers();
    await bench?.stop();
  });

  async function shown(id: string): Promise<Record<string, unknown>> {
    const res = await api.get(`/relay/${id}`);
    assert.equal(res.status, 200, res.text);
    return res.json().gas_payment;
  }

  /** eth_estimateGas of process(metadata, message) as the worker's signer: the estimate onChainFeeQuoting reads. */
  async function estimateProcess(m: OutboxMessage): Promise<bigint> {
    return bench.chain.publicClient.estimateGas({
      account: worker.address,
      to: bench.destination.mailbox,
      data: encodeFunctionData({
        abi: mailboxArtifact().abi,
        functionName: 'process',
        args: ['0x', bytesToHex(m.raw) as Hex],
      }),
    });
  }

  async function setArmed(
    on: boolean,
    fees: { maxFeePerGas?: bigint; maxPriorityFeePerGas?: bigint } = {},
    address: Address = revertSwitch,
  ) {
    return bench.chain.wallet.writeContract({
      address,
      abi: switchAbi(),
      functionName: 'arm',
      args: [on],
      gas: FIXED_GAS,
      chain: bench.chain.viemChain,
      account: DEV_ACCOUNT,
      ...fees,
    });
  }

  const pendingNonce = async () =>
    Number(await bench.chain.rpc('eth_getTransactionCount', [worker.address, 'pending']));

  /**
   * Enqueues `m` (to `recipient`, a RevertSwitch) and makes our process transaction revert when
   * mined: automine off, the switch armed in the same block ahead of ours (a higher tip), then
   * disarmed once the gas book has the spend. Returns our transaction's receipt.
   */
  async function revertOnceMined(m: OutboxMessage, recipient: Address) {
    await bench.chain.setAutomine(false);
    try {
      const before = await pendingNonce();
      outbox.enqueue([m]);
      await until(async () => (await pendingNonce()) > before, 'our process in the pool');
      await setArmed(true, { maxFeePerGas: 200_000_000_000n, maxPriorityFeePerGas: 100_000_000_000n }, recipient);
      await bench.chain.mineBlock();
    } finally {
      await bench.chain.setAutomine(true);
    }
    const block = await bench.chain.publicClient.getBlock({ blockTag: 'latest', includeTransactions: true });
    const ours = block.transactions.find((tx) => tx.from.toLowerCase() === worker.address.toLowerCase());
    assert.ok(ours, 'our process transaction is in the block');
    const receipt = await bench.chain.publicClient.getTransactionReceipt({ hash: ours.hash });
    assert.equal(receipt.status, 'reverted');
    await until(() => record(m.id).gasSpent > 0n, 'the spend recorded');
    await setArmed(false, {}, recipient);
    return receipt;
  }

  test('GET /relay/{id} shows the gas the worker’s estimate required (estimate × 1/2), nothing spent', async () => {
    const [m] = await bench.dispatch(1);
    const estimate = await estimateProcess(m);
    await paymaster.topUp(m.id as Hex, DESTINATION.domain, estimate);
    outbox.enqueue([m]);
    await until(() => record(m.id).status === 'delivered', 'delivered');
    assert.deepEqual(await shown(m.id), {
      policy: 'onChainFeeQuoting',
      payments: 1,
      gas_amount: String(estimate),
      payment: String(await paymaster.quote(DESTINATION.domain, estimate)),
      required_payment: null,
      required_gas_amount: String(estimate / 2n),
      gas_spent: '0',
      gas_spent_wei: '0',
    });
  });

  test('a recipient that reverts once mined: the gas our transaction used is shown and comes off the gas paid for', async () => {
    const [m] = await bench.dispatch(1, revertSwitch);
    const estimate = await estimateProcess(m);
    const required = estimate / 2n;
    // Enough for the first estimate, not once a reverted transaction has used about the estimate.
    const paid = estimate + required - 5_000n;
    await paymaster.topUp(m.id as Hex, DESTINATION.domain, paid);
    const receipt = await revertOnceMined(m, revertSwitch);
    assert.ok(receipt.gasUsed > paid - required, `used ${receipt.gasUsed}: what is left falls short`);

    const left = paid - receipt.gasUsed;
    await until(() => /^gas_payment: /.test(record(m.id).lastError ?? ''), 'waiting for gas');
    assert.equal(
      record(m.id).lastError!.replace(/ \(failures .*$/, ''),
      `gas_payment: paid for ${left} gas (after ${receipt.gasUsed} spent), ${required} required (estimate ${estimate} × 1/2)`,
    );
    const spent = {
      policy: 'onChainFeeQuoting',
      payments: 1,
      gas_amount: String(paid),
      payment: String(await paymaster.quote(DESTINATION.domain, paid)),
      required_payment: null,
      required_gas_amount: String(required),
      gas_spent: String(receipt.gasUsed),
      gas_spent_wei: String(receipt.gasUsed * receipt.effectiveGasPrice),
    };
    assert.deepEqual(await shown(m.id), spent);
    assert.equal(record(m.id).status, 'queued');
    const sent = await pendingNonce();

    // Topped up by what was spent: delivered, the spend counted once.
    await paymaster.topUp(m.id as Hex, DESTINATION.domain, receipt.gasUsed);
    await until(() => record(m.id).status === 'delivered', 'delivered after the top-up');
    assert.equal(await pendingNonce(), sent + 1, 'one more transaction: the one that delivered');
    assert.deepEqual(await shown(m.id), {
      ...spent,
      payments: 2,
      gas_amount: String(paid + receipt.gasUsed),
      payment: String(
        (await paymaster.quote(DESTINATION.domain, paid)) +
          (await paymaster.quote(DESTINATION.domain, receipt.gasUsed)),
      ),
    });
  });
  test('minimum: the wei a reverted transaction of ours cost comes off the payment; the message waits for a top-up', async () => {
    // docs/gas.md#gas-already-spent. Paid 1 gwei over the minimum; our transaction reverts
    // when mined and costs far more than that (gasUsed × its effective gas price, from the receipt).
    const [m] = await bench.dispatch(1, minimumSwitch);
    await paymaster.topUp(m.id as Hex, DESTINATION.domain, MINIMUM_GAS + 1n);
    const paid = await paymaster.quote(DESTINATION.domain, MINIMUM_GAS + 1n);
    assert.equal(paid, minimumWei + 1_000_000_000n, 'the oracle quotes 1 gwei a gas');
    const receipt = await revertOnceMined(m, minimumSwitch);
    const spentWei = receipt.gasUsed * receipt.effectiveGasPrice;
    assert.ok(spentWei > paid - minimumWei, `spent ${spentWei} wei: what is left falls short`);

    await until(() => /^gas_payment: /.test(record(m.id).lastError ?? ''), 'waiting for a top-up');
    const left = paid > spentWei ? paid - spentWei : 0n;
    assert.equal(
      record(m.id).lastError!.replace(/ \(failures .*$/, ''),
      `gas_payment: paid ${left} wei (after ${spentWei} wei spent), the minimum is ${minimumWei} wei`,
    );
    assert.equal(record(m.id).status, 'queued');
    const waiting = {
      policy: 'minimum',
      payments: 1,
      gas_amount: String(MINIMUM_GAS + 1n),
      payment: String(paid),
      required_payment: String(minimumWei + spentWei),
      required_gas_amount: null,
      gas_spent: String(receipt.gasUsed),
      gas_spent_wei: String(spentWei),
    };
    assert.deepEqual(await shown(m.id), waiting);
    const sent = await pendingNonce();

    // Topped up by what was spent (rounded up to whole gas at 1 gwei): delivered with one more transaction.
    const topUpGas = spentWei / 1_000_000_000n + 1n;
    await paymaster.topUp(m.id as Hex, DESTINATION.domain, topUpGas);
    await until(() => record(m.id).status === 'delivered', 'delivered after the top-up');
    assert.equal(await pendingNonce(), sent + 1, 'one more transaction: the one that delivered');
    assert.deepEqual(await shown(m.id), {
      ...waiting,
      payments: 2,
      gas_amount: String(MINIMUM_GAS + 1n + topUpGas),
      payment: String(paid + (await paymaster.quote(DESTINATION.domain, topUpGas))),
    });
  });
});
