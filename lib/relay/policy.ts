/**
 * Message policy, whitelist → blacklist → address blacklist → destination, and the one grammar of
 * its rules, shared by the config loader and createPolicy (docs/design.md#policy, #configuration).
 */
import { ConfigError, RelayError } from '../errors/classes.ts';
import { address20, array, integer, join, object, string, word32 } from '../config/fields.ts';
import { addressWord, bytesToHex, decimal, UINT32_MAX } from '../codec/hex.ts';
import type { HyperlaneMessage } from '../codec/message.ts';

/**
 * A Hyperlane MatchingList rule: matches when every field it names matches. Each field is "*",
 * one value or an array of values. Hex is lower-case; addresses keep their length (20 or 32 bytes).
 */
export interface MatchingRule {
  messageId?: string | string[] | '*';
  originDomain?: number | number[] | '*';
  senderAddress?: string | string[] | '*';
  destinationDomain?: number | number[] | '*';
  recipientAddress?: string | string[] | '*';
  bodyRegex?: string;
}

type Filter<T> = T | T[] | '*';

const RULE_KEYS = [
  'messageId',
  'originDomain',
  'senderAddress',
  'destinationDomain',
  'recipientAddress',
  'bodyRegex',
] as const;

/** "*", one value, or an array of values, each checked by `one`. */
function filter<T>(value: unknown, key: string, one: (v: unknown, k: string) => T): Filter<T> {
  if (value === '*') return '*';
  if (Array.isArray(value)) return value.map((v, i) => one(v, `${key}[${i}]`));
  return one(value, key);
}

function domain(value: unknown, key: string): number {
  return integer(typeof value === 'string' ? (decimal(value) ?? value) : value, key, 0, UINT32_MAX);
}

/** 20-byte address (checksum-checked) or 32-byte word, lower-case, length kept. */
function anyAddress(value: unknown, key: string): string {
  if (typeof value === 'string' && value.length === 66) return word32(value, key, 'a 32-byte address');
  return address20(value, key);
}

function regex(value: unknown, key: string): string {
  const source = string(value, key);
  try {
    new RegExp(source, 'u');
  } catch (err) {
    throw new ConfigError(key, `does not compile: ${(err as Error).message}`);
  }
  return source;
}

function parseRule(value: unknown, key: string): MatchingRule {
  const obj = object(value, key, RULE_KEYS);
  const read = <T>(name: string, one: (v: unknown, k: string) => T) => filter(obj[name], join(key, name), one);
  const rule: MatchingRule = {};
  if (obj.messageId !== undefined) rule.messageId = read('messageId', (v, k) => word32(v, k, 'a 32-byte message id'));
  if (obj.originDomain !== undefined) rule.originDomain = read('originDomain', domain);
  if (obj.senderAddress !== undefined) rule.senderAddress = read('senderAddress', anyAddress);
  if (obj.destinationDomain !== undefined) rule.destinationDomain = read('destinationDomain', domain);
  if (obj.recipientAddress !== undefined) rule.recipientAddress = read('recipientAddress', anyAddress);
  if (obj.bodyRegex !== undefined) rule.bodyRegex = regex(obj.bodyRegex, join(key, 'bodyRegex'));
  return rule;
}

/** A MatchingList from JSON, normalised; throws ConfigError naming the key (`whitelist[2].bodyRegex`). */
export function parseMatchingList(value: unknown, key: string): MatchingRule[] {
  return array(value, key).map((rule, i) => parseRule(rule, `${key}[${i}]`));
}

/** `addressBlacklist`: 20-byte addresses (EIP-55 checked when mixed case), lower-case. */
export function parseAddressList(value: unknown, key: string): string[] {
  return array(value, key).map((a, i) => address20(a, `${key}[${i}]`));
}

/** A rule with each field reduced to a predicate-friendly form; `undefined` = wildcard. */
interface CompiledRule {
  messageId?: ReadonlySet<string>;
  originDomain?: ReadonlySet<number>;
  senderAddress?: ReadonlySet<string>;
  destinationDomain?: ReadonlySet<number>;
  recipientAddress?: ReadonlySet<string>;
  bodyRegex?: RegExp;
}

