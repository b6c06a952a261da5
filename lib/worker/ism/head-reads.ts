/**
 * The recipient's ISM (`Mailbox.recipientIsm`) and ISMs' `moduleType()`, read once per head
 * (docs/delivery.md#throughput): messages that start together share the read under way, and a
 * finished read is reused while the chain's head is the one it was read at, for ISM_FRESH_MS at
 * most (no head known: only the read under way is shared). A failed read is not kept.
 *
 * Safe against a recipient whose ISM changes (docs/hostile-recipients.md#a-changing-ism): an
 * answer of an earlier state builds metadata for the ISM of that state; the simulation of the real
 * `process` call (eth_estimateGas at the node's latest state) then reverts, and nothing is signed.
 */
import type { Address, PublicClient } from 'viem';
import { ISM_ABI, MAILBOX_ABI } from './abi.ts';

/** How long a read is reused at one head. */
export const ISM_FRESH_MS = 500;
/** Reads kept per kind; above it, those no longer fresh are let go. */
const MAX_HELD = 1_024;

export interface IsmReads {
  recipientIsm(recipient: Address): Promise<Address>;
  moduleType(ism: Address): Promise<number>;
}

interface Held<T> {
  at: number;
  head: bigint | undefined;
  done: boolean;
  value: Promise<T>;
}

export function createIsmReads(o: {
  publicClient: PublicClient;
  mailbox: Address;
  /** The chain's head as the sender's head watcher last read it (lib/worker/tx/heads.ts). */
  head: () => bigint | undefined;
  now: () => number;
}): IsmReads {
  function shared<T>(read: (key: Address) => Promise<T>): (key: Address) => Promise<T> {
    const held = new Map<string, Held<T>>();
    const fresh = (h: Held<T>, head: bigint | undefined, now: number) =>
      !h.done || (head !== undefined && h.head === head && now - h.at < ISM_FRESH_MS);
    return (key) => {
      const k = key.toLowerCase();
      const head = o.head();
      const now = o.now();
      const h = held.get(k);
      if (h && fresh(h, head, now)) return h.value;
      if (held.size >= MAX_HELD) for (const [other, e] of held) if (!fresh(e, head, now)) held.delete(other);
      const entry: Held<T> = { at: now, head, done: false, value: read(key) };
      held.set(k, entry);
      entry.value.then(
        () => {
          entry.done = true;
        },
        () => {
          if (held.get(k) === entry) held.delete(k);
        },
      );
      return entry.value;
    };
  }
  const direct = directIsmReads(o.publicClient, o.mailbox);
  return { recipientIsm: shared(direct.recipientIsm), moduleType: shared(direct.moduleType) };
}

/** The same two reads made directly, each time (what `createIsmReads` shares per head). */
export function directIsmReads(publicClient: PublicClient, mailbox: Address): IsmReads {
  return {
    recipientIsm: (recipient) =>
      publicClient.readContract({
        address: mailbox,
        abi: MAILBOX_ABI,
        functionName: 'recipientIsm',
        args: [recipient],
      }),
    moduleType: (ism) => publicClient.readContract({ address: ism, abi: ISM_ABI, functionName: 'moduleType' }),
  };
}
