/**
 * `npm run devnet:send [-- --revert] [--dir DIR]`: one CCTP V2 transfer through the running
 * `npm run devnet` (docs/devnet.md): TokenBridgeCctpV2.transferRemote on the origin chain, POST
 * /relay to the devnet's relayer-server, then GET /relay/{id} until the message is delivered or
 * failed; prints the message id, each status and the final one. With --revert the transfer's
 * Hyperlane recipient is the devnet's contract that always reverts (the origin router's remote
 * router is pointed there for this one transfer), so the worker's attempts fail until it gives up:
 * `failed`, then `relayer-worker requeue` and `list` have something to show.
 *
 * Exit 0 when the message ends as expected (delivered; failed with --revert), 1 otherwise, 2 when
 * there is no devnet to send to.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Address, Hash } from 'viem';
import { redirectRemoteRouter, sendBridgeTransferMessage } from '../test/helpers/chain/cctp-bridge.ts';
import { connectChain } from '../test/helpers/chain/clients.ts';

const USAGE = `Usage: npm run devnet:send [-- --revert | --multisig] [--dir DIR] [--timeout SECONDS]

Sends one transfer through the running npm run devnet (its DIR, default .devnet), relays it with
POST /relay and follows GET /relay/{id} until it is delivered, or failed with --revert (a recipient
that always reverts). With --multisig the transfer's recipient is guarded by the mainnet ISM shape
(aggregation, routing, multisig) and delivered with the devnet validators' signatures.
`;

interface DevnetState {
  api: string;
  config: string;
  origin: { name: string; chainId: number; rpc: string; mailbox: Address; router: Address; token: Address };
  destination: { domain: number; router: Address; reverter: Address; multisig: Address };
}

interface MessageStatus {
  status: string;
  attempts: number;
  last_error: string | null;
  destination_tx_hash: string | null;
}

function options() {
  try {
    const { values } = parseArgs({
      options: {
        revert: { type: 'boolean' },
        multisig: { type: 'boolean' },
        dir: { type: 'string' },
        timeout: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    const timeout = Number(values.timeout ?? 120);
    if (!Number.isInteger(timeout) || timeout < 1) throw new Error('--timeout must be a positive integer (seconds)');
    if (values.revert && values.multisig) throw new Error('--revert and --multisig exclude each other');
    const multisig = values.multisig === true;
    return {
      revert: values.revert === true,
      multisig,
      dir: resolve(values.dir ?? '.devnet'),
      timeoutMs: timeout * 1000,
    };
  } catch (error) {
    process.stderr.write(`devnet:send: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
}

function readState(dir: string): DevnetState {
  try {
    return JSON.parse(readFileSync(resolve(dir, 'devnet.json'), 'utf8')) as DevnetState;
  } catch {
    process.stderr.write(`devnet:send: no devnet in ${dir} (start one with npm run devnet, and keep it running)\n`);
    process.exit(2);
  }
}

async function main(): Promise<number> {
  const { revert, multisig, dir, timeoutMs } = options();
  const state = readState(dir);
  if (
    !(await fetch(`${state.api}/relay`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    process.stderr.write(
      `devnet:send: the devnet's relayer-server (${state.api}) does not answer: is npm run devnet running?\n`,
    );
    return 2;
  }
  const chain = connectChain(state.origin.rpc, state.origin.chainId);
  const route = { origin: { router: state.origin.router, token: state.origin.token } };
  const transfer = {
    destination: state.destination.domain,
    recipient: '0x000000000000000000000000000000000000dEaD' as Address,
    amount: 1_000_000n,
  };
  let sent: { hash: Hash; id: Hash };
  if (revert || multisig) {
    const restore = await redirectRemoteRouter(
      chain,
      state.origin.router,
      state.destination.domain,
      multisig ? state.destination.multisig : state.destination.reverter,
      state.destination.router,
    );
    try {
      sent = await sendBridgeTransferMessage(chain, route as never, state.origin.mailbox, transfer);
    } finally {
      await restore();
    }
  } else {
    sent = await sendBridgeTransferMessage(chain, route as never, state.origin.mailbox, transfer);
  }
  process.stdout.write(
    `sent 1 USDC from ${state.origin.name}: tx ${sent.hash}${revert ? ' (to a recipient that always reverts)' : multisig ? ' (to a recipient behind the mainnet ISM shape)' : ''}\n`,
  );

  const res = await fetch(`${state.api}/relay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ origin_chain: state.origin.name, tx_hash: sent.hash }),
  });
  const body = (await res.json()) as { messages?: { message_id: string }[]; reason?: string; message?: string };
  if (res.status !== 200 || body.messages?.[0]?.message_id !== sent.id) {
    process.stderr.write(`devnet:send: POST /relay answered ${res.status} ${JSON.stringify(body)}\n`);
    return 1;
  }
  process.stdout.write(`relayed: message ${sent.id}\n`);

  const deadline = Date.now() + timeoutMs;
  let last = '';
  let message: MessageStatus;
  for (;;) {
    message = (await (await fetch(`${state.api}/relay/${sent.id}`)).json()) as MessageStatus;
    const line = `${message.status} (attempts ${message.attempts}${message.last_error ? `, last_error: ${message.last_error}` : ''})`;
    if (line !== last) process.stdout.write(`  ${line}\n`);
    last = line;
    if (message.status === 'delivered' || message.status === 'failed') break;
    if (Date.now() > deadline) {
      process.stderr.write(`devnet:send: still ${message.status} after ${timeoutMs / 1000} s\n`);
      return 1;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  process.stdout.write(`message ${sent.id}: ${message.status}\n`);
  if (message.status === 'delivered') process.stdout.write(`destination tx ${message.destination_tx_hash}\n`);
  else
    process.stdout.write(
      `put it back in the queue: npm run worker -- requeue ${sent.id} --config ${state.config}\n` +
        `or every failed one:      npm run worker -- requeue --status failed --config ${state.config}\n`,
    );
  return message.status === (revert ? 'failed' : 'delivered') ? 0 : 1;
}

process.exitCode = await main();
