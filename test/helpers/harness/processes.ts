/**
 * Child processes started by the e2e harness (anvil, the relayer server). Every one is tracked
 * so that nothing outlives the test process: `stopProcess` in an `after` hook is the normal path;
 * the process-level handlers below cover a test that throws past its hooks, an uncaught error and
 * Ctrl-C / SIGTERM of the test runner.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
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
 * What a child's start may cost before the line that says it is ready (relayer-server's
 * "listening on", relayer-worker's "ops on"): CPU_MS of its own CPU time, HANG_MS of wall time.
 * A start is a fixed amount of work (relayer-server 1.4-1.6 s of CPU, relayer-worker 2.6-2.9 s,
 * measured at load 13-20), but its wall time grows with the machine's load: the server took
 * 5-7 s at load 13, 11-13 s at load 18 under `nice -n 19`; the worker 22-25 s at load 20 under
 * `nice -n 10`, past the 15 s and 20 s the bin tests allowed. So the bound that says "the start
 * got slower" counts the child's CPU (five to ten times a start's), and the wall time is only a
 * hang guard, for a child that waits on something (a lock, a port) and uses no CPU.
 */
export const START = { CPU_MS: 15_000, HANG_MS: 120_000 };

/**
 * CPU time (user + system, ms) a process has used so far, its threads included, from
 * /proc/PID/stat; undefined off Linux or once the process is gone.
 */
export function cpuMsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // After the command's closing parenthesis: state is field 0, utime 11 and stime 12, in ticks of 10 ms
    // (USER_HZ is 100 on Linux whatever the kernel's own tick).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

/** The line a child prints once it is ready, within the bounds of START (its CPU time, a hang guard). */
export function waitForStart(tracked: Tracked, pattern: RegExp): Promise<RegExpMatchArray> {
  return waitForLine(tracked, pattern, START.HANG_MS, START.CPU_MS);
}

/**
 * Resolves with the first line of the process's output that matches `pattern`; rejects when the
 * process exits first, after `timeoutMs` of wall time, or once the process has used `cpuMs` of CPU
 * time (checked every 250 ms, on Linux). The rejection says how much CPU the process used and the
 * machine's load average, which tell a slow machine from a slow process.
 */
export function waitForLine(
  tracked: Tracked,
  pattern: RegExp,
  timeoutMs: number,
  cpuMs?: number,
): Promise<RegExpMatchArray> {
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
      clearInterval(cpuCheck);
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
    const spent = () =>
      `the process used ${cpuMsOf(child.pid) ?? '?'} ms of CPU; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`;
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms (${spent()}):\n${tracked.output()}`));
    }, timeoutMs);
    const cpuCheck =
      cpuMs === undefined
        ? undefined
        : setInterval(() => {
            const used = cpuMsOf(child.pid);
            if (used === undefined || used <= cpuMs) return;
            cleanup();
            reject(
              new Error(`no line matching ${pattern} within ${cpuMs} ms of CPU (${spent()}):\n${tracked.output()}`),
            );
          }, 250);
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
