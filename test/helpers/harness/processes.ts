/**
 * Child processes started by the e2e harness (anvil, the relayer server). Every one is tracked
 * so that nothing outlives the test process: `stopProcess` in an `after` hook is the normal path;
 * the process-level handlers below cover a test that throws past its hooks, an uncaught error and
 * Ctrl-C / SIGTERM of the test runner.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';

/**
 * The repository's root (test/helpers/harness/server.ts says the same; the e2e files take it from here,
 * which loads nothing, instead of from there, which loads lib/http).
 */
export const REPO_ROOT = join(import.meta.dirname, '..', '..', '..');

const running = new Set<ChildProcess>();
const syncCleanups = new Set<() => void>();

function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
  for (const cleanup of syncCleanups) {
    try {
      cleanup();
    } catch {
      // best effort at exit
    }
  }
  syncCleanups.clear();
}

/**
 * Registers a synchronous clean-up (e.g. removing a temp dir) that also runs if the test process
 * exits or is interrupted; returns a function that runs it now and unregisters it.
 */
export function onExitCleanup(cleanup: () => void): () => void {
  installExitCleanup();
  syncCleanups.add(cleanup);
  return () => {
    if (syncCleanups.delete(cleanup)) cleanup();
  };
}

let handlersInstalled = false;

/**
 * Installs the process-level handlers above, once: with the first child tracked or clean-up
 * registered, or before that by a caller that wants them in place (scripts/test-shared.ts, before
 * the first file it runs).
 */
export function installExitCleanup(options: { signals?: boolean } = {}): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  // 'exit' runs synchronously at any normal or error exit; kill() is synchronous, so it works here.
  process.on('exit', killAll);
  // A long-running script that stops its children itself on a signal (npm run devnet: exit 0)
  // installs this first with `signals: false`; the 'exit' handler still kills what is left.
  if (options.signals === false) return;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAll();
      // Re-raise so the exit status still says which signal ended the run.
      process.kill(process.pid, signal);
    });
  }
}

export interface Tracked {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far (for failure messages). */
  output(): string;
}

/** Spawns `command` with piped output, tracked until it exits. */
export function spawnTracked(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Tracked {
  installExitCleanup();
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let text = '';
  const append = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    if (text.length > 64 * 1024) text = text.slice(-32 * 1024); // keep the tail of a chatty child
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return { child, output: () => text };
}

/**
 * Resolves with the first line of the process's output that matches `pattern`; rejects when the
 * process exits first or after `timeoutMs`.
 */
export function waitForLine(tracked: Tracked, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  const { child } = tracked;
  return new Promise((resolve, reject) => {
    // Lines printed before the caller started waiting count too.
    const earlier = tracked.output().split('\n').slice(0, -1);
    for (const line of earlier) {
      const match = line.match(pattern);
      if (match) return resolve(match);
    }
    let buffered = tracked.output().split('\n').at(-1) ?? '';
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
    };
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const match = line.match(pattern);
        if (match) {
          cleanup();
          resolve(match);
          return;
        }
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(
        new Error(`process exited (code ${code}, signal ${signal}) before printing ${pattern}:\n${tracked.output()}`),
      );
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms:\n${tracked.output()}`));
    }, timeoutMs);
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
}

/**
 * Sends `signal` (SIGTERM by default) and waits for the exit; SIGKILL after `graceMs`.
 * Returns the exit code (null when a signal ended it).
 */
export async function stopProcess(
  child: ChildProcess,
  graceMs = 5000,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  try {
    const [code] = await exited;
    return code;
  } finally {
    clearTimeout(timer);
  }
}
