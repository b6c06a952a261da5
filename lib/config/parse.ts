/**
 * Configuration (docs/design.md#configuration): validates a parsed JSON config file and fills in
 * defaults. Pure core: the caller reads the file and calls `parseConfig(JSON.parse(text))`. Every
 * rule is documented once, for operators, in docs/configuration.md; the rules of `chains` and
 * `relayChains` are lib/config/chains.ts's, those of `whitelist`, `blacklist` and
 * `addressBlacklist` lib/relay/policy.ts's. Unknown keys are refused at every level (a typo must not be
 * ignored).
 */
import { builtinChains, parseChains, parseRelayChains } from './chains.ts';
import { parseServer, SERVER_DEFAULTS } from './server.ts';
import { MAX_TIMER_SECONDS, optionalBucket, optionalInt, parseOrigin } from './values.ts';
import { optionalBoolean, parseCheckpointEndpoints } from './checkpoints.ts';
import { ConfigError } from '../errors/classes.ts';
import { array, join, nonEmptyString, object, string } from './fields.ts';
import { parseGasPaymentEnforcement } from '../gas/policy.ts';
import { parseAddressList, parseMatchingList } from '../relay/policy.ts';
import { parseTransactionGasLimit } from './stated-policy.ts';
import type { RelayApiConfig, RelayerConfig, ServerConfig, WorkerConfig } from '../types.ts';

export const DEFAULTS: {
  readonly relayApi: Readonly<RelayApiConfig>;
  readonly server: Readonly<ServerConfig>;
  readonly worker: Readonly<WorkerConfig>;
  readonly db: string;
} = Object.freeze({
  relayApi: Object.freeze({
    rateLimit: Object.freeze({ burst: 100, perMinute: 100 }),
    clientRateLimit: null,
    dedupWindowSeconds: 300,
    dedupCapacity: 10_000,
    receiptTimeoutSeconds: 10,
    maxMessagesPerTx: 10,
  }),
  server: SERVER_DEFAULTS,
  worker: Object.freeze({
    host: '127.0.0.1',
    port: 9091,
    batch: 10,
    concurrency: 32,
    leaseSeconds: 60,
    maxAttempts: 5,
    maxLeaseExpiries: 5,
    confirmations: 1,
    pendingDeadlineHours: 48,
    pendingRetrySeconds: 5,
    pendingRetryMaxSeconds: 60,
    retryBaseSeconds: 5,
    retryMaxSeconds: 600,
    pollMs: 1_000,
    gasMarginPercent: 20,
    replaceAfterSeconds: 60,
    replaceAfterBlocks: 3,
    ccipReadTimeoutSeconds: 10,
    ccipReadBudgetSeconds: 30,
    ccipReadHoldSeconds: 2,
    ccipReadAllowOrigins: Object.freeze([]) as unknown as string[],
    checkpointEndpoints: Object.freeze({}),
    gasPaymentDeadlineHours: 168,
    stopGraceSeconds: 30,
    heartbeatSeconds: 60,
    minSignerBalanceGwei: 10_000_000,
  }),
  db: './relayer.db',
});

function parseRelayApi(value: unknown, key: string): RelayApiConfig {
  const d = DEFAULTS.relayApi;
  const obj =
    value === undefined
      ? {}
      : object(value, key, [
          'rateLimit',
          'clientRateLimit',
          'dedupWindowSeconds',
          'dedupCapacity',
          'receiptTimeoutSeconds',
          'maxMessagesPerTx',
        ]);
  const rlKey = join(key, 'rateLimit');
  const rl = obj.rateLimit === undefined ? {} : object(obj.rateLimit, rlKey, ['burst', 'perMinute']);
  const max = Number.MAX_SAFE_INTEGER;
  return {
    rateLimit: {
      burst: optionalInt(rl, 'burst', rlKey, d.rateLimit.burst, 1, max),
      perMinute: optionalInt(rl, 'perMinute', rlKey, d.rateLimit.perMinute, 1, max),
    },
    clientRateLimit: optionalBucket(obj.clientRateLimit, join(key, 'clientRateLimit')),
    dedupWindowSeconds: optionalInt(obj, 'dedupWindowSeconds', key, d.dedupWindowSeconds, 1, MAX_TIMER_SECONDS),
    dedupCapacity: optionalInt(obj, 'dedupCapacity', key, d.dedupCapacity, 1, max),
    receiptTimeoutSeconds: optionalInt(
      obj,
      'receiptTimeoutSeconds',
      key,
      d.receiptTimeoutSeconds,
      1,
      MAX_TIMER_SECONDS,
    ),
    maxMessagesPerTx: optionalInt(obj, 'maxMessagesPerTx', key, d.maxMessagesPerTx, 1, max),
  };
}

