/**
 * The chain as the judge of a delivery run through the lying proxy (test/helpers/chain/lying-rpc.ts,
 * docs/transactions.md#nonces, #gaps): every signed transaction that reached the node decoded back to
 * its message (or recognised as a zero-value self-transfer filling a gap), the signer's pool, and
 * the judgement itself.
 */
import assert from 'node:assert/strict';
import {
  decodeFunctionData,
  keccak256,
  parseTransaction,
  recoverTransactionAddress,
  type Address,
  type Hash,
  type Hex,
  type TransactionSerialized,
} from 'viem';
import type { OutboxMessage } from '../../../lib/outbox/index.ts';
import type { SqliteStore } from '../../../lib/sqlite/index.ts';
import { MAILBOX_ABI } from '../../../lib/worker/ism/metadata.ts';
import { processTransactions } from './hyperlane.ts';
import type { LyingRpc } from './lying-rpc.ts';
import type { WorkerBench } from './worker-chain.ts';

export interface Sent {
  /** The message it delivers; undefined for a self-transfer. */
  id: string | undefined;
  nonce: number;
  hash: Hash;
}

/** Each signed transaction of `signer` that reached the node: the message it delivers, its nonce and hash. */
export async function sends(proxy: LyingRpc, signer: Address): Promise<Sent[]> {
  const out: Sent[] = [];
  for (const raw of proxy.forwarded()) {
    const from = await recoverTransactionAddress({ serializedTransaction: raw as TransactionSerialized });
    if (from.toLowerCase() !== signer.toLowerCase()) continue;
    const tx = parseTransaction(raw);
    const selfTransfer = tx.to?.toLowerCase() === signer.toLowerCase() && (tx.data ?? '0x') === '0x' && !tx.value;
    const id = selfTransfer
      ? undefined
      : keccak256(decodeFunctionData({ abi: MAILBOX_ABI, data: tx.data as Hex }).args?.[1] as Hex);
    out.push({ id, nonce: tx.nonce ?? -1, hash: keccak256(raw) });
  }
  return out;
}

export async function poolOf(
  bench: WorkerBench,
  address: Address,
): Promise<Record<string, { hash: string; maxFeePerGas: string }>> {
  const content = (await bench.chain.rpc('txpool_content')) as {
    pending: Record<string, Record<string, { hash: string; maxFeePerGas: string }>>;
    queued: Record<string, Record<string, { hash: string; maxFeePerGas: string }>>;
  };
  const of = (group: typeof content.pending) =>
    Object.entries(group).find(([from]) => from.toLowerCase() === address.toLowerCase())?.[1] ?? {};
  return { ...of(content.queued), ...of(content.pending) };
}

/**
 * The chain's judgement: every message delivered once and recorded with that transaction; every
 * transaction of the signer that reached the node carries one of these messages (or is a
 * self-transfer filling a gap), each message under one nonce; none of them reverted; the signer
 * used exactly one nonce per message and per mined self-transfer, with nothing left in its pool and
 * no open slot in the journal. Returns the nonces the mined self-transfers used.
 */
export async function judge(
  bench: WorkerBench,
  proxy: LyingRpc,
  store: SqliteStore,
  messages: readonly OutboxMessage[],
  signer: Address,
): Promise<number[]> {
  const sent = await sends(proxy, signer);
  const byId = new Map<string, Set<number>>();
  for (const s of sent) if (s.id) byId.set(s.id, (byId.get(s.id) ?? new Set()).add(s.nonce));
  for (const m of messages) {
    const record = await store.outbox.get(m.id);
    const onChain = await processTransactions(bench.chain, bench.destination.mailbox, m.id);
    assert.equal(onChain.length, 1, `${m.id} delivered once on chain`);
    assert.equal(record?.status, 'delivered');
    assert.equal(record?.destinationTxHash, onChain[0], 'recorded with the transaction that delivered it');
    const nonces = [...(byId.get(m.id) ?? [])];
    assert.equal(nonces.length, 1, `${m.id} sent under one nonce: ${nonces}`);
  }
  const fillers: number[] = [];
  for (const s of sent) {
    const receipt = await bench.chain.publicClient.getTransactionReceipt({ hash: s.hash }).catch(() => undefined);
    if (!receipt) continue;
    assert.equal(receipt.status, 'success', `no reverted transaction (${s.hash})`);
    if (s.id === undefined) fillers.push(s.nonce);
  }
  assert.equal(
    await bench.chain.publicClient.getTransactionCount({ address: signer }),
    messages.length + fillers.length,
    'one nonce per message (and per self-transfer filling a gap), none skipped',
  );
  assert.deepEqual(await poolOf(bench, signer), {}, 'the pool is empty');
  assert.deepEqual(
    await store.outbox.openBroadcasts({ chainId: bench.anvil.chainId, signer: signer.toLowerCase() }),
    [],
    'the journal is settled',
  );
  return fillers;
}
