/**
 * Decoding a Dispatch log into a Hyperlane message and its id: ours against viem (decodeEventLog
 * + keccak256), the library a TypeScript user would reach for. Both start from the log as the RPC
 * returns it (hex strings), so ours pays for hex → bytes as the receipt parser does.
 * Run alone: node bench/decode.ts
 */
import { decodeEventLog, keccak256 as viemKeccak, parseAbiItem, type Hex } from 'viem';
import { decodeDispatchLog, type DispatchEvent } from '../lib/codec/abi.ts';
import { hexToBytes } from '../lib/codec/hex.ts';
import { keccak256 } from '../lib/codec/keccak.ts';
import { messageFromDispatch } from '../lib/codec/message.ts';
import { dispatchLog, MAILBOX, messageId } from '../test/helpers/fixtures/builders.ts';
import { compare, formatOps, printTable, type BenchRow } from './lib.ts';

const DISPATCH_ABI = [
  parseAbiItem(
    'event Dispatch(address indexed sender, uint32 indexed destination, bytes32 indexed recipient, bytes message)',
  ),
];

// A transfer's Dispatch as a Warp route sends it: a 77-byte header and a 64-byte TokenMessage body.
const BODY = `0x${'ab'.repeat(64)}` as Hex;
const rpcLog = dispatchLog(MAILBOX, { nonce: 42, origin: 1, destination: 8453, body: BODY });

/** The decoding step alone, as the receipt parser and the pipeline do it, without the message parse. */
function oursDecode(): DispatchEvent {
  const data = hexToBytes(rpcLog.data);
  if (data === undefined) throw new Error('bad hex');
  return decodeDispatchLog({ address: rpcLog.address, topics: rpcLog.topics, data });
}

function ours(): string {
  return messageFromDispatch(oursDecode(), 1).id;
}

function viemDecode(): Hex {
  return decodeEventLog({ abi: DISPATCH_ABI, data: rpcLog.data as Hex, topics: rpcLog.topics as [Hex, ...Hex[]] }).args
    .message;
}

function viem(): string {
  return viemKeccak(viemDecode());
}

export async function run(): Promise<BenchRow[]> {
  // Both must agree with the id viem's encoder implies before anything is timed.
  const expected = messageId(`0x${rpcLog.data.slice(2 + 128, 2 + 128 + 2 * (77 + 64))}` as Hex);
  if (ours() !== expected || viem() !== expected) throw new Error('decode: ours and viem disagree on the message id');

  const message = hexToBytes(`0x${rpcLog.data.slice(2 + 128, 2 + 128 + 2 * (77 + 64))}`)!;
  const ops = compare(
    [
      { name: 'ours', fn: ours },
      { name: 'viem', fn: viem },
      // The id is keccak256 of the message: no decoder built on our keccak can beat this.
      { name: 'keccak', fn: () => keccak256(message) },
      { name: 'oursDecode', fn: oursDecode },
      { name: 'viemDecode', fn: viemDecode },
    ],
    { rounds: 9, roundMs: 100 },
  );
  const o = ops.get('ours') ?? 0;
  const v = ops.get('viem') ?? 0;
  const k = ops.get('keccak') ?? 0;
  const od = ops.get('oursDecode') ?? 0;
  const vd = ops.get('viemDecode') ?? 0;
  console.log('\n## decode a Dispatch log + parse its message + id (141-byte message), ops/s, median of 9 rounds');
  printTable(
    ['contender', 'ops/s', 'vs viem'],
    [
      ['ours: hexToBytes + decodeDispatchLog + messageFromDispatch', formatOps(o), `${(o / v).toFixed(1)}x`],
      ['viem: decodeEventLog + keccak256', formatOps(v), '1.0x'],
      ['(part of ours) keccak256 of the 141-byte message alone', formatOps(k), `${(k / v).toFixed(1)}x`],
      ['decoding alone, ours: hexToBytes + decodeDispatchLog', formatOps(od), `${(od / vd).toFixed(1)}x viem's`],
      ['decoding alone, viem: decodeEventLog', formatOps(vd), '1.0x'],
    ],
  );
  console.log(
    `ceiling: with decoding free, ours would be ${(k / v).toFixed(1)}x viem; keccak is ${((100 * o) / k).toFixed(0)}% of our time`,
  );
  return [
    {
      what: 'decode Dispatch log + message + id',
      ours: `${formatOps(o)} ops/s`,
      peer: `${formatOps(v)} ops/s (viem)`,
      ratio: o / v,
      target: '>= 10x',
      met: o / v >= 10,
    },
    {
      what: 'decode Dispatch log only (no parse, no id)',
      ours: `${formatOps(od)} ops/s`,
      peer: `${formatOps(vd)} ops/s (viem decodeEventLog)`,
      ratio: od / vd,
      target: 'info',
    },
    {
      what: 'keccak256 of the message alone (the ceiling)',
      ours: `${formatOps(k)} ops/s`,
      peer: `${formatOps(v)} ops/s (viem decode + id)`,
      ratio: k / v,
      target: 'info',
    },
  ];
}

if (import.meta.main) await run();
