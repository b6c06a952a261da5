/**
 * Validators for the multisig tests (docs/isms.md#validators-and-checkpoints), on anvil with the
 * real contracts of @hyperlane-xyz/core: a ValidatorAnnounce on the origin, the static multisig
 * and aggregation ISMs made by their real factories, validator keys (viem accounts) that announce
 * a storage location and sign checkpoints the way Hyperlane's validators do, and a loopback
 * bucket server speaking path-style S3/GCS (`GET /{bucket}/{key}`) for worker.checkpointEndpoints.
 * The checkpoint digest is written here from CheckpointLib's formula, not taken from lib/.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodePacked, keccak256, pad, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Chain } from './clients.ts';
import { hyperlaneArtifact } from './hyperlane.ts';

export const validatorArtifacts = {
  announce: () => hyperlaneArtifact('isms/multisig/ValidatorAnnounce'),
  messageIdFactory: () => hyperlaneArtifact('isms/multisig/StaticMultisigIsm.sol/StaticMessageIdMultisigIsmFactory'),
  merkleRootFactory: () => hyperlaneArtifact('isms/multisig/StaticMultisigIsm.sol/StaticMerkleRootMultisigIsmFactory'),
  aggregationFactory: () => hyperlaneArtifact('isms/aggregation/StaticAggregationIsmFactory'),
  ccipRead: () => hyperlaneArtifact('test/TestCcipReadIsm'),
};

async function expectSuccess(p: Promise<{ status: string; transactionHash: Hex }>, what: string): Promise<void> {
  const receipt = await p;
  if (receipt.status !== 'success') throw new Error(`${what} reverted: ${receipt.transactionHash}`);
}

/** `factory.deploy(values, threshold)` (a StaticThresholdAddressSetFactory) and the address it made. */
async function viaFactory(
  chain: Chain,
  factory: Address,
  abiOf: () => { abi: unknown },
  values: Address[],
  threshold: number,
) {
  const { abi } = abiOf() as { abi: import('viem').Abi };
  await expectSuccess(chain.callAndWait(factory, abi, 'deploy', [values, threshold]), 'factory.deploy');
  return (await chain.publicClient.readContract({
    address: factory,
    abi,
    functionName: 'getAddress',
    args: [values, threshold],
  })) as Address;
}

export interface IsmFactories {
  messageId(validators: Address[], threshold: number): Promise<Address>;
  merkleRoot(validators: Address[], threshold: number): Promise<Address>;
  aggregation(modules: Address[], threshold: number): Promise<Address>;
}

export async function deployIsmFactories(chain: Chain): Promise<IsmFactories> {
  const m = validatorArtifacts.messageIdFactory();
  const a = validatorArtifacts.aggregationFactory();
  const messageIdFactory = await chain.deploy(m.abi, m.bytecode);
  const r = validatorArtifacts.merkleRootFactory();
  const merkleRootFactory = await chain.deploy(r.abi, r.bytecode);
  const aggregationFactory = await chain.deploy(a.abi, a.bytecode);
  return {
    // The ISM checks signatures in its validator order; the factory keeps the order given.
    messageId: (validators, threshold) =>
      viaFactory(chain, messageIdFactory, validatorArtifacts.messageIdFactory, validators, threshold),
    merkleRoot: (validators, threshold) =>
      viaFactory(chain, merkleRootFactory, validatorArtifacts.merkleRootFactory, validators, threshold),
    aggregation: (modules, threshold) =>
      viaFactory(chain, aggregationFactory, validatorArtifacts.aggregationFactory, modules, threshold),
  };
}

export async function deployValidatorAnnounce(chain: Chain, mailbox: Address): Promise<Address> {
  const a = validatorArtifacts.announce();
  return chain.deploy(a.abi, a.bytecode, [mailbox]);
}

export interface Checkpoint {
  domain: number;
  hook: Address;
  root: Hex;
  index: number;
  messageId: Hex;
}

export class Validator {
  readonly account: PrivateKeyAccount;
  constructor(key: Hex = generatePrivateKey()) {
    this.account = privateKeyToAccount(key);
  }
  get address(): Address {
    return this.account.address;
  }

  /** Announces `location` on the ValidatorAnnounce (signed by this validator, sent by the dev account). */
  async announce(chain: Chain, validatorAnnounce: Address, location: string): Promise<void> {
    const { abi } = validatorArtifacts.announce();
    const digest = (await chain.publicClient.readContract({
      address: validatorAnnounce,
      abi,
      functionName: 'getAnnouncementDigest',
      args: [location],
    })) as Hex;
    const signature = await this.account.sign({ hash: digest });
    await expectSuccess(
      chain.callAndWait(validatorAnnounce, abi, 'announce', [this.address, location, signature]),
      'ValidatorAnnounce.announce',
    );
  }

  /** The checkpoint JSON a Hyperlane validator writes (`checkpoint_{index}_with_id.json`). */
  async sign(c: Checkpoint): Promise<string> {
    const hook = pad(c.hook);
    const domainHash = keccak256(encodePacked(['uint32', 'bytes32', 'string'], [c.domain, hook, 'HYPERLANE']));
    const payload = keccak256(
      encodePacked(['bytes32', 'bytes32', 'uint32', 'bytes32'], [domainHash, c.root, c.index, c.messageId]),
    );
    const signature = await this.account.signMessage({ message: { raw: payload } });
    return JSON.stringify({
      value: {
        checkpoint: { merkle_tree_hook_address: hook, mailbox_domain: c.domain, root: c.root, index: c.index },
        message_id: c.messageId,
      },
      signature: {
        r: signature.slice(0, 66),
        s: `0x${signature.slice(66, 130)}`,
        v: Number.parseInt(signature.slice(130), 16),
      },
      serialized_signature: signature,
    });
  }
}

/** The origin tree's latest checkpoint (root, index) as MerkleTreeHook.latestCheckpoint() gives it. */
export async function latestCheckpoint(chain: Chain, hook: Address): Promise<{ root: Hex; index: number }> {
  const { abi } = hyperlaneArtifact('hooks/MerkleTreeHook');
  const [root, index] = (await chain.publicClient.readContract({
    address: hook,
    abi,
    functionName: 'latestCheckpoint',
  })) as [Hex, number];
  return { root, index };
}

export interface BucketServer {
  /** http://127.0.0.1:PORT: worker.checkpointEndpoints.s3 and .gcs. */
  url: string;
  put(bucket: string, key: string, body: string): void;
  /** Paths asked, in order. */
  requests: string[];
  close(): void;
}

/** Path-style object storage on loopback: `GET /{bucket}/{key}`, 404 for anything not put. */
export async function startBucketServer(): Promise<BucketServer> {
  const objects = new Map<string, string>();
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push(path);
    const body = req.method === 'GET' ? objects.get(path) : undefined;
    if (body === undefined) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    put: (bucket, key, body) => objects.set(`/${bucket}/${key}`, body),
    requests,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
