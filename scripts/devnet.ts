/**
 * `npm run devnet [-- --dir DIR] [--port N]`: a local network to play with, kept until Ctrl-C
 * (docs/devnet.md). Two anvil nodes with the real Hyperlane Mailbox and Hyperlane's CCTP V2 bridge
 * between them (test/helpers/chain/local-chains.ts, as npm run demo and the e2e tests deploy them),
 * the local CCIP-read gateway standing in for the CCTP attestation service, a recipient that always
 * reverts, relayer-server and one relayer-worker on one SQLite file. Everything it writes is in one
 * directory (default .devnet/, emptied at start): the config, the database, the logs of the server
 * and the worker, and devnet.json, which `npm run devnet:send` reads.
 *
 * SIGINT or SIGTERM (Ctrl-C; a signal to npm reaches this process, the script execs it) stops the
 * worker, the server, the gateway and both nodes, and exits 0; an 'exit' handler kills whatever is
 * left if it ends any other way.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { installExitCleanup } from '../test/helpers/harness/processes.ts';

import { ALWAYS_REVERTS_INIT_CODE } from '../test/helpers/chain/cctp-bridge.ts';
import {
  DESTINATION_CHAIN_NAME,
  ORIGIN_CHAIN_NAME,
  startTwoChains,
  twoChainRelayerConfig,
} from '../test/helpers/chain/local-chains.ts';
import { startMultisigRoute } from '../test/helpers/chain/devnet-multisig.ts';
import { startWorker } from '../test/helpers/chain/worker-chain.ts';
import { launchRelayerServer } from '../test/helpers/harness/server-process.ts';

// Before any child is started: this script stops its children itself on a signal and exits 0.
installExitCleanup({ signals: false });

const USAGE = `Usage: npm run devnet [-- --dir DIR] [--port N]

A local network kept until Ctrl-C: two anvil chains with the Hyperlane Mailbox and the CCTP V2
route, the local CCIP-read gateway, relayer-server and one relayer-worker. Its state (config,
database, logs) is in DIR (default .devnet, emptied at start). Then, in another terminal:
npm run devnet:send (one transfer, relayed and delivered), npm run devnet:send -- --revert,
npm run devnet:send -- --multisig (through validators' signatures).
`;

function options(): { dir: string; port: number } {
  try {
    const { values } = parseArgs({
      options: { dir: { type: 'string' }, port: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    const port = Number(values.port ?? 0);
    if (!/^\d{1,5}$/.test(values.port ?? '0') || port > 65535)
      throw new Error('--port must be an integer from 0 to 65535');
    return { dir: resolve(values.dir ?? '.devnet'), port };
  } catch (error) {
    process.stderr.write(`devnet: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
}

/** Commands with their comments in one column. */
function aligned(rows: Array<[string, string]>): string[] {
  const width = Math.max(...rows.map(([command]) => command.length)) + 2;
  return rows.map(([command, comment]) => `  ${command.padEnd(width)}# ${comment}`);
}

/** A path as the user would type it from the package directory (npm runs scripts there). */
const shown = (path: string) => (relative(process.cwd(), path).startsWith('..') ? path : relative(process.cwd(), path));

