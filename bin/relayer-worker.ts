#!/usr/bin/env node
/**
 * relayer-worker: the delivery worker, the outbox's consumer (docs/design.md#delivery). It reads
 * the relayer-server's config file and database (`--db` / RELAYER_DB: the SQLite file or the
 * postgres:// URL), signs with the key in RELAYER_SIGNER_KEY (never printed), serves /metrics and
 * /ready on its own port, and stops cleanly on SIGINT/SIGTERM (exit 0). Several workers may share
 * one database: claims are leases, no message is held by two.
 *
 * `relayer-worker requeue <message_id>` puts a failed message (a dead letter) back in the queue,
 * `requeue --status failed` every failed one; `relayer-worker list` shows what is stuck
 * (docs/outbox.md#listing-and-bulk-requeue); `relayer-worker signers` shows each signer's nonces,
 * lease and open transactions (docs/workers.md#signers).
 */
// First: on a Node too old for the rest, this prints what is needed and exits (see the file).
import './lib/node-version.ts';
import { isHexOfLength } from '../lib/codec/hex.ts';
import { LOG_LEVELS, type Logger } from '../lib/log.ts';
import { redactDatabaseUrl, redactUrls } from '../lib/redact.ts';
import { effectivePolicies, unstatedPolicy } from '../lib/config/stated-policy.ts';
import type { RelayerConfig } from '../lib/types.ts';
import { createLineSink, type LineSink } from '../lib/node/log-sink.ts';
import { createLogger } from '../lib/log.ts';
import { CommandLineError, parseCommandLine } from './lib/command-line.ts';
import { configSummary, listenFailure, signerKeyProblem, workerPolicyLines } from './lib/advice.ts';
import { runCommand, shutDownOnce } from './lib/lifecycle.ts';
import { openRelayerStore } from './lib/store.ts';

const HELP = `Usage: relayer-worker [options]
       relayer-worker list [--status STATUS] [--destination NAME] [--limit N] [--config FILE] [--db FILE|URL]
       relayer-worker requeue <message_id> [--config FILE] [--db FILE|URL]
       relayer-worker requeue --status failed [--destination NAME] [--config FILE] [--db FILE|URL]
       relayer-worker signers [--format text|json] [--signer ADDRESS[,ADDRESS…]] [--config FILE] [--db FILE|URL]

Delivers the messages relayer-server accepted: claims them from the relayer's database, builds
the ISM metadata (empty for NULL ISMs, routing ISMs followed, CCIP-read per EIP-3668 for the CCTP
ISM), simulates, then sends Mailbox.process on the destination chain and records the outcome.
Several workers may run on one database (SQLite file or PostgreSQL).

Commands:
  (none)                  run the worker until SIGINT/SIGTERM
  list                    what is stuck: one line per message, oldest first: id, status,
                          attempts, age, destination, last_error. --status queued|delivering|
                          delivered|failed (default: every one not delivered), --destination NAME
                          (a configured chain), --limit N (1..1000, default 100)
  requeue <message_id>    put a failed message back in the queue (attempts kept); exit 0 if it
                          was requeued, 1 if it is unknown or not failed
  requeue --status failed put every failed message (of --destination NAME) back in the queue;
                          prints each id and the count, exit 0
  signers                 per destination and signer: the node's latest and pending nonce, who
                          holds the signer lease, every open transaction of the journal (nonce,
                          message, hashes, fees, age) and STUCK where the node holds none of a
                          slot's transactions. Lists the signers that held a lease, and --signer
                          ones; --format json for the JSON of GET /signers on the ops port

Options:
  --config FILE       the relayer-server's JSON configuration: chains (RPC URLs, Mailboxes),
                      relayChains (the destinations this worker delivers to) and the "worker"
                      section. Without it the built-in default is used. It must state
                      gasPaymentEnforcement and, for every relay chain,
                      transactionOverrides.gasPriceCap ("none" and [{"type": "none"}] opt out):
                      without them the worker does not start (exit 2)
  --db FILE|URL       the relayer-server's database: its SQLite file or postgres://…
                      (needs the pg package). Default: env RELAYER_DB, then the config's db
  --host HOST         address of /metrics and /ready (default 127.0.0.1; config worker.host)
  --port N            port of /metrics and /ready, 0 for any (default 9091; config worker.port)
  --log-level LEVEL   ${LOG_LEVELS.join(' | ')} (default info; env RELAYER_LOG_LEVEL)
  --check-config      read the config, the flags and RELAYER_SIGNER_KEY's form, print what
                      would run and exit 0, or 2 with the error; nothing is opened or started
  -h, --help          show this help

Environment:
  RELAYER_SIGNER_KEY  0x + 64 hex: the key that signs Mailbox.process (required to run; never
                      printed or logged). Fund its address on every destination chain.
  RELAYER_DB          the database, when --db is not given (keeps a password out of ps)

Exit codes: 0 after a clean stop (SIGINT/SIGTERM: messages not yet sent are released, sent
ones are followed to their receipt for up to worker.stopGraceSeconds), 2 for bad flags, an
invalid config, an unstated gas policy or fee ceiling, or a missing key, 1 when it cannot start (database, viem not installed, port).
`;

