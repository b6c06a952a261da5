/**
 * Nonces for the transaction sender (docs/delivery.md, Transactions): one sequence per signer and
 * chain, shared by every sender built on the same client, so concurrent sends take consecutive
 * nonces; read from the node (`pending` count) at first and again after a resync.
 */
import type { Abi, Address, PublicClient } from 'viem';
import { classify, transactionError } from './node-errors.ts';

interface NonceSequence {
  /** The next nonce to hand out; undefined until read from the node (again after a resync). */
  next: number | undefined;
  /** Serialises reads from the node, so concurrent sends get consecutive nonces. */
  reading: Promise<number> | undefined;
}

const sequences = new WeakMap<object, Map<string, NonceSequence>>();

function sequenceFor(client: object, key: string): NonceSequence {
  let byKey = sequences.get(client);
  if (!byKey) {
    byKey = new Map();
    sequences.set(client, byKey);
  }
  let seq = byKey.get(key);
  if (!seq) {
    seq = { next: undefined, reading: undefined };
    byKey.set(key, seq);
  }
  return seq;
}

export interface Nonces {
  /** The next nonce of the sequence (read from the node when it is not known). */
  reserve(): Promise<number>;
  /** The node's view is the truth again: the next reservation re-reads it. */
  resync(): void;
}

/** The sequence of `address` on the chain `chainId` of `publicClient`. */
export function nonceSequence(
  publicClient: PublicClient,
  address: Address,
  chainId: number | undefined,
  errorAbi: Abi | undefined,
): Nonces {
  const seq = sequenceFor(publicClient, `${address.toLowerCase()}:${chainId ?? 'unknown'}`);
  return {
    async reserve() {
      for (;;) {
        if (seq.next !== undefined) return seq.next++;
        if (!seq.reading) {
          seq.reading = publicClient.getTransactionCount({ address, blockTag: 'pending' }).finally(() => {
            seq.reading = undefined;
          });
          try {
            seq.next = await seq.reading;
          } catch (err) {
            throw transactionError(classify(err), 'reading the nonce', errorAbi, err);
          }
        } else {
          await seq.reading.catch(() => {});
        }
      }
    },
    resync() {
      seq.next = undefined;
    },
  };
}
