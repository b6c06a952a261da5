/**
 * What the commands say when they cannot start, with the fix (docs/configuration.md#command-line):
 * a port in use names --port, a signer key in the wrong form says which form it has, and
 * --check-config prints what would run.
 */
import { redactDatabaseUrl } from '../../lib/redact.ts';
import type { RelayerConfig } from '../../lib/types.ts';

/**
 * `cannot listen on HOST:PORT: CODE` and what to do: EADDRINUSE names --port and the config key
 * (`server.port`, `worker.port`), EACCES the privileged ports, EADDRNOTAVAIL --host.
 */
export function listenFailure(host: string, port: number, error: unknown, configKey: 'server' | 'worker'): string {
  const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  const head = `cannot listen on ${host}:${port}: ${code}`;
  switch (code) {
    case 'EADDRINUSE':
      return `${head}: the port is taken (by another relayer-server or relayer-worker?); choose another with --port N or ${configKey}.port`;
    case 'EACCES':
      return `${head}: ports below 1024 need privileges; choose another with --port N or ${configKey}.port`;
    case 'EADDRNOTAVAIL':
      return `${head}: no interface of this machine has that address; choose another with --host or ${configKey}.host`;
    default:
      return head;
  }
}

/**
 * Why RELAYER_SIGNER_KEY is not a key (0x + 64 hex), without repeating it: a key without its 0x,
 * an address (20 bytes) pasted for the key, or a length. Undefined for a well-formed key.
 */
export function signerKeyProblem(key: string): string | undefined {
  if (/^0x[0-9a-fA-F]{64}$/.test(key)) return undefined;
  const expected = 'RELAYER_SIGNER_KEY must be 0x followed by 64 hex digits';
  if (/^[0-9a-fA-F]{64}$/.test(key)) return `${expected}: it has the 64 digits without 0x; write 0x before them`;
  if (/^(0x)?[0-9a-fA-F]{40}$/.test(key))
    return `${expected}: this looks like an address (20 bytes), not a key; give the private key of that address`;
  const trimmed = key.trim();
  if (trimmed !== key && signerKeyProblem(trimmed) === undefined)
    return `${expected}: it has white space around it (a line end from the file it came from?)`;
  const digits = key.startsWith('0x') ? key.length - 2 : key.length;
  return /^(0x)?[0-9a-fA-F]*$/.test(key)
    ? `${expected}, got ${digits} hex digits`
    : `${expected}, got ${key.length} characters that are not all hex`;
}

/** relayer-worker --check-config: who pays for gas, and each destination's fee ceiling. */
export function workerPolicyLines(config: RelayerConfig): string[] {
  const gas = config.gasPaymentEnforcement ?? [];
  const caps = config.relayChains.map((name) => {
    const cap = config.chains[name].transactionOverrides?.gasPriceCap;
    return `${name} ${cap === undefined ? 'not set' : cap === null ? 'none (no ceiling, stated)' : cap}`;
  });
  return [
    `gas payment enforcement: ${gas.length === 0 ? 'not set (the signer pays for every delivery)' : gas.map((e) => e.type).join(', ')}`,
    `fee ceilings (transactionOverrides.gasPriceCap, wei): ${caps.join(', ')}`,
  ];
}

/** --check-config's report: the config was read; what the command would run with, and `extra` lines. */
export function configSummary(
  program: string,
  path: string | undefined,
  config: RelayerConfig,
  listen: { host: string; port: number },
  extra: readonly string[] = [],
): string {
  const chains = Object.keys(config.chains);
  const lines = [
    `${program}: config ${path === undefined ? '(built-in default)' : path} is valid`,
    `  chains: ${chains.length} (${chains.slice(0, 10).join(', ')}${chains.length > 10 ? ', …' : ''})`,
    `  relay chains: ${config.relayChains.slice(0, 10).join(', ')}${config.relayChains.length > 10 ? ', …' : ''}`,
    `  listen: ${listen.host}:${listen.port}`,
    `  db: ${redactDatabaseUrl(config.db)}`,
    ...extra.map((line) => `  ${line}`),
  ];
  return `${lines.join('\n')}\n`;
}