export interface CompiledMatchingList {
  /** True when any rule matches. An empty list matches nothing (callers choose the default). */
  matches(message: HyperlaneMessage): boolean;
  readonly size: number;
}

function asSet<T>(value: Filter<T> | undefined, map: (item: T) => T = (item) => item): ReadonlySet<T> | undefined {
  if (value === undefined || value === '*') return undefined;
  return new Set((Array.isArray(value) ? value : [value]).map(map));
}

function compileRule(rule: MatchingRule): CompiledRule {
  return {
    messageId: asSet(rule.messageId),
    originDomain: asSet(rule.originDomain),
    senderAddress: asSet(rule.senderAddress, addressWord),
    destinationDomain: asSet(rule.destinationDomain),
    recipientAddress: asSet(rule.recipientAddress, addressWord),
    bodyRegex: rule.bodyRegex === undefined ? undefined : new RegExp(rule.bodyRegex, 'u'),
  };
}

function ruleMatches(rule: CompiledRule, message: HyperlaneMessage, body: () => string): boolean {
  return (
    (!rule.messageId || rule.messageId.has(message.id.toLowerCase())) &&
    (!rule.originDomain || rule.originDomain.has(message.origin)) &&
    (!rule.senderAddress || rule.senderAddress.has(message.sender.toLowerCase())) &&
    (!rule.destinationDomain || rule.destinationDomain.has(message.destination)) &&
    (!rule.recipientAddress || rule.recipientAddress.has(message.recipient.toLowerCase())) &&
    (!rule.bodyRegex || rule.bodyRegex.test(body()))
  );
}

/**
 * Reads the rules with parseMatchingList (so a malformed rule throws its ConfigError naming the
 * rule and field, `whitelist[0].senderAddress[1]: …`) and compiles them once (regexes, words).
 */
export function compileMatchingList(rules: readonly MatchingRule[], name = 'rules'): CompiledMatchingList {
  const compiled = parseMatchingList(rules, name).map(compileRule);
  return {
    size: compiled.length,
    matches(message) {
      // The body hex is built at most once per message, and only if some rule has a regex.
      let hex: string | undefined;
      const body = () => (hex ??= bytesToHex(message.body).slice(2));
      return compiled.some((rule) => ruleMatches(rule, message, body));
    },
  };
}

/** True when any rule matches the message; an empty list matches nothing. */
export function matchesList(rules: readonly MatchingRule[], message: HyperlaneMessage): boolean {
  return compileMatchingList(rules).matches(message);
}

/** The parts of the relayer config (lib/types.ts, RelayerConfig) the policy reads. */
export interface PolicyConfig {
  whitelist: readonly MatchingRule[];
  blacklist: readonly MatchingRule[];
  addressBlacklist: readonly string[];
  relayChains: readonly string[];
  chains: Readonly<Record<string, { domainId: number } | undefined>>;
}

/**
 * Builds the per-message policy check once at start-up. The returned function throws a
 * RelayError with the first failing reason, in the order of docs/design.md#policy, and returns
 * nothing otherwise.
 */
export function createPolicy(config: PolicyConfig): (message: HyperlaneMessage) => void {
  const whitelist = compileMatchingList(config.whitelist, 'whitelist');
  const blacklist = compileMatchingList(config.blacklist, 'blacklist');
  const blockedWords = new Set(parseAddressList(config.addressBlacklist, 'addressBlacklist').map(addressWord));
  const destinations = new Set(config.relayChains.flatMap((name) => config.chains[name]?.domainId ?? []));

  return (message) => {
    if (whitelist.size > 0 && !whitelist.matches(message)) {
      throw new RelayError('message_not_whitelisted', `message ${message.id} does not match the whitelist`);
    }
    if (blacklist.matches(message)) {
      throw new RelayError('message_blacklisted', `message ${message.id} matches the blacklist`);
    }
    if (blockedWords.has(message.sender.toLowerCase()) || blockedWords.has(message.recipient.toLowerCase())) {
      throw new RelayError('message_blacklisted', `message ${message.id} has a blacklisted sender or recipient`);
    }
    if (!destinations.has(message.destination)) {
      throw new RelayError('unsupported_destination', `destination domain ${message.destination} is not configured`);
    }
  };
}
