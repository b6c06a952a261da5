#!/usr/bin/env node
/**
 * relayer-server: runs the relay API on node:http with a node:sqlite or PostgreSQL store. Only wiring lives here;
 * everything it wires is in lib/.
 */
// First: on a Node too old for the rest, this prints what is needed and exits (see the file).
import './lib/node-version.ts';
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { LOG_LEVELS } from '../lib/log.ts';
import { readCommandLine } from './lib/command-line.ts';
import { configSummary, listenFailure } from './lib/advice.ts';
import { cliFail, runCommand, shutDownOnce } from './lib/lifecycle.ts';
import { openRelayerStore } from './lib/store.ts';
import { systemClock } from '../lib/clock.ts';
import { startRetention } from '../lib/outbox/retention.ts';
import { redactDatabaseSecrets, redactDatabaseUrl } from '../lib/redact.ts';

const HELP = `Usage: relayer-server [options]

Runs the relayer HTTP API.

Routes (every error is JSON {"reason","message"}; docs/api.md has the details):
  GET  /relay                          liveness: 200 "up"
  GET  /ready                          readiness: 200 when the database answers, else 503
  POST /relay                          relay a transaction: {"origin_chain","tx_hash"}
  GET  /relay/{message_id}             one accepted message and its delivery status
  GET  /relay?origin_chain=&tx_hash=   the messages accepted from one transaction
  GET  /relay/{message_id}/events      the message's status as it changes (Server-Sent Events)
  GET  /relay/events?origin_chain=&tx_hash=
                                       the transaction's messages as they change (Server-Sent Events)
  GET  /chains                         the configured chains: name, domain_id, chain_id
  GET  /messages?status=&destination=&limit=
                                       admin: messages of one status, what is stuck (needs
                                       the admin token; without one configured it is off)
  POST /merkle_tree_insertions         store merkle tree insertions (admin token if configured)
  GET  /merkle_tree_insertions?domain_id=&leaf_index_start=&leaf_index_end=
                                       list stored insertions (admin token if configured)
  GET  /merkle_proofs?domain_id=&leaf_index=&root_index=
                                       a stored leaf's proof and root (admin token if configured)
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
  --check-config      read the config and the flags, print what would run and exit 0,
                      or 2 with the error; nothing is opened or started
  -h, --help          show this help

Environment:
  RELAYER_DB           the database, when --db is not given (keeps a password out of ps)
  RELAYER_ADMIN_TOKEN  the admin bearer token (16 to 1024 visible ASCII characters), over the
                       config's server.adminToken: GET /messages needs it, the merkle
                       endpoints too once one is set. Never printed or logged

Exit codes: 0 after a clean shutdown (SIGINT/SIGTERM), 2 for bad flags or an invalid config,
1 when the server cannot start (e.g. the port is taken) or its SQLite store stops while it runs.
`;

const PROGRAM = 'relayer-server';
const fail = (code: number, message: string): never => cliFail(PROGRAM, code, message);

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
  const cli = readCommandLine({ help: HELP, listen: (config) => config.server });
  if (cli === undefined) return;
  const { config, logger, sink } = cli;

  // Read once and removed from the environment, like the worker's key: nothing started inherits it.
  const adminToken = process.env.RELAYER_ADMIN_TOKEN;
  delete process.env.RELAYER_ADMIN_TOKEN;
  if (adminToken !== undefined && adminToken !== '') {
    if (adminToken.length < 16 || adminToken.length > 1024 || !/^[\x21-\x7e]+$/.test(adminToken))
      return fail(2, 'RELAYER_ADMIN_TOKEN must be 16 to 1024 visible ASCII characters');
    config.server.adminToken = adminToken;
  }
  if (cli.flags['check-config']) {
    const token = config.server.adminToken === null ? 'none (GET /messages off, merkle endpoints open)' : 'set';
    process.stdout.write(configSummary(PROGRAM, cli.flags.config, config, config.server, [`admin token: ${token}`]));
    return;
  }

  // Loaded once the command line and the config are accepted: --help and a refused flag or
  // config answer without loading the HTTP server and the RPC transport (node:http among them).
  const [{ createRpcTransport }, { createRelayServer }] = await Promise.all([
    import('../lib/node/rpc-transport.ts'),
    import('../lib/http/server.ts'),
  ]);
  const store = await openRelayerStore(config, logger);
  // RPC calls over node:http with keep-alive pools per origin (docs/rpc.md#rpc-transport).
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
    return fail(1, listenFailure(config.server.host, config.server.port, error, 'server'));
  }
  if (!isLoopback(config.server.host) && config.server.adminToken === null) {
    logger.warn(
      'bound to a non-loopback address without server.adminToken: the merkle endpoints are open to the network',
      {
        host: config.server.host,
      },
    );
  }
  if (!isLoopback(config.server.host) && config.relayApi.clientRateLimit === null) {
    // docs/worker-configuration.md#stated-gas-policy: one client may take the whole POST /relay budget.
    logger.warn(
      'bound to a non-loopback address without relayApi.clientRateLimit: one client can take the whole POST /relay budget',
      { host: config.server.host, example: '"clientRateLimit": {"burst": 10, "perMinute": 10}' },
    );
  }
  // docs/configuration.md#retention: old delivered messages and closed journal rows go, in batches.
  const { retentionDays } = config.server;
  const retention =
    retentionDays === null
      ? undefined
      : startRetention({
          prune: (opts) => store.outbox.prune(opts),
          clock: systemClock,
          retentionMs: retentionDays * 86_400_000,
          onPruned: (pruned) =>
            logger.info('pruned delivered messages and closed journal rows', {
              ...pruned,
              retention_days: retentionDays,
            }),
          onError: (error) => {
            const e = error instanceof Error ? error : new Error(String(error));
            logger.warn('pruning failed; trying again in a minute', {
              error: redactDatabaseSecrets(`${e.name}: ${e.message.split('\n')[0]}`, config.db),
            });
          },
        });
  logger.info('started', {
    chains: Object.keys(config.chains).length,
    relay_chains: config.relayChains.length,
    db: redactDatabaseUrl(config.db),
  });
  // A store that stopped on its own fails every request from then on: rather than answer 503
  // forever while GET /relay says up, answer what is in flight (503, the calls fail at once) and
  // exit 1 so that a supervisor restarts the server.
  shutDownOnce(store, logger, {
    stopping: 'shutting down',
    inFlight: () => relay.api.inFlight(),
    stop: async () => {
      await relay.close(10_000);
      rpcTransport.close();
      await retention?.stop();
      await store.close();
    },
    beforeExit: () => relay.close(10_000),
  });
  // Last: whoever waits for this line may signal at once, and the handlers must be there to catch it.
  sink.write(`relayer-server listening on ${address.url}\n`);
  sink.flush();
}

await runCommand(PROGRAM, main);
