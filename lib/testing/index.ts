/**
 * `relayer-api/testing`: test tooling for embedders who run node:test (docs/embedding.md#test-tooling):
 * the outbox contract suite to check an outbox of one's own, a fake clock, and message builders.
 * Node only (node:test, node:assert); the other entry points never import it.
 */
export * from '../errors/family.ts';
export { createFakeClock, flushJobs, type FakeClock } from './clock.ts';
export {
  DEFAULT_RECIPIENT,
  DEFAULT_SENDER,
  hyperlaneMessage,
  messageId,
  txHash,
  type MessageFields,
} from './messages.ts';
export {
  outboxContract,
  OUTBOX_CONTRACT_SECTIONS,
  type OutboxContractOptions,
  type OutboxContractSection,
} from './outbox-contract/index.ts';
export {
  outboxMessage,
  queuedRecord,
  T0,
  type ContractContext,
  type ContractSection,
  type MakeOutbox,
  type OutboxHarness,
} from './outbox-contract/context.ts';
export { createFakeNode, type FakeNode, type FakeNodeOptions, type NodeFault } from './fake-node.ts';
export {
  burnMessageV2,
  cctpV2Message,
  DEFAULT_MAILBOX,
  dispatchLog,
  messageSentLog,
  rpcReceipt,
  transferLogs,
  type CctpFields,
  type RpcLog,
} from './receipts.ts';