const WORKER_OTHER_KEYS = ['host', 'ccipReadAllowOrigins', 'checkpointEndpoints'] as const;
const WORKER_LIMITS: Record<Exclude<keyof WorkerConfig, (typeof WORKER_OTHER_KEYS)[number]>, [number, number]> = {
  port: [0, 65_535],
  batch: [1, 1_000],
  concurrency: [1, 1_000],
  leaseSeconds: [1, MAX_TIMER_SECONDS],
  maxAttempts: [1, 1_000_000],
  maxLeaseExpiries: [1, 1_000_000],
  confirmations: [1, 1_000],
  pendingDeadlineHours: [1, 24 * 365],
  pendingRetrySeconds: [1, MAX_TIMER_SECONDS],
  pendingRetryMaxSeconds: [1, MAX_TIMER_SECONDS],
  retryBaseSeconds: [1, MAX_TIMER_SECONDS],
  retryMaxSeconds: [1, MAX_TIMER_SECONDS],
  pollMs: [1, 3_600_000],
  gasMarginPercent: [0, 1_000],
  replaceAfterSeconds: [1, MAX_TIMER_SECONDS],
  replaceAfterBlocks: [1, 1_000_000],
  ccipReadTimeoutSeconds: [1, 3_600],
  ccipReadBudgetSeconds: [1, 3_600],
  ccipReadHoldSeconds: [1, 3_600],
  gasPaymentDeadlineHours: [1, 24 * 365],
  stopGraceSeconds: [0, 3_600],
  heartbeatSeconds: [1, 86_400],
  minSignerBalanceGwei: [0, Number.MAX_SAFE_INTEGER],
};

function parseWorker(value: unknown, key: string): WorkerConfig {
  const d = DEFAULTS.worker;
  const names = Object.keys(WORKER_LIMITS) as Array<keyof typeof WORKER_LIMITS>;
  const obj = value === undefined ? {} : object(value, key, [...WORKER_OTHER_KEYS, ...names]);
  const originsKey = join(key, 'ccipReadAllowOrigins');
  const worker = {
    ...d,
    host: obj.host === undefined ? d.host : nonEmptyString(obj.host, join(key, 'host')),
    ccipReadAllowOrigins:
      obj.ccipReadAllowOrigins === undefined
        ? []
        : array(obj.ccipReadAllowOrigins, originsKey).map((o, i) => parseOrigin(o, `${originsKey}[${i}]`, false)),
    checkpointEndpoints: parseCheckpointEndpoints(obj.checkpointEndpoints, join(key, 'checkpointEndpoints')),
  };
  for (const name of names) worker[name] = optionalInt(obj, name, key, d[name], ...WORKER_LIMITS[name]);
  if (worker.retryMaxSeconds < worker.retryBaseSeconds)
    throw new ConfigError(join(key, 'retryMaxSeconds'), 'must be at least retryBaseSeconds');
  if (worker.pendingRetryMaxSeconds < worker.pendingRetrySeconds)
    throw new ConfigError(join(key, 'pendingRetryMaxSeconds'), 'must be at least pendingRetrySeconds');
  return worker;
}

const TOP_KEYS = [
  // The JSON Schema an editor completes from (docs/config.schema.json): a string, otherwise ignored.
  '$schema',
  'chains',
  'relayChains',
  'whitelist',
  'blacklist',
  'addressBlacklist',
  'relayApi',
  'server',
  'worker',
  'gasPaymentEnforcement',
  'transactionGasLimit',
  'allowLocalCheckpointSyncers',
  'db',
] as const;

/** Validates a parsed config file (docs/design.md#configuration). Throws ConfigError naming the offending key. */
export function parseConfig(input: unknown): RelayerConfig {
  const root = object(input, '', TOP_KEYS);
  if (root.$schema !== undefined) string(root.$schema, '$schema');
  const chains = root.chains === undefined ? builtinChains() : parseChains(root.chains, 'chains');
  return {
    chains,
    relayChains:
      root.relayChains === undefined ? Object.keys(chains) : parseRelayChains(root.relayChains, 'relayChains', chains),
    whitelist: root.whitelist === undefined ? [] : parseMatchingList(root.whitelist, 'whitelist'),
    blacklist: root.blacklist === undefined ? [] : parseMatchingList(root.blacklist, 'blacklist'),
    addressBlacklist:
      root.addressBlacklist === undefined ? [] : parseAddressList(root.addressBlacklist, 'addressBlacklist'),
    relayApi: parseRelayApi(root.relayApi, 'relayApi'),
    server: parseServer(root.server, 'server'),
    worker: parseWorker(root.worker, 'worker'),
    // Absent stays absent: a worker refuses to start without it (docs/worker-configuration.md#stated-gas-policy).
    ...(root.gasPaymentEnforcement !== undefined && {
      gasPaymentEnforcement: parseGasPaymentEnforcement(root.gasPaymentEnforcement, 'gasPaymentEnforcement'),
    }),
    transactionGasLimit: parseTransactionGasLimit(root.transactionGasLimit, 'transactionGasLimit'),
    allowLocalCheckpointSyncers: optionalBoolean(root.allowLocalCheckpointSyncers, 'allowLocalCheckpointSyncers'),
    db: root.db === undefined ? DEFAULTS.db : nonEmptyString(root.db, 'db'),
  };
}

/** The built-in configuration: every registry mainnet chain, default limits, ./relayer.db. */
export function defaultConfig(): RelayerConfig {
  return parseConfig({});
}
