/**
 * A real EVM node for the e2e tests: anvil from the @foundry-rs/anvil devDependency, on a loopback
 * port the OS picks (`--port 0`; anvil prints the port it bound).
 */
import { createRequire } from 'node:module';
import { spawnTracked, stopProcess, waitForLine, type Tracked } from './processes.ts';

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
    'test test test test test test test test test test test junk',
    // No --silent: it also hides the "Listening on" line that tells us the port.
  ]);
  const stop = async () => {
    await stopProcess(tracked.child);
  };
  try {
    const [, port] = await waitForLine(tracked, /Listening on 127\.0\.0\.1:(\d+)/, options.startTimeoutMs ?? 15_000);
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
