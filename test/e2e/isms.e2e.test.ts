/**
 * Multisig and aggregation ISMs on anvil with the real contracts of @hyperlane-xyz/core
 * (docs/isms.md): ValidatorAnnounce on the origin, StaticMessageIdMultisigIsm and
 * StaticAggregationIsm made by their factories, DomainRoutingIsm, NoopIsm, TestCcipReadIsm.
 * Validators are viem keys that announce buckets on a loopback server (path-style S3 and GCS
 * through worker.checkpointEndpoints) or a local directory, and sign checkpoints of the origin's
 * MerkleTreeHook. The worker (lib/worker's createRelayerWorker, in this process) builds the
 * metadata; the chain is the judge (Mailbox.process accepts it, Mailbox.delivered).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { keccak256, type Address, type Hex } from 'viem';
import { createMemoryOutbox, type OutboxMessage, type OutboxRecord } from '../../lib/outbox/index.ts';
import { createMemoryMerkleStore } from '../../lib/store/merkle.ts';
import { hyperlaneArtifact, mailboxArtifact } from '../helpers/chain/hyperlane.ts';
import { deployNoopIsm, deployRoutingIsm, deployTestRecipient } from '../helpers/chain/isms.ts';
import {
  deployIsmFactories,
  deployValidatorAnnounce,
  latestCheckpoint,
  startBucketServer,
  Validator,
  validatorArtifacts,
  type BucketServer,
  type IsmFactories,
} from '../helpers/chain/validators.ts';
import {
  DESTINATION,
  killWorkers,
  ORIGIN,
  startInProcessWorker,
  startWorkerBench,
  until,
  type InProcessWorker,
  type WorkerBench,
} from '../helpers/chain/worker-chain.ts';

let bench: WorkerBench;
let bucket: BucketServer;
let gateway: Server;
let gatewayOrigin: string;
let factories: IsmFactories;
let validatorAnnounce: Address;
let dir: string;
const v = [new Validator(), new Validator(), new Validator()];
/** Announces a file:// location only. */
const local = new Validator();
/** Where each validator of `v` publishes: bucket and folder (the server is path-style for both kinds). */
const buckets = [
  { announced: 's3://val0/us-east-1/cp', bucket: 'val0', folder: 'cp/' },
  { announced: 'gs://val1/cp', bucket: 'val1', folder: 'cp/' },
  { announced: 's3://val2/us-east-1', bucket: 'val2', folder: '' },
];

/** `validator` i publishes its checkpoint of `m` (its leaf `index`), over `root` when given (a byzantine one). */
async function publish(i: number, m: OutboxMessage, index: number, root: Hex): Promise<void> {
  const json = await v[i].sign({
    domain: ORIGIN.domain,
    hook: bench.origin.merkleTreeHook,
    root,
    index,
    messageId: m.id as Hex,
  });
  bucket.put(buckets[i].bucket, `${buckets[i].folder}checkpoint_${index}_with_id.json`, json);
}

/** Dispatches one message to a new TestRecipient whose ISM is `ism`; its leaf index and the root after it. */
async function dispatchTo(ism: Address): Promise<{ m: OutboxMessage; index: number; root: Hex }> {
  const [m] = await bench.dispatch(1, await deployTestRecipient(bench.chain, ism));
  const { root, index } = await latestCheckpoint(bench.chain, bench.origin.merkleTreeHook);
  return { m, index, root };
}

async function deliveredOnChain(id: string): Promise<boolean> {
  return (await bench.chain.publicClient.readContract({
    address: bench.destination.mailbox,
    abi: mailboxArtifact().abi,
    functionName: 'delivered',
    args: [id as Hex],
  })) as boolean;
}

function configFor(extra: Record<string, unknown> = {}): string {
  const chain = (c: { domain: number }, mailbox: Address, more: Record<string, unknown> = {}) => ({
    domainId: c.domain,
    chainId: bench.anvil.chainId,
    mailbox,
    rpcUrls: [{ http: bench.anvil.rpcUrl }],
    transactionOverrides: { gasPriceCap: '1000000000000' },
    ...more,
  });
  return bench.writeConfig(
    ':memory:',
    {
      checkpointEndpoints: { s3: bucket.url, gcs: bucket.url },
      ccipReadAllowOrigins: [gatewayOrigin],
      // The waits (a late validator, a file:// announcement) run on the worker's default pending
      // backoff: a quorum is picked up within worker.pendingRetryMaxSeconds (docs/isms.md#waiting-for-signatures).
    },
    {
      chains: {
        [ORIGIN.name]: chain(ORIGIN, bench.origin.mailbox, {
          merkleTreeHook: bench.origin.merkleTreeHook,
          validatorAnnounce,
        }),
        [DESTINATION.name]: chain(DESTINATION, bench.destination.mailbox),
      },
      gasPaymentEnforcement: [{ type: 'none' }],
      ...extra,
    },
  );
}

