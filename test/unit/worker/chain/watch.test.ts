/**
 * lib/worker/chain/watch.ts (docs/delivery.md#start-up-checks-and-heartbeat): the destinations' chain
 * ids and the signer's balances, checked at start and with each heartbeat, on a fake clock with
 * nodes as functions. What the worker refuses at start, when /ready turns 503 and back, what the
 * heartbeat line says, and the balance warning below the floor.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createPublicClient, http, HttpRequestError } from 'viem';
import { createLogger } from '../../../../lib/log.ts';
import { createWorkerWatch, type WatchedChain } from '../../../../lib/worker/chain/watch.ts';
import { createFakeClock } from '../../../helpers/fakes/clock.ts';
import { refusedPort } from '../../../helpers/fakes/refused-port.ts';

function harness() {
  const clock = createFakeClock();
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: 'debug',
    write: (line) => lines.push(JSON.parse(line)),
    now: () => clock.now(),
  });
  const node = { base: 8453, second: 8453 as number | Error, balance: 2n * 10n ** 16n, depth: 7 };
  const chains: WatchedChain[] = [
    {
      name: 'base',
      chainId: 8453,
      urls: [
        { origin: 'https://one.example', chainId: async () => node.base },
        {
          origin: 'https://two.example',
          chainId: async () => {
            if (node.second instanceof Error) throw node.second;
            return node.second;
          },
        },
      ],
      balance: async () => node.balance,
    },
  ];
  const options = {
    chains,
    clock,
    logger,
    minBalanceWei: 10n ** 16n,
    intervalMs: 60_000,
    depth: async () => node.depth,
    inFlight: () => 0,
  };
  const watch = createWorkerWatch(options);
  /** Moves the clock one interval and lets the heartbeat's checks settle. */
  const beat = async () => {
    await clock.advance(60_000);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  return { clock, lines, node, watch, beat, options, watchedChain: () => chains[0] };
}

test('at start: a node of another chain is a refusal naming both ids; a silent node beside one that answers is not', async () => {
  // All nodes silent is a refusal.
  const { node, watch } = harness();
  node.second = new Error('fetch failed: connect ECONNREFUSED https://two.example/v2/KEY');
  assert.deepEqual(watch.refusals(await watch.check()), []);
  node.base = 1;
  assert.deepEqual(watch.refusals(await watch.check()), [
    'chains.base: the RPC node https://one.example answers chain id 1, the config says 8453',
  ]);
  const silent = harness();
  const down = async () => {
    throw new Error('fetch failed: connect ECONNREFUSED https://two.example/v2/KEY');
  };
  const chains = [{ ...silent.watchedChain(), urls: [{ origin: 'https://two.example', chainId: down }] }];
  const all = createWorkerWatch({ ...silent.options, chains });
  assert.deepEqual(all.refusals(await all.check()), [
    'chains.base: no RPC node answered eth_chainId (https://two.example: fetch failed: connect ECONNREFUSED https://two.example)',
  ]);
});

test('every heartbeat: one line with the queue depth; a node turning to another chain makes ready() false until it is back', async () => {
  const { lines, node, watch, beat } = harness();
  await watch.check();
  watch.start();
  assert.equal(watch.ready(), true);
  await beat();
  const beats = () => lines.filter((l) => l.msg === 'heartbeat');
  assert.equal(beats().length, 1);
  assert.equal(beats()[0].queue_depth, 7);
  assert.equal(beats()[0].in_flight, 0);
  node.second = 10;
  await beat();
  assert.equal(beats().length, 2);
  assert.equal(watch.ready(), false);
  const wrong = lines.find((l) => l.msg === 'rpc node of another chain: not ready until it is fixed');
  assert.deepEqual(
    { level: wrong?.level, rpc: wrong?.rpc, chain_id: wrong?.chain_id, expected: wrong?.expected },
    { level: 'error', rpc: 'https://two.example', chain_id: 10, expected: 8453 },
  );
  node.second = 8453;
  await beat();
  assert.equal(watch.ready(), true);
  watch.stop();
  await beat();
  assert.equal(beats().length, 3, 'no heartbeat after stop');
});

test('the balance: a gauge value per destination, and a warning at start and with each heartbeat while below the floor', async () => {
  const { lines, node, watch, beat } = harness();
  await watch.check();
  assert.deepEqual(watch.balances(), [[{ destination: 'base' }, 2e16]]);
  watch.start();
  assert.equal(lines.filter((l) => l.msg === 'signer balance low').length, 0, 'above the floor: quiet');
  node.balance = 3n * 10n ** 15n;
  await beat();
  const low = lines.filter((l) => l.msg === 'signer balance low');
  assert.equal(low.length, 1);
  assert.deepEqual(
    {
      level: low[0].level,
      destination: low[0].destination,
      balance_wei: low[0].balance_wei,
      floor_wei: low[0].floor_wei,
    },
    { level: 'warn', destination: 'base', balance_wei: '3000000000000000', floor_wei: '10000000000000000' },
  );
  assert.deepEqual(watch.balances(), [[{ destination: 'base' }, 3e15]]);
  watch.stop();
});

test('docs/delivery.md#start-up-checks-and-heartbeat: a silent node is named as the server names it (DNS, refused, HTTP 503)', async () => {
  // viem's own errors, from its client on real loopback sockets where this machine can make them:
  // "HTTP request failed." for all three, the cause chain and status saying which.
  const refused = await refusedPort();
  const failing = createServer((_req, res) => res.writeHead(503).end('busy'));
  failing.listen(0, '127.0.0.1');
  await once(failing, 'listening');
  const port = (failing.address() as AddressInfo).port;
  const ask = (url: string) => () =>
    createPublicClient({ transport: http(url, { retryCount: 0, timeout: 5_000 }) }).getChainId();
  // A failed DNS lookup cannot be made without the network: viem's error around Node's, as fetch throws it.
  const dnsFailure = async (): Promise<number> => {
    const lookup = Object.assign(new Error('getaddrinfo ENOTFOUND rpc.example'), { code: 'ENOTFOUND' });
    throw new HttpRequestError({
      url: 'https://rpc.example/v2/KEY',
      cause: new TypeError('fetch failed', { cause: lookup }),
    });
  };
  try {
    const { options } = harness();
    const chains: WatchedChain[] = [
      {
        name: 'base',
        chainId: 8453,
        urls: [
          { origin: 'https://rpc.example', chainId: dnsFailure },
          { origin: `http://127.0.0.1:${refused}`, chainId: ask(`http://127.0.0.1:${refused}/`) },
          { origin: `http://127.0.0.1:${port}`, chainId: ask(`http://127.0.0.1:${port}/`) },
        ],
        balance: async () => 0n,
      },
    ];
    const watch = createWorkerWatch({ ...options, chains });
    assert.deepEqual(watch.refusals(await watch.check()), [
      `chains.base: no RPC node answered eth_chainId (https://rpc.example: DNS lookup failed (ENOTFOUND); http://127.0.0.1:${refused}: connection refused; http://127.0.0.1:${port}: HTTP 503)`,
    ]);
  } finally {
    failing.close();
  }
});
