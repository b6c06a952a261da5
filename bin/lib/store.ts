/**
 * The database a command opens (docs/configuration.md#command-line): named by --db / RELAYER_DB /
 * the config, a SQLite file (created with its directory) or a postgres:// URL; exit 1 when it
 * cannot be opened, 2 when the name itself is refused.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Logger } from '../../lib/log.ts';
import type { RelayerStore } from '../../lib/store/bundle.ts';
import { redactDatabaseSecrets, redactDatabaseUrl } from '../../lib/redact.ts';
import type { RelayerConfig } from '../../lib/types.ts';
import { isPostgresUrl, unsupportedDatabaseMessage, unsupportedDatabaseScheme } from '../../lib/postgres/url.ts';
import { CommandLineError, describeFsError } from './command-line.ts';
import { NoRelayerSchemaError, openPostgresFromUrl } from './postgres.ts';

/**
 * SQLite creates the database file but not its directory: `--db ./data/relayer.db` on a fresh
 * clone would fail with "unable to open database file". Create the directory, or say exactly
 * which one could not be made.
 */
function prepareDatabaseDirectory(db: string): void {
  if (db === ':memory:' || db.includes('://') || db.startsWith('file:')) return;
  const directory = dirname(resolve(db));
  try {
    mkdirSync(directory, { recursive: true });
  } catch (error) {
    throw new CommandLineError(
      1,
      `cannot create the directory of database ${db}: ${describeFsError(error, dirname(db))}`,
    );
  }
}

/**
 * relayer-worker opens the server's database and must not make one of its own: a typo in `--db`
 * would otherwise create an empty file (and its directory) and idle on it. Exit 2 naming the path
 * when it does not exist or is not a relayer database; nothing is created.
 */
async function checkExistingDatabase(db: string): Promise<void> {
  if (db.startsWith('file:')) return;
  if (db === ':memory:')
    throw new CommandLineError(2, "--db :memory: is an empty database of this process: give relayer-server's database");
  if (!existsSync(db))
    throw new CommandLineError(
      2,
      `database ${db} does not exist: ${describeFsError(Object.assign(new Error('no such file'), { code: 'ENOENT' }), db)}; give relayer-server's database (--db, RELAYER_DB or the config's db)`,
    );
  const { DatabaseSync } = await import('node:sqlite');
  let found: unknown;
  try {
    const probe = new DatabaseSync(db, { readOnly: true });
    try {
      found = probe.prepare("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'outbox'").get();
    } finally {
      probe.close();
    }
  } catch (error) {
    throw new CommandLineError(
      2,
      `database ${db} (${resolve(db)}) cannot be read as SQLite: ${(error as Error).message}`,
    );
  }
  if (found === undefined)
    throw new CommandLineError(
      2,
      `database ${db} (${resolve(db)}) has no relayer schema: not relayer-server's database (start relayer-server on it once to create it)`,
    );
}

/**
 * The store of `config.db`; CommandLineError with exit code 1 when it cannot be opened, 2 when it
 * is a URL of a scheme no store opens (`postgress://user:password@…`: a typo, not a SQLite file
 * name). No message holds the database password (redactDatabaseUrl, redactDatabaseSecrets).
 */
export async function openRelayerStore(
  config: RelayerConfig,
  logger: Logger,
  opts: { existing?: boolean } = {},
): Promise<RelayerStore> {
  const scheme = unsupportedDatabaseScheme(config.db);
  if (scheme !== undefined) throw new CommandLineError(2, unsupportedDatabaseMessage(config.db, scheme));
  if (isPostgresUrl(config.db)) {
    try {
      const opened = await openPostgresFromUrl(config.db, config.relayApi, logger, { existing: opts.existing });
      // The whole store, with a close that also ends the pool: its admission (POST /relay in two
      // statements instead of the separate stores' four) included.
      return { ...opened.store, close: opened.close };
    } catch (error) {
      if (error instanceof NoRelayerSchemaError) throw new CommandLineError(2, error.message);
      // The driver's message (refused, authentication failed for user x, no such database) does
      // not contain the password; it is scrubbed anyway, and the URL is shown redacted.
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw new CommandLineError(
        1,
        `cannot open database ${redactDatabaseUrl(config.db)}: ${redactDatabaseSecrets(message, config.db)}`,
      );
    }
  }
  // Loaded here, not imported above: node:sqlite must not be linked before node-version.ts has run.
  const { openSqliteStore } = await import('../../lib/sqlite/index.ts');
  if (opts.existing) await checkExistingDatabase(config.db);
  else prepareDatabaseDirectory(config.db);
  try {
    return await openSqliteStore(config.db);
  } catch (error) {
    throw new CommandLineError(
      1,
      `cannot open database ${config.db} (${resolve(config.db)}): ${redactDatabaseSecrets((error as Error).message, config.db)}`,
    );
  }
}
