/**
 * Builders for Hyperlane and CCTP V2 messages, their logs (in the hex shape of a JSON-RPC receipt and,
 * through `libraryLog`, the bytes shape the library reads) and JSON-RPC receipts, written with viem
 * (an independent implementation) so tests never check the library against its own encoder.
 */
import { encodeAbiParameters, encodePacked, hexToBytes, keccak256, pad, toHex } from 'viem/utils';
import type { Hex } from 'viem';
import type { Log } from '../../lib/codec/abi.ts';

export const DISPATCH_TOPIC: Hex = '0x769f711d20c679153d382254f59892613b58a97cc876b249134ac25c80f9c814';
export const MESSAGE_SENT_TOPIC: Hex = '0x8c5261668696ce22758910d05bab8f186d6eb247ceac2af2e82c7dc17669b036';
/** keccak256("GasPayment(bytes32,uint32,uint256,uint256)"), checked against viem in test/unit/gas-payment.test.ts. */
export const GAS_PAYMENT_TOPIC: Hex = '0x65695c3748edae85a24cc2c60b299b31f463050bc259150d2e5802ec8d11720a';
export const CCTP_V2_TRANSMITTER: Hex = '0x81d40f21f12a8f0e3252bccb954d722d4c464b64';
export const MAILBOX: Hex = '0xc005dc82818d67af737725bd4bf75435d065d239';

/** Defaults of the builders below: any values work, fixed ones make failures readable. */
const SENDER: Hex = '0x1111111111111111111111111111111111111111';
const RECIPIENT: Hex = '0x2222222222222222222222222222222222222222';

export interface MessageFields {
  /** Message.sol VERSION is 3; anything else only to test that it is refused. */
  version?: number;
  nonce?: number;
  origin?: number;
  /** A 20-byte address (left-padded to a word, as Mailbox.dispatch does) or a 32-byte word. */
  sender?: Hex;
  destination?: number;
  /** A 20-byte address or a 32-byte word. */
  recipient?: Hex;
  body?: Hex;
}

/** Left-pads a 20-byte address to the 32-byte word Hyperlane uses; a word is left as it is. */
const toWord = (value: Hex): Hex => pad(value, { size: 32 });

/** A Hyperlane message packed as Message.sol `formatMessage` does, lower-case hex. */
export function hyperlaneMessage(f: MessageFields = {}): Hex {
  const packed = encodePacked(
    ['uint8', 'uint32', 'uint32', 'bytes32', 'uint32', 'bytes32', 'bytes'],
    [
      f.version ?? 3,
      f.nonce ?? 0,
      f.origin ?? 1,
      toWord(f.sender ?? SENDER),
      f.destination ?? 8453,
      toWord(f.recipient ?? RECIPIENT),
      f.body ?? '0x68656c6c6f',
    ],
  );
  return packed.toLowerCase() as Hex; // checksummed inputs would otherwise keep their mixed case
}

export function messageId(message: Hex): Hex {
  return keccak256(message);
}

/** A log as a JSON-RPC receipt carries it: hex strings. */
export interface RpcLog {
  address: string;
  topics: string[];
  data: string;
  [extra: string]: unknown;
}

/** The same log as the library reads it (lib/codec/abi.ts Log): data as bytes. */
export function libraryLog(log: RpcLog): Log {
  return { address: log.address, topics: log.topics, data: hexToBytes(log.data as Hex) };
}

/**
 * Mailbox `Dispatch(address indexed sender, uint32 indexed destination, bytes32 indexed recipient,
 * bytes message)` for the message of `f` (or a message given whole); `indexed` sets the topics
 * apart from the message.
 */
export function dispatchLog(
  mailbox: string,
  f: MessageFields | Hex = {},
  indexed: MessageFields = typeof f === 'string' ? {} : f,
): RpcLog {
  return {
    address: mailbox,
    topics: [
      DISPATCH_TOPIC,
      toWord(indexed.sender ?? SENDER),
      pad(toHex(indexed.destination ?? 8453)),
      toWord(indexed.recipient ?? RECIPIENT),
    ],
    data: encodeAbiParameters([{ type: 'bytes' }], [typeof f === 'string' ? f : hyperlaneMessage(f)]),
  };
}