describe('e2e: multisig and aggregation ISMs on anvil', { timeout: 240_000 }, () => {
  let worker: InProcessWorker | undefined;
  const outbox = createMemoryOutbox();
  const record = (id: string) => outbox.get(id) as OutboxRecord;

  before(async () => {
    bench = await startWorkerBench();
    bucket = await startBucketServer();
    gateway = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data":"0x1234"}');
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    gatewayOrigin = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'checkpoints-'));
    validatorAnnounce = await deployValidatorAnnounce(bench.chain, bench.origin.mailbox);
    factories = await deployIsmFactories(bench.chain);
    for (const [i, b] of buckets.entries()) await v[i].announce(bench.chain, validatorAnnounce, b.announced);
    await local.announce(bench.chain, validatorAnnounce, `file://${dir}`);
  });
  after(async () => {
    await worker?.stop();
    await killWorkers();
    gateway?.close();
    bucket?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await bench?.stop();
  });

  test('docs/isms.md#multisig: both multisigs, aggregations and CCIP-read inside one are delivered; waits are waits', async () => {
    const messageId = await factories.messageId(
      v.map((x) => x.address),
      2,
    );
    // 1. MessageIdMultisig 2 of 3 alone: validators 0 (S3) and 1 (GCS) sign.
    const alone = await dispatchTo(messageId);
    await publish(0, alone.m, alone.index, alone.root);
    await publish(1, alone.m, alone.index, alone.root);
    // 2. A byzantine validator: 0 signs another root; 1 and 2 sign the tree's.
    const byzantine = await dispatchTo(messageId);
    await publish(0, byzantine.m, byzantine.index, keccak256('0xbad0'));
    await publish(1, byzantine.m, byzantine.index, byzantine.root);
    await publish(2, byzantine.m, byzantine.index, byzantine.root);
    // 3. Below threshold: only validator 2 has signed, validator 1's bucket holds a forgery (signed by
    // another key); validator 0 publishes late.
    const late = await dispatchTo(messageId);
    await publish(2, late.m, late.index, late.root);
    const forged = await local.sign({
      domain: ORIGIN.domain,
      hook: bench.origin.merkleTreeHook,
      root: late.root,
      index: late.index,
      messageId: late.m.id as Hex,
    });
    bucket.put(buckets[1].bucket, `${buckets[1].folder}checkpoint_${late.index}_with_id.json`, forged);
    // 4. The mainnet default shape:
    // Aggregation(2)[Routing(origin -> Aggregation(1)[MessageIdMultisig, MerkleRootMultisig]), NULL].
    const merkleRootIsm = await factories.merkleRoot(
      v.map((x) => x.address),
      2,
    );
    const inner = await factories.aggregation([messageId, merkleRootIsm], 1);
    const routing = await deployRoutingIsm(bench.chain, new Map([[ORIGIN.domain, inner]]));
    const mainnet = await dispatchTo(await factories.aggregation([routing, await deployNoopIsm(bench.chain)], 2));
    await publish(1, mainnet.m, mainnet.index, mainnet.root);
    await publish(2, mainnet.m, mainnet.index, mainnet.root);
    // 5. CCIP-read inside an aggregation: Aggregation(1)[MessageIdMultisig nobody signed, TestCcipReadIsm].
    const ccipA = validatorArtifacts.ccipRead();
    const ccip = await bench.chain.deploy(ccipA.abi, ccipA.bytecode, [[`${gatewayOrigin}/{sender}/{data}.json`]]);
    const viaCcip = await dispatchTo(await factories.aggregation([messageId, ccip], 1));
    // 6. file:// refused by default: the one validator signed into its local directory.
    const onlyLocal = await dispatchTo(await factories.messageId([local.address], 1));
    const localJson = await local.sign({
      domain: ORIGIN.domain,
      hook: bench.origin.merkleTreeHook,
      root: onlyLocal.root,
      index: onlyLocal.index,
      messageId: onlyLocal.m.id as Hex,
    });
    writeFileSync(join(dir, `${onlyLocal.index}_with_id.json`), localJson);

    // 7. MerkleRootMultisig 2 of 3: the proof from the origin's InsertedIntoTree logs.
    const merkleRoot = await dispatchTo(merkleRootIsm);
    await publish(0, merkleRoot.m, merkleRoot.index, merkleRoot.root);
    await publish(2, merkleRoot.m, merkleRoot.index, merkleRoot.root);

    // The stored merkle tree insertions hold every leaf up to it, one of them forged: not used, the chain is.
    const { abi: hookAbi } = hyperlaneArtifact('hooks/MerkleTreeHook');
    const inserted = await bench.chain.publicClient.getContractEvents({
      address: bench.origin.merkleTreeHook,
      abi: hookAbi,
      eventName: 'InsertedIntoTree',
      fromBlock: 0n,
    });
    const merkle = createMemoryMerkleStore();
    merkle.insertMerkle(
      inserted.map((log, i) => {
        const { messageId, index } = log.args as unknown as { messageId: Hex; index: number };
        return {
          chain: ORIGIN.domain,
          insertion_block_number: Number(log.blockNumber),
          leaf_index: index,
          message_id: i === 1 ? keccak256('0xf0') : messageId,
        };
      }),
    );

    const all = [alone, byzantine, late, mainnet, viaCcip, onlyLocal, merkleRoot];
    outbox.enqueue(all.map((x) => x.m));
    worker = await startInProcessWorker(configFor(), outbox, { merkle });
    const ready = [alone, byzantine, mainnet, viaCcip, merkleRoot];
    await until(
      () => ready.every((x) => record(x.m.id).status === 'delivered'),
      'the signed messages delivered',
      60_000,
    );
    for (const x of ready) assert.equal(await deliveredOnChain(x.m.id), true);

    await until(() => /signatures: 1 of 2/.test(record(late.m.id).lastError ?? ''), 'the late one waiting');
    let r = record(late.m.id);
    assert.notEqual(r.status, 'delivered', 'waiting (queued, or claimed again for its next look)');
    assert.match(
      r.lastError ?? '',
      /^pending: signatures: 1 of 2; validator 1 \(0x[0-9a-fA-F]{40}\): not signed yet; validator 2 \(0x[0-9a-fA-F]{40}\): bad signature/,
    );
    const metrics = worker.metrics();
    assert.match(metrics, /^relayer_worker_checkpoints_fetched_total\{storage="s3"\} [1-9]/m);
    assert.match(metrics, /^relayer_worker_checkpoints_fetched_total\{storage="gcs"\} [1-9]/m);
    assert.match(metrics, /^relayer_worker_checkpoint_bad_signatures_total [1-9]/m);
    assert.match(metrics, /^relayer_worker_checkpoint_locations_refused_total [1-9]/m, 'file:// refused');
    assert.match(metrics, /^relayer_worker_stored_insertion_mismatches_total [1-9]/m, 'the forged stored leaf');
    assert.equal(r.failures, 0, 'waiting for signatures is not a failed attempt');
    const awaiting = (n: number) => () =>
      new RegExp(`^relayer_worker_messages_awaiting_signatures ${n}$`, 'm').test(worker?.metrics() ?? '');
    await until(awaiting(2), 'the late one and the file:// one awaiting signatures');
    await publish(0, late.m, late.index, late.root);
    // Within the default pendingRetryMaxSeconds (60 s) of its signature, with room for a loaded machine.
    await until(() => record(late.m.id).status === 'delivered', 'the late one delivered once signed', 90_000);
    await until(awaiting(1), 'the late one no longer awaiting');
    assert.equal(await deliveredOnChain(late.m.id), true);

    r = record(onlyLocal.m.id);
    assert.notEqual(r.status, 'delivered');
    assert.match(
      r.lastError ?? '',
      /signatures: 0 of 1; validator 1 \(0x[0-9a-fA-F]{40}\): file:\/\/ locations are not allowed/,
    );
    assert.equal(await deliveredOnChain(onlyLocal.m.id), false);
    assert.ok(
      bucket.requests.some((p) => p.startsWith('/val1/cp/')),
      'the GCS-form bucket was read',
    );
    await worker.stop();
    worker = undefined;

    // With allowLocalCheckpointSyncers the same message is delivered from the directory.
    worker = await startInProcessWorker(configFor({ allowLocalCheckpointSyncers: true }), outbox);
    await until(() => record(onlyLocal.m.id).status === 'delivered', 'the local one delivered when allowed', 30_000);
    assert.equal(await deliveredOnChain(onlyLocal.m.id), true);
  });
});
