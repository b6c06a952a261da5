/**
 * The signers' state, for an operator (docs/workers.md#signers): per destination chain and signer,
 * the node's latest and pending nonce, who holds the signer lease, and every open slot of the
 * journal (nonce, message, its broadcasts with their fees, age) with what the node says of it. A
 * slot whose transactions the node holds none of, at or above the nonce the chain expects next, is
 * `missing`: every later nonce of the signer waits behind it (the signer is stuck there).
 * `relayer-worker signers` prints it; the worker's ops port serves it as `GET /signers`.
 */
import { parseTransaction, type Address, type Hash, type Hex, type PublicClient } from 'viem';
import { systemClock, type Clock } from '../../clock.ts';
import type { JournalEntry, Outbox } from '../../outbox/index.ts';
import type { RelayerConfig } from '../../types.ts';
import { chainClient } from '../chain/client.ts';

export type SignerViewOutbox = Pick<Outbox, 'openBroadcasts'> & Partial<Pick<Outbox, 'signerLeases'>>;

export interface SignerViewChain {
  name: string;
  chainId: number;
  publicClient: PublicClient;
}

export interface BroadcastView {
  hash: string;
  /** Wei, as decimal text (null when the journal's bytes are not an EIP-1559 transaction). */
  maxFeePerGas: string | null;
  maxPriorityFeePerGas: string | null;
  /** When it was recorded (ISO 8601). */
  sentAt: string;
  /** Whether the node returns it (eth_getTransactionByHash); null when it did not answer. */
  known: boolean | null;
}

/**
 * `mined`: the nonce is used on chain (the worker settles the slot at its next look); `pending`:
 * the node holds one of its transactions; `missing`: it holds none (stuck when at or above
 * `latest`); `unknown`: the node did not answer.
 */
export type NonceSlotNodeState = 'mined' | 'pending' | 'missing' | 'unknown';

export interface NonceSlotView {
  nonce: number;
  messageId: string;
  state: NonceSlotNodeState;
  /** Seconds since its first broadcast was recorded. */
  ageSeconds: number;
  broadcasts: BroadcastView[];
}

export interface SignerView {
  chain: string;
  chainId: number;
  signer: string;
  /** eth_getTransactionCount latest and pending; null when the node did not answer. */
  latest: number | null;
  pending: number | null;
  lease: { holder: string; expiresAt: string; live: boolean } | null;
  /** The lowest open nonce at or above `latest` whose transactions the node holds none of; null when none. */
  stuckAt: number | null;
  slots: NonceSlotView[];
}

const iso = (ms: number) => new Date(ms).toISOString();

async function answer<T>(call: () => Promise<T>): Promise<T | null> {
  try {
    return await call();
  } catch {
    return null;
  }
}

function fees(raw: string): { maxFeePerGas: string | null; maxPriorityFeePerGas: string | null } {
  try {
    const tx = parseTransaction(raw as Hex);
    return {
      maxFeePerGas: tx.maxFeePerGas?.toString() ?? tx.gasPrice?.toString() ?? null,
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas?.toString() ?? null,
    };
  } catch {
    return { maxFeePerGas: null, maxPriorityFeePerGas: null };
  }
}

async function viewOf(
  chain: SignerViewChain,
  signer: string,
  entries: JournalEntry[],
  lease: SignerView['lease'],
  now: number,
): Promise<SignerView> {
  const client = chain.publicClient;
  const address = signer as Address;
  const [latest, pending] = await Promise.all([
    answer(() => client.getTransactionCount({ address, blockTag: 'latest' })),
    answer(() => client.getTransactionCount({ address, blockTag: 'pending' })),
  ]);
  const byNonce = new Map<number, JournalEntry[]>();
  for (const e of entries) byNonce.set(e.nonce, [...(byNonce.get(e.nonce) ?? []), e]);
  const slots: NonceSlotView[] = [];
  for (const [nonce, list] of [...byNonce].sort(([a], [b]) => a - b)) {
    const broadcasts: BroadcastView[] = await Promise.all(
      list.map(async (e) => {
        const known = await answer(
          async () => (await client.request({ method: 'eth_getTransactionByHash', params: [e.hash as Hash] })) !== null,
        );
        return { hash: e.hash, ...fees(e.raw), sentAt: iso(e.sentAt), known };
      }),
    );
    const state: NonceSlotNodeState =
      latest !== null && nonce < latest
        ? 'mined'
        : broadcasts.some((b) => b.known)
          ? 'pending'
          : broadcasts.every((b) => b.known === false)
            ? 'missing'
            : 'unknown';
    slots.push({
      nonce,
      messageId: list[0].messageId,
      state,
      ageSeconds: Math.max(0, Math.floor((now - Math.min(...list.map((e) => e.sentAt))) / 1000)),
      broadcasts,
    });
  }
  const stuck = slots.find((s) => s.state === 'missing' && latest !== null && s.nonce >= latest);
  return {
    chain: chain.name,
    chainId: chain.chainId,
    signer,
    latest,
    pending,
    lease,
    stuckAt: stuck?.nonce ?? null,
    slots,
  };
}

