#!/usr/bin/env node
/**
 * relayer-server: runs the relay API on node:http with a node:sqlite or PostgreSQL store. Only wiring lives here;
 * everything it wires is in lib/.
 */
// First: on a Node too old for the rest, this prints what is needed and exits (see the file).
import './node-version.ts';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { defaultConfig, parseConfig } from '../lib/config.ts';
import { ConfigError } from '../lib/errors.ts';
import { createLineSink } from '../lib/http/log-sink.ts';
import { createRelayServer, type RelayServerOptions } from '../lib/http/server.ts';
import { createLogger, isLogLevel, LOG_LEVELS, type LogLevel } from '../lib/log.ts';
import type { RelayerConfig } from '../lib/types.ts';
import { isPostgresUrl, openPostgresFromUrl, redactDatabaseUrl } from './postgres.ts';

const HELP = `Usage: relayer-server [options]

Runs the relayer HTTP API.

Routes (every error is JSON {"reason","message"}; docs/api.md has the details):
  GET  /relay                          liveness: 200 "up"
  GET  /ready                          readiness: 200 when the database answers, else 503
  POST /relay                          relay a transaction: {"origin_chain","tx_hash"}
  GET  /relay/{message_id}             one accepted message and its delivery status
  GET  /relay?origin_chain=&tx_hash=   the messages accepted from one transaction
  GET  /chains                         the configured chains: name, domain_id, chain_id
  POST /merkle_tree_insertions         store merkle tree insertions (admin token if configured)
  GET  /merkle_tree_insertions?domain_id=&leaf_index_start=&leaf_index_end=
                                       list stored insertions (admin token if configured)
  GET  /metrics                        Prometheus metrics
  GET  /openapi.json                   the OpenAPI 3.1 document of this API

Options:
  --config FILE       JSON configuration (Hyperlane agent-config style). Without it the
                      built-in default is used: known mainnet chains, ./relayer.db.
  --host HOST         address to bind (default 127.0.0.1; overrides the config file)
  --port N            port to bind, 0 for any free port (default 9090)
  --db FILE|URL       SQLite database file, :memory:, or postgres://user:pass@host:5432/name
                      for several replicas on one database (needs the pg package; the URL's
                      pool_size=N sets the pool, default 10). Default: env RELAYER_DB, then
                      the config's db, then ./relayer.db
  --log-level LEVEL   ${LOG_LEVELS.join(' | ')} (default info; env RELAYER_LOG_LEVEL)
  -h, --help          show this help

Exit codes: 0 after a clean shutdown (SIGINT/SIGTERM), 2 for bad flags or an invalid config,
1 when the server cannot start (e.g. the port is taken).
`;

/** Ends the process with `code` after printing `message` (for start-up failures). */
function fail(code: number, message: string): never {
  process.stderr.write(`relayer-server: ${message}\n`);
  process.exit(code);
}

