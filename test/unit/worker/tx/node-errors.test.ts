/**
 * What a node's refusal of a call or a send means to the sender (lib/worker/tx/node-errors.ts,
 * docs/transactions.md#transactions), and the broadcast that acts on it (lib/worker/tx/broadcast.ts).
 * The node is a JSON-RPC server on 127.0.0.1 answering in the words real nodes use (geth's
 * core/txpool errors, OpenEthereum's "already imported"); the errors are viem's own, from its
 * http transport. "Already known" says the node holds this very transaction: it is sent, whatever
 * a lookup of its hash says a moment later (a node behind a load balancer, a pool not yet indexed).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createPublicClient, http, keccak256, type Hex, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { broadcast } from '../../../../lib/worker/tx/broadcast.ts';
import { classify } from '../../../../lib/worker/tx/node-errors.ts';

/** What the node answers to eth_sendRawTransaction next: a JSON-RPC error with these words, or the hash. */
let refusal: string | undefined;
/** How many eth_sendRawTransaction are refused (with `refusal`) before the node accepts one. */
let refusals = Number.POSITIVE_INFINITY;
/** Whether eth_getTransactionByHash finds the transaction. */
let lookupFinds = false;
const calls: string[] = [];
let server: Server;
let client: PublicClient;

const account = privateKeyToAccount(`0x${'59'.repeat(32)}`);
let raw: Hex;
let hash: Hex;

async function start(): Promise<void> {
  raw = await account.signTransaction({
    chainId: 31337,
    type: 'eip1559',
    to: `0x${'66'.repeat(20)}`,
    gas: 21_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
    nonce: 7,
  });
  hash = keccak256(raw);
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk));
    req.on('end', () => {
      const { id, method } = JSON.parse(body) as { id: number; method: string };
      calls.push(method);
      let reply: object;
      if (method === 'eth_sendRawTransaction') {
        const refuse = refusal !== undefined && refusals-- > 0;
        reply = refuse ? { error: { code: -32000, message: refusal } } : { result: hash };
      } else if (method === 'eth_getTransactionByHash') reply = { result: lookupFinds ? pendingTx() : null };
      else reply = { error: { code: -32601, message: 'method not found' } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, ...reply }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = createPublicClient({ transport: http(`http://127.0.0.1:${port}`, { retryCount: 0 }) });
}

function stop(): Promise<void> {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

/** The transaction as a node lists it while pending. */
function pendingTx() {
  return {
    hash,
    from: account.address,
    to: `0x${'66'.repeat(20)}`,
    nonce: '0x7',
    gas: '0x5208',
    maxFeePerGas: '0x77359400',
    maxPriorityFeePerGas: '0x3b9aca00',
    value: '0x0',
    input: '0x',
    type: '0x2',
    chainId: '0x7a69',
    blockHash: null,
    blockNumber: null,
    transactionIndex: null,
    v: '0x0',
    r: '0x1',
    s: '0x1',
  };
}

/** viem's error for the node refusing a send with `words`. */
async function refusedWith(words: string): Promise<unknown> {
  refusal = words;
  refusals = Number.POSITIVE_INFINITY;
  return client.request({ method: 'eth_sendRawTransaction', params: [raw] }).then(
    () => assert.fail('the node was to refuse'),
    (error: unknown) => error,
  );
}

describe('node errors (docs/transactions.md#transactions)', () => {
  before(start);
  after(stop);

  test("a node's words for a transaction it already holds are `known`, never a failure of the send", async () => {
    for (const words of [
      'already known', // geth (core/txpool ErrAlreadyKnown)
      'known transaction: 0x1a2b', // older geth releases
      'Transaction with the same hash was already imported.', // OpenEthereum
      'transaction already in the txpool',
    ]) {
      const c = classify(await refusedWith(words));
      assert.equal(c.kind, 'known', words);
      assert.equal(c.answered, true, words);
      assert.equal(c.said, words);
    }
  });

  test('the other refusals a sender acts on keep their kinds; a non-viem error is an unanswered rpc failure', async () => {
    const cases: [string, string][] = [
      ['nonce too low: next nonce 8, tx nonce 7', 'nonce_low'],
      ['replacement transaction underpriced', 'underpriced'],
      ['transaction underpriced: tip needed 1, tip permitted 0', 'underpriced'],
      ['gas required exceeds allowance (30000000)', 'out_of_gas'],
      ['insufficient funds for gas * price + value: balance 1000, tx cost 21000000000000', 'insufficient_funds'],
      ['execution reverted', 'revert'],
      ['some other trouble', 'rpc'],
    ];
    for (const [words, kind] of cases) assert.equal(classify(await refusedWith(words)).kind, kind, words);
    assert.deepEqual(classify(new Error('socket hang up')), { kind: 'rpc', said: '', answered: false });
  });

  test('broadcast: "already known" is sent even while a lookup of the hash finds nothing; nothing is sent again', async () => {
    refusal = 'already known';
    lookupFinds = false;
    calls.length = 0;
    assert.equal(await broadcast(client, raw, hash), 'sent');
    assert.deepEqual(calls, ['eth_sendRawTransaction']);
  });

  test('broadcast: another refusal, with a node that does not have the hash, is a refusal (its nonce may be freed)', async () => {
    refusal = 'nonce too low: next nonce 8, tx nonce 7';
    lookupFinds = false;
    calls.length = 0;
    const outcome = await broadcast(client, raw, hash);
    assert.ok(typeof outcome === 'object', String(outcome));
    assert.equal(outcome.kind, 'nonce_low');
    assert.deepEqual(calls, ['eth_sendRawTransaction', 'eth_getTransactionByHash']);
    // The same refusal with the node holding the hash: it went out.
    lookupFinds = true;
    assert.equal(await broadcast(client, raw, hash), 'sent');
  });

  test('broadcast: a refusal in words nobody classifies gets the same bytes again, at most 3 sends, before it is one', async () => {
    refusal = 'transaction refused by the proxy';
    lookupFinds = false;
    // Refused once, then accepted: sent, no nonce freed for a refusal a second send got past.
    refusals = 1;
    calls.length = 0;
    assert.equal(await broadcast(client, raw, hash), 'sent');
    assert.deepEqual(calls, ['eth_sendRawTransaction', 'eth_getTransactionByHash', 'eth_sendRawTransaction']);
    // Refused every time: a refusal after 3 sends of the same bytes.
    refusals = Number.POSITIVE_INFINITY;
    calls.length = 0;
    const outcome = await broadcast(client, raw, hash);
    assert.ok(typeof outcome === 'object', String(outcome));
    assert.equal(outcome.kind, 'rpc');
    assert.equal(calls.filter((m) => m === 'eth_sendRawTransaction').length, 3);
  });
});