/**
 * Every (chain, signer) to show: the `signers` given (the worker's own) and every signer with a
 * lease on the chain (whoever ran with it), each with its open journal slots and the node's view.
 */
export async function signerView(o: {
  outbox: SignerViewOutbox;
  chains: readonly SignerViewChain[];
  signers?: readonly string[];
  now: number;
}): Promise<SignerView[]> {
  const leases = o.outbox.signerLeases ? await o.outbox.signerLeases() : [];
  const views: SignerView[] = [];
  for (const chain of o.chains) {
    const mine = leases.filter((l) => l.chainId === chain.chainId);
    const signers = new Set([...(o.signers ?? []).map((s) => s.toLowerCase()), ...mine.map((l) => l.signer)]);
    for (const signer of [...signers].sort()) {
      const row = mine.find((l) => l.signer === signer);
      const lease = row ? { holder: row.holder, expiresAt: iso(row.expiresAt), live: row.expiresAt > o.now } : null;
      const entries = await o.outbox.openBroadcasts({ chainId: chain.chainId, signer });
      views.push(await viewOf(chain, signer, entries, lease, o.now));
    }
  }
  return views;
}

const gwei = (wei: string | null) => (wei === null ? '?' : `${Number(BigInt(wei)) / 1e9} gwei`);
const count = (n: number | null) => (n === null ? '? (no answer)' : String(n));
const SLOT_WORDS: Record<NonceSlotNodeState, string> = {
  mined: 'nonce used on chain (settled at the next look)',
  pending: 'pending in the node',
  missing: 'the node holds none of its transactions',
  unknown: 'the node did not answer',
};

/** The view as text: a line per signer, then per open slot and broadcast; STUCK marks where the chain waits. */
export function formatSignerView(views: readonly SignerView[]): string {
  let text = '';
  for (const v of views) {
    const lease = v.lease
      ? `lease ${v.lease.live ? 'held' : 'lapsed'} by ${JSON.stringify(v.lease.holder)} until ${v.lease.expiresAt}`
      : 'no lease';
    text += `${v.chain} (chain ${v.chainId}) signer ${v.signer}: latest nonce ${count(v.latest)}, pending ${count(v.pending)}, `;
    text += `${v.slots.length} open slot${v.slots.length === 1 ? '' : 's'}, ${lease}`;
    text += v.stuckAt === null ? '\n' : `\n  STUCK at nonce ${v.stuckAt}: later transactions wait behind it\n`;
    for (const s of v.slots) {
      text += `  nonce ${s.nonce}  ${s.state}${s.nonce === v.stuckAt ? ' (STUCK)' : ''}: ${SLOT_WORDS[s.state]}  message ${s.messageId}  age ${s.ageSeconds}s\n`;
      for (const b of s.broadcasts) {
        const known = b.known === null ? 'no answer' : b.known ? 'known' : 'not known';
        text += `    ${b.hash}  maxFee ${gwei(b.maxFeePerGas)}  tip ${gwei(b.maxPriorityFeePerGas)}  sent ${b.sentAt}  node: ${known}\n`;
      }
    }
  }
  return text;
}

/**
 * `relayer-worker signers` (docs/workers.md#signers): the view of every relay chain's signers from
 * the config's nodes and the outbox, without a key: the signers that held a lease there and
 * `signers` (addresses) besides.
 */
export async function reportSigners(o: {
  config: RelayerConfig;
  outbox: SignerViewOutbox;
  signers?: readonly string[];
  clock?: Clock;
}): Promise<SignerView[]> {
  const chains: SignerViewChain[] = [];
  for (const name of o.config.relayChains) {
    const { publicClient, viemChain } = await chainClient(o.config.chains[name]);
    chains.push({ name, chainId: viemChain.id, publicClient });
  }
  return signerView({ outbox: o.outbox, chains, signers: o.signers, now: (o.clock ?? systemClock).now() });
}
