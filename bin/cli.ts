/**
 * What relayer-server and relayer-worker share: their command line (--config, --db, --host,
 * --port, --log-level, -h; exit 2 with the usage on a bad flag), the config file (exit 2 naming
 * the key when it is invalid), the logger, the database named by --db / RELAYER_DB / the config
 * (a SQLite file, created with its directory, or a postgres:// URL; exit 1 when it cannot be
 * opened), and the one shutdown (a signal: exit 0; the store stopping: exit 1).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultConfig, parseConfig } from '../lib/config.ts';
import { ConfigError } from '../lib/errors.ts';
import { createLineSink, type LineSink } from '../lib/http/log-sink.ts';
import { createLogger, isLogLevel, LOG_LEVELS, type Logger, type LogLevel } from '../lib/log.ts';
import type { RelayerStore } from '../lib/store.ts';
import { redactUrls } from '../lib/rpc.ts';
import type { RelayerConfig } from '../lib/types.ts';
import {
  describeJsonError,
  isPostgresUrl,
  openPostgresFromUrl,
  redactDatabaseSecrets,
  redactDatabaseUrl,
  unsupportedDatabaseMessage,
  unsupportedDatabaseScheme,
} from './postgres.ts';

/** Ends the process with `code` after printing `message` (for start-up failures). */
export function cliFail(program: string, code: number, message: string): never {
  process.stderr.write(`${program}: ${message}\n`);
  process.exit(code);
}

/** The flags both commands take. */
export interface CommonFlags {
  config?: string;
  host?: string;
  port?: string;
  db?: string;
  'log-level'?: string;
  help?: boolean;
}

/**
 * Parses the command line; on an unknown flag or a missing value exits 2 with parseArgs's message
 * and `help`. Positionals are refused unless `allowPositionals` (relayer-worker's commands).
 */
function parseCommonFlags(
  program: string,
  help: string,
  allowPositionals: boolean,
): { flags: CommonFlags; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        db: { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals,
    });
    return { flags: values, positionals };
  } catch (error) {
    // The message quotes the offending argument, which may be a database URL: URLs are cut to
    // scheme://host (a stray `postgres://user:password@…` positional, for one).
    return cliFail(program, 2, `${redactUrls((error as Error).message)}\n\n${help}`);
  }
}

/** --log-level, then RELAYER_LOG_LEVEL, then info; exit 2 naming where an invalid one came from. */
function logLevelOf(program: string, flags: CommonFlags): LogLevel {
  const level = flags['log-level'] ?? process.env.RELAYER_LOG_LEVEL ?? 'info';
  if (!isLogLevel(level)) {
    const source = flags['log-level'] !== undefined ? '--log-level' : 'RELAYER_LOG_LEVEL';
    cliFail(program, 2, `${source} must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level.slice(0, 64))}`);
  }
  return level;
}

/**
 * Flags override the config file: --host and --port set `listen` (config.server for the API,
 * config.worker for the worker's ops server), --db the database, else RELAYER_DB when set (the
 * environment keeps a database password out of the process list and the config file).
 */
function applyCommonFlags(
  program: string,
  config: RelayerConfig,
  flags: CommonFlags,
  listen: { host: string; port: number },
): void {
  if (flags.host !== undefined) {
    if (flags.host.length === 0) cliFail(program, 2, '--host must not be empty');
    listen.host = flags.host;
  }
  if (flags.port !== undefined) {
    if (!/^\d{1,5}$/.test(flags.port) || Number(flags.port) > 65535)
      cliFail(program, 2, '--port must be an integer from 0 to 65535');
    listen.port = Number(flags.port);
  }
  if (flags.db !== undefined) {
    if (flags.db.length === 0) cliFail(program, 2, '--db must not be empty');
    config.db = flags.db;
  } else if (process.env.RELAYER_DB) {
    config.db = process.env.RELAYER_DB;
  }
}

/** What a command starts from once its command line is read. */
export interface CommandLine {
  flags: CommonFlags;
  positionals: string[];
  config: RelayerConfig;
  logger: Logger;
  /** The logger's line sink on stdout: lines of one event-loop turn go out in one write. */
  sink: LineSink;
}

/**
 * The start both commands share, in this order: the flags (exit 2 with the usage on a bad one),
 * -h (the usage on stdout; undefined is returned and the command ends), `positionals` (the
 * worker's commands; without it a positional is a bad flag), the log level, the config file, the
 * flags over it (--host and --port into `listen(config)`), and the logger.
 */
