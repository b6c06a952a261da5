/**
 * docs/configuration.md#the-configuration-file: a refused config says how to fix it. An unknown
 * key names the nearest allowed one (edit distance, case ignored) or lists the keys of its level;
 * a wrong shape says the expected one (`{"http": URL}`); an unknown relay chain names the
 * configured chains. Messages are checked through parseConfig, as relayer-server prints them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig } from '../../../lib/config/parse.ts';
import { ConfigError } from '../../../lib/errors/classes.ts';
import { editDistance, nearest, UnknownKeyError } from '../../../lib/config/fields.ts';

const MAILBOX = '0x00000000000000000000000000000000000000a1';
const chains = {
  ethereum: { domainId: 1, mailbox: MAILBOX, rpcUrls: [{ http: 'https://eth.example' }] },
  base: { domainId: 8453, mailbox: MAILBOX, rpcUrls: [{ http: 'https://base.example' }] },
};

function refusal(config: unknown): ConfigError {
  try {
    parseConfig(config);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail('the config was accepted');
}

test('docs/configuration.md#the-configuration-file: an unknown key names the key it is nearest to', () => {
  const cases: Array<[unknown, string]> = [
    [{ server: { admintoken: 'x'.repeat(16) } }, 'server.admintoken: unknown key; did you mean "adminToken"?'],
    [{ server: { prot: 9090 } }, 'server.prot: unknown key; did you mean "port"?'],
    [{ chians: chains }, 'chians: unknown key; did you mean "chains"?'],
    [
      { chains: { ...chains, base: { ...chains.base, mialbox: MAILBOX } } },
      'chains.base.mialbox: unknown key; did you mean "mailbox"?',
    ],
    [{ worker: { concurency: 4 } }, 'worker.concurency: unknown key; did you mean "concurrency"?'],
  ];
  for (const [config, message] of cases) {
    const error = refusal(config);
    assert.ok(error instanceof UnknownKeyError);
    assert.equal(error.message, message);
  }
});

test('docs/configuration.md#the-configuration-file: an unknown key near none lists the keys of its level', () => {
  const error = refusal({ relayApi: { rateLimit: { tokens: 5 } } });
  assert.equal(error.message, 'relayApi.rateLimit.tokens: unknown key; the keys here: burst, perMinute');
  assert.deepEqual((error as UnknownKeyError).allowed, ['burst', 'perMinute']);
});

test('docs/configuration.md#the-configuration-file: an RPC URL given as a string is told the {"http": URL} shape', () => {
  const entry = refusal({ chains: { ...chains, base: { ...chains.base, rpcUrls: ['https://base.example'] } } });
  assert.equal(entry.message, 'chains.base.rpcUrls[0]: expected {"http": URL}, got a string');
  const whole = refusal({ chains: { ...chains, base: { ...chains.base, rpcUrls: 'https://base.example' } } });
  assert.equal(
    whole.message,
    'chains.base.rpcUrls: expected an array of {"http": URL}, got a string: write [{"http": "https://…"}]',
  );
  // The URL itself is never repeated: it may hold an API key.
  assert.doesNotMatch(`${entry.message} ${whole.message}`, /base\.example/);
});

test('docs/configuration.md#the-configuration-file: an unknown relay chain names the nearest and the configured chains', () => {
  const error = refusal({ chains, relayChains: ['ethereum', 'bsae'] });
  assert.equal(
    error.message,
    'relayChains[1]: unknown chain "bsae"; did you mean "base"? (the configured chains: ethereum, base)',
  );
  const far = refusal({ chains, relayChains: 'ethereum,solana' });
  assert.equal(far.message, 'relayChains: unknown chain "solana" (the configured chains: ethereum, base)');
  // The built-in table has a hundred chains: the list is cut, the count given.
  const builtin = refusal({ relayChains: ['etherum'] });
  assert.match(
    builtin.message,
    /^relayChains\[0\]: unknown chain "etherum"; did you mean "ethereum"\? \(the configured chains: [a-z0-9, ]+, … \(\d+ in all\)\)$/,
  );
});

test('docs/configuration.md#the-configuration-file: a bucket or an override of the wrong kind is told its shape', () => {
  assert.equal(
    refusal({ relayApi: { clientRateLimit: 10 } }).message,
    'relayApi.clientRateLimit: expected {"burst": N, "perMinute": N} or null, got a number',
  );
  assert.equal(
    refusal({ chains: { ...chains, base: { ...chains.base, transactionOverrides: '1' } } }).message,
    'chains.base.transactionOverrides: expected {"gasPriceCap": WEI}, got a string',
  );
});

test('docs/configuration.md#the-configuration-file: edit distance counts an insertion, a deletion, a change or a swap as one', () => {
  // Levenshtein's textbook pair, and the optimal-string-alignment swap.
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('ca', 'ac'), 1);
  assert.equal(editDistance('', 'abc'), 3);
  assert.equal(editDistance('abc', 'abc'), 0);
  // Near enough: a third of the input at most (1 to 3 edits), case ignored.
  assert.equal(nearest('ADMINTOKEN', ['adminToken', 'host']), 'adminToken');
  assert.equal(nearest('po', ['port', 'host']), undefined, 'two edits in two letters is not a typo');
  assert.equal(nearest('xyz', ['port', 'host']), undefined);
});
