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
import {
  BaseError,
  createPublicClient,
  encodeErrorResult,
  ExecutionRevertedError,
  getAddress,
  FeeCapTooLowError,
  http,
  InsufficientFundsError,
  IntrinsicGasTooLowError,
  keccak256,
  NonceMaxValueError,
  NonceTooHighError,
  NonceTooLowError,
  RpcRequestError,
  TipAboveFeeCapError,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { broadcast } from '../../../../lib/worker/tx/broadcast.ts';
import { TransactionError } from '../../../../lib/worker/errors.ts';
import { type Classified, classify, revertReason, transactionError } from '../../../../lib/worker/tx/node-errors.ts';

/** What the node answers to eth_sendRawTransaction next: a JSON-RPC error with these words, or the hash. */
let refusal: string | undefined;
/** How many eth_sendRawTransaction are refused (with `refusal`) before the node accepts one. */
let refusals = Number.POSITIVE_INFINITY;
/**
 * "Refused every time" for a broadcast: more sends than any rule makes, after which the node takes
 * it, so a broadcast that never stops sending ends ('sent') and fails its test instead of hanging.
 */
const REFUSE_MANY = 10;
/** The params[0] of each eth_sendRawTransaction, in order. */
const sentBytes: unknown[] = [];
/** Whether eth_getTransactionByHash finds the transaction. */
let lookupFinds = false;
/** eth_getTransactionByHash answers a JSON-RPC error (the node could not be asked). */
let lookupFails = false;
/** How many eth_sendRawTransaction get an HTTP 502 and no JSON-RPC answer (lost: it may have gone out). */
let unanswered = 0;
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
      const { id, method, params } = JSON.parse(body) as { id: number; method: string; params?: unknown[] };
      calls.push(method);
      if (method === 'eth_sendRawTransaction') sentBytes.push(params?.[0]);
      let reply: object;
      if (method === 'eth_sendRawTransaction' && unanswered-- > 0) {
        res.writeHead(502).end('bad gateway');
        return;
      }
      if (method === 'eth_getTransactionByHash' && lookupFails)
        reply = { error: { code: -32603, message: 'internal' } };
      else if (method === 'eth_sendRawTransaction') {
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
    refusals = REFUSE_MANY;
    lookupFinds = false;
    calls.length = 0;
    assert.equal(await broadcast(client, raw, hash), 'sent');
    assert.deepEqual(calls, ['eth_sendRawTransaction']);
  });

  test('broadcast: another refusal, with a node that does not have the hash, is a refusal (its nonce may be freed)', async () => {
    refusal = 'nonce too low: next nonce 8, tx nonce 7';
    refusals = REFUSE_MANY;
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
    refusals = REFUSE_MANY;
    calls.length = 0;
    const outcome = await broadcast(client, raw, hash);
    assert.ok(typeof outcome === 'object', String(outcome));
    assert.equal(outcome.kind, 'rpc');
    assert.equal(calls.filter((m) => m === 'eth_sendRawTransaction').length, 3);
  });

  test('broadcast: a send with no answer and a hash the node lacks goes once more, then is unknown (it may be out)', async () => {
    refusal = undefined;
    lookupFinds = false;
    // Lost once, then accepted: sent.
    unanswered = 1;
    calls.length = 0;
    assert.equal(await broadcast(client, raw, hash), 'sent');
    assert.deepEqual(calls, ['eth_sendRawTransaction', 'eth_getTransactionByHash', 'eth_sendRawTransaction']);
    // Lost twice: unknown, never a refusal (its nonce stays held).
    unanswered = 2;
    calls.length = 0;
    sentBytes.length = 0;
    assert.equal(await broadcast(client, raw, hash), 'unknown');
    assert.deepEqual(sentBytes, [raw, raw], 'the same signed bytes each time');
    assert.deepEqual(calls, [
      'eth_sendRawTransaction',
      'eth_getTransactionByHash',
      'eth_sendRawTransaction',
      'eth_getTransactionByHash',
    ]);
    // Lost, and the lookup finds it: sent at once.
    unanswered = 1;
    lookupFinds = true;
    calls.length = 0;
    assert.equal(await broadcast(client, raw, hash), 'sent');
    assert.deepEqual(calls, ['eth_sendRawTransaction', 'eth_getTransactionByHash']);
    unanswered = 0;
    lookupFinds = false;
  });

  test('broadcast: a refusal whose hash lookup fails is sent once more before it is a refusal; the refusal keeps its cause', async () => {
    refusal = 'nonce too low: next nonce 8, tx nonce 7';
    refusals = REFUSE_MANY;
    lookupFinds = false;
    lookupFails = true;
    calls.length = 0;
    const outcome = await broadcast(client, raw, hash);
    lookupFails = false;
    assert.ok(typeof outcome === 'object', String(outcome));
    assert.deepEqual([outcome.kind, outcome.said, outcome.answered], ['nonce_low', refusal, true]);
    assert.ok(outcome.cause instanceof BaseError, "the node's error, as viem threw it");
    assert.equal(classify(outcome.cause).kind, 'nonce_low');
    assert.deepEqual(calls, [
      'eth_sendRawTransaction',
      'eth_getTransactionByHash',
      'eth_sendRawTransaction',
      'eth_getTransactionByHash',
    ]);
  });
});

