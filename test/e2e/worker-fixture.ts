/**
 * One anvil node with two Hyperlane Mailboxes (domains 1 and 2, both NoopIsm by default) and a
 * TestRecipient on domain 2: the quickest real set-up for the delivery worker. Messages are
 * dispatched with Mailbox.dispatch on domain 1 and enqueued straight into the relayer's outbox;
 * bin/relayer-worker.ts delivers them with Mailbox.process on domain 2.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pad, toHex, type Address, type Hash, type Hex } from 'viem';
import type { OutboxMessage } from '../../lib/outbox.ts';
import { parseHyperlaneMessage } from '../../lib/message.ts';
import { hexToBytes } from '../../lib/hex.ts';
import { ANVIL_DEV_KEYS, startAnvil, type Anvil } from './anvil.ts';
import { connectChain, type Chain } from './chain.ts';
import {
  deployHyperlane,
  hyperlaneArtifact,
  mailboxArtifact,
  mailboxLogs,
  type HyperlaneDeployment,
} from './hyperlane.ts';
import { onExitCleanup, REPO_ROOT, spawnTracked, stopProcess, waitForLine, type Tracked } from './processes.ts';

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
  /** Writes a relayer config for this set-up (worker section merged) and returns its path. */
  writeConfig(db: string, worker?: Record<string, unknown>, extra?: Record<string, unknown>): string;
  /** Dispatches `count` messages (one transaction each) from domain 1 to `recipient` on domain 2. */
  dispatch(count: number, recipient?: Address): Promise<OutboxMessage[]>;
  stop(): Promise<void>;
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
        writeFileSync(
          path,
          JSON.stringify({
            chains: {
              [ORIGIN.name]: chainOf(ORIGIN, origin.mailbox),
              [DESTINATION.name]: chainOf(DESTINATION, destination.mailbox),
            },
            relayChains: [DESTINATION.name],
            db,
            worker: { port: 0, pollMs: 50, ...worker },
            ...extra,
          }),
        );
        return path;
      },
      async dispatch(count, to = recipient) {
        const { abi } = mailboxArtifact();
        const hashes: Hash[] = [];
        for (let i = 0; i < count; i++) {
          const text = toHex(`message ${++body}`);
          hashes.push(await chain.call(origin.mailbox, abi, 'dispatch', [DESTINATION.domain, pad(to), text]));
        }
        const out: OutboxMessage[] = [];
        for (const hash of hashes) {
          const receipt = await chain.receipt(hash);
          if (receipt.status !== 'success') throw new Error(`dispatch reverted: ${hash}`);
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

/** SIGKILLs every worker still running (an `after` hook: a test cut short by a timeout leaves its worker). */
export async function killWorkers(): Promise<void> {
  await Promise.all([...started].map((w) => w.stop('SIGKILL')));
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
    const [, opsUrl] = await waitForLine(tracked, /relayer-worker ops on (http:\/\/\S+)/, 30_000);
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

/** Polls `check` every 50 ms until it returns true; fails after `timeoutMs` with `what`. */
export async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
