/**
 * Compiles the e2e stand-in contracts with solc-js at test time, so the bytecode the tests run is
 * always the source next to it. The output is cached per process, and on disk under the hash of
 * the compiler's whole input and version: the e2e files and the demo each run in their own
 * process, and each paid the compiler (over a second of CPU) for the same sources.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Abi, Hex } from 'viem';

export interface CompiledContract {
  abi: Abi;
  bytecode: Hex;
}

const CONTRACTS_DIR = join(import.meta.dirname, 'contracts');

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
}

let cache: Map<string, CompiledContract> | undefined;

/**
 * Loads solc-js on first use. Its emscripten glue adds a process-wide `unhandledRejection`
 * listener that rethrows; it is removed again so the test runner keeps reporting rejections itself.
 */
function loadSolc(): { compile(input: string): string } {
  const before = new Set(process.listeners('unhandledRejection'));
  const solc = require('solc') as { compile(input: string): string };
  for (const listener of process.listeners('unhandledRejection')) {
    if (!before.has(listener)) process.off('unhandledRejection', listener);
  }
  return solc;
}

/** Standard JSON input: every .sol file of contracts/, keyed by file name so `./X.sol` imports resolve. */
function standardJsonInput(): string {
  const sources: Record<string, { content: string }> = {};
  for (const file of readdirSync(CONTRACTS_DIR)
    .filter((f) => f.endsWith('.sol'))
    .sort()) {
    sources[file] = { content: readFileSync(join(CONTRACTS_DIR, file), 'utf8') };
  }
  return JSON.stringify({
    language: 'Solidity',
    sources,
    settings: {
      // Cancun: the EVM anvil runs by default supports it and every opcode solc emits for it.
      evmVersion: 'cancun',
      optimizer: { enabled: false },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  });
}

const require = createRequire(import.meta.url);
const DISK_CACHE = join(tmpdir(), 'relayer-api-solc');

/** solc's output for `input`: from the disk cache when the same input met the same compiler before. */
function solcOutput(input: string): string {
  const version = (require('solc/package.json') as { version: string }).version;
  const file = join(
    DISK_CACHE,
    `${createHash('sha256').update(version).update('\0').update(input).digest('hex')}.json`,
  );
  try {
    return readFileSync(file, 'utf8');
  } catch {
    // not compiled yet
  }
  const output = loadSolc().compile(input);
  // Written whole under another name, then renamed: a concurrent reader sees all of it or nothing.
  mkdirSync(DISK_CACHE, { recursive: true });
  const partial = `${file}.${process.pid}`;
  writeFileSync(partial, output);
  renameSync(partial, file);
  return output;
}

/** Compiles every contract under test/helpers/chain/contracts/; throws with solc's messages on any error. */
export function compileContracts(): Map<string, CompiledContract> {
  if (cache) return cache;
  const output = JSON.parse(solcOutput(standardJsonInput())) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  const compiled = new Map<string, CompiledContract>();
  for (const byName of Object.values(output.contracts)) {
    for (const [name, c] of Object.entries(byName)) {
      compiled.set(name, { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` });
    }
  }
  cache = compiled;
  return compiled;
}

/** One compiled contract by name. */
export function compiledContract(name: string): CompiledContract {
  const contract = compileContracts().get(name);
  if (!contract) throw new Error(`no contract ${name} under ${CONTRACTS_DIR}`);
  return contract;
}
