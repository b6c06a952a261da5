/**
 * A command's process from start to exit: a refused start prints one line and exits with its code,
 * an uncaught exception ends the process with one JSON line, and the one shutdown (a signal: exit
 * 0; the store stopping: exit 1).
 */
import type { Logger } from '../../lib/log.ts';
import type { RelayerStore } from '../../lib/store/bundle.ts';
import { redactUrls } from '../../lib/redact.ts';
import { CommandLineError } from './command-line.ts';

/** Ends the process with `code` after printing `message` (for start-up failures). */
export function cliFail(program: string, code: number, message: string): never {
  process.stderr.write(`${program}: ${message}\n`);
  process.exit(code);
}

/**
 * Runs a command's `main`: an uncaught exception ends the process with one line
 * (exitOnUncaughtException), a CommandLineError with its message and exit code (as cliFail).
 */
export async function runCommand(program: string, main: () => Promise<void>): Promise<void> {
  exitOnUncaughtException();
  try {
    await main();
  } catch (error) {
    if (error instanceof CommandLineError) cliFail(program, error.exitCode, error.message);
    throw error;
  }
}

/**
 * An uncaught exception ends the process (exit 1) with one JSON line on stderr. No stack: the
 * name and message are enough to find the fault, and safe to show. URLs (a database's, an RPC
 * endpoint's) are cut to scheme://host: they may carry credentials.
 */
export function exitOnUncaughtException(): void {
  process.on('uncaughtException', (error) => {
    process.stderr.write(
      JSON.stringify({
        time: new Date().toISOString(),
        level: 'error',
        msg: 'uncaught exception',
        error: redactUrls(`${error.name}: ${error.message}`),
      }) + '\n',
    );
    process.exit(1);
  });
}

/**
 * The process's one shutdown, whichever comes first:
 * - SIGINT/SIGTERM: log `stopping` with the signal and what is in flight, run `stop`, log
 *   "stopped", exit 0;
 * - a store that stops on its own (the SQLite store's thread died) fails every call from then on:
 *   log one error line, run `beforeExit` (finish what is in flight), exit 1 for a supervisor to
 *   restart the process (docs/operations.md, "The SQLite store").
 */
export function shutDownOnce(
  store: RelayerStore,
  logger: Logger,
  how: { stopping: string; inFlight: () => number; stop: () => Promise<void>; beforeExit?: () => Promise<void> },
): void {
  let stopping = false;
  const claim = (): boolean => {
    if (stopping) return false;
    stopping = true;
    return true;
  };
  const stop = async (signal: NodeJS.Signals) => {
    if (!claim()) return;
    logger.info(how.stopping, { signal, in_flight: how.inFlight() });
    await how.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  store.closed?.catch(async (error: Error) => {
    if (!claim()) return;
    logger.error('the store stopped; exiting', {
      error: error.cause instanceof Error ? error.cause.message : error.message,
      in_flight: how.inFlight(),
    });
    await how.beforeExit?.();
    process.exit(1);
  });
}
