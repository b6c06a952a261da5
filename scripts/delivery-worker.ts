/**
 * `node scripts/delivery-worker.ts --config relayer.json --db relayer.db [--once]`: an example
 * delivery worker for local nodes (anvil). It opens the relayer's own store, the SQLite file or
 * the PostgreSQL database given as --db (the server exposes no consumer endpoint; SQLite in WAL
 * mode lets both processes use the file, and claims are transactions on either, so several
 * workers never hold the same message), reads the chains from the relayer's config file, and
 * delivers with `Mailbox.process` (scripts/delivery/worker.ts).
 *
 * It signs with the destination node's first unlocked account (anvil's dev account), or with
 * the key in DELIVERY_PRIVATE_KEY. It builds metadata for NoopIsm/TestIsm recipients and for
 * Hyperlane's CCTP ISM from a local stand-in of Circle's attestation service, so it is a
 * template for a production worker, not one.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createPublicClient, createWalletClient, defineChain, http, type Address, type Chain as ViemChain, type Hex, type PublicClient, type Tokens, type Transport } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { isPostgresUrl, openPostgresFromUrl, redactDatabaseUrl } from '../bin/postgres.ts';
import { parseConfig } from '../lib/config.ts';
import { silentLogger } from '../lib/log.ts';
import { openStore } from '../lib/sqlite/index.ts';
import type { ChainConfig } from '../lib/types.ts';
import type { Destination } from './delivery/destination.ts';
import { createDeliveryWorker, type Origin } from './delivery/worker.ts';

const HELP = `usage: node scripts/delivery-worker.ts --config FILE [--db FILE] [--once] [--lease-ms N] [--poll-ms N]
  --config FILE   the relayer-server config (chains, RPC URLs, mailboxes, CCTP transmitters)
  --db FILE|URL   the relayer-server's database: its SQLite file or its postgres:// URL
                  (default: the config's "db")
  --once          claim one batch, deliver it and exit (default: keep polling)
  --lease-ms N    how long a claim holds a message (default 60000)
  --poll-ms N     wait between empty claims (default 1000)`;

const flags = parseArgs({
  options: {
    config: { type: 'string' },
    db: { type: 'string' },
    once: { type: 'boolean' },
    'lease-ms': { type: 'string' },
    'poll-ms': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
}).values;

if (flags.help || !flags.config) {
  console.log(HELP);
  process.exit(flags.help ? 0 : 2);
}

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) {
    console.error(`--${name} must be a positive integer`);
    process.exit(2);
  }
  return n;
}

const config = parseConfig(JSON.parse(readFileSync(flags.config, 'utf8')));
const leaseMs = positive('lease-ms', flags['lease-ms'], 60_000);
const pollMs = positive('poll-ms', flags['poll-ms'], 1_000);

/** viem clients for a chain; its chain id from the config, else asked of the node (viem checks it before each write). */
async function clientOf(chain: ChainConfig): Promise<{ publicClient: PublicClient; viemChain: ViemChain; rpcUrl: string }> {
  const rpcUrl = chain.rpcUrls[0];
  const transport = http(rpcUrl, { retryCount: 0 });
  const id = chain.chainId ?? (await createPublicClient({ transport }).getChainId());
  const viemChain = defineChain({
    id,
    name: chain.name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  // Created as the general PublicClient type: tsc does not have to prove the specific one assignable to it (seconds).
  const publicClient = createPublicClient<Transport, ViemChain | undefined, undefined, undefined, Tokens | undefined>({ chain: viemChain, transport, pollingInterval: 100 });
  return { publicClient, viemChain, rpcUrl };
}

async function signerFor(publicClient: PublicClient) {
  const key = process.env.DELIVERY_PRIVATE_KEY;
  if (key) return privateKeyToAccount(key as Hex);
  const accounts = (await publicClient.request({ method: 'eth_accounts' } as never)) as Address[];
  if (accounts.length === 0) throw new Error('the destination node has no unlocked account: set DELIVERY_PRIVATE_KEY');
  return accounts[0];
}

const destinations = new Map<number, Destination>();
const origins = new Map<string, Origin>();
for (const chain of Object.values(config.chains)) {
  const { publicClient, viemChain, rpcUrl } = await clientOf(chain);
  origins.set(chain.name, { publicClient, transmitters: chain.cctpMessageTransmitters });
  if (!config.relayChains.includes(chain.name)) continue;
  const account = await signerFor(publicClient);
  const wallet = createWalletClient({ chain: viemChain, transport: http(rpcUrl, { retryCount: 0 }), account });
  destinations.set(chain.domainId, { domain: chain.domainId, mailbox: chain.mailbox as Address, publicClient, wallet, account, chain: viemChain });
}

const dbPath = flags.db ?? config.db;
// The same store the server opens for this --db: a SQLite file, or a postgres:// URL (bin/postgres.ts).
const store = isPostgresUrl(dbPath)
  ? await openPostgresFromUrl(dbPath, config.relayApi, silentLogger).then((opened) => ({ outbox: opened.store.outbox, close: opened.close }))
  : await openStore(dbPath);
const worker = createDeliveryWorker({
  outbox: store.outbox,
  destinations,
  origins,
  leaseMs,
  log: (line) => console.log(`${new Date().toISOString()} ${line}`),
});
console.log(`delivery worker: ${redactDatabaseUrl(dbPath)}, destinations ${[...destinations.keys()].join(', ') || 'none'}, lease ${leaseMs} ms`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => (stopping = true));
try {
  while (!stopping) {
    const results = await worker.runOnce();
    if (flags.once) break;
    if (results.length === 0) await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
} finally {
  await store.close();
}
