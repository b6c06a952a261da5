/**
 * The real `bin/relayer-server.ts`, run as a child process the way an operator runs it: a config
 * file, `--port 0`, and the address read from its "listening on" line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onExitCleanup, spawnTracked, stopProcess, waitForLine } from './processes.ts';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const SERVER_BIN = join(REPO_ROOT, 'bin', 'relayer-server.ts');

export interface RelayerServer {
  /** http://127.0.0.1:PORT */
  url: string;
  output(): string;
  /** SIGTERM and wait; resolves with the exit code (null if it had to be killed). */
  stop(): Promise<number | null>;
}

/** `options.db`: a database file the caller owns (e.g. shared with a delivery worker); default in memory. */
export async function startRelayerServer(config: unknown, options: { startTimeoutMs?: number; db?: string } = {}): Promise<RelayerServer> {
  const dir = mkdtempSync(join(tmpdir(), 'relayer-e2e-'));
  const removeDir = onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const configFile = join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  // process.execPath: the Node that runs the tests (24, with type stripping) runs the server too.
  const tracked = spawnTracked(
    process.execPath,
    [SERVER_BIN, '--config', configFile, '--host', '127.0.0.1', '--port', '0', '--db', options.db ?? ':memory:'],
    { cwd: REPO_ROOT },
  );
  let exitCode: Promise<number | null> | undefined;
  const stop = () => {
    exitCode ??= stopProcess(tracked.child, 12_000).finally(removeDir);
    return exitCode;
  };
  try {
    const [, url] = await waitForLine(tracked, /listening on (http:\/\/[^\s]+)/, options.startTimeoutMs ?? 15_000);
    return { url: url.replace(/\/$/, ''), output: tracked.output, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
