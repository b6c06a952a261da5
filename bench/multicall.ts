/**
 * `node bench/multicall.ts`: is batching `Mailbox.process` calls into one transaction through
 * Multicall3 (as Hyperlane's relayer does) worth it for our worker? (BENCHMARKS.md, "Batching
 * through Multicall3"; the decision in docs/delivery.md#throughput.)
 *
 * On anvil (automine) with the real Mailbox, NoopIsm (NULL ISM) and a TestRecipient, and
 * Multicall3's aggregate3 (test/helpers/chain/contracts/Multicall3.sol, the deployed code's
 * function), it measures:
 * - gas per message: one `process` per transaction, against aggregate3 batches of 2 to 50
 *   (allowFailure true), every message checked delivered;
 * - failure isolation, a batch of 10 with one hostile message among them: a recipient that always
 *   reverts (allowFailure true, then false), and one whose code burns all the gas it is given.
 * Gas is deterministic here, so one run is the figure (the machine's load does not change it).
 */
import { encodeFunctionData, type Address, type Hex } from 'viem';
import type { OutboxMessage } from '../lib/outbox/index.ts';
import { bytesToHex } from '../lib/codec/hex.ts';
import { MAILBOX_ABI } from '../lib/worker/ism/metadata.ts';
import { ALWAYS_REVERTS_INIT_CODE } from '../test/helpers/chain/cctp-bridge.ts';
import { DEV_ACCOUNT } from '../test/helpers/chain/clients.ts';
import { compiledContract } from '../test/helpers/chain/solidity.ts';
import { startWorkerBench, type WorkerBench } from '../test/helpers/chain/worker-chain.ts';
import { installExitCleanup } from '../test/helpers/harness/processes.ts';
import { printTable, provenance } from './lib.ts';

/** Runtime code `JUMPDEST PUSH1 0 JUMP`: loops until its gas is gone (a recipient that burns all it is given). */
const BURNS_ALL_GAS_INIT_CODE: Hex = '0x635b6000566000526004601cf3';

const processData = (m: OutboxMessage): Hex =>
  encodeFunctionData({ abi: MAILBOX_ABI, functionName: 'process', args: ['0x', bytesToHex(m.raw) as Hex] });

async function deployRaw(bench: WorkerBench, data: Hex): Promise<Address> {
  const hash = await bench.chain.wallet.sendTransaction({ account: DEV_ACCOUNT, chain: bench.chain.viemChain, data });
  const receipt = await bench.chain.receipt(hash);
  if (!receipt.contractAddress) throw new Error('deployment failed');
  return receipt.contractAddress;
}

async function deliveredCount(bench: WorkerBench, messages: OutboxMessage[]): Promise<number> {
  let n = 0;
  for (const m of messages) {
    const at = await bench.chain.publicClient.readContract({
      address: bench.destination.mailbox,
      abi: MAILBOX_ABI,
      functionName: 'processedAt',
      args: [m.id as Hex],
    });
    if (at !== 0) n++;
  }
  return n;
}

async function main(): Promise<void> {
  installExitCleanup();
  console.log(`multicall batching: ${provenance('node bench/multicall.ts')}`);
  const bench = await startWorkerBench();
  try {
    const { chain } = bench;
    const mailbox = bench.destination.mailbox;
    const mc = compiledContract('Multicall3');
    const multicall = await chain.deploy(mc.abi, mc.bytecode);
    const reverter = await deployRaw(bench, ALWAYS_REVERTS_INIT_CODE);
    const burner = await deployRaw(bench, BURNS_ALL_GAS_INIT_CODE);
    const batch = async (messages: OutboxMessage[], allowFailure = true) => {
      const calls = messages.map((m) => ({ target: mailbox, allowFailure, callData: processData(m) }));
      const receipt = await chain.callAndWait(multicall, mc.abi, 'aggregate3', [calls]);
      return { receipt, delivered: await deliveredCount(bench, messages) };
    };

    const rows: (string | number)[][] = [];
    // One process per transaction: the worker's way.
    const singles = await bench.dispatch(10);
    let singleGas = 0n;
    for (const m of singles) {
      const r = await chain.callAndWait(mailbox, MAILBOX_ABI, 'process', ['0x', bytesToHex(m.raw) as Hex]);
      if (r.status !== 'success') throw new Error('process reverted');
      singleGas += r.gasUsed;
    }
    const perSingle = Number(singleGas) / singles.length;
    if ((await deliveredCount(bench, singles)) !== singles.length) throw new Error('not all delivered');
    rows.push(['1 process per transaction', 10, Math.round(perSingle), '1.00x', '10/10']);
    for (const n of [2, 5, 10, 20, 50]) {
      const messages = await bench.dispatch(n);
      const { receipt, delivered } = await batch(messages);
      const per = Number(receipt.gasUsed) / n;
      rows.push([`aggregate3 of ${n}`, n, Math.round(per), `${(per / perSingle).toFixed(2)}x`, `${delivered}/${n}`]);
    }
    console.log('\ngas per delivered message (NULL ISM, TestRecipient, empty metadata):');
    printTable(['how', 'messages', 'gas per message', 'vs one per tx', 'delivered'], rows);

    const hostile: (string | number)[][] = [];
    const mixed = async (bad: Address, allowFailure: boolean, label: string) => {
      const good = await bench.dispatch(9);
      const [evil] = await bench.dispatch(1, bad);
      const messages = [...good.slice(0, 4), evil, ...good.slice(4)];
      const { receipt, delivered } = await batch(messages, allowFailure);
      hostile.push([label, receipt.status, receipt.gasUsed.toString(), `${delivered}/9`]);
    };
    await mixed(reverter, true, 'one recipient reverts, allowFailure true');
    await mixed(reverter, false, 'one recipient reverts, allowFailure false');
    await mixed(burner, true, 'one recipient burns all its gas, allowFailure true (5M gas limit)');
    console.log('\na batch of 10 with one hostile message (5th), the 9 others good:');
    printTable(['case', 'transaction', 'gas used', 'good ones delivered'], hostile);
  } finally {
    await bench.stop();
  }
}

await main();
