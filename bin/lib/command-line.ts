/**
 * The command line relayer-server and relayer-worker share (docs/configuration.md#command-line):
 * --config, --db, --host, --port, --log-level, -h; exit 2 with the usage on a bad flag; the config
 * file (exit 2 naming the key when it is invalid) and the logger.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultConfig, parseConfig } from '../../lib/config/parse.ts';
import { ConfigError } from '../../lib/errors/classes.ts';
import { createLineSink, type LineSink } from '../../lib/node/log-sink.ts';
import { createLogger, isLogLevel, LOG_LEVELS, type Logger, type LogLevel } from '../../lib/log.ts';
import { redactUrls } from '../../lib/redact.ts';
import type { RelayerConfig } from '../../lib/types.ts';

/**
 * A refused start: what the command prints after its name on stderr, and its exit code (2: a bad
 * flag, config or database name; 1: the database cannot be opened). parseCommandLine and
 * openRelayerStore throw it; the commands print it and exit (runCommand).
 */
export class CommandLineError extends Error {
  override name = 'CommandLineError';
  readonly exitCode: number;
  constructor(exitCode: number, message: string) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** The flags both commands take. */
export interface CommonFlags {
  config?: string;
  host?: string;
  port?: string;
  db?: string;
  'log-level'?: string;
  help?: boolean;
  /** Read the config and the flags, print what would run, exit 0 (or 2 with the errors): nothing started. */
  'check-config'?: boolean;
  /** A command's own string flags (CommandLineSpec.flags). */
  [flag: string]: string | boolean | undefined;
}

/**
 * Parses the command line; on an unknown flag or a missing value exits 2 with parseArgs's message
 * and `help`. Positionals are refused unless `allowPositionals` (relayer-worker's commands).
 */
function parseCommonFlags(
  args: string[],
  help: string,
  allowPositionals: boolean,
  extra: readonly string[] = [],
): { flags: CommonFlags; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        db: { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        'check-config': { type: 'boolean' },
        ...Object.fromEntries(extra.map((name) => [name, { type: 'string' as const }])),
      },
      strict: true,
      allowPositionals,
    });
    return { flags: values, positionals };
  } catch (error) {
    // The message quotes the offending argument, which may be a database URL: URLs are cut to
    // scheme://host (a stray `postgres://user:password@…` positional, for one).
    throw new CommandLineError(2, `${redactUrls((error as Error).message)}\n\n${help}`);
  }
}

/** --log-level, then RELAYER_LOG_LEVEL, then info; exit 2 naming where an invalid one came from. */
function logLevelOf(flags: CommonFlags, env: NodeJS.ProcessEnv): LogLevel {
  const level = flags['log-level'] ?? env.RELAYER_LOG_LEVEL ?? 'info';
  if (!isLogLevel(level)) {
    const source = flags['log-level'] !== undefined ? '--log-level' : 'RELAYER_LOG_LEVEL';
    throw new CommandLineError(
      2,
      `${source} must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level.slice(0, 64))}`,
    );
  }
  return level;
}

/**
 * Flags override the config file: --host and --port set `listen` (config.server for the API,
 * config.worker for the worker's ops server), --db the database, else RELAYER_DB when set (the
 * environment keeps a database password out of the process list and the config file).
 */
function applyCommonFlags(
  config: RelayerConfig,
  flags: CommonFlags,
  listen: { host: string; port: number },
  env: NodeJS.ProcessEnv,
): void {
  if (flags.host !== undefined) {
    if (flags.host.length === 0) throw new CommandLineError(2, '--host must not be empty');
    listen.host = flags.host;
  }
  if (flags.port !== undefined) {
    if (!/^\d{1,5}$/.test(flags.port) || Number(flags.port) > 65535)
      throw new CommandLineError(2, '--port must be an integer from 0 to 65535');
    listen.port = Number(flags.port);
  }
  if (flags.db !== undefined) {
    if (flags.db.length === 0) throw new CommandLineError(2, '--db must not be empty');
    config.db = flags.db;
  } else if (env.RELAYER_DB) {
    config.db = env.RELAYER_DB;
  }
}

