/**
 * The real bin/relayer-server.ts as a child process on the Node that runs the tests, ready once it
 * printed "listening on http://HOST:PORT" (test/helpers/harness/server.ts re-exports all of it, beside
 * `startApi`, the in-process server). Only Node built-ins and test/helpers/harness/processes.ts are loaded here.
 * `t` is whatever has `after(fn)`: a TestContext, or the root context a top-level `before` gets.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onExitCleanup, REPO_ROOT, spawnTracked, stopProcess, waitForLine, waitForStart } from './processes.ts';

export { REPO_ROOT };
export const SERVER_BIN = join(REPO_ROOT, 'bin', 'relayer-server.ts');

export interface Cleanup {
  after(fn: () => unknown): void;
}

export interface RelayerProcess {
  /** http://HOST:PORT from the readiness line. */
  url: string;
  child: ChildProcess;
  /** Complete lines written so far, per stream. */
  stdout: string[];
  stderr: string[];
  /** Everything written so far on both streams (for failure messages). */
  output(): string;
  /** Resolves with the first line (earlier ones included) that matches. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Settles when the process has exited, however it ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (or `signal`), SIGKILL after the grace time; resolves with the exit code. Idempotent. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface RelayerServerOptions {
  /** Written to a temporary file and passed as --config. */
  config?: unknown;
  /** Node flags before the script (--import, --expose-gc). */
  nodeArgs?: string[];
  /** Working directory of the server (the repository by default). */
  cwd?: string;
  /** Its environment (this process's by default), e.g. RELAYER_DB. */
  env?: NodeJS.ProcessEnv;
  /**
   * A wall-time bound on the start instead of the default, test/helpers/harness/processes.ts START
   * (the server's CPU time, and a two-minute hang guard): a test whose subject is a slow start.
   */
  startTimeoutMs?: number;
  /** Time between SIGTERM and SIGKILL in stop(). */
  graceMs?: number;
  /** Called with each complete line as it arrives, from the first one on. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
}

/**
 * Starts bin/relayer-server.ts with `args` (plus `--port 0` unless a port is given) and resolves
 * when it is listening. The caller stops it; tests use startRelayerServer, which does that for them.
 */
export async function launchRelayerServer(args: string[], options: RelayerServerOptions = {}): Promise<RelayerProcess> {
  const files: string[] = [];
  const cleanups: Array<() => void> = [];
  if (options.config !== undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'relayer-server-'));
    const path = join(dir, 'config.json');
    writeFileSync(path, typeof options.config === 'string' ? options.config : JSON.stringify(options.config, null, 2));
    files.push('--config', path);
    cleanups.push(onExitCleanup(() => rmSync(dir, { recursive: true, force: true })));
  }
  const port = args.includes('--port') ? [] : ['--port', '0'];
  // process.execPath: the Node running the tests (the pinned 24, with type stripping) runs the server.
  const tracked = spawnTracked(
    process.execPath,
    [...(options.nodeArgs ?? []), SERVER_BIN, ...files, ...port, ...args],
    { cwd: options.cwd ?? REPO_ROOT, env: options.env },
  );
  const { child } = tracked;
  const stdout = collectLines(child.stdout, (line) => options.onLine?.(line, 'stdout'));
  const stderr = collectLines(child.stderr, (line) => options.onLine?.(line, 'stderr'));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let stopping: Promise<number | null> | undefined;
  const stop = (signal: NodeJS.Signals = 'SIGTERM') => {
    stopping ??= stopProcess(child, options.graceMs ?? 12_000, signal).finally(() => {
      for (const c of cleanups) c();
    });
    return stopping;
  };
  try {
    const pattern = /listening on (http:\/\/[^\s/]+)/;
    const [, url] = await (options.startTimeoutMs === undefined
      ? waitForStart(tracked, pattern)
      : waitForLine(tracked, pattern, options.startTimeoutMs));
    return {
      url,
      child,
      stdout,
      stderr,
      output: tracked.output,
      waitForLine: (pattern, timeoutMs = 5_000) => waitForLine(tracked, pattern, timeoutMs),
      exited,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Runs bin/relayer-server.ts with exactly `args` to its exit (flags, --help, refused configs). */
export async function runRelayerServer(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number | null; output: string }> {
  const tracked = spawnTracked(process.execPath, [SERVER_BIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: options.env,
  });
  const [code] = (await once(tracked.child, 'exit')) as [number | null];
  return { code, output: tracked.output() };
}

/** launchRelayerServer, stopped (and its temporary config removed) after the test. */
export async function startRelayerServer(
  t: Cleanup,
  args: string[] = [],
  options: RelayerServerOptions = {},
): Promise<RelayerProcess> {
  const server = await launchRelayerServer(args, options);
  t.after(() => server.stop());
  return server;
}

function collectLines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): string[] {
  const lines: string[] = [];
  let partial = '';
  stream?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      onLine(line);
    }
  });
  return lines;
}
