/**
 * Recipients and ISMs from @hyperlane-xyz/core for the delivery tests, one per metadata path of
 * the worker (docs/delivery.md): a TestRecipient whose ISM is a NoopIsm (NULL, empty metadata), a
 * DomainRoutingIsm routing an origin domain to another ISM (ROUTING: `route(message)`), and a
 * message-id multisig ISM (a type the worker does not build metadata for).
 */
import type { Address } from 'viem';
import { DEV_ACCOUNT, type Chain } from './clients.ts';
import { hyperlaneArtifact } from './hyperlane.ts';

/** IInterchainSecurityModule.Types, as `moduleType()` returns them. */
export const ISM_TYPE = {
  UNUSED: 0,
  ROUTING: 1,
  AGGREGATION: 2,
  LEGACY_MULTISIG: 3,
  MERKLE_ROOT_MULTISIG: 4,
  MESSAGE_ID_MULTISIG: 5,
  NULL: 6,
  CCIP_READ: 7,
} as const;

export const ismArtifacts = {
  noop: () => hyperlaneArtifact('isms/NoopIsm'),
  routing: () => hyperlaneArtifact('isms/routing/AtomicInitDomainRoutingIsm'),
  messageIdMultisig: () => hyperlaneArtifact('isms/multisig/StorageMultisigIsm.sol/StorageMessageIdMultisigIsm'),
  recipient: () => hyperlaneArtifact('test/TestRecipient'),
};

/** A NoopIsm: NULL type, verifies everything with empty metadata. */
export async function deployNoopIsm(chain: Chain): Promise<Address> {
  const a = ismArtifacts.noop();
  return chain.deploy(a.abi, a.bytecode);
}

/**
 * A DomainRoutingIsm (the atomic-init variant: configured in its constructor, owned by the dev
 * account) that routes messages from each origin domain to the ISM given for it; a message from
 * any other origin makes `route` revert.
 */
export async function deployRoutingIsm(chain: Chain, routes: ReadonlyMap<number, Address>): Promise<Address> {
  const a = ismArtifacts.routing();
  return chain.deploy(a.abi, a.bytecode, [DEV_ACCOUNT, [...routes.keys()], [...routes.values()]]);
}

/** A message-id multisig ISM (type 5) with the dev account as its one validator. */
export async function deployMessageIdMultisigIsm(chain: Chain): Promise<Address> {
  const a = ismArtifacts.messageIdMultisig();
  return chain.deploy(a.abi, a.bytecode, [[DEV_ACCOUNT], 1]);
}

/**
 * A TestRecipient whose `interchainSecurityModule()` is `ism` (the Mailbox's `recipientIsm`); it
 * records the last message handled (`lastSender`, `lastData`) and emits `ReceivedMessage`.
 */
export async function deployTestRecipient(chain: Chain, ism: Address): Promise<Address> {
  const a = ismArtifacts.recipient();
  const recipient = await chain.deploy(a.abi, a.bytecode);
  const receipt = await chain.callAndWait(recipient, a.abi, 'setInterchainSecurityModule', [ism]);
  if (receipt.status !== 'success') throw new Error(`setInterchainSecurityModule reverted: ${receipt.transactionHash}`);
  return recipient;
}
