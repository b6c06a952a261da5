/**
 * The destination side of a delivery: which metadata the recipient's ISM wants, `Mailbox.process`,
 * and, when a message turns out to be delivered already, the transaction that delivered it.
 */
import { parseAbi, type Account, type Address, type Chain, type Hash, type Hex, type PublicClient, type WalletClient } from 'viem';
import { readHyperlaneMessage } from '../../test/e2e/wire.ts';

export const MAILBOX_ABI = parseAbi([
  'function process(bytes metadata, bytes message) payable',
  'function delivered(bytes32 messageId) view returns (bool)',
  'function processedAt(bytes32 messageId) view returns (uint48)',
  'function recipientIsm(address recipient) view returns (address)',
  'event ProcessId(bytes32 indexed messageId)',
]);
const ISM_ABI = parseAbi(['function moduleType() view returns (uint8)']);

/** IInterchainSecurityModule.Types values this worker knows how to satisfy. */
export const ISM_NULL = 6; // NoopIsm, TestIsm: no metadata
export const ISM_CCIP_READ = 7; // TokenBridgeCctpBase: abi.encode(cctpMessage, attestation)

export interface Destination {
  domain: number;
  mailbox: Address;
  publicClient: PublicClient;
  wallet: WalletClient;
  account: Account | Address;
  chain: Chain;
}

/** The module type of the ISM that will verify `message` on `destination`. */
export async function recipientIsmType(destination: Destination, message: Hex): Promise<number> {
  const recipient = `0x${readHyperlaneMessage(message).recipient.slice(26)}` as Address;
  const { publicClient, mailbox } = destination;
  const ism = await publicClient.readContract({ address: mailbox, abi: MAILBOX_ABI, functionName: 'recipientIsm', args: [recipient] });
  return publicClient.readContract({ address: ism, abi: ISM_ABI, functionName: 'moduleType' });
}

/** The transaction that delivered `id` (its ProcessId log), or null while it is not delivered. */
export async function deliveryTransaction(destination: Destination, id: Hash): Promise<Hash | null> {
  const { publicClient, mailbox } = destination;
  const at = await publicClient.readContract({ address: mailbox, abi: MAILBOX_ABI, functionName: 'processedAt', args: [id] });
  if (at === 0) return null;
  const logs = await publicClient.getContractEvents({
    address: mailbox,
    abi: MAILBOX_ABI,
    eventName: 'ProcessId',
    args: { messageId: id },
    fromBlock: BigInt(at),
    toBlock: BigInt(at),
  });
  if (logs.length === 0) throw new Error(`Mailbox says ${id} was processed in block ${at} but that block has no ProcessId for it`);
  return logs[0].transactionHash;
}

export interface ProcessOutcome {
  /** The transaction that delivered the message: ours, or an earlier one when `already`. */
  txHash: Hash;
  /** process() reverted (or would have) because the Mailbox had delivered it before. */
  already: boolean;
}

/**
 * Sends `Mailbox.process(metadata, message)` and waits for it. A revert is answered by asking the
 * Mailbox whether the message is delivered (a worker that died after sending, or one that raced
 * us): if so the outcome is `already` with the delivering transaction; otherwise the error stands.
 * `onSent` runs once the transaction is in the node's pool.
 */
export async function processMessage(destination: Destination, metadata: Hex, message: Hex, onSent?: (hash: Hash) => void): Promise<ProcessOutcome> {
  const id = readHyperlaneMessage(message).id;
  const { publicClient, wallet, mailbox, account, chain } = destination;
  const alreadyOr = async (error: unknown): Promise<ProcessOutcome> => {
    const prior = await deliveryTransaction(destination, id);
    if (prior) return { txHash: prior, already: true };
    throw error;
  };
  let hash: Hash;
  try {
    // viem estimates gas first, so a process that would revert throws here, before any fee.
    hash = await wallet.writeContract({ address: mailbox, abi: MAILBOX_ABI, functionName: 'process', args: [metadata, message], account, chain });
  } catch (error) {
    return alreadyOr(error);
  }
  onSent?.(hash);
  const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  if (receipt.status === 'success') return { txHash: hash, already: false };
  return alreadyOr(new Error(`Mailbox.process reverted in ${hash}`));
}