/** viem's error for a JSON-RPC error the node answered (what its http transport throws). */
const answered = (message: string, data?: unknown) =>
  new RpcRequestError({ body: {}, error: { code: -32000, message, data }, url: 'http://127.0.0.1:1' });

const ABI = [
  { type: 'error', name: 'Error', inputs: [{ name: 'message', type: 'string' }] },
  { type: 'error', name: 'Panic', inputs: [{ name: 'code', type: 'uint256' }] },
  { type: 'error', name: 'Paused', inputs: [] },
  {
    type: 'error',
    name: 'Unpaid',
    inputs: [
      { name: 'needed', type: 'uint256' },
      { name: 'payer', type: 'address' },
    ],
  },
] as const;
const PAYER = getAddress('0x00000000000000000000000000000000000000aa');
const errorString = (reason: string) => encodeErrorResult({ abi: ABI, errorName: 'Error', args: [reason] });

describe('classify: viem classes, revert data and words (docs/transactions.md#transactions)', () => {
  test("viem's class of the failure decides its kind when the node's words name nothing", () => {
    const cases: [BaseError, Classified['kind']][] = [
      [new ExecutionRevertedError({ cause: answered('refused') }), 'revert'],
      [new NonceTooLowError({ cause: answered('refused') }), 'nonce_low'],
      [new NonceTooHighError({ cause: answered('refused') }), 'nonce'],
      [new NonceMaxValueError({ cause: answered('refused') }), 'nonce'],
      [new InsufficientFundsError({ cause: answered('refused') }), 'insufficient_funds'],
      [new IntrinsicGasTooLowError({ cause: answered('refused') }), 'out_of_gas'],
      [new FeeCapTooLowError({ cause: answered('refused') }), 'underpriced'],
      [new TipAboveFeeCapError({ cause: answered('refused') }), 'underpriced'],
    ];
    for (const [error, kind] of cases) {
      const c = classify(error);
      assert.deepEqual(
        { kind: c.kind, said: c.said, answered: c.answered },
        { kind, said: 'refused', answered: true },
        error.name,
      );
    }
  });

  test("a viem error with no node's answer beneath it is unanswered and says nothing", () => {
    assert.deepEqual(classify(new NonceTooHighError()), { kind: 'nonce', said: '', answered: false });
    assert.deepEqual(classify(new BaseError('fetch failed')), { kind: 'rpc', said: '', answered: false });
  });

  test("the node's words, in any case: each pattern names its kind", () => {
    const cases: [string, Classified['kind']][] = [
      ['Transaction Reverted without a reason', 'revert'],
      ['ALREADY KNOWN', 'known'],
      ['already in pool', 'known'],
      ['already in the pool', 'known'],
      ['already in txpool', 'known'],
      ['Nonce Too Low', 'nonce_low'],
      ['Insufficient Funds for transfer', 'insufficient_funds'],
      ['intrinsic gas: out of gas', 'out_of_gas'],
      ['Gas Required Exceeds Allowance (0)', 'out_of_gas'],
      ['max fee per gas: fee too low', 'underpriced'],
      ['Replacement Transaction Underpriced', 'underpriced'],
      ['nonce too high', 'rpc'],
    ];
    for (const [words, kind] of cases) {
      const c = classify(answered(words));
      assert.deepEqual(
        { kind: c.kind, said: c.said, answered: c.answered },
        { kind, said: words, answered: true },
        words,
      );
    }
  });

  test('revert data is hex of whole bytes, a selector at least, as a string or under data.data', () => {
    const data = errorString('no');
    const wrapped = (e: BaseError) => new BaseError('estimateGas failed', { cause: e });
    const found: [unknown, Hex | undefined][] = [
      [data, data],
      ['0x12345678', '0x12345678'],
      [{ data }, data],
      [{ data: '0x12345678' }, '0x12345678'],
      ['0x123456', undefined],
      ['0x123456789', undefined],
      ['0x1234567g', undefined],
      ['1234567890', undefined],
      ['zz0x12345678', undefined],
      [null, undefined],
      [{ data: '0x123456' }, undefined],
      [{ data: '0x12345z78' }, undefined],
      [{ data: 12 }, undefined],
      [{}, undefined],
      [12, undefined],
    ];
    for (const [raw, expected] of found) {
      // Beneath another viem error, as estimateGas and call throw it.
      const c = classify(wrapped(answered('failed', raw)));
      assert.equal(c.revertData, expected, JSON.stringify(raw));
      assert.equal(c.kind, expected === undefined ? 'rpc' : 'revert', JSON.stringify(raw));
    }
  });

  test('the first revert data found is kept, the outermost', () => {
    const outer = Object.assign(new BaseError('outer', { cause: answered('failed', '0xaaaaaaaa') }), {
      data: '0xbbbbbbbb',
    });
    assert.equal(classify(outer).revertData, '0xbbbbbbbb');
  });
});