const PROGRAM = 'relayer-worker';
/** A refused start or command: runCommand prints `relayer-worker: MESSAGE` on stderr and exits with `code`. */
const fail = (code: number, message: string): never => {
  throw new CommandLineError(code, message);
};

/** Where a command writes: the process's stdout and stderr, or a test's (test/process/worker-bin.test.ts). */
export interface WorkerIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** lib/worker loads viem; without it installed, say so instead of a module-resolution trace. */
async function loadWorkerModule(): Promise<typeof import('../lib/worker/index.ts')> {
  try {
    return await import('../lib/worker/index.ts');
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (e.code === 'ERR_MODULE_NOT_FOUND' && /'viem'|"viem"|viem\//.test(e.message)) {
      return fail(
        1,
        'the delivery worker needs the viem package, which is not installed: install viem (npm install viem) beside relayer-api',
      );
    }
    throw error;
  }
}

/** The domain of --destination NAME (a configured chain), or undefined without the flag; exit 2 for another name. */
function destinationOf(config: RelayerConfig, name: string | undefined): number | undefined {
  if (name === undefined) return undefined;
  const chain = config.chains[name];
  if (chain === undefined)
    return fail(
      2,
      `--destination ${JSON.stringify(name.slice(0, 64))} is not a configured chain (${Object.keys(config.chains).slice(0, 10).join(', ')}${Object.keys(config.chains).length > 10 ? ', …' : ''})`,
    );
  return chain.domainId;
}

const STATUSES = ['queued', 'delivering', 'delivered', 'failed'] as const;

/** How long ago, in the largest two units: 45s, 3m12s, 2h5m, 3d4h. */
function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`;
}

async function list(
  config: RelayerConfig,
  flags: Record<string, unknown>,
  logger: Logger,
  io: WorkerIo,
): Promise<number> {
  const status = flags.status as string | undefined;
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status))
    return fail(2, `--status must be one of ${STATUSES.join(', ')}`);
  const destination = destinationOf(config, flags.destination as string | undefined);
  const limitText = flags.limit as string | undefined;
  const limit = limitText === undefined ? 100 : Number(limitText);
  if (!/^\d{1,4}$/.test(limitText ?? '100') || limit < 1 || limit > 1000)
    return fail(2, '--limit must be an integer from 1 to 1000');
  const names = new Map(Object.values(config.chains).map((c) => [c.domainId, c.name]));
  const store = await openRelayerStore(config, logger, { existing: true });
  try {
    const records = await store.outbox.list({
      status: status as (typeof STATUSES)[number] | undefined,
      destination,
      limit,
    });
    const now = Date.now();
    let text = '';
    for (const r of records) {
      const error = r.lastError === null ? '-' : JSON.stringify(redactUrls(r.lastError));
      text += `${r.id}  ${r.status}  attempts=${r.attempts}  age=${age(now - r.enqueuedAt)}  to=${names.get(r.destination) ?? r.destination}  last_error=${error}\n`;
    }
    io.stdout.write(text);
    io.stderr.write(
      `${records.length} message${records.length === 1 ? '' : 's'}${records.length === limit ? ` (the first ${limit}: --limit for more)` : ''}\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}