export interface BurnFields {
  burnToken?: Hex;
  mintRecipient?: Hex;
  amount?: bigint;
  messageSender?: Hex;
  maxFee?: bigint;
  hookData?: Hex;
}

/** A BurnMessageV2 body as TokenMessengerV2 packs it (circlefin/evm-cctp-contracts BurnMessageV2.sol; feeExecuted and expirationBlock zero). */
export function burnMessageV2(f: BurnFields = {}): Hex {
  return encodePacked(
    ['uint32', 'bytes32', 'bytes32', 'uint256', 'bytes32', 'uint256', 'uint256', 'uint256', 'bytes'],
    [
      1,
      toWord(f.burnToken ?? '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48'),
      toWord(f.mintRecipient ?? '0x3333333333333333333333333333333333333333'),
      f.amount ?? 1_000_000n,
      toWord(f.messageSender ?? '0x4444444444444444444444444444444444444444'),
      f.maxFee ?? 0n,
      0n,
      0n,
      f.hookData ?? '0x',
    ],
  );
}

export interface CctpFields {
  /** MessageV2.sol version is 1; 0 is a V1 message. */
  version?: number;
  sourceDomain?: number;
  destinationDomain?: number;
  sender?: Hex;
  recipient?: Hex;
  body?: Hex;
}

/** A CCTP V2 message as MessageV2.sol `_formatMessageForRelay` packs it (nonce and finalityThresholdExecuted are zero when sent). */
export function cctpV2Message(f: CctpFields = {}): Hex {
  const messenger: Hex = '0x28b5a0e9c621a5badaa536219b3a228c8168cf5d';
  return encodePacked(
    ['uint32', 'uint32', 'uint32', 'bytes32', 'bytes32', 'bytes32', 'bytes32', 'uint32', 'uint32', 'bytes'],
    [
      f.version ?? 1,
      f.sourceDomain ?? 0,
      f.destinationDomain ?? 6,
      pad('0x00'),
      toWord(f.sender ?? messenger),
      toWord(f.recipient ?? messenger),
      pad('0x00'),
      2000,
      0,
      f.body ?? burnMessageV2(),
    ],
  );
}

/** MessageTransmitterV2 `MessageSent(bytes message)`. */
export function messageSentLog(transmitter: string = CCTP_V2_TRANSMITTER, message: Hex = cctpV2Message()): RpcLog {
  return {
    address: transmitter,
    topics: [MESSAGE_SENT_TOPIC],
    data: encodeAbiParameters([{ type: 'bytes' }], [message]),
  };
}

/**
 * IInterchainGasPaymaster `GasPayment(bytes32 indexed messageId, uint32 indexed destinationDomain,
 * uint256 gasAmount, uint256 payment)`.
 */
export function gasPaymentLog(
  paymaster: string,
  f: { messageId: Hex; destination?: number; gasAmount?: bigint; payment?: bigint },
): RpcLog {
  return {
    address: paymaster,
    topics: [GAS_PAYMENT_TOPIC, f.messageId, pad(toHex(f.destination ?? 8453))],
    data: encodeAbiParameters(
      [{ type: 'uint256' }, { type: 'uint256' }],
      [f.gasAmount ?? 50_000n, f.payment ?? 10n ** 15n],
    ),
  };
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
    logs: logs.map((log, i) => ({
      ...log,
      logIndex: toHex(i),
      removed: false,
      transactionHash: txHash,
      blockTimestamp: 1_700_000_000,
    })),
    logsBloom: '0x' + '0'.repeat(512),
    status,
    type: '0x2',
    effectiveGasPrice: '0x1',
  };
}

export function txHash(n: number): string {
  return '0x' + n.toString(16).padStart(64, '0');
}
