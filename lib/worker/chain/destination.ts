/**
 * A destination chain for the delivery loop: its Mailbox read with viem, metadata by the
 * recipient's ISM (lib/worker/ism/metadata.ts), `process` simulated and sent through the
 * transaction sender of its signer and chain (lib/worker/tx/sender.ts: the nonce book, the journal,
 * replacements, confirmations), and the message's journaled transactions followed or looked at.
 */
import { encodeFunctionData, type Address, type Hex, type PublicClient } from 'viem';
import { systemClock, type Clock } from '../../clock.ts';
import { hexToBytes } from '../../codec/hex.ts';
import { parseMessageHeader, wordToAddress } from '../../codec/message.ts';
import { DeliveryError } from '../errors.ts';
import { createIsmReads } from '../ism/head-reads.ts';
import { buildMetadata, ISM_TYPE, MAILBOX_ABI, type MultisigBuilder, type OffchainReader } from '../ism/metadata.ts';
import { headsOf } from '../tx/heads.ts';
import type { TransactionSender } from '../tx/sender.ts';
import type { TransactionRequest } from '../tx/types.ts';
import type { Destination } from '../types.ts';

export interface MailboxDestinationOptions {
  name: string;
  domain: number;
  mailbox: Address;
  publicClient: PublicClient;
  sender: TransactionSender;
  offchain?: OffchainReader;
  multisig?: MultisigBuilder;
  /** Told the end of every metadata build: `error`, or undefined when built (docs/isms.md#metrics). */
  onMetadata?: (message: Hex, error: unknown) => void;
  /** The sender's clock: ISM reads are shared at the head its head watcher read (lib/worker/tx/heads.ts). */
  clock?: Clock;
}

/** The message's recipient, as the Mailbox reads it (docs/isms.md#the-metadata-builder). */
const recipientOf = (message: Hex) => wordToAddress(parseMessageHeader(hexToBytes(message)).recipient) as Address;

export function createMailboxDestination(options: MailboxDestinationOptions): Destination {
  const { name, domain, mailbox, publicClient, sender, offchain, multisig, onMetadata } = options;
  const clock = options.clock ?? systemClock;
  const heads = headsOf(publicClient, clock);
  const reads = createIsmReads({ publicClient, mailbox, head: () => heads.latest(), now: () => clock.now() });
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

    async prefetch(message) {
      try {
        const type = await reads.moduleType(await reads.recipientIsm(recipientOf(message)));
        if (type !== ISM_TYPE.NULL) return undefined;
        // A NULL ISM's metadata is empty (docs/isms.md#the-metadata-builder): nothing more to ask.
        onMetadata?.(message, undefined);
        return '0x';
      } catch {
        return undefined;
      }
    },

    async metadata(message, signal, source) {
      const recipient = recipientOf(message);
      const options = { publicClient, mailbox, message, recipient, offchain, multisig, source, signal, reads };
      try {
        const { metadata } = await buildMetadata(options);
        onMetadata?.(message, undefined);
        return metadata;
      } catch (error) {
        onMetadata?.(message, error);
        throw error;
      }
    },

    simulate(metadata, message) {
      return sender.simulate(processCall(metadata, message));
    },

    async process(metadata, message, simulated, opts) {
      const { hash, receipt } = await sender.send(processCall(metadata, message), {
        simulated,
        onWait: opts.onWait,
        owner: { messageId: opts.messageId, fence: opts.fence },
        // The loop records the delivery with markDelivered, which settles the journal's slot.
        settledByRecord: true,
      });
      return { hash, status: receipt.status };
    },

    async resume(entries, opts) {
      if (entries[0].signer === sender.signer) {
        const { hash, receipt } = await sender.follow(entries, { ...opts, settledByRecord: true });
        return { hash, status: receipt.status };
      }
      const where = await sender.inspect(entries);
      if (where.state === 'mined') return { hash: where.hash, status: where.status };
      if (where.state === 'dropped') return { status: 'dropped' };
      return {
        status: 'open',
        detail: `transaction ${where.hash} of signer ${entries[0].signer} (nonce ${where.nonce}) may still land`,
      };
    },

    async recover(signal) {
      await sender.recover(signal);
    },
  };
}