async function requeueFailed(
  config: RelayerConfig,
  flags: Record<string, unknown>,
  logger: Logger,
  io: WorkerIo,
): Promise<number> {
  if (flags.status !== 'failed')
    return fail(2, 'requeue --status: only failed messages are requeued (--status failed)');
  const destination = destinationOf(config, flags.destination as string | undefined);
  const store = await openRelayerStore(config, logger, { existing: true });
  try {
    let count = 0;
    for (;;) {
      const ids = await store.outbox.requeueFailed({ destination, limit: 1000 });
      if (ids.length > 0) io.stdout.write(ids.map((id) => `requeued ${id}\n`).join(''));
      count += ids.length;
      if (ids.length < 1000) break;
    }
    io.stderr.write(`requeued ${count} failed message${count === 1 ? '' : 's'}\n`);
    return 0;
  } finally {
    await store.close();
  }
}

async function requeue(
  config: RelayerConfig,
  positionals: string[],
  flags: Record<string, unknown>,
  logger: Logger,
  io: WorkerIo,
): Promise<number> {
  if (positionals.length === 1 && flags.status !== undefined) return requeueFailed(config, flags, logger, io);
  const id = positionals[1];
  if (positionals.length !== 2 || !isHexOfLength(id, 32) || flags.status !== undefined)
    return fail(2, 'usage: relayer-worker requeue <message_id> (0x + 64 hex), or requeue --status failed');
  const store = await openRelayerStore(config, logger, { existing: true });
  try {
    const { outbox } = store;
    const before = await outbox.get(id);
    if (await outbox.requeue(id)) {
      io.stdout.write(`requeued ${id.toLowerCase()} (attempts so far ${before?.attempts ?? 0})\n`);
      return 0;
    }
    io.stderr.write(
      `relayer-worker: not requeued: ${before ? `message ${id.toLowerCase()} is ${before.status}, not failed` : `no message ${id.toLowerCase()}`}\n`,
    );
    return 1;
  } finally {
    await store.close();
  }
}

/** `relayer-worker signers`: the signers' state, read from the nodes and the outbox (docs/workers.md#signers). */
async function signers(
  config: RelayerConfig,
  flags: Record<string, unknown>,
  logger: Logger,
  io: WorkerIo,
): Promise<number> {
  const format = (flags.format as string | undefined) ?? 'text';
  if (format !== 'text' && format !== 'json') return fail(2, '--format must be text or json');
  const named = flags.signer === undefined ? [] : String(flags.signer).split(',');
  for (const address of named)
    if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return fail(2, '--signer must be 0x + 40 hex (several: comma-separated)');
  const mod = await loadWorkerModule();
  const store = await openRelayerStore(config, logger, { existing: true });
  try {
    const views = await mod.reportSigners({ config, outbox: store.outbox, signers: named });
    io.stdout.write(format === 'json' ? `${JSON.stringify(views, null, 2)}\n` : mod.formatSignerView(views));
    if (views.length === 0)
      io.stderr.write('no signer: none has held a lease on these destinations; --signer ADDRESS names one\n');
    return 0;
  } catch (error) {
    return fail(1, redactUrls((error as Error).message));
  } finally {
    await store.close();
  }
}

/** A worker past every start-up check (the chain's included), ready to serve and run. */
export interface CheckedWorker {
  config: RelayerConfig;
  logger: Logger;
  mod: typeof import('../lib/worker/index.ts');
  store: Awaited<ReturnType<typeof openRelayerStore>>;
  relayer: Awaited<ReturnType<typeof import('../lib/worker/index.ts').createRelayerWorker>>;
}

