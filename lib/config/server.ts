/**
 * The `server` section of the configuration (docs/configuration.md): where `relayer-server`
 * listens, its admin token, CORS, body limits, trusted proxies, the read budget and the status
 * streams' bounds (docs/api.md#per-client-limits, docs/api.md#status-events), and how long delivered
 * messages are kept (docs/configuration.md#retention).
 */
import { parseAddressBlock } from '../net/cidr.ts';
import { MAX_TIMER_SECONDS, optionalBucket, optionalInt, parseOrigin } from './values.ts';
import { ConfigError } from '../errors/classes.ts';
import { array, join, nonEmptyString, object, string } from './fields.ts';
import type { ServerConfig } from '../types.ts';

export const SERVER_DEFAULTS: Readonly<ServerConfig> = Object.freeze({
  host: '127.0.0.1',
  port: 9090,
  adminToken: null,
  corsOrigins: Object.freeze([]) as unknown as string[],
  maxRelayBodyBytes: 65_536,
  maxMerkleBodyBytes: 16_777_216,
  trustedProxies: Object.freeze([]) as unknown as string[],
  readRateLimit: Object.freeze({ burst: 600, perMinute: 1200 }),
  maxSubscribers: 10_000,
  maxSubscribersPerClient: 20,
  streamMaxSeconds: 900,
  txStreamWaitSeconds: 120,
  retentionDays: 7,
});

/** An address or CIDR block (lib/net/cidr.ts). */
function parseProxy(value: unknown, key: string): string {
  const text = nonEmptyString(value, key);
  if (parseAddressBlock(text) === undefined)
    throw new ConfigError(
      key,
      `expected an IP address or a CIDR block like "10.0.0.0/8", got ${JSON.stringify(text.slice(0, 64))}`,
    );
  return text;
}

function parseAdminToken(value: unknown, key: string): string | null {
  if (value === null || value === undefined) return null;
  const token = string(value, key);
  if (token.length < 16 || token.length > 1024 || !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError(key, 'must be null or 16 to 1024 visible ASCII characters');
  }
  return token;
}

export function parseServer(value: unknown, key: string): ServerConfig {
  const d = SERVER_DEFAULTS;
  const obj =
    value === undefined
      ? {}
      : object(value, key, [
          'host',
          'port',
          'adminToken',
          'corsOrigins',
          'maxRelayBodyBytes',
          'maxMerkleBodyBytes',
          'trustedProxies',
          'readRateLimit',
          'maxSubscribers',
          'maxSubscribersPerClient',
          'streamMaxSeconds',
          'txStreamWaitSeconds',
          'retentionDays',
        ]);
  const max = Number.MAX_SAFE_INTEGER;
  const corsKey = join(key, 'corsOrigins');
  return {
    host: obj.host === undefined ? d.host : nonEmptyString(obj.host, join(key, 'host')),
    port: optionalInt(obj, 'port', key, d.port, 0, 65_535),
    adminToken: parseAdminToken(obj.adminToken, join(key, 'adminToken')),
    corsOrigins:
      obj.corsOrigins === undefined
        ? []
        : array(obj.corsOrigins, corsKey).map((o, i) => parseOrigin(o, `${corsKey}[${i}]`)),
    maxRelayBodyBytes: optionalInt(obj, 'maxRelayBodyBytes', key, d.maxRelayBodyBytes, 1, max),
    maxMerkleBodyBytes: optionalInt(obj, 'maxMerkleBodyBytes', key, d.maxMerkleBodyBytes, 1, max),
    trustedProxies:
      obj.trustedProxies === undefined
        ? []
        : array(obj.trustedProxies, join(key, 'trustedProxies')).map((p, i) =>
            parseProxy(p, `${join(key, 'trustedProxies')}[${i}]`),
          ),
    // Absent: the default budget; null: none, an explicit choice (a proxy in front limits reads).
    readRateLimit: optionalBucket(obj.readRateLimit, join(key, 'readRateLimit'), d.readRateLimit),
    maxSubscribers: optionalInt(obj, 'maxSubscribers', key, d.maxSubscribers, 0, 1_000_000),
    maxSubscribersPerClient: optionalInt(obj, 'maxSubscribersPerClient', key, d.maxSubscribersPerClient, 0, 1_000_000),
    streamMaxSeconds: optionalInt(obj, 'streamMaxSeconds', key, d.streamMaxSeconds, 1, MAX_TIMER_SECONDS),
    txStreamWaitSeconds: optionalInt(obj, 'txStreamWaitSeconds', key, d.txStreamWaitSeconds, 1, MAX_TIMER_SECONDS),
    // null keeps everything, an explicit choice (docs/configuration.md#retention).
    retentionDays:
      obj.retentionDays === null ? null : optionalInt(obj, 'retentionDays', key, d.retentionDays ?? 7, 1, 36_500),
  };
}
