/**
 * One anvil node with two Hyperlane Mailboxes (domains 1 and 2, both NoopIsm by default) and a
 * TestRecipient on domain 2: the quickest real set-up for the delivery worker. Messages are
 * dispatched with Mailbox.dispatch on domain 1 and enqueued straight into the relayer's outbox;
 * bin/relayer-worker.ts delivers them with Mailbox.process on domain 2.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeFunctionData, pad, toHex, type Address, type Hash, type Hex } from 'viem';
import type { OutboxMessage } from '../../../lib/outbox/index.ts';
import type { DeliveryOutbox, DeliveryWorker } from '../../../lib/worker/index.ts';
import type { Logger } from '../../../lib/log.ts';
import { parseHyperlaneMessage } from '../../../lib/codec/message.ts';
import { hexToBytes } from '../../../lib/codec/hex.ts';
import { noGasGate } from '../fixtures/config.ts';
import { ANVIL_DEV_KEYS, startAnvil, type Anvil } from './anvil.ts';
import { connectChain, DEV_ACCOUNT, FIXED_GAS, type Chain } from './clients.ts';
import {
  deployHyperlane,
  hyperlaneArtifact,
  mailboxArtifact,
  mailboxLogs,
  type HyperlaneDeployment,
} from './hyperlane.ts';
import {
  onExitCleanup,
  REPO_ROOT,
  spawnTracked,
  stopProcess,
  waitForStart,
  type Tracked,
} from '../harness/processes.ts';

export const WORKER_BIN = join(REPO_ROOT, 'bin', 'relayer-worker.ts');

/**
 * anvil's dev account `index` (funded): the workers sign with 1 and up, the test deploys with 0.
 * anvil.ts lists the keys (checked against anvil's own printout at every start).
 */
export function devKey(index: number): Hex {
  const key = ANVIL_DEV_KEYS[index];
  if (key === undefined) throw new Error(`anvil has no dev account ${index}`);
  return key;
}

export interface WorkerBench {
  anvil: Anvil;
  chain: Chain;
  origin: HyperlaneDeployment;
  destination: HyperlaneDeployment;
  recipient: Address;
  dir: string;
  /** Writes a relayer config for this set-up (worker section merged; gas choices stated by noGasGate unless `extra` states them) and returns its path. */
  writeConfig(db: string, worker?: Record<string, unknown>, extra?: Record<string, unknown>): string;
  /** Dispatches `count` messages (one transaction each) from domain 1 to `recipient` on domain 2. */
  dispatch(count: number, recipient?: Address): Promise<OutboxMessage[]>;
  stop(): Promise<void>;
}

/** A receipt as eth_getTransactionReceipt returns it (status '0x1' or '0x0'), the fields read here. */
interface RawReceipt {
  status: string;
  logs: { address: Address; topics: Hex[]; data: Hex }[];
}

export const ORIGIN = { name: 'anvil1', domain: 1 };
export const DESTINATION = { name: 'anvil2', domain: 2 };

export async function startWorkerBench(): Promise<WorkerBench> {
  const anvil = await startAnvil();
  const dir = mkdtempSync(join(tmpdir(), 'relayer-worker-'));
  const removeDir = onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const chain = connectChain(anvil.rpcUrl, anvil.chainId);
    const origin = await deployHyperlane(chain, ORIGIN.domain);
    const destination = await deployHyperlane(chain, DESTINATION.domain);
    const recipientA = hyperlaneArtifact('test/TestRecipient');
    const recipient = await chain.deploy(recipientA.abi, recipientA.bytecode);
    let configs = 0;
    let body = 0;
    return {
      anvil,
      chain,
      origin,
      destination,
      recipient,
      dir,
      writeConfig(db, worker = {}, extra = {}) {
        const path = join(dir, `relayer-${++configs}.json`);
        const chainOf = (c: { name: string; domain: number }, mailbox: Address) => ({
          domainId: c.domain,
          chainId: anvil.chainId,
          mailbox,
          rpcUrls: [{ http: anvil.rpcUrl }],
        });
        // The gas choices stated: none required, no fee ceiling, unless `extra` states others.
        writeFileSync(
          path,
          JSON.stringify(
            noGasGate({
              chains: {
                [ORIGIN.name]: chainOf(ORIGIN, origin.mailbox),
                [DESTINATION.name]: chainOf(DESTINATION, destination.mailbox),
              },
              relayChains: [DESTINATION.name],
              db,
              worker: { port: 0, pollMs: 50, ...worker },
              ...extra,
            }),
          ),
        );
        return path;
      },
      async dispatch(count, to = recipient) {
        const { abi } = mailboxArtifact();
        // The sends one after the other (automine mines each as it comes, and anvil gives each the
        // account's next nonce), then one JSON-RPC batch of receipts. Not the sends in one batch:
        // anvil took a batch's calls in any order, and in about one full run in three one of them
        // never got mined (its receipt timed out, and the next batch's nonces collided with it:
        // "replacement transaction underpriced").
        const hashes: Hash[] = [];
        for (let i = 0; i < count; i++) {
          const tx = {
            from: DEV_ACCOUNT,
            to: origin.mailbox,
            gas: toHex(FIXED_GAS),
            data: encodeFunctionData({
              abi,
              functionName: 'dispatch',
              args: [DESTINATION.domain, pad(to), toHex(`message ${++body}`)],
            }),
          };
          hashes.push((await chain.rpc('eth_sendTransaction', [tx])) as Hash);
        }
        const receipts = (await chain.rpcBatch(
          hashes.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })),
        )) as (RawReceipt | null)[];
        const out: OutboxMessage[] = [];
        for (const [i, hash] of hashes.entries()) {
          // Not mined yet (automine is on, so at most a moment behind): wait for it.
          const receipt = receipts[i] ?? (await chain.receipt(hash));
          if (receipt.status !== '0x1' && receipt.status !== 'success') throw new Error(`dispatch reverted: ${hash}`);
          for (const raw of mailboxLogs(receipt, origin.mailbox).messages) {
            const bytes = hexToBytes(raw)!;
            const m = parseHyperlaneMessage(bytes);
            out.push({
              id: m.id,
              originChain: ORIGIN.name,
              txHash: hash.toLowerCase(),
              origin: m.origin,
              destination: m.destination,
              nonce: m.nonce,
              raw: bytes,
              enqueuedAt: Date.now(),
            });
          }
        }
        return out;
      },
      async stop() {
        await anvil.stop();
        removeDir();
      },
    };
  } catch (error) {
    await anvil.stop();
    removeDir();
    throw error;
  }
}

