/**
 * Message policy (DESIGN.md §3, §5): whitelist → blacklist → address blacklist → destination.
 *
 * Matching follows the Hyperlane relayer's MatchingList
 * (hyperlane-monorepo rust/main/agents/relayer/src/settings/matching_list.rs):
 * - a list matches when any rule matches; a rule matches when every field it names matches;
 * - a missing field or "*" is a wildcard, so an empty rule `{}` matches every message;
 * - an empty list behaves as "no list": the whitelist then lets everything through and the
 *   blacklist blocks nothing (the reference's `msg_matches(msg, default)`);
 * - a field given as an empty array (`[]`) matches nothing (the reference's empty `Enumerated`);
 * - ids and addresses are compared as 32-byte words (a 20-byte address is left-padded);
 * - bodyRegex is an unanchored search over the body's lower-case hex without `0x`.
 * Deviations: addresses are hex only (the reference also takes base58/bech32, non-EVM chains we do
 * not serve); regexes use JavaScript syntax with the `u` flag, not Rust's `regex` crate (the
 * common subset is the same; JavaScript adds backreferences and lookaround, so a pathological
 * pattern can backtrack: patterns come from the operator's config, not from requests).
 */
import { RelayError } from './errors.ts';
import { bytesToHex, normalizeAddressWord } from './hex.ts';
import type { HyperlaneMessage, MatchingRule, RelayerConfig } from './types.ts';

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

type Filter<T> = T | T[] | '*' | undefined;

function asList<T>(value: Filter<T>): T[] | undefined {
  if (value === undefined || value === '*') return undefined;
  return Array.isArray(value) ? value : [value];
}

function compileWords(value: Filter<string>, where: string): ReadonlySet<string> | undefined {
  const list = asList(value);
  if (!list) return undefined;
  return new Set(
    list.map((item, i) => {
      const word = normalizeAddressWord(item);
      if (word === undefined) throw new TypeError(`${where}[${i}]: expected 20- or 32-byte 0x hex`);
      return word;
    }),
  );
}

function compileDomains(value: Filter<number>, where: string): ReadonlySet<number> | undefined {
  const list = asList(value);
  if (!list) return undefined;
  return new Set(
    list.map((item, i) => {
      // Hyperlane configs also write domains as decimal strings ("9913372").
      const n = typeof item === 'string' && /^[0-9]{1,10}$/.test(item) ? Number(item) : item;
      if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new TypeError(`${where}[${i}]: expected a uint32 domain`);
      return n;
    }),
  );
}

function compileRule(rule: MatchingRule, where: string): CompiledRule {
  const compiled: CompiledRule = {
    messageId: compileWords(rule.messageId, `${where}.messageId`),
    originDomain: compileDomains(rule.originDomain, `${where}.originDomain`),
    senderAddress: compileWords(rule.senderAddress, `${where}.senderAddress`),
    destinationDomain: compileDomains(rule.destinationDomain, `${where}.destinationDomain`),
    recipientAddress: compileWords(rule.recipientAddress, `${where}.recipientAddress`),
  };
  if (rule.bodyRegex !== undefined) {
    try {
      compiled.bodyRegex = new RegExp(rule.bodyRegex, 'u');
    } catch (cause) {
      throw new TypeError(`${where}.bodyRegex: invalid regular expression`, { cause });
    }
  }
  return compiled;
}

function bodyHex(message: HyperlaneMessage): string {
  return bytesToHex(message.body).slice(2);
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
 * Compiles rules once (regexes, address normalisation). Throws a TypeError naming the rule and
 * field (`whitelist[0].senderAddress[1]: …`) on a malformed rule, so config loading can report it.
 */
export function compileMatchingList(rules: readonly MatchingRule[], name = 'rules'): CompiledMatchingList {
  const compiled = rules.map((rule, i) => compileRule(rule, `${name}[${i}]`));
  return {
    size: compiled.length,
    matches(message) {
      // The body hex is built at most once per message, and only if some rule has a regex.
      let hex: string | undefined;
      const body = () => (hex ??= bodyHex(message));
      return compiled.some((rule) => ruleMatches(rule, message, body));
    },
  };
}

/** True when any rule matches the message; an empty list matches nothing. */
export function matchesList(rules: readonly MatchingRule[], message: HyperlaneMessage): boolean {
  return compileMatchingList(rules).matches(message);
}

type PolicyConfig = Pick<RelayerConfig, 'whitelist' | 'blacklist' | 'addressBlacklist' | 'relayChains' | 'chains'>;

function relayDomains(config: PolicyConfig): ReadonlySet<number> {
  const domains = new Set<number>();
  for (const name of config.relayChains) {
    const chain = config.chains[name];
    if (chain) domains.add(chain.domainId);
  }
  return domains;
}

/**
 * Builds the per-message policy check once at start-up. The returned function throws a
 * RelayError with the first failing reason, in DESIGN.md §3 order, and returns nothing otherwise.
 */
export function createPolicy(config: PolicyConfig): (message: HyperlaneMessage) => void {
  const whitelist = compileMatchingList(config.whitelist, 'whitelist');
  const blacklist = compileMatchingList(config.blacklist, 'blacklist');
  const blockedWords = compileWords(config.addressBlacklist, 'addressBlacklist') ?? new Set<string>();
  const destinations = relayDomains(config);

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
