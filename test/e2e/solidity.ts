/**
 * Compiles the e2e stand-in contracts with solc-js at test time, so the bytecode the tests run is
 * always the source next to it. The output is cached per process: several suites in one process
 * pay the compiler once.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
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
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
  for (const listener of process.listeners('unhandledRejection')) {
    if (!before.has(listener)) process.off('unhandledRejection', listener);
  }
  return solc;
}

/** Standard JSON input: every .sol file of contracts/, keyed by file name so `./X.sol` imports resolve. */
function standardJsonInput(): string {
  const sources: Record<string, { content: string }> = {};
  for (const file of readdirSync(CONTRACTS_DIR).filter((f) => f.endsWith('.sol')).sort()) {
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

/** Compiles every contract under test/e2e/contracts/; throws with solc's messages on any error. */
export function compileContracts(): Map<string, CompiledContract> {
  if (cache) return cache;
  const output = JSON.parse(loadSolc().compile(standardJsonInput())) as SolcOutput;
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
