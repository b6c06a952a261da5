/**
 * docs/embedding.md#embedding-the-library: a script that embeds the library must stay alive while a relay
 * is in flight. The receipt fetcher waits between polls on timers; if those do not hold the
 * process, a script using top-level await exits 13 ("unsettled top-level await") and an `async
 * main()` exits 0 with no output. Each child script below imports the built package (what an
 * embedder gets), relays one transaction against an RPC in this test process that answers `null`
 * twice (not mined yet) then the receipt, prints the result and must exit 0 on its own: the dedup
 * sweep, a background timer, must not hold it either.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { spawnTracked } from '../helpers/harness/processes.ts';
import { messageId, hyperlaneMessage, rpcReceipt, transferLogs, txHash } from '../helpers/fixtures/builders.ts';
import { fileChains } from '../helpers/fixtures/config.ts';

const CORE = new URL('../../dist/lib/index.js', import.meta.url).href;
const HASH = txHash(0x16);

/** An RPC that answers `null` to the first `nulls` receipt requests, then the receipt. */
async function startRpc(nulls: number) {
  let asked = 0;
  const receipt = rpcReceipt(HASH, transferLogs(1));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const result = asked++ < nulls ? null : receipt;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked: () => asked,
    close: () => server.close(),
  };
}

function script(rpcUrl: string, form: 'top-level await' | 'async main'): string {
  const config = {
    chains: fileChains(rpcUrl),
  };
  const relay = `
    const config = parseConfig(${JSON.stringify(config)});
    const pipeline = createRelayPipeline({ config, queue: createMemoryOutbox() });
    const result = await pipeline.relay({ origin_chain: 'ethereum', tx_hash: '${HASH}' });
    console.log(JSON.stringify(result));`;
  const body = form === 'top-level await' ? relay : `async function main() {${relay}\n}\nmain();`;
  return `import { createMemoryOutbox, createRelayPipeline, parseConfig } from '${CORE}';\n${body}\n`;
}

for (const form of ['top-level await', 'async main'] as const) {
  test(`docs/embedding.md#embedding-the-library: an embedding script (${form}) stays alive until it prints the result`, async (t) => {
    // It stays alive through the receipt polls, prints the result and exits 0.
    const rpc = await startRpc(2);
    t.after(() => rpc.close());
    const child = spawnTracked(process.execPath, ['--input-type=module', '--eval', script(rpc.url, form)]);
    const [code] = (await once(child.child, 'exit')) as [number | null];
    const output = child.output();
    assert.equal(code, 0, output);
    assert.equal(rpc.asked(), 3, 'two polls answered null, the third got the receipt');
    const expectedId = messageId(hyperlaneMessage({ nonce: 0 }));
    assert.deepEqual(JSON.parse(output.trim()), {
      messages: [{ message_id: expectedId, origin: 1, destination: 8453, nonce: 0 }],
    });
  });
}
