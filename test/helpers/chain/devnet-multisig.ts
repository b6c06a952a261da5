/**
 * The devnet's multisig route (docs/devnet.md#multisig): on the origin a ValidatorAnnounce and
 * three validators that sign every leaf of its MerkleTreeHook into their own local directory
 * (`file://` locations: the devnet's config sets allowLocalCheckpointSyncers); on the destination
 * the mainnet default ISM shape,
 * `Aggregation(2)[Routing(origin → Aggregation(1)[MessageIdMultisig 2/3, MerkleRootMultisig 2/3]), NoopIsm]`,
 * made with the real factories, guarding a TestRecipient. The validators poll the origin's
 * `InsertedIntoTree` logs every 500 ms and write `{i}_with_id.json` as Hyperlane's validators do.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Address, Hex } from 'viem';
import { proofOf } from '../../../lib/worker/ism/merkle-tree.ts';
import type { Chain } from './clients.ts';
import { hyperlaneArtifact } from './hyperlane.ts';
import { deployNoopIsm, deployRoutingIsm, deployTestRecipient } from './isms.ts';
import { deployIsmFactories, deployValidatorAnnounce, Validator } from './validators.ts';

export interface MultisigRoute {
  recipient: Address;
  validatorAnnounce: Address;
  validators: Address[];
  stop(): void;
}

export async function startMultisigRoute(
  origin: { chain: Chain; domain: number; mailbox: Address; merkleTreeHook: Address },
  destination: { chain: Chain },
  dir: string,
): Promise<MultisigRoute> {
  const validatorAnnounce = await deployValidatorAnnounce(origin.chain, origin.mailbox);
  const validators = [new Validator(), new Validator(), new Validator()];
  const dirs = validators.map((_, i) => join(dir, 'validators', `v${i}`));
  for (const [i, v] of validators.entries()) {
    mkdirSync(dirs[i], { recursive: true });
    await v.announce(origin.chain, validatorAnnounce, `file://${dirs[i]}`);
  }
  const factories = await deployIsmFactories(destination.chain);
  const addresses = validators.map((v) => v.address);
  const inner = await factories.aggregation(
    [await factories.messageId(addresses, 2), await factories.merkleRoot(addresses, 2)],
    1,
  );
  const routing = await deployRoutingIsm(destination.chain, new Map([[origin.domain, inner]]));
  const ism = await factories.aggregation([routing, await deployNoopIsm(destination.chain)], 2);
  const recipient = await deployTestRecipient(destination.chain, ism);

  // The validators: every new leaf signed with the root of the tree up to it.
  const { abi } = hyperlaneArtifact('hooks/MerkleTreeHook');
  const leaves: Hex[] = [];
  let from = 0n;
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const to = await origin.chain.publicClient.getBlockNumber();
      if (to < from) return;
      const logs = await origin.chain.publicClient.getContractEvents({
        address: origin.merkleTreeHook,
        abi,
        eventName: 'InsertedIntoTree',
        fromBlock: from,
        toBlock: to,
      });
      for (const log of logs) {
        const { messageId, index } = log.args as unknown as { messageId: Hex; index: number };
        if (index !== leaves.length) continue;
        leaves.push(messageId);
        const { root } = proofOf(leaves, index);
        for (const [i, v] of validators.entries()) {
          const json = await v.sign({ domain: origin.domain, hook: origin.merkleTreeHook, root, index, messageId });
          writeFileSync(join(dirs[i], `${index}_with_id.json`), json);
        }
      }
      from = to + 1n;
    } catch {
      // the node is starting or stopping: the next tick tries again
    } finally {
      busy = false;
    }
  }, 500);
  return { recipient, validatorAnnounce, validators: addresses, stop: () => clearInterval(timer) };
}
