#!/usr/bin/env node
/**
 * relayer-server: runs the relay API on node:http with a node:sqlite or PostgreSQL store. Only wiring lives here;
 * everything it wires is in lib/.
 */
// First: on a Node too old for the rest, this prints what is needed and exits (see the file).
import './node-version.ts';
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { createLineSink } from '../lib/http/log-sink.ts';
import { createRpcTransport } from '../lib/http/rpc-transport.ts';
import { createRelayServer } from '../lib/http/server.ts';
import { createLogger, isLogLevel, LOG_LEVELS, type LogLevel } from '../lib/log.ts';
import { redactUrls } from '../lib/rpc.ts';
import type { RelayerConfig } from '../lib/types.ts';
import { cliFail, exitOnUncaughtException, exitWhenStoreStops, loadConfig, openRelayerStore } from './cli.ts';
import { redactDatabaseUrl } from './postgres.ts';

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
1 when the server cannot start (e.g. the port is taken) or its SQLite store stops while it runs.
`;

const fail = (code: number, message: string): never => cliFail('relayer-server', code, message);

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
    // The message quotes the offending argument, which may be a database URL: URLs are cut to
    // scheme://host (a stray `postgres://user:password@…` positional, for one).
    return fail(2, `${redactUrls((error as Error).message)}\n\n${HELP}`);
  }
}

function applyFlags(config: RelayerConfig, flags: ReturnType<typeof parseFlags>): void {
  if (flags.host !== undefined) {
    if (flags.host.length === 0) fail(2, '--host must not be empty');
    config.server.host = flags.host;
  }
  if (flags.port !== undefined) {
    if (!/^\d{1,5}$/.test(flags.port) || Number(flags.port) > 65535)
      fail(2, '--port must be an integer from 0 to 65535');
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
  const config = loadConfig('relayer-server', flags.config);
  applyFlags(config, flags);
  // Log lines of one event-loop turn go out in one write; whatever waits is written on exit.
  const sink = createLineSink(process.stdout);
  process.on('exit', () => sink.flush());
  const logger = createLogger({ level: level as LogLevel, write: sink.write });

  const store = await openRelayerStore('relayer-server', config, logger);
  // RPC calls over node:http with keep-alive pools per origin (docs/configuration.md#rpc-transport).
  const rpcTransport = createRpcTransport();
  const relay = createRelayServer({
    config,
    store,
    fetch: rpcTransport.fetch,
    logger,
    openapi: readOpenApi(),
  });

  let address: Awaited<ReturnType<typeof relay.listen>>;
  try {
    address = await relay.listen();
  } catch (error) {
    await store.close();
    return fail(
      1,
      `cannot listen on ${config.server.host}:${config.server.port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  if (!isLoopback(config.server.host) && config.server.adminToken === null) {
    logger.warn(
      'bound to a non-loopback address without server.adminToken: the merkle endpoints are open to the network',
      {
        host: config.server.host,
      },
    );
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
    rpcTransport.close();
    await store.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // A store that stopped on its own fails every request from then on: rather than answer 503
  // forever while GET /relay says up, answer what is in flight (503, the calls fail at once) and
  // exit 1 so that a supervisor restarts the server.
  exitWhenStoreStops(store, logger, {
    claim: () => {
      if (stopping) return false;
      stopping = true;
      return true;
    },
    inFlight: () => relay.api.inFlight(),
    beforeExit: () => relay.close(10_000),
  });
}

exitOnUncaughtException();

await main();