export interface WorkerProcess extends Tracked {
  /** http://127.0.0.1:PORT of its /metrics and /ready. */
  opsUrl: string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const started = new Set<WorkerProcess>();

/**
 * SIGKILLs every spawned worker still running and stops the in-process ones (an `after` hook: a
 * test cut short by a timeout leaves its worker).
 */
export async function killWorkers(): Promise<void> {
  await Promise.all([...started].map((w) => w.stop('SIGKILL')));
  await Promise.all([...inProcess].map((w) => w.stop()));
}

/** Starts bin/relayer-worker.ts signing with dev account `keyIndex`; resolves once it serves /ready. */
export async function startWorker(
  config: string,
  options: { keyIndex?: number; db?: string; env?: NodeJS.ProcessEnv; args?: string[] } = {},
): Promise<WorkerProcess> {
  const args = [WORKER_BIN, '--config', config, ...(options.db ? ['--db', options.db] : []), ...(options.args ?? [])];
  const tracked = spawnTracked(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, RELAYER_SIGNER_KEY: devKey(options.keyIndex ?? 1), ...options.env },
  });
  try {
    const [, opsUrl] = await waitForStart(tracked, /relayer-worker ops on (http:\/\/\S+)/);
    const worker: WorkerProcess = {
      ...tracked,
      opsUrl,
      stop: (signal = 'SIGTERM') => stopProcess(tracked.child, 15_000, signal).finally(() => started.delete(worker)),
    };
    started.add(worker);
    return worker;
  } catch (error) {
    await stopProcess(tracked.child, 1_000, 'SIGKILL');
    throw error;
  }
}

export interface InProcessWorker {
  worker: DeliveryWorker;
  /** The signer's address. */
  address: Hex;
  /** Its metrics as the bin's /metrics serves them (Prometheus text). */
  metrics(): string;
  /** Stops the loop (worker.stop(), as SIGTERM does in the bin) and resolves with the messages still held: 0. */
  stop(): Promise<number>;
}

const inProcess = new Set<InProcessWorker>();

/**
 * The delivery worker the bin runs (lib/worker's createRelayerWorker, from the same config file),
 * in this process on `outbox`, signing with dev account `keyIndex`. For the scenarios about
 * delivery rather than about the process (its signals, exit code, output, ops port): each spawned
 * worker costs its own Node start and viem load, this one neither.
 */
export async function startInProcessWorker(
  configPath: string,
  outbox: DeliveryOutbox,
  options: { keyIndex?: number; logger?: Logger; merkle?: import('../../../lib/types.ts').MerkleStore } = {},
): Promise<InProcessWorker> {
  // Loaded on first use: the demo and the files that only spawn workers do not need them.
  const [{ parseConfig }, { createRelayerWorker }] = await Promise.all([
    import('../../../lib/config/parse.ts'),
    import('../../../lib/worker/index.ts'),
  ]);
  const config = parseConfig(JSON.parse(readFileSync(configPath, 'utf8')));
  const relayer = await createRelayerWorker({
    config,
    outbox,
    signerKey: devKey(options.keyIndex ?? 1),
    logger: options.logger,
    merkle: options.merkle,
  });
  const running = relayer.worker.run();
  const started: InProcessWorker = {
    worker: relayer.worker,
    address: relayer.address,
    metrics: () => relayer.metrics.registry.render(),
    async stop() {
      await relayer.worker.stop();
      await running;
      inProcess.delete(started);
      return relayer.worker.inFlight();
    },
  };
  inProcess.add(started);
  return started;
}

/** Polls `check` every 50 ms until it returns true; fails after `timeoutMs` with `what`. */
export async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
