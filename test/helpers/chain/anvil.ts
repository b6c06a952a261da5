/**
 * A real EVM node for the e2e tests: anvil from the @foundry-rs/anvil devDependency, on a loopback
 * port the OS picks (`--port 0`; anvil prints the port it bound).
 */
import { createRequire } from 'node:module';
import type { Hex } from 'viem';
import { spawnTracked, stopProcess, waitForLine, type Tracked } from '../harness/processes.ts';

export interface Anvil {
  rpcUrl: string;
  port: number;
  chainId: number;
  /** The node's output so far (for failure messages). */
  output(): string;
  /** SIGTERM, then SIGKILL if it lingers; resolves once the process is gone. */
  stop(): Promise<void>;
}

/** Chain id anvil uses unless told otherwise. */
export const ANVIL_CHAIN_ID = 31337;

const MNEMONIC = 'test test test test test test test test test test test junk';

/**
 * The private keys of anvil's dev accounts 0..9 for MNEMONIC, as anvil prints them at start
 * ("Private Keys"). Written out instead of derived: each derivation runs the mnemonic's PBKDF2 in
 * JavaScript, and a file asks for several. Every `startAnvil` checks that the
 * node printed exactly these, so a change of anvil's derivation cannot go unnoticed.
 */
export const ANVIL_DEV_KEYS: readonly Hex[] = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
  '0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e',
  '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356',
  '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97',
  '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6',
];

/** The keys in anvil's "Private Keys" block of `output`, in order. */
export function printedDevKeys(output: string): string[] {
  const block = output.split(/^Private Keys\s*$/m)[1]?.split(/^Wallet\s*$/m)[0] ?? '';
  return [...block.matchAll(/^\((\d+)\) (0x[0-9a-fA-F]{64})\s*$/gm)].map((m) => m[2].toLowerCase());
}

/**
 * The anvil binary itself. The npm package's `anvil` bin is a Node wrapper that spawns the
 * platform binary; running the binary directly leaves one process to stop instead of two.
 */
function anvilBinary(): string {
  const require = createRequire(import.meta.url);
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const exe = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  try {
    return require.resolve(`@foundry-rs/anvil-${process.platform}-${arch}/bin/${exe}`);
  } catch {
    throw new Error(
      `no anvil binary for ${process.platform}-${arch}: is the @foundry-rs/anvil devDependency installed?`,
    );
  }
}

export async function startAnvil(options: { startTimeoutMs?: number; chainId?: number } = {}): Promise<Anvil> {
  const tracked: Tracked = spawnTracked(anvilBinary(), [
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--chain-id',
    String(options.chainId ?? ANVIL_CHAIN_ID),
    // The default dev accounts, named so that a change of anvil's default cannot move them.
    '--mnemonic',
    MNEMONIC,
    // No --silent: it also hides the "Listening on" line that tells us the port.
  ]);
  const stop = async () => {
    await stopProcess(tracked.child);
  };
  try {
    const [, port] = await waitForLine(tracked, /Listening on 127\.0\.0\.1:(\d+)/, options.startTimeoutMs ?? 15_000);
    const printed = printedDevKeys(tracked.output());
    if (printed.join() !== ANVIL_DEV_KEYS.join())
      throw new Error(`anvil's dev keys are not the ones ANVIL_DEV_KEYS lists:\n${tracked.output()}`);
    return {
      rpcUrl: `http://127.0.0.1:${port}`,
      port: Number(port),
      chainId: options.chainId ?? ANVIL_CHAIN_ID,
      output: tracked.output,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