/** How a command reads its command line (see parseCommandLine). */
export interface CommandLineSpec {
  /** The usage, printed for -h and after a bad flag. */
  help: string;
  /** The worker's commands: throws CommandLineError for a bad one. Without it a positional is a bad flag. */
  positionals?: (positionals: string[]) => void;
  /** Where --host and --port go: config.server for the API, config.worker for the worker. */
  listen: (config: RelayerConfig) => { host: string; port: number };
  /** String flags of the command's own, beside the common ones (relayer-worker list's --status…). */
  flags?: readonly string[];
}

/** A command line that was read: the flags, the commands, the config with the flags over it. */
export interface ParsedCommandLine {
  flags: CommonFlags;
  positionals: string[];
  config: RelayerConfig;
  level: LogLevel;
}

/** What a command starts from once its command line is read. */
export interface CommandLine extends ParsedCommandLine {
  logger: Logger;
  /** The logger's line sink on stdout: lines of one event-loop turn go out in one write. */
  sink: LineSink;
}

/**
 * The command line both commands share, in this order: the flags (exit 2 with the usage on a bad
 * one), -h (`'help'` is returned: the usage goes on stdout and the command ends), `positionals`,
 * the log level (--log-level, then RELAYER_LOG_LEVEL), the config file, and the flags over it
 * (--db, else RELAYER_DB). Throws CommandLineError for a refusal; prints nothing.
 */
export function parseCommandLine(
  spec: CommandLineSpec,
  args: string[],
  env: NodeJS.ProcessEnv,
): ParsedCommandLine | 'help' {
  const { flags, positionals } = parseCommonFlags(args, spec.help, spec.positionals !== undefined, spec.flags);
  if (flags.help) return 'help';
  spec.positionals?.(positionals);
  const level = logLevelOf(flags, env);
  const config = loadConfig(flags.config, env);
  applyCommonFlags(config, flags, spec.listen(config), env);
  return { flags, positionals, config, level };
}

/**
 * parseCommandLine on this process's arguments and environment, then the logger on stdout.
 * Undefined after -h (the usage is printed and the command ends); a CommandLineError is thrown
 * for runCommand to print.
 */
export function readCommandLine(spec: CommandLineSpec): CommandLine | undefined {
  const parsed = parseCommandLine(spec, process.argv.slice(2), process.env);
  if (parsed === 'help') {
    process.stdout.write(spec.help);
    return undefined;
  }
  // Whatever waits in the sink is written on exit.
  const sink = createLineSink(process.stdout);
  process.on('exit', () => sink.flush());
  const logger = createLogger({ level: parsed.level, write: sink.write });
  return { ...parsed, logger, sink };
}

/** The config file at `path` (the built-in default without one); CommandLineError (exit 2) when it is unusable. */
export function loadConfig(path: string | undefined, env: NodeJS.ProcessEnv = process.env): RelayerConfig {
  if (path === undefined) return defaultConfig();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CommandLineError(2, `cannot read config file ${path}: ${describeFsError(error, path, env)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CommandLineError(
      2,
      `config file ${path} is not valid JSON: ${describeJsonError((error as Error).message)}`,
    );
  }
  try {
    return parseConfig(json);
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandLineError(2, `invalid config: ${error.message}`);
    throw error;
  }
}

/**
 * The OS error and the absolute path it happened at. `npm start` runs in the package directory,
 * not where the user typed the command, so a relative path may not be the file they meant.
 */
export function describeFsError(error: unknown, path: string, env: NodeJS.ProcessEnv = process.env): string {
  const { code, message } = error as NodeJS.ErrnoException;
  // "ENOENT: no such file or directory, open 'x'" without the path part, which is given resolved.
  const reason = code ? message.split(',')[0] : message;
  let text = `${reason} (resolved to ${resolve(path)})`;
  const invokedFrom = env.INIT_CWD;
  if (invokedFrom !== undefined && resolve(invokedFrom) !== process.cwd() && !path.startsWith('/')) {
    text += `; npm runs the server in ${process.cwd()}, not in ${invokedFrom}: give an absolute path`;
  }
  return text;
}

/**
 * JSON.parse's message without the text it quotes around the error (`Unexpected token 'p',
 * "…": postgres://user:pas"... is not valid JSON`): a config file's text may hold the `db` URL's
 * password. The messages that give a position instead quote nothing and are kept.
 */
export function describeJsonError(message: string): string {
  const quoted = /^(.*?), (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s.exec(message);
  return quoted === null
    ? redactUrls(message)
    : `${quoted[1]} (the text around it is not repeated: it may hold a password)`;
}
