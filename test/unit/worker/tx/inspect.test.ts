/**
 * A look at a journaled slot of another signer (lib/worker/tx/inspect.ts,
 * docs/transactions.md#the-transaction-journal): mined (newest first), recorded with the gas and
 * fees of the transaction that was mined; the nonce used by a transaction not in the slot,
 * closed as dropped, unless one of its own shows up mined on a second look; otherwise open,
 * with its newest transaction given to the node again when the node lost it. The node is a
 * scripted JSON-RPC transport, the transactions signed by viem.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPublicClient, custom, keccak256, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { JournalEntry } from '../../../../lib/worker/tx/journal.ts';
import { inspectNonceSlot } from '../../../../lib/worker/tx/inspect.ts';
import { settlingJournal } from '../../../helpers/fakes/journal.ts';
import { rpcReceipt } from '../../../helpers/fixtures/builders.ts';

const other = privateKeyToAccount(`0x${'59'.repeat(32)}`);
const SIGNER = other.address.toLowerCase();
const ID = `0x${'1d'.repeat(32)}`;

async function signed(maxFeePerGas: bigint, gas: bigint, messageId = ID, sentAt = 0): Promise<JournalEntry> {
  const raw = await other.signTransaction({
    chainId: 31337,
    type: 'eip1559',
    to: `0x${'66'.repeat(20)}`,
    data: '0x1234',
    gas,
    maxFeePerGas,
    maxPriorityFeePerGas: 1n,
    nonce: 7,
  });
  return { messageId, chainId: 31337, signer: SIGNER, nonce: 7, hash: keccak256(raw), raw, sentAt };
}

/**
 * A node: `mined` maps a hash to its receipt (status 0x1 or 0x0, a gasUsed); `count` is the signer's
 * mined count; `pool` the hashes it holds; `asked` every request with its first parameter.
 */
function node(o: {
  mined?: Record<string, { status: '0x1' | '0x0'; gasUsed: bigint; price: bigint }>;
  count: number;
  pool?: Set<string>;
  minedOnSecondLook?: string;
  lookupFails?: boolean;
}) {
  const asked: Array<[string, unknown]> = [];
  let looks = 0;
  const client = createPublicClient({
    transport: custom(
      {
        async request({ method, params }: { method: string; params: unknown[] }) {
          asked.push([method, params?.[0]]);
          switch (method) {
            case 'eth_getTransactionReceipt': {
              const hash = params[0] as string;
              if (hash === o.minedOnSecondLook) {
                looks++;
                if (looks > 1) return rpcReceipt(hash, [], '0x1');
              }
              const m = o.mined?.[hash];
              if (!m) return null;
              return {
                ...rpcReceipt(upper(hash), [], m.status),
                gasUsed: `0x${m.gasUsed.toString(16)}`,
                effectiveGasPrice: `0x${m.price.toString(16)}`,
              };
            }
            case 'eth_getTransactionCount':
              assert.deepEqual(params, [SIGNER, 'latest']);
              return `0x${o.count.toString(16)}`;
            case 'eth_getTransactionByHash':
              if (o.lookupFails) throw new Error('node down');
              return o.pool?.has(params[0] as string) ? tx(params[0] as string) : null;
            case 'eth_sendRawTransaction':
              o.pool?.add(keccak256(params[0] as `0x${string}`));
              return keccak256(params[0] as `0x${string}`);
            default:
              throw new Error(`unexpected ${method}`);
          }
        },
      },
      { retryCount: 0 },
    ),
  }) as PublicClient;
  return { client, asked };
}

/** The node spells the receipt's hash in upper case: the journal's entry is still found (lower case). */
const upper = (hash: string) => hash.toUpperCase().replace('0X', '0x');

/** A pending transaction as a node answers eth_getTransactionByHash. */
const tx = (hash: string) => ({
  hash,
  nonce: '0x7',
  blockHash: null,
  blockNumber: null,
  transactionIndex: null,
  from: SIGNER,
  to: `0x${'66'.repeat(20)}`,
  value: '0x0',
  gas: '0x5208',
  input: '0x1234',
  type: '0x2',
  maxFeePerGas: '0x1',
  maxPriorityFeePerGas: '0x1',
  chainId: '0x7a69',
  v: '0x0',
  r: `0x${'01'.repeat(32)}`,
  s: `0x${'01'.repeat(32)}`,
});

function journal() {
  const { journal: j, writes } = settlingJournal('inspect');
  return { j, writes };
}

const SLOT = { chainId: 31337, signer: SIGNER, nonce: 7 };