export function readCommandLine(
  program: string,
  help: string,
  options: {
    positionals?: (positionals: string[]) => void;
    listen: (config: RelayerConfig) => { host: string; port: number };
  },
): CommandLine | undefined {
  const { flags, positionals } = parseCommonFlags(program, help, options.positionals !== undefined);
  if (flags.help) {
    process.stdout.write(help);
    return undefined;
  }
  options.positionals?.(positionals);
  const level = logLevelOf(program, flags);
  const config = loadConfig(program, flags.config);
  applyCommonFlags(program, config, flags, options.listen(config));
  // Whatever waits in the sink is written on exit.
  const sink = createLineSink(process.stdout);
  process.on('exit', () => sink.flush());
  const logger = createLogger({ level, write: sink.write });
  return { flags, positionals, config, logger, sink };
}

export function loadConfig(program: string, path: string | undefined): RelayerConfig {
  if (path === undefined) return defaultConfig();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return cliFail(program, 2, `cannot read config file ${path}: ${describeFsError(error, path)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return cliFail(program, 2, `config file ${path} is not valid JSON: ${describeJsonError((error as Error).message)}`);
  }
  try {
    return parseConfig(json);
  } catch (error) {
    if (error instanceof ConfigError) return cliFail(program, 2, `invalid config: ${error.message}`);
    throw error;
  }
}

/**
 * The OS error and the absolute path it happened at. `npm start` runs in the package directory,
 * not where the user typed the command, so a relative path may not be the file they meant.
 */
export function describeFsError(error: unknown, path: string): string {
  const { code, message } = error as NodeJS.ErrnoException;
  // "ENOENT: no such file or directory, open 'x'" without the path part, which is given resolved.
  const reason = code ? message.split(',')[0] : message;
  let text = `${reason} (resolved to ${resolve(path)})`;
  const invokedFrom = process.env.INIT_CWD;
  if (invokedFrom !== undefined && resolve(invokedFrom) !== process.cwd() && !path.startsWith('/')) {
    text += `; npm runs the server in ${process.cwd()}, not in ${invokedFrom}: give an absolute path`;
  }
  return text;
}

/**
 * SQLite creates the database file but not its directory: `--db ./data/relayer.db` on a fresh
 * clone would fail with "unable to open database file". Create the directory, or say exactly
 * which one could not be made.
 */
function prepareDatabaseDirectory(program: string, db: string): void {
  if (db === ':memory:' || db.includes('://') || db.startsWith('file:')) return;
  const directory = dirname(resolve(db));
  try {
    mkdirSync(directory, { recursive: true });
  } catch (error) {
    cliFail(program, 1, `cannot create the directory of database ${db}: ${describeFsError(error, dirname(db))}`);
  }
}

/**
 * The store of `config.db`; exits 1 when it cannot be opened, 2 when it is a URL of a scheme no
 * store opens (`postgress://user:password@…`: a typo, not a SQLite file name). Nothing printed
 * holds the database password (redactDatabaseUrl, redactDatabaseSecrets).
 */
export async function openRelayerStore(program: string, config: RelayerConfig, logger: Logger): Promise<RelayerStore> {
  const scheme = unsupportedDatabaseScheme(config.db);
  if (scheme !== undefined) return cliFail(program, 2, unsupportedDatabaseMessage(config.db, scheme));
  if (isPostgresUrl(config.db)) {
    try {
      const opened = await openPostgresFromUrl(config.db, config.relayApi, logger);
      const { store } = opened;
      return {
        outbox: store.outbox,
        merkle: store.merkle,
        dedup: store.dedup,
        rateLimiter: store.rateLimiter,
        ping: () => store.ping(),
        close: opened.close,
      };
    } catch (error) {
      // The driver's message (refused, authentication failed for user x, no such database) does
      // not contain the password; it is scrubbed anyway, and the URL is shown redacted.
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      return cliFail(
        program,
        1,
        `cannot open database ${redactDatabaseUrl(config.db)}: ${redactDatabaseSecrets(message, config.db)}`,
      );
    }
  }
  // Loaded here, not imported above: node:sqlite must not be linked before node-version.ts has run.
  const { openSqliteStore } = await import('../lib/sqlite/index.ts');
  prepareDatabaseDirectory(program, config.db);
  try {
    return await openSqliteStore(config.db);
  } catch (error) {
    return cliFail(
      program,
      1,
      `cannot open database ${config.db} (${resolve(config.db)}): ${redactDatabaseSecrets((error as Error).message, config.db)}`,
    );
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
