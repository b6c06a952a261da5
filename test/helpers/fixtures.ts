/**
 * Builders for Hyperlane and CCTP V2 messages, their logs and JSON-RPC receipts, written with viem
 * (an independent implementation) so tests never check the library against its own encoder.
 */
import { encodeAbiParameters, encodePacked, keccak256, pad, toHex, type Hex } from 'viem';

export const DISPATCH_TOPIC: Hex = '0x769f711d20c679153d382254f59892613b58a97cc876b249134ac25c80f9c814';
export const MESSAGE_SENT_TOPIC: Hex = '0x8c5261668696ce22758910d05bab8f186d6eb247ceac2af2e82c7dc17669b036';
export const CCTP_V2_TRANSMITTER: Hex = '0x81d40f21f12a8f0e3252bccb954d722d4c464b64';
export const MAILBOX: Hex = '0xc005dc82818d67af737725bd4bf75435d065d239';

export interface MessageFields {
  nonce?: number;
  origin?: number;
  sender?: Hex; // 20-byte address
  destination?: number;
  recipient?: Hex; // 20-byte address
  body?: Hex;
}

export function hyperlaneMessage(f: MessageFields = {}): Hex {
  return encodePacked(
    ['uint8', 'uint32', 'uint32', 'bytes32', 'uint32', 'bytes32', 'bytes'],
    [
      3,
      f.nonce ?? 0,
      f.origin ?? 1,
      pad(f.sender ?? '0x1111111111111111111111111111111111111111'),
      f.destination ?? 8453,
      pad(f.recipient ?? '0x2222222222222222222222222222222222222222'),
      f.body ?? '0x68656c6c6f',
    ],
  );
}

export function messageId(message: Hex): Hex {
  return keccak256(message);
}

export interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  [extra: string]: unknown;
}

export function dispatchLog(mailbox: string, f: MessageFields = {}): RpcLog {
  const message = hyperlaneMessage(f);
  return {
    address: mailbox,
    topics: [
      DISPATCH_TOPIC,
      pad(f.sender ?? '0x1111111111111111111111111111111111111111'),
      pad(toHex(f.destination ?? 8453)),
      pad(f.recipient ?? '0x2222222222222222222222222222222222222222'),
    ],
    data: encodeAbiParameters([{ type: 'bytes' }], [message]),
  };
}

/** A CCTP V2 message with a BurnMessageV2 body (circlefin/evm-cctp-contracts MessageV2.sol, BurnMessageV2.sol). */
export function cctpV2Message(sourceDomain = 0, destinationDomain = 6): Hex {
  const burn = encodePacked(
    ['uint32', 'bytes32', 'bytes32', 'uint256', 'bytes32', 'uint256', 'uint256', 'uint256'],
    [1, pad('0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48'), pad('0x3333333333333333333333333333333333333333'), 1_000_000n,
      pad('0x4444444444444444444444444444444444444444'), 0n, 0n, 0n],
  );
  return encodePacked(
    ['uint32', 'uint32', 'uint32', 'bytes32', 'bytes32', 'bytes32', 'bytes32', 'uint32', 'uint32', 'bytes'],
    [1, sourceDomain, destinationDomain, pad('0x00'), pad('0x28b5a0e9c621a5badaa536219b3a228c8168cf5d'),
      pad('0x28b5a0e9c621a5badaa536219b3a228c8168cf5d'), pad('0x00'), 2000, 0, burn],
  );
}

export function messageSentLog(transmitter: string = CCTP_V2_TRANSMITTER): RpcLog {
  return { address: transmitter, topics: [MESSAGE_SENT_TOPIC], data: encodeAbiParameters([{ type: 'bytes' }], [cctpV2Message()]) };
}

/** `count` CCTP transfers: a MessageSent then a Dispatch each, as a bridge contract emits them. */
export function transferLogs(count: number, f: MessageFields = {}, mailbox: string = MAILBOX): RpcLog[] {
  const logs: RpcLog[] = [];
  for (let i = 0; i < count; i++) {
    logs.push(messageSentLog());
    logs.push(dispatchLog(mailbox, { ...f, nonce: (f.nonce ?? 0) + i }));
  }
  return logs;
}

let block = 0x100;

/** A receipt as an Ethereum node returns it (extra fields the relayer must ignore included). */
export function rpcReceipt(txHash: string, logs: RpcLog[], status: '0x1' | '0x0' = '0x1'): Record<string, unknown> {
  block++;
  return {
    transactionHash: txHash,
    transactionIndex: '0x0',
    blockHash: '0x' + block.toString(16).padStart(64, '0'),
    blockNumber: toHex(block),
    from: '0x5555555555555555555555555555555555555555',
    to: '0x6666666666666666666666666666666666666666',
    cumulativeGasUsed: '0x5208',
    gasUsed: '0x5208',
    contractAddress: null,
    logs: logs.map((log, i) => ({ ...log, logIndex: toHex(i), removed: false, transactionHash: txHash, blockTimestamp: 1_700_000_000 })),
    logsBloom: '0x' + '0'.repeat(512),
    status,
    type: '0x2',
    effectiveGasPrice: '0x1',
  };
}

export function txHash(n: number): string {
  return '0x' + n.toString(16).padStart(64, '0');
}