async function main(): Promise<number> {
  const { dir, port } = options();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // Ctrl-C in a terminal signals the whole process group: the server, the worker and anvil stop on
  // their own at the same time, which is then no failure.
  let signalled: NodeJS.Signals | undefined;
  const stopping = new Promise<NodeJS.Signals>((resolveSignal) => {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
      process.on(signal, () => resolveSignal((signalled ??= signal)));
  });

  process.stdout.write(`devnet: starting two anvil chains and deploying the Mailbox and the CCTP V2 route…\n`);
  const two = await startTwoChains();
  const stops: Array<() => Promise<unknown>> = [() => two.stop()];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {});
  };
  try {
    const { origin, destination, route, gateway } = two;
    const reverter = await destination.chain.deploy([], ALWAYS_REVERTS_INIT_CODE);
    // Validators signing the origin's tree into local directories; the mainnet ISM shape on the destination.
    const { mailbox, merkleTreeHook, domain } = origin.hyperlane;
    const multisig = await startMultisigRoute(
      { chain: origin.chain, domain, mailbox, merkleTreeHook },
      destination,
      dir,
    );
    stops.push(async () => multisig.stop());

    const db = resolve(dir, 'relayer.db');
    const configFile = resolve(dir, 'relayer.json');
    const base = twoChainRelayerConfig(two, db);
    Object.assign(base.chains[ORIGIN_CHAIN_NAME], { merkleTreeHook, validatorAnnounce: multisig.validatorAnnounce });
    // Failures come quickly here: three attempts a second apart, then failed.
    const worker = { ...base.worker, port: 0, pollMs: 200, maxAttempts: 3, retryBaseSeconds: 1, retryMaxSeconds: 2 };
    // The validators write file:// locations: a development setting (docs/isms.md#checkpoint-storage).
    const config = { ...base, server: { port }, worker, allowLocalCheckpointSyncers: true };
    writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);
    const adminToken = randomBytes(24).toString('hex');

    const serverLog = createWriteStream(resolve(dir, 'server.log'));
    const server = await launchRelayerServer(['--config', configFile], {
      env: { ...process.env, RELAYER_ADMIN_TOKEN: adminToken, RELAYER_DB: '' },
      onLine: (line) => serverLog.write(`${line}\n`),
    });
    stops.push(() => server.stop());
    const workerProcess = await startWorker(configFile, { keyIndex: 1, env: { RELAYER_DB: '' } });
    const workerLog = createWriteStream(resolve(dir, 'worker.log'));
    workerLog.write(workerProcess.output());
    workerProcess.child.stdout?.on('data', (chunk: Buffer) => workerLog.write(chunk));
    workerProcess.child.stderr?.on('data', (chunk: Buffer) => workerLog.write(chunk));
    stops.push(() => workerProcess.stop());

    const state = {
      api: server.url,
      adminToken,
      config: configFile,
      db,
      worker: workerProcess.opsUrl,
      gateway: gateway.url,
      origin: {
        name: ORIGIN_CHAIN_NAME,
        domain: origin.hyperlane.domain,
        chainId: origin.anvil.chainId,
        rpc: origin.anvil.rpcUrl,
        mailbox: origin.hyperlane.mailbox,
        router: route.origin.router,
        token: route.origin.token,
      },
      destination: {
        name: DESTINATION_CHAIN_NAME,
        domain: destination.hyperlane.domain,
        chainId: destination.anvil.chainId,
        rpc: destination.anvil.rpcUrl,
        mailbox: destination.hyperlane.mailbox,
        router: route.destination.router,
        reverter,
        multisig: multisig.recipient,
      },
    };
    writeFileSync(resolve(dir, 'devnet.json'), `${JSON.stringify(state, null, 2)}\n`);

    const cfg = shown(configFile);
    const dirArg = resolve(dir) === resolve('.devnet') ? '' : ` --dir ${shown(dir)}`;
    process.stdout.write(
      [
        'relayer devnet ready',
        `  API          ${server.url}   (GET /messages: Authorization: Bearer ${adminToken})`,
        `  config       ${cfg}`,
        `  database     ${shown(db)}`,
        `  logs         ${shown(resolve(dir, 'server.log'))}, ${shown(resolve(dir, 'worker.log'))}`,
        `  worker       ${workerProcess.opsUrl}/metrics, /ready`,
        `  origin       ${ORIGIN_CHAIN_NAME}: domain ${origin.hyperlane.domain}, chain id ${origin.anvil.chainId}, ${origin.anvil.rpcUrl}`,
        `  destination  ${DESTINATION_CHAIN_NAME}: domain ${destination.hyperlane.domain}, chain id ${destination.anvil.chainId}, ${destination.anvil.rpcUrl}`,
        '',
        'In another terminal:',
        ...aligned([
          [`npm run devnet:send${dirArg ? ` --${dirArg}` : ''}`, 'one transfer: relayed, delivered'],
          [`npm run devnet:send -- --revert${dirArg}`, 'to a recipient that always reverts: failed'],
          [`npm run devnet:send -- --multisig${dirArg}`, "through the mainnet ISM shape, validators' signatures"],
        ]),
        `  npm run worker -- list --config ${cfg}`,
        `  npm run worker -- requeue --status failed --config ${cfg}`,
        `  curl -s '${server.url}/messages?status=failed' -H 'authorization: Bearer ${adminToken}'`,
        'Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );

    // Until a signal, or until the server or the worker stops on its own (then the devnet is broken).
    const ended = await Promise.race([
      stopping.then((signal) => ({ signal })),
      server.exited.then(({ code }) => ({ died: `relayer-server exited (code ${code})` })),
      new Promise<{ died: string }>((resolveDied) =>
        workerProcess.child.once('exit', (code) => resolveDied({ died: `relayer-worker exited (code ${code})` })),
      ),
    ]);
    if ('died' in ended && signalled === undefined) {
      process.stderr.write(`devnet: ${ended.died}; see ${shown(dir)}/*.log. Stopping.\n`);
      await stopAll();
      return 1;
    }
    process.stdout.write(`devnet: ${signalled ?? 'signal'}: stopping the worker, the server and both chains\n`);
    await stopAll();
    serverLog.end();
    workerLog.end();
    process.stdout.write(`devnet: stopped (state kept in ${shown(dir)})\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`devnet failed: ${(error as Error).stack ?? error}\n`);
    await stopAll();
    return 1;
  }
}

process.exit(await main());
