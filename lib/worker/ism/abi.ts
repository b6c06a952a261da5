/**
 * The contract interfaces the metadata builder reads (docs/isms.md): Hyperlane's
 * IInterchainSecurityModule and its routing, aggregation, multisig and CCIP-read variants, the
 * Mailbox, the origin's MerkleTreeHook and ValidatorAnnounce. Module types as `moduleType()`
 * returns them (IInterchainSecurityModule.Types).
 */
import { parseAbi } from 'viem';

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

export const MAILBOX_ABI = parseAbi([
  'function process(bytes metadata, bytes message) payable',
  'function delivered(bytes32 messageId) view returns (bool)',
  'function processedAt(bytes32 messageId) view returns (uint48)',
  'function recipientIsm(address recipient) view returns (address)',
  'event ProcessId(bytes32 indexed messageId)',
]);

export const ISM_ABI = parseAbi([
  'function moduleType() view returns (uint8)',
  'function route(bytes message) view returns (address)',
  'function getOffchainVerifyInfo(bytes message) view',
  'function modulesAndThreshold(bytes message) view returns (address[], uint8)',
  'function validatorsAndThreshold(bytes message) view returns (address[], uint8)',
  'function verify(bytes metadata, bytes message) returns (bool)',
]);

export const MERKLE_TREE_HOOK_ABI = parseAbi([
  'event InsertedIntoTree(bytes32 messageId, uint32 index)',
  'function latestCheckpoint() view returns (bytes32, uint32)',
]);

export const VALIDATOR_ANNOUNCE_ABI = parseAbi([
  'function getAnnouncedStorageLocations(address[] validators) view returns (string[][])',
]);
