/**
 * `npm run demo`: a message's whole life on this machine, in one command, for a new user.
 * Starts two anvil nodes (origin: Hyperlane domain 1, destination: domain 2), deploys the real
 * Hyperlane Mailbox on each and Hyperlane's CCTP V2 token bridge (TokenBridgeCctpV2) between them,
 * whose CCIP-read URL points to a local EIP-3668 gateway standing in for Hyperlane's CCTP
 * attestation service (test/helpers/chain/ccip-gateway.ts); sends one USDC-style transfer, starts
 * bin/relayer-server.ts, relays the transaction with POST /relay, then starts the shipped delivery
 * worker (bin/relayer-worker.ts) on the server's database. The worker follows the router's
 * OffchainLookup to the gateway and calls Mailbox.process; the demo prints the URL it followed,
 * the message status (GET /relay/{id}) and the destination Mailbox's `delivered(id)` before and
 * after, then stops the worker with SIGTERM. Everything it started is stopped at the end, on error
 * and on Ctrl-C (test/helpers/harness/processes.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Address } from 'viem';
import { MAILBOX_ABI } from '../lib/worker/ism/metadata.ts';
import { sendBridgeTransferMessage } from '../test/helpers/chain/cctp-bridge.ts';
import {
  DESTINATION_DOMAIN,
  ORIGIN_CHAIN_NAME,
  ORIGIN_DOMAIN,
  startTwoChains,
  twoChainRelayerConfig,
  type TwoChains,
} from '../test/helpers/chain/local-chains.ts';
import { onExitCleanup } from '../test/helpers/harness/processes.ts';
import { startWorker, until, type WorkerProcess } from '../test/helpers/chain/worker-chain.ts';
import { launchRelayerServer, type RelayerProcess } from '../test/helpers/harness/server-process.ts';

const RECIPIENT: Address = '0x000000000000000000000000000000000000dEaD';
const AMOUNT = 1_000_000n; // 1 USDC (6 decimals)

let stepNumber = 0;
function step(text: string): void {
  stepNumber++;
  console.log(`\n[${stepNumber}] ${text}`);
}
function detail(label: string, value: unknown): void {
  console.log(`    ${label.padEnd(24)} ${value}`);
}
function indent(text: string): string {
  return text.trimEnd().replace(/^/gm, '    ');
}

async function main(): Promise<number> {
  let two: TwoChains | undefined;
  let server: RelayerProcess | undefined;
  let worker: WorkerProcess | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'relayer-demo-'));
  const removeDir = onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
  try {
    step('Starting two anvil nodes and deploying Hyperlane (Mailbox) and its CCTP V2 bridge on each');
    two = await startTwoChains();
    const { origin, destination, route, gateway } = two;
    detail(`origin (domain ${ORIGIN_DOMAIN})`, `${origin.anvil.rpcUrl}, chain id ${origin.anvil.chainId}`);
    detail('  Mailbox', origin.hyperlane.mailbox);
    detail('  TokenBridgeCctpV2', `${route.origin.router} (Hyperlane's contract, proxied)`);
    detail('  CCTP transmitter', `${route.origin.transmitter} (package mock, V2 format)`);
    detail(
      `destination (domain ${DESTINATION_DOMAIN})`,
      `${destination.anvil.rpcUrl}, chain id ${destination.anvil.chainId}`,
    );
    detail('  Mailbox', destination.hyperlane.mailbox);
    detail('  TokenBridgeCctpV2', `${route.destination.router} (recipient and its own CCIP-read ISM)`);
    detail('CCIP-read gateway', `${gateway.url} (stands in for Hyperlane's CCTP attestation service)`);

    step(
      `Sending 1 USDC from domain ${ORIGIN_DOMAIN} to domain ${DESTINATION_DOMAIN}: TokenBridgeCctpV2.transferRemote`,
    );
    const { hash, id, receipt } = await sendBridgeTransferMessage(origin.chain, route, origin.hyperlane.mailbox, {
      destination: DESTINATION_DOMAIN,
      recipient: RECIPIENT,
      amount: AMOUNT,
    });
    const messageSent = receipt.logs.filter((l) => l.address.toLowerCase() === route.origin.transmitter).length;
    detail('tx hash', hash);
    detail('block', `${receipt.blockNumber} (status ${receipt.status}, ${receipt.logs.length} logs)`);
    detail('CCTP MessageSent', `${messageSent} (depositForBurn)`);
    detail('Mailbox DispatchId', id);

    step('Starting bin/relayer-server.ts with a SQLite file the delivery worker will share');
    const db = join(dir, 'relayer.db');
    const base = twoChainRelayerConfig(two, db);
    // worker.ccipReadAllowOrigins: the local gateway is on loopback, which is asked only when allowed.
    const config = { ...base, worker: { ...base.worker, port: 0, pollMs: 200 } };
    const configFile = join(dir, 'relayer.json');
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    server = await launchRelayerServer(['--config', configFile, '--host', '127.0.0.1', '--db', db]);
    detail('relayer API', server.url);
    detail('database', db);

    step('Relaying the transaction: POST /relay');
    const request = { origin_chain: ORIGIN_CHAIN_NAME, tx_hash: hash };
    console.log(
      `    curl -s -X POST ${server.url}/relay -H 'content-type: application/json' -d '${JSON.stringify(request)}'`,
    );
    const res = await fetch(`${server.url}/relay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const body = (await res.json()) as { messages?: { message_id: string }[] };
    detail('HTTP status', res.status);
    console.log(indent(JSON.stringify(body, null, 2)));
    if (res.status !== 200 || body.messages?.[0]?.message_id !== id)
      throw new Error('the relay did not accept the dispatched message');

    const isDelivered = () =>
      destination.chain.publicClient.readContract({
        address: destination.hyperlane.mailbox,
        abi: MAILBOX_ABI,
        functionName: 'delivered',
        args: [id],
      });
    const status = async () => {
      const r = await fetch(`${server!.url}/relay/${id}`);
      return (await r.json()) as { status: string; attempts: number; destination_tx_hash: string | null };
    };

    step('Before delivery');
    console.log(`    curl -s ${server.url}/relay/${id}`);
    const before = await status();
    console.log(indent(JSON.stringify(before, null, 2)));
    detail('status', before.status);
    detail('Mailbox.delivered(id)', `${await isDelivered()} (destination)`);

    step('Starting the delivery worker: RELAYER_SIGNER_KEY=… relayer-worker --config relayer.json --db relayer.db');
    // anvil's dev account 1 signs (a well-known test key, funded by anvil); account 0 deployed the contracts.
    worker = await startWorker(configFile, { keyIndex: 1, db });
    detail('worker /metrics', `${worker.opsUrl}/metrics`);
    await until(async () => (await status()).status === 'delivered', 'the delivery', 60_000);
    const followed = worker
      .output()
      .split('\n')
      .filter((line) => line.includes('"msg":"ccip-read"'))
      .map((line) => JSON.parse(line) as { url: string; outcome: string });
    for (const f of followed) detail('OffchainLookup URL', `${f.url} (${f.outcome})`);
    const metrics = await (await fetch(`${worker.opsUrl}/metrics`)).text();
    console.log(
      indent(
        metrics
          .split('\n')
          .filter(
            (l) =>
              l.startsWith('relayer_worker_delivered_total') ||
              l.startsWith('relayer_worker_enqueue_to_delivered_seconds_count'),
          )
          .join('\n'),
      ),
    );
    const code = await worker.stop();
    console.log(indent(worker.output()));
    detail('relayer-worker exit', `${code} (SIGTERM)`);

    step('After delivery');
    const after = await status();
    console.log(indent(JSON.stringify(after, null, 2)));
    const deliveredNow = await isDelivered();
    detail('status', `${before.status} → ${after.status}`);
    detail('Mailbox.delivered(id)', `false → ${deliveredNow} (destination)`);
    detail('destination tx', after.destination_tx_hash);

    const ok =
      code === 0 &&
      before.status === 'queued' &&
      after.status === 'delivered' &&
      deliveredNow &&
      followed.some((f) => f.outcome === 'answer');
    step(
      ok
        ? 'Delivered: the message went queued → delivered and the destination Mailbox says delivered(id) = true'
        : 'Unexpected outcome: see above',
    );
    return ok ? 0 : 1;
  } catch (error) {
    console.error(`\ndemo failed: ${(error as Error).stack ?? error}`);
    if (server) console.error(`\nserver output:\n${server.output()}`);
    if (worker) console.error(`\nworker output:\n${worker.output()}`);
    return 1;
  } finally {
    step('Stopping the relayer server and both anvil nodes');
    await worker?.stop().catch(() => null);
    const code = await server?.stop().catch(() => null);
    if (server) detail('relayer-server exit', code);
    await two?.stop();
    detail('anvil', 'stopped');
    removeDir();
  }
}

process.exitCode = await main();
