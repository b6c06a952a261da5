/**
 * lib/redact.ts: what may be shown of URLs, texts quoting URLs and database strings
 * (docs/operations.md#logs). One table: each row a function, an input and what it must give,
 * written out by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  hideUrls,
  redactDatabaseSecrets,
  redactDatabaseUrl,
  redactEndpoint,
  redactUrl,
  redactUrls,
  urlForLog,
} from '../../lib/redact.ts';

const DB = 'postgres://relayer:s3cr%40t@db.internal:5432/relay?sslpassword=hunter22&application_name=api';

const TABLE: Array<[string, () => string, string]> = [
  [
    'redactUrl keeps scheme, host and port',
    () => redactUrl('https://user:key@rpc.example:8545/v2/KEY123?apikey=x#f'),
    'https://rpc.example:8545',
  ],
  ['redactUrl of text that is no URL', () => redactUrl('not a url'), '<invalid url>'],
  [
    'redactUrls reduces every URL of a text to its origin',
    () => redactUrls('fetch https://a.example/v3/KEY failed, then "http://u:p@b.example:1/x?k=v" too'),
    'fetch https://a.example failed, then "http://b.example:1" too',
  ],
  [
    'redactUrls leaves a text without URLs alone',
    () => redactUrls('connect ECONNREFUSED 127.0.0.1:8545'),
    'connect ECONNREFUSED 127.0.0.1:8545',
  ],
  [
    'hideUrls hides URLs whole',
    () => hideUrls('gateway https://g.example/{sender}/{data}.json?key=abc answered 500'),
    'gateway <url> answered 500',
  ],
  [
    'urlForLog keeps the path, drops credentials, query and fragment',
    () => urlForLog('https://user:pw@g.example:8443/cctp/{sender}/{data}.json?key=abc#x'),
    'https://g.example:8443/cctp/{sender}/{data}.json',
  ],
  ['urlForLog of text that is no URL', () => urlForLog('/relative/path'), '(unparsable URL)'],
  [
    'redactEndpoint blanks the path key, query values and userinfo the node quoted back',
    () =>
      redactEndpoint(
        'POST /v2/abcdefKEY?token=t0k3n failed for user alice:pw123',
        'https://alice:pw123@rpc.example/v2/abcdefKEY?token=t0k3n',
      ),
    'POST …?… failed for user …:…',
  ],
  [
    'redactEndpoint keeps short pieces such as v2',
    () => redactEndpoint('bad path v2', 'https://rpc.example/v2/'),
    'bad path v2',
  ],
  [
    'redactDatabaseUrl hides the password and secret parameters',
    () => redactDatabaseUrl(DB),
    'postgres://relayer:***@db.internal:5432/relay?sslpassword=***&application_name=api',
  ],
  ['redactDatabaseUrl keeps a file path', () => redactDatabaseUrl('./data/relayer.db'), './data/relayer.db'],
  [
    'redactDatabaseUrl of an unparsable URL keeps only its scheme',
    () => redactDatabaseUrl('postgres://[bad'),
    'postgres://(unparsable URL)',
  ],
  [
    'redactDatabaseSecrets replaces the URL, the password (encoded and decoded) and secret parameters',
    () => redactDatabaseSecrets(`could not connect to ${DB}: password "s3cr@t" or s3cr%40t refused, hunter22 too`, DB),
    'could not connect to postgres://relayer:***@db.internal:5432/relay?sslpassword=***&application_name=api: password "***" or *** refused, *** too',
  ],
  [
    'redactDatabaseSecrets of a file path changes nothing',
    () => redactDatabaseSecrets('no such file ./x.db', './x.db'),
    'no such file ./x.db',
  ],
];

for (const [name, run, expected] of TABLE) {
  test(`docs/operations.md#logs: ${name}`, () => {
    assert.equal(run(), expected);
  });
}
