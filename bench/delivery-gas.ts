/**
 * `BENCH_DELIVERY_GAS=1 npm run bench:delivery`: the delivery bench with gas payment enforcement on
 * (docs/gas.md#gas-payment-enforcement), for bench/delivery.ts. One more contender, 1 worker
 * under `gasPaymentEnforcement: [{type: "onChainFeeQuoting"}]` (gasFraction 1/2, the default) with
 * the origin chain's `interchainGasPaymaster` set: Hyperlane's real InterchainGasPaymaster and
 * StorageGasOracle (test/helpers/chain/igp.ts) on the bench's anvil. Each of its messages is paid
 * for on the paymaster (`payForGas`, one transaction each, while anvil still automines), for 3/2 of
 * what `process` of the first one estimates (the gas limit the floor signs), and is enqueued with
 * its `GasPayment` log as POST /relay stores a receipt's (parseReceipt, gasPaymentsIn). The worker
 * then reads the payments, estimates, checks the gas and keeps the required gas with each message:
 * what enforcement costs a paid message. bench/delivery.ts prints its msg/s and p50 against the
 * plain 1-worker contender measured in the same run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { encodeFunctionData, type Hex } from 'viem';
import { gasPaymentsIn } from '../lib/gas/payment.ts';
import { bytesToHex } from '../lib/codec/hex.ts';
import type { OutboxMessage, OutboxRecord } from '../lib/outbox/index.ts';
import { parseReceipt } from '../lib/rpc/receipt.ts';
import { MAILBOX_ABI } from '../lib/worker/ism/metadata.ts';
import { DEV_ACCOUNT } from '../test/helpers/chain/clients.ts';
import { deployGasPayment } from '../test/helpers/chain/igp.ts';
import { DESTINATION, ORIGIN, type WorkerBench } from '../test/helpers/chain/worker-chain.ts';

export const GAS = process.env.BENCH_DELIVERY_GAS === '1';

export interface GasMode {
  /** Destination gas each message is paid for. */
  paid: bigint;
  /** Pays for each message on the paymaster (automine on) and returns them with their payment. */
  pay(messages: OutboxMessage[]): Promise<OutboxMessage[]>;
  /** bench.writeConfig, under onChainFeeQuoting with the origin chain's paymaster. */
  writeConfig(db: string, worker: Record<string, unknown>): string;
  /** A line saying for how many of `messages` the gate kept a required gas (it ran for them). */
  checked(
    outbox: { get(id: string): Promise<OutboxRecord | undefined> | OutboxRecord | undefined },
    messages: OutboxMessage[],
  ): Promise<string>;
}

export async function setUpGasMode(bench: WorkerBench, sample: OutboxMessage): Promise<GasMode> {
  const fixture = await deployGasPayment(bench.chain, bench.origin.mailbox, [DESTINATION.domain]);
  const estimate = await bench.chain.publicClient.estimateGas({
    account: DEV_ACCOUNT,
    to: bench.destination.mailbox,
    data: encodeFunctionData({
      abi: MAILBOX_ABI,
      functionName: 'process',
      args: ['0x', bytesToHex(sample.raw) as Hex],
    }),
  });
  const paid = (estimate * 3n) / 2n;
  return {
    paid,
    async pay(messages) {
      const out: OutboxMessage[] = [];
      for (const m of messages) {
        const hash = await fixture.topUp(m.id as Hex, m.destination, paid);
        const receipt = parseReceipt(await bench.chain.rpc('eth_getTransactionReceipt', [hash]), hash);
        const gasPayments = gasPaymentsIn(receipt.logs, hash, fixture.igp, [m]);
        if (gasPayments.length !== 1) throw new Error(`payForGas of ${m.id}: ${gasPayments.length} GasPayment logs`);
        out.push({ ...m, gasPayments });
      }
      return out;
    },
    writeConfig(db, worker) {
      const path = bench.writeConfig(db, worker, { gasPaymentEnforcement: [{ type: 'onChainFeeQuoting' }] });
      const config = JSON.parse(readFileSync(path, 'utf8'));
      config.chains[ORIGIN.name].interchainGasPaymaster = fixture.igp;
      writeFileSync(path, JSON.stringify(config));
      return path;
    },
    async checked(outbox, messages) {
      const required = new Set<string>();
      let kept = 0;
      for (const m of messages) {
        const r = await outbox.get(m.id);
        if (r?.requiredGas == null) continue;
        kept++;
        required.add(String(r.requiredGas));
      }
      return `onChainFeeQuoting: the required gas kept for ${kept}/${messages.length} messages (${[...required].slice(0, 3).join(', ')}${required.size > 3 ? ', …' : ''}), ${paid} paid`;
    },
  };
}