describe("inspect: another signer's journaled slot (docs/transactions.md#the-transaction-journal)", () => {
  test('the older transaction mined reverted: its own gas limit and fee bound the spend; the slot closed with its hash', async () => {
    const older = await signed(20n, 50_000n);
    const newer = await signed(40n, 90_000n);
    const { client, asked } = node({
      mined: { [older.hash]: { status: '0x0', gasUsed: 80_000n, price: 35n } },
      count: 8,
    });
    const { j, writes } = journal();
    assert.deepEqual(await inspectNonceSlot(client, j, [older, newer]), {
      state: 'mined',
      hash: upper(older.hash),
      status: 'reverted',
    });
    // 80 000 by the node's word, at most the 50 000 signed; 35 wei by its word, at most the 20 signed.
    assert.deepEqual(writes, [
      ['spent', { messageId: ID, txHash: older.hash, gasUsed: 50_000n, cost: 50_000n * 20n }],
      ['close', SLOT, { outcome: 'mined', hash: older.hash }],
    ]);
    assert.deepEqual(
      asked.map(([m, p]) => [m, p]),
      [
        ['eth_getTransactionReceipt', newer.hash],
        ['eth_getTransactionReceipt', older.hash],
      ],
      'the newest first; nothing else asked',
    );
  });

  test('the newest mined and delivered: one receipt asked, the slot closed, nothing spent', async () => {
    const older = await signed(20n, 50_000n);
    const newer = await signed(40n, 90_000n);
    const { client, asked } = node({
      mined: { [newer.hash]: { status: '0x1', gasUsed: 21_000n, price: 30n } },
      count: 8,
    });
    const { j, writes } = journal();
    assert.deepEqual(await inspectNonceSlot(client, j, [older, newer]), {
      state: 'mined',
      hash: upper(newer.hash),
      status: 'success',
    });
    assert.deepEqual(writes, [['close', SLOT, { outcome: 'mined', hash: newer.hash }]]);
    assert.equal(asked.length, 1);
  });

  test('the newest mined reverted: the spend bounded by the newest one’s gas limit and fee, not the first one’s', async () => {
    const older = await signed(20n, 50_000n);
    const newer = await signed(40n, 90_000n);
    const { client } = node({ mined: { [newer.hash]: { status: '0x0', gasUsed: 80_000n, price: 35n } }, count: 8 });
    const { j, writes } = journal();
    await inspectNonceSlot(client, j, [older, newer]);
    assert.deepEqual(writes, [
      ['spent', { messageId: ID, txHash: newer.hash, gasUsed: 80_000n, cost: 80_000n * 35n }],
      ['close', SLOT, { outcome: 'mined', hash: newer.hash }],
    ]);
  });

  test('a send without a message (journaled under its first hash): mined reverted, no gas book entry', async () => {
    const first = await signed(20n, 50_000n);
    const lone = { ...first, messageId: first.hash };
    const { client } = node({ mined: { [first.hash]: { status: '0x0', gasUsed: 1_000n, price: 1n } }, count: 8 });
    const { j, writes } = journal();
    await inspectNonceSlot(client, j, [lone]);
    assert.deepEqual(writes, [['close', SLOT, { outcome: 'mined', hash: first.hash }]]);
  });

  test('the nonce used by another transaction, none of the slot mined: closed as dropped', async () => {
    const only = await signed(20n, 50_000n);
    const { client } = node({ count: 8 });
    const { j, writes } = journal();
    assert.deepEqual(await inspectNonceSlot(client, j, [only]), { state: 'dropped' });
    assert.deepEqual(writes, [['close', SLOT, { outcome: 'dropped' }]]);
  });

  test('the nonce used, and the slot’s own transaction mined on the second look (a block between): not dropped', async () => {
    const only = await signed(20n, 50_000n);
    const { client } = node({ count: 8, minedOnSecondLook: only.hash, pool: new Set([only.hash]) });
    const { j, writes } = journal();
    assert.deepEqual(await inspectNonceSlot(client, j, [only]), { state: 'open', nonce: 7, hash: only.hash });
    assert.deepEqual(writes, [], 'nothing closed: the next look finds it mined');
  });

  test('not used yet: open; the newest given to the node again only when the node says it lost it', async () => {
    const older = await signed(20n, 50_000n);
    const newer = await signed(40n, 90_000n);
    const lost = node({ count: 7, pool: new Set() });
    const { j, writes } = journal();
    assert.deepEqual(await inspectNonceSlot(lost.client, j, [older, newer]), {
      state: 'open',
      nonce: 7,
      hash: newer.hash,
    });
    assert.deepEqual(
      lost.asked.filter(([m]) => m === 'eth_sendRawTransaction'),
      [['eth_sendRawTransaction', newer.raw]],
    );
    assert.deepEqual(writes, []);
    for (const held of [node({ count: 7, pool: new Set([newer.hash]) }), node({ count: 7, lookupFails: true })]) {
      assert.deepEqual(await inspectNonceSlot(held.client, j, [older, newer]), {
        state: 'open',
        nonce: 7,
        hash: newer.hash,
      });
      assert.deepEqual(
        held.asked.filter(([m]) => m === 'eth_sendRawTransaction'),
        [],
        'held by the node, or the node could not say: not sent again',
      );
    }
  });
});
