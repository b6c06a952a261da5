/**
 * What relayer-server and relayer-worker share: reading the config file (exit 2 naming the key
 * when it is invalid), and opening the database named by --db / RELAYER_DB / the config (a SQLite
 * file, created with its directory, or a postgres:// URL; exit 1 when it cannot be opened).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { defaultConfig, parseConfig } from '../lib/config.ts';
import { ConfigError } from '../lib/errors.ts';
import type { Logger } from '../lib/log.ts';
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
 * A store that stops on its own (the SQLite store's thread died) makes the process log one error
 * line and exit 1 for its supervisor to restart it (docs/operations.md, "The SQLite store").
 * `claim` takes the process's one shutdown (false when a signal's shutdown already runs);
 * `beforeExit` finishes what is in flight.
 */
export function exitWhenStoreStops(
  store: RelayerStore,
  logger: Logger,
  how: { claim: () => boolean; inFlight: () => number; beforeExit?: () => Promise<void> },
): void {
  store.closed?.catch(async (error: Error) => {
    if (!how.claim()) return;
    logger.error('the store stopped; exiting', {
      error: error.cause instanceof Error ? error.cause.message : error.message,
      in_flight: how.inFlight(),
    });
    await how.beforeExit?.();
    process.exit(1);
  });
}
