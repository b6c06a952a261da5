/**
 * keccak256: ours against @noble/hashes (the pure-JS reference we must match or beat) and
 * node:crypto's native sha3-256 (same permutation and rate, different padding: the native limit).
 * Run: node bench/keccak.ts
 */
import { createHash } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { keccak256 } from '../lib/codec/keccak.ts';
import { compare, formatOps, printTable, type BenchRow } from './lib.ts';

const SIZES: readonly [string, number][] = [
  ['32 B', 32],
  ['256 B', 256],
  ['1 KiB', 1024],
  ['64 KiB', 64 * 1024],
];

function input(size: number): Uint8Array {
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i++) data[i] = (i * 31 + 7) & 0xff;
  return data;
}

/** Prints the table of ops/s by input size and returns the ours/noble rows of the summary. */
export async function run(): Promise<BenchRow[]> {
  const table: (string | number)[][] = [];
  const rows: BenchRow[] = [];
  for (const [label, size] of SIZES) {
    const data = input(size);
    if (Buffer.compare(keccak256(data), keccak_256(data)) !== 0) throw new Error(`mismatch at ${label}`);
    const ops = compare(
      [
        { name: 'ours', fn: () => keccak256(data) },
        { name: 'noble', fn: () => keccak_256(data) },
        { name: 'native', fn: () => createHash('sha3-256').update(data).digest() },
      ],
      { rounds: 7, roundMs: 80 },
    );
    const ours = ops.get('ours') ?? 0;
    const noble = ops.get('noble') ?? 0;
    const native = formatOps(ops.get('native') ?? 0);
    table.push([label, formatOps(ours), formatOps(noble), `${(ours / noble).toFixed(2)}x`, native]);
    rows.push({
      what: `keccak256 ${label}`,
      ours: `${formatOps(ours)} ops/s`,
      peer: `${formatOps(noble)} ops/s (noble; native ${native})`,
      ratio: ours / noble,
      target: '>= 1.0x',
      met: ours / noble >= 1,
    });
  }
  console.log('\n## keccak256, ops/s (bench/keccak.ts)');
  printTable(['size', 'ours ops/s', 'noble ops/s', 'ours/noble', 'native sha3-256 ops/s'], table);
  return rows;
}

if (import.meta.main) await run();
