/**
 * A destination chain for the delivery loop: its Mailbox read with viem, metadata by the
 * recipient's ISM (metadata.ts), `process` simulated and sent through a transaction sender (one
 * nonce sequence per signer and chain, fees from the node, replacement of a stuck transaction,
 * confirmations: lib/worker/tx/sender.ts).
 */
import { encodeFunctionData, type Address, type Hex, type PublicClient } from 'viem';
import type { Destination } from './delivery.ts';
import { DeliveryError } from './errors.ts';
import { buildMetadata, MAILBOX_ABI, type OffchainReader } from './metadata.ts';
import type { SimulateResult, TransactionRequest, TransactionSender } from './tx/sender.ts';

export interface MailboxDestinationOptions {
  name: string;
  domain: number;
  mailbox: Address;
  publicClient: PublicClient;
  sender: TransactionSender;
  offchain?: OffchainReader;
}

export function createMailboxDestination(options: MailboxDestinationOptions): Destination {
  const { name, domain, mailbox, publicClient, sender, offchain } = options;
  const processCall = (metadata: Hex, message: Hex): TransactionRequest => ({
    to: mailbox,
    data: encodeFunctionData({ abi: MAILBOX_ABI, functionName: 'process', args: [metadata, message] }),
  });

  return {
    name,
    domain,

    async deliveredBy(id) {
      const at = await publicClient.readContract({
        address: mailbox,
        abi: MAILBOX_ABI,
        functionName: 'processedAt',
        args: [id],
      });
      if (at === 0) return null;
      const logs = await publicClient.getContractEvents({
        address: mailbox,
        abi: MAILBOX_ABI,
        eventName: 'ProcessId',
        args: { messageId: id },
        fromBlock: BigInt(at),
        toBlock: BigInt(at),
      });
      // processedAt is the block number of the delivery; its ProcessId log is in that block.
      const log = logs.find((l) => l.transactionHash);
      if (!log?.transactionHash)
        throw new DeliveryError(
          'rpc',
          `the Mailbox says ${id} was delivered in block ${at}, which has no ProcessId log for it`,
        );
      return log.transactionHash;
    },

    async metadata(message, signal) {
      const recipient = `0x${message.slice(2 + 2 * 45 + 24, 2 + 2 * 77)}` as Address;
      const { metadata } = await buildMetadata({ publicClient, mailbox, message, recipient, offchain, signal });
      return metadata;
    },

    simulate(metadata, message) {
      return sender.simulate(processCall(metadata, message));
    },

    async process(metadata, message, onWait, simulated) {
      // The loop simulated this very call just before, with `simulate` above: its SimulateResult's
      // gas limit is signed, not estimated again.
      const { hash, receipt } = await sender.send(processCall(metadata, message), {
        onWait,
        simulated: simulated as SimulateResult | undefined,
      });
      return { hash, status: receipt.status };
    },
  };
}