/**
 * relayer-worker's command line `args` with the environment `env` (RELAYER_SIGNER_KEY is read and
 * deleted from it), up to the start of the worker: -h, list, requeue, signers and --check-config
 * run to their end (their exit code is returned); for the worker itself, every start-up check
 * (flags, config, gas policy, key, viem, database, the destinations' nodes) is made and the worker
 * returned, not yet running. A refusal throws CommandLineError (runCommand prints it and exits).
 * Log lines go to `sink`, what a command prints to `io`.
 */
export async function workerCommand(
  args: string[],
  env: NodeJS.ProcessEnv,
  io: WorkerIo,
  sink: LineSink,
): Promise<number | CheckedWorker> {
  const cli = parseCommandLine(
    {
      help: HELP,
      positionals: ([command]) => {
        // A stray database URL (a forgotten --db) must not be echoed with its password.
        if (command !== undefined && command !== 'requeue' && command !== 'list' && command !== 'signers')
          throw new CommandLineError(
            2,
            `unknown command ${JSON.stringify(redactUrls(command).slice(0, 64))}\n\n${HELP}`,
          );
      },
      listen: (config) => config.worker,
      flags: ['status', 'destination', 'limit', 'format', 'signer'],
    },
    args,
    env,
  );
  if (cli === 'help') {
    io.stdout.write(HELP);
    return 0;
  }
  const { positionals, flags, config } = cli;
  const logger = createLogger({ level: cli.level, write: sink.write });
  const command = positionals[0];
  // --status, --destination and --limit belong to list and requeue.
  const own = ['status', 'destination', 'limit'].filter((name) => flags[name] !== undefined);
  if ((command === undefined || (command === 'requeue' && own.includes('limit'))) && own.length > 0)
    fail(2, `--${own[0]} is a flag of ${command === undefined ? 'list and requeue' : 'list'}\n\n${HELP}`);
  // --format and --signer belong to signers, which takes none of the others.
  const viewFlags = ['format', 'signer'].filter((name) => flags[name] !== undefined);
  if (command !== 'signers' && viewFlags.length > 0) fail(2, `--${viewFlags[0]} is a flag of signers\n\n${HELP}`);
  if (command === 'signers' && own.length > 0) fail(2, `--${own[0]} is a flag of list and requeue\n\n${HELP}`);
  if (command === 'signers') {
    sink.flush();
    if (positionals.length !== 1)
      return fail(2, 'usage: relayer-worker signers [--format text|json] [--signer ADDRESS]');
    return await signers(config, flags, logger, io);
  }

  if (flags['check-config']) {
    if (command !== undefined) fail(2, `--check-config checks what relayer-worker runs with, not ${command}`);
    const key = env.RELAYER_SIGNER_KEY;
    delete env.RELAYER_SIGNER_KEY;
    const keyProblem = key ? signerKeyProblem(key) : undefined;
    if (keyProblem !== undefined) fail(2, keyProblem);
    // What the worker refuses to start without (docs/worker-configuration.md#stated-gas-policy).
    const unstated = unstatedPolicy(config);
    if (unstated.length > 0) fail(2, unstated.join(`\n${PROGRAM}: `));
    io.stdout.write(
      configSummary(PROGRAM, flags.config, config, config.worker, [
        `signer key: ${key ? 'set' : 'not set (RELAYER_SIGNER_KEY is needed to run)'}`,
        ...workerPolicyLines(config),
      ]),
    );
    return 0;
  }
  if (command === 'list') {
    sink.flush();
    if (positionals.length !== 1)
      return fail(2, 'usage: relayer-worker list [--status S] [--destination NAME] [--limit N]');
    return await list(config, flags, logger, io);
  }
  if (command === 'requeue') {
    sink.flush();
    return await requeue(config, positionals, flags, logger, io);
  }

  // No silent unsafe default (docs/worker-configuration.md#stated-gas-policy): one line per missing key.
  const unstated = unstatedPolicy(config);
  if (unstated.length > 0) fail(2, unstated.join(`\n${PROGRAM}: `));
  // Read once and removed from the environment: nothing this process starts inherits it.
  const signerKey = env.RELAYER_SIGNER_KEY;
  delete env.RELAYER_SIGNER_KEY;
  if (!signerKey) return fail(2, 'RELAYER_SIGNER_KEY is not set: the key (0x + 64 hex) that signs Mailbox.process');
  // The key's form is checked before viem is loaded: a wrong key is refused at once.
  const keyProblem = signerKeyProblem(signerKey);
  if (keyProblem !== undefined) return fail(2, keyProblem);
  const mod = await loadWorkerModule();

  const store = await openRelayerStore(config, logger, { existing: true });
  const outbox = store.outbox;
  let relayer: Awaited<ReturnType<typeof mod.createRelayerWorker>>;
  try {
    relayer = await mod.createRelayerWorker({
      config,
      outbox,
      signerKey: signerKey as `0x${string}`,
      merkle: store.merkle,
      logger,
      depth: async () => outbox.depth(),
    });
  } catch (error) {
    await store.close();
    return fail(1, (error as Error).message);
  }
  // Every destination's nodes must be of the configured chain, and one at least must answer:
  // a worker that cannot deliver anywhere it should says so now instead of idling.
  const refusals = relayer.watch.refusals(await relayer.watch.check());
  if (refusals.length > 0) {
    await store.close();
    return fail(2, refusals.join('\n'));
  }
  return { config, logger, mod, store, relayer };
}

