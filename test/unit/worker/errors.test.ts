/**
 * What a node said, sorted (docs/transactions.md#transactions): a revert is told by its data or class
 * before the node's words are read, because the reason after "execution reverted:" is the
 * contract's text, which anyone deploying a recipient writes. The errors are viem's own, from a
 * viem client asking a JSON-RPC server on a loopback port that answers as geth does.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { createPublicClient, encodeErrorResult, http, type Hex } from 'viem';
import { toDeliveryError } from '../../../lib/worker/errors.ts';
import { classify, transactionError } from '../../../lib/worker/tx/node-errors.ts';

const ERROR_STRING = [{ type: 'error', name: 'Error', inputs: [{ name: 'message', type: 'string' }] }] as const;
const revertData = (reason: string): Hex =>
  encodeErrorResult({ abi: ERROR_STRING, errorName: 'Error', args: [reason] });

/** A JSON-RPC server whose every answer is `error`. */
async function nodeSaying(t: TestContext, error: { code: number; message: string; data?: Hex }): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      const { id } = JSON.parse(body) as { id: number };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, error }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const client = (url: string) => createPublicClient({ transport: http(url, { retryCount: 0 }) });
const CALL = {
  account: '0x00000000000000000000000000000000000000aa',
  to: '0x00000000000000000000000000000000000000bb',
  data: '0x12345678',
} as const;

async function thrown(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => assert.fail('expected the node to refuse'),
    (e: unknown) => e,
  );
}

describe('classify: revert data before text', () => {
  test('a revert whose reason says "already known" or "nonce too low" is a revert, with or without its data', async (t) => {
    for (const reason of [
      'already known',
      'nonce too low',
      'replacement transaction underpriced',
      'already imported',
    ]) {
      for (const data of [revertData(reason), undefined]) {
        const url = await nodeSaying(t, { code: 3, message: `execution reverted: ${reason}`, data });
        const err = await thrown(client(url).estimateGas(CALL));
        const c = classify(err);
        assert.equal(c.kind, 'revert', `${reason} (${data ? 'with' : 'without'} data)`);
        const failure = toDeliveryError(transactionError(c, 'simulation', undefined, err));
        assert.equal(failure.code, 'revert');
        assert.equal(failure.message, JSON.stringify(reason), 'the reason, quoted as the recipient wrote it');
      }
    }
  });

  test("the node's own words outside a revert keep their meaning: already known is sent, nonce too low is the nonce", async (t) => {
    const raw = (url: string) =>
      thrown(client(url).request({ method: 'eth_sendRawTransaction', params: ['0x02f86c0180843b9aca00'] }));
    const known = await nodeSaying(t, { code: -32000, message: 'already known' });
    assert.equal(classify(await raw(known)).kind, 'known');
    const low = await nodeSaying(t, { code: -32000, message: 'nonce too low: next nonce 5, tx nonce 4' });
    assert.equal(classify(await raw(low)).kind, 'nonce_low');
  });
});