describe('revertReason and transactionError (docs/transactions.md#transactions)', () => {
  const revert = (over: Partial<Classified>): Classified => ({ kind: 'revert', said: '', answered: true, ...over });

  test("the reason from the revert data: Error(string), Panic(uint256), the ABI's custom error, or its selector", () => {
    assert.equal(revertReason(revert({ revertData: errorString('not enough') }), undefined), 'not enough');
    const panic = encodeErrorResult({ abi: ABI, errorName: 'Panic', args: [0x11n] });
    assert.equal(revertReason(revert({ revertData: panic }), undefined), 'panic 0x11');
    const unpaid = encodeErrorResult({ abi: ABI, errorName: 'Unpaid', args: [12345678901234567890n, PAYER] });
    assert.equal(revertReason(revert({ revertData: unpaid }), ABI), `Unpaid(12345678901234567890, ${PAYER})`);
    assert.equal(revertReason(revert({ revertData: unpaid }), undefined), `custom error ${unpaid.slice(0, 10)}`);
    const paused = encodeErrorResult({ abi: ABI, errorName: 'Paused' });
    assert.equal(revertReason(revert({ revertData: paused }), ABI), 'Paused()');
    assert.equal(
      revertReason(revert({ revertData: '0x12345678', said: 'execution reverted: ignored' }), undefined),
      'custom error 0x12345678',
      'the data wins over the words',
    );
  });

  test("without revert data, the node's words after execution reverted, trimmed and at most 300 characters", () => {
    assert.equal(revertReason(revert({ said: 'execution reverted: not owner  ' }), undefined), 'not owner');
    assert.equal(revertReason(revert({ said: 'Execution Reverted:why' }), undefined), 'why');
    assert.equal(revertReason(revert({ said: 'execution reverted why' }), undefined), 'why', 'the colon is optional');
    assert.equal(revertReason(revert({ said: 'execution reverted' }), undefined), undefined);
    assert.equal(revertReason(revert({ said: 'execution reverted:    ' }), undefined), undefined);
    assert.equal(revertReason(revert({ said: 'reverted' }), undefined), undefined);
    assert.equal(revertReason(revert({ said: `execution reverted: ${'x'.repeat(400)}` }), undefined), 'x'.repeat(300));
    assert.equal(
      revertReason(revert({ revertData: '0x1234' as Hex, said: 'execution reverted: short data' }), undefined),
      'short data',
      'data shorter than a selector is no data',
    );
  });

  test('each kind becomes the TransactionError of its code, its message naming the step, with the cause and hash', () => {
    const cause = new Error('the node said no');
    const hash = `0x${'cd'.repeat(32)}` as const;
    const cases: [Classified, string, string][] = [
      [revert({ revertData: errorString('no') }), 'revert', 'sending reverted: no'],
      [revert({}), 'revert', 'sending reverted'],
      [{ kind: 'out_of_gas', said: '', answered: true }, 'out_of_gas', 'sending: out of gas'],
      [
        { kind: 'insufficient_funds', said: '', answered: true },
        'insufficient_funds',
        'sending: the signer cannot pay for gas',
      ],
      [{ kind: 'nonce', said: '', answered: true }, 'nonce', 'sending: nonce refused by the node'],
      [{ kind: 'nonce_low', said: '', answered: true }, 'nonce', 'sending: nonce refused by the node'],
      [{ kind: 'underpriced', said: '', answered: true }, 'rpc', 'sending: fees refused by the node as too low'],
      [{ kind: 'known', said: '', answered: true }, 'rpc', 'sending: node unreachable or failing'],
      [{ kind: 'rpc', said: '', answered: false }, 'rpc', 'sending: node unreachable or failing'],
    ];
    for (const [c, code, message] of cases) {
      const error = transactionError(c, 'sending', undefined, cause, hash);
      assert.ok(error instanceof TransactionError);
      assert.deepEqual([error.code, error.message, error.cause, error.hash], [code, message, cause, hash], c.kind);
    }
    assert.equal(transactionError(revert({ revertData: errorString('no') }), 'sending', undefined, cause).reason, 'no');
    assert.equal(transactionError(revert({}), 'sending', undefined, cause).reason, undefined);
    assert.equal(transactionError(revert({}), 'sending', undefined, cause).hash, undefined);
  });
});