async function main(): Promise<void> {
  // Whatever waits in the sink is written on exit.
  const sink = createLineSink(process.stdout);
  process.on('exit', () => sink.flush());
  const checked = await workerCommand(process.argv.slice(2), process.env, process, sink);
  if (typeof checked === 'number') {
    process.exitCode = checked;
    return;
  }
  const { config, logger, mod, store, relayer } = checked;
  const outbox = store.outbox;
  const { worker } = relayer;
  const ops = mod.createOpsServer({
    metrics: relayer.metrics,
    ready: async () => {
      // 503 while a destination's node answers another chain id (checked with every heartbeat).
      if (!relayer.watch.ready()) return 'wrong_chain';
      await store.ping();
      return true;
    },
    depth: async () => outbox.depth(),
    signers: () => relayer.signersView(),
  });
  let address: Awaited<ReturnType<typeof ops.listen>>;
  try {
    address = await ops.listen(config.worker.port, config.worker.host);
  } catch (error) {
    await store.close();
    return fail(1, listenFailure(config.worker.host, config.worker.port, error, 'worker'));
  }
  logger.info('started', {
    signer: relayer.address,
    destinations: [...relayer.destinations.values()].map((d) => d.name),
    policy: effectivePolicies(config),
    db: redactDatabaseUrl(config.db),
    concurrency: config.worker.concurrency,
  });
  const running = worker.run();
  relayer.watch.start();
  // A signer lease lost (another worker took the key over): the worker has stopped sending; exit 1.
  void running.then(async () => {
    const lost = relayer.signers.lost();
    if (lost === undefined) return;
    relayer.watch.stop();
    await ops.close();
    await store.close();
    process.exit(1);
  });
  // A store that stopped on its own (the SQLite worker thread died) fails every claim from then
  // on: exit 1 so that a supervisor restarts the worker. Messages it held go back to others when
  // their leases end.
  shutDownOnce(store, logger, {
    stopping: 'stopping',
    inFlight: () => worker.inFlight(),
    stop: async () => {
      relayer.watch.stop();
      await worker.stop();
      await running;
      await ops.close();
      await store.close();
    },
  });
  // Last: whoever waits for this line may signal at once, and the handlers must be there to catch it.
  sink.write(`relayer-worker ops on ${address.url} (signer ${relayer.address})\n`);
  sink.flush();
}

// Run as a command; imported (by a test), it only exports workerCommand.
if (import.meta.main) await runCommand(PROGRAM, main);
