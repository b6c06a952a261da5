/**
 * Deploys the Solidity stand-ins of test/helpers/chain/contracts/ (compiled at test time) next to a Mailbox,
 * and sends the transactions the scenarios need.
 */
import { pad, type Address, type Hash, type Hex } from 'viem';
import type { Chain } from './clients.ts';
import { compiledContract } from './solidity.ts';

/** Circle's CCTP domains: 0 is Ethereum, 6 is Base. The relayer never reads them. */
export const CCTP_LOCAL_DOMAIN = 0;
export const CCTP_REMOTE_DOMAIN = 6;
/** TokenMessengerV2's address (the same on every chain), as the CCTP message's recipient. */
export const REMOTE_TOKEN_MESSENGER = pad('0x28b5a0e9C621a5BadaA536219b3a228C8168cf5d');

export interface StandIns {
  /** The CCTP V2 MessageTransmitter stand-in: the relayer's `cctpMessageTransmitter`. */
  transmitter: Address;
  rogue: Address;
}

export async function deployStandIns(chain: Chain, mailbox: Address): Promise<StandIns> {
  const transmitterC = compiledContract('CctpV2TransmitterStandIn');
  const rogueC = compiledContract('RogueDispatcher');
  const transmitter = await chain.deploy(transmitterC.abi, transmitterC.bytecode, [
    mailbox,
    CCTP_LOCAL_DOMAIN,
    CCTP_REMOTE_DOMAIN,
    REMOTE_TOKEN_MESSENGER,
  ]);
  const rogue = await chain.deploy(rogueC.abi, rogueC.bytecode);
  return { transmitter, rogue };
}

export interface Transfer {
  destination: number;
  /** 20-byte address or 32-byte word; padded to a word. */
  recipient: Address | `0x${string}`;
  amount: bigint;
  /** How many MessageSent events (default: `dispatches`). */
  burns?: number;
  /** How many Mailbox dispatches (default 1). */
  dispatches?: number;
}

function transferArgs(t: Transfer): readonly unknown[] {
  const dispatches = t.dispatches ?? 1;
  return [t.destination, pad(t.recipient, { size: 32 }), t.amount, BigInt(t.burns ?? dispatches), BigInt(dispatches)];
}

/** Sends `send(...)` on the transmitter stand-in; returns the hash without waiting. */
export function sendTransfer(chain: Chain, standIns: StandIns, t: Transfer): Promise<Hash> {
  return chain.call(standIns.transmitter, compiledContract('CctpV2TransmitterStandIn').abi, 'send', transferArgs(t));
}

/** Sends `sendThenRevert(...)`: emits everything, then reverts; mined with status 0. */
export function sendRevertingTransfer(chain: Chain, standIns: StandIns, t: Transfer): Promise<Hash> {
  return chain.call(
    standIns.transmitter,
    compiledContract('CctpV2TransmitterStandIn').abi,
    'sendThenRevert',
    transferArgs(t),
  );
}

export interface Forgery {
  destination: number;
  recipient: Address;
  /** The Hyperlane message the look-alike Dispatch carries. */
  message: `0x${string}`;
  /** The bytes the look-alike MessageSent carries. */
  cctpMessage: `0x${string}`;
}

/** Look-alike Dispatch and MessageSent from the rogue contract only. */
export function sendForgery(chain: Chain, standIns: StandIns, f: Forgery): Promise<Hash> {
  return chain.call(standIns.rogue, compiledContract('RogueDispatcher').abi, 'forge', [
    f.destination,
    pad(f.recipient),
    f.message,
    f.cctpMessage,
  ]);
}

/** Look-alikes from the rogue contract, then one genuine transfer, in one transaction. */
export function sendForgeryAroundTransfer(chain: Chain, standIns: StandIns, f: Forgery, amount: bigint): Promise<Hash> {
  return chain.call(standIns.rogue, compiledContract('RogueDispatcher').abi, 'forgeAround', [
    standIns.transmitter,
    f.destination,
    pad(f.recipient),
    amount,
    f.message,
    f.cctpMessage,
  ]);
}

/**
 * A CCTP V2 message exactly as the transmitter stand-in would emit it (its own formatting
 * functions, over eth_call), for forgeries that only their emitter address gives away.
 */
export async function genuineCctpMessage(
  chain: Chain,
  standIns: StandIns,
  recipient: Address,
  amount: bigint,
): Promise<Hex> {
  const { abi } = compiledContract('CctpV2TransmitterStandIn');
  const read = (functionName: string, args: readonly unknown[]) =>
    chain.publicClient.readContract({ address: standIns.transmitter, abi, functionName, args }) as Promise<Hex>;
  return read('formatMessage', [await read('formatBurnMessage', [pad(recipient), amount])]);
}