function parseFlags() {
  try {
    return parseArgs({
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        db: { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    return fail(2, `${(error as Error).message}\n\n${HELP}`);
  }
}

function loadConfig(path: string | undefined): RelayerConfig {
  if (path === undefined) return defaultConfig();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return fail(2, `cannot read config file ${path}: ${describeFsError(error, path)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return fail(2, `config file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  try {
    return parseConfig(json);
  } catch (error) {
    if (error instanceof ConfigError) return fail(2, `invalid config: ${error.message}`);
    throw error;
  }
}

/**
 * The OS error and the absolute path it happened at. `npm start` runs in the package directory,
 * not where the user typed the command, so a relative path may not be the file they meant.
 */
function describeFsError(error: unknown, path: string): string {
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
function prepareDatabaseDirectory(db: string): void {
  if (db === ':memory:' || db.includes('://') || db.startsWith('file:')) return;
  const directory = dirname(resolve(db));
  try {
    mkdirSync(directory, { recursive: true });
  } catch (error) {
    fail(1, `cannot create the directory of database ${db}: ${describeFsError(error, dirname(db))}`);
  }
}

function applyFlags(config: RelayerConfig, flags: ReturnType<typeof parseFlags>): void {
  if (flags.host !== undefined) {
    if (flags.host.length === 0) fail(2, '--host must not be empty');
    config.server.host = flags.host;
  }
  if (flags.port !== undefined) {
    if (!/^\d{1,5}$/.test(flags.port) || Number(flags.port) > 65535) fail(2, '--port must be an integer from 0 to 65535');
    config.server.port = Number(flags.port);
  }
  if (flags.db !== undefined) {
    if (flags.db.length === 0) fail(2, '--db must not be empty');
    config.db = flags.db;
  } else if (process.env.RELAYER_DB) {
    // The environment keeps a database password out of the process list and the config file.
    config.db = process.env.RELAYER_DB;
  }
}

interface OpenedStore {
  wiring: Pick<RelayServerOptions, 'store' | 'outbox' | 'merkle'>;
  close(): Promise<void>;
}

async function openSqlite(config: RelayerConfig): Promise<OpenedStore> {
  // Loaded here, not imported above: node:sqlite must not be linked before node-version.ts has run.
  const { openStore } = await import('../lib/sqlite/index.ts');
  prepareDatabaseDirectory(config.db);
  let store: Awaited<ReturnType<typeof openStore>>;
  try {
    store = await openStore(config.db);
  } catch (error) {
    return fail(1, `cannot open database ${config.db} (${resolve(config.db)}): ${(error as Error).message}`);
  }
  return { wiring: { store }, close: () => store.close() };
}

async function openPostgres(config: RelayerConfig, logger: ReturnType<typeof createLogger>): Promise<OpenedStore> {
  try {
    const opened = await openPostgresFromUrl(config.db, config.relayApi, logger);
    return { wiring: { store: opened.store }, close: opened.close };
  } catch (error) {
    // The driver's message (refused, authentication failed for user x, no such database) never
    // contains the password; the URL is shown redacted.
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return fail(1, `cannot open database ${redactDatabaseUrl(config.db)}: ${message}`);
  }
}

function readOpenApi(): unknown {
  // From bin/ in the repository, or from dist/bin/ in the published package.
  for (const relative of ['../docs/openapi.json', '../../docs/openapi.json']) {
    const url = new URL(relative, import.meta.url);
    if (existsSync(url)) return JSON.parse(readFileSync(url, 'utf8'));
  }
  return undefined;
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

async function main(): Promise<void> {
  const flags = parseFlags();
  if (flags.help) {
    process.stdout.write(HELP);
    return;
  }
  const level = flags['log-level'] ?? process.env.RELAYER_LOG_LEVEL ?? 'info';
  if (!isLogLevel(level)) {
    const source = flags['log-level'] !== undefined ? '--log-level' : 'RELAYER_LOG_LEVEL';
    fail(2, `${source} must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level.slice(0, 64))}`);
  }
  const config = loadConfig(flags.config);
  applyFlags(config, flags);
  // Log lines of one event-loop turn go out in one write; whatever waits is written on exit.
  const sink = createLineSink(process.stdout);
  process.on('exit', () => sink.flush());
  const logger = createLogger({ level: level as LogLevel, write: sink.write });

  const opened = isPostgresUrl(config.db) ? await openPostgres(config, logger) : await openSqlite(config);
  const relay = createRelayServer({
    config,
    ...opened.wiring,
    logger,
    openapi: readOpenApi(),
  });

  let address;
  try {
    address = await relay.listen();
  } catch (error) {
    await opened.close();
    return fail(1, `cannot listen on ${config.server.host}:${config.server.port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (!isLoopback(config.server.host) && config.server.adminToken === null) {
    logger.warn('bound to a non-loopback address without server.adminToken: the merkle endpoints are open to the network', {
      host: config.server.host,
    });
  }
  logger.info('started', {
    chains: Object.keys(config.chains).length,
    relay_chains: config.relayChains.length,
    db: redactDatabaseUrl(config.db),
  });
  sink.write(`relayer-server listening on ${address.url}\n`);
  sink.flush();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal, in_flight: relay.api.inFlight() });
    await relay.close(10_000);
    await opened.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

process.on('uncaughtException', (error) => {
  // No stack in the log: the name and message are enough to find the fault, and safe to show.
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'uncaught exception', error: `${error.name}: ${error.message}` }) + '\n');
  process.exit(1);
});

await main();
