/**
 * `npm run demo`: the whole fast-relay path on this machine, in one command, for a new user.
 * Starts anvil, deploys the real Hyperlane Mailbox and a CCTP V2 transmitter stand-in, sends one
 * USDC-style transfer, starts bin/relayer-server.ts against the node, relays the transaction with
 * an HTTP call and prints each step. Everything it started is stopped at the end, on error and on
 * Ctrl-C (test/e2e/processes.ts).
 */
import { pad, type Address } from 'viem';
import { startLocalChain, ORIGIN_DOMAIN, type LocalChain } from '../test/e2e/fixture.ts';
import { mailboxLogs } from '../test/e2e/hyperlane.ts';
import { launchRelayerServer, type RelayerProcess } from '../test/helpers/server.ts';
import { sendTransfer } from '../test/e2e/stand-ins.ts';

const DESTINATION_DOMAIN = 2;
const RECIPIENT: Address = '0x000000000000000000000000000000000000dEaD';
const AMOUNT = 1_000_000n; // 1 USDC (6 decimals)

let stepNumber = 0;
function step(text: string): void {
  stepNumber++;
  console.log(`\n[${stepNumber}] ${text}`);
}
function detail(label: string, value: unknown): void {
  console.log(`    ${label.padEnd(22)} ${value}`);
}

async function main(): Promise<number> {
  let local: LocalChain | undefined;
  let server: RelayerProcess | undefined;
  try {
    step('Starting anvil (a local EVM node) and deploying contracts');
    local = await startLocalChain();
    detail('anvil JSON-RPC', local.anvil.rpcUrl);
    detail('Mailbox (domain 1)', local.hyperlane.mailbox);
    detail('  default ISM', `${local.hyperlane.noopIsm} (NoopIsm)`);
    detail('  default hook', `${local.hyperlane.merkleTreeHook} (MerkleTreeHook)`);
    detail('  required hook', `${local.hyperlane.testPostDispatchHook} (TestPostDispatchHook, fee 0)`);
    detail('CCTP V2 transmitter', `${local.standIns.transmitter} (stand-in)`);

    step(`Sending a transfer of ${AMOUNT} (1 USDC) from domain ${ORIGIN_DOMAIN} to domain ${DESTINATION_DOMAIN}`);
    const hash = await sendTransfer(local.chain, local.standIns, { destination: DESTINATION_DOMAIN, recipient: RECIPIENT, amount: AMOUNT });
    const receipt = await local.chain.receipt(hash);
    const { ids } = mailboxLogs(receipt, local.hyperlane.mailbox);
    detail('tx hash', hash);
    detail('block', `${receipt.blockNumber} (status ${receipt.status}, ${receipt.logs.length} logs)`);
    detail('Mailbox DispatchId', ids.join(', '));

    step('Starting bin/relayer-server.ts pointed at anvil');
    const config = {
      chains: {
        anvil1: {
          domainId: ORIGIN_DOMAIN,
          chainId: 31337,
          mailbox: local.hyperlane.mailbox,
          cctpMessageTransmitter: local.standIns.transmitter,
          rpcUrls: [{ http: local.anvil.rpcUrl }],
        },
        // The destination only has to be configured: the demo relays, it does not deliver.
        dest2: { domainId: DESTINATION_DOMAIN, chainId: 2, mailbox: pad('0x02', { size: 20 }), rpcUrls: [{ http: 'http://127.0.0.1:1' }] },
      },
      relayChains: ['dest2'],
      db: ':memory:',
    };
    server = await launchRelayerServer(['--host', '127.0.0.1', '--db', ':memory:'], { config });
    detail('relayer API', server.url);

    step('Relaying the transaction: POST /relay');
    const request = { origin_chain: 'anvil1', tx_hash: hash };
    console.log(`    curl -s -X POST ${server.url}/relay -H 'content-type: application/json' -d '${JSON.stringify(request)}'`);
    const res = await fetch(`${server.url}/relay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const body = (await res.json()) as { messages?: { message_id: string }[] };
    detail('HTTP status', res.status);
    console.log(JSON.stringify(body, null, 2).replace(/^/gm, '    '));

    const accepted = body.messages?.map((m) => m.message_id) ?? [];
    const matches = res.status === 200 && accepted.length === ids.length && accepted.every((id, i) => id === ids[i].toLowerCase());
    step(matches ? 'Accepted: the message id is the one the Mailbox emitted (DispatchId)' : 'Unexpected answer: see above');
    return matches ? 0 : 1;
  } catch (error) {
    console.error(`\ndemo failed: ${(error as Error).stack ?? error}`);
    if (server) console.error(`\nserver output:\n${server.output()}`);
    return 1;
  } finally {
    step('Stopping the relayer server and anvil');
    const code = await server?.stop().catch(() => null);
    if (server) detail('relayer-server exit', code);
    await local?.anvil.stop();
    detail('anvil', 'stopped');
  }
}

process.exitCode = await main();
