/**
 * The database password never leaves the process (SECURITY.md; docs/configuration.md, `db`): every
 * place relayer-server or the delivery worker prints a database string is tried with a password in
 * the URL's userinfo, in its query (`?password=`), and in a URL whose scheme is mistyped
 * (`postgress://`), which is refused (exit 2) instead of being opened as a SQLite file of that name.
 * Places: the `started` line, a failed connection, a URL that does not parse, a refused scheme from
 * `--db`, RELAYER_DB and the config file, a config file that is not JSON, a stray argument, --help.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { unsupportedDatabaseScheme } from '../../lib/postgres/url.ts';
import { redactDatabaseSecrets, redactDatabaseUrl } from '../../lib/redact.ts';
import { spawnTracked } from '../helpers/harness/processes.ts';
import { fileChains } from '../helpers/fixtures/config.ts';
import { httpRequest } from '../helpers/harness/http.ts';
import { sharedPostgresUrl } from '../helpers/harness/postgres.ts';
import { launchRelayerServer, REPO_ROOT, relayerServerRefusal, runRelayerServer } from '../helpers/harness/server.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-secrets-');
let n = 0;

/** A fresh empty working directory: nothing may be created in it. */
function emptyDir(): string {
  return mkdtempSync(join(dir, 'cwd-'));
}

function configFile(db: unknown, text?: string): string {
  const path = join(dir, `config-${++n}.json`);
  const config = {
    chains: fileChains('http://127.0.0.1:1/rpc', null),
    ...(db === undefined ? {} : { db }),
  };
  writeFileSync(path, text ?? JSON.stringify(config));
  return path;
}

function assertClean(output: string, secrets: string[]): void {
  for (const secret of secrets) assert.ok(!output.includes(secret), `the secret ${secret} appears in:\n${output}`);
}

/** The environment without a RELAYER_DB of the caller's. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { RELAYER_DB: _, ...rest } = process.env;
  return { ...rest, ...extra };
}

describe('redactDatabaseUrl and redactDatabaseSecrets (lib/redact.ts)', () => {
  const cases: Array<[string, string]> = [
    ['postgres://relayer:hunter2@db:5432/relayer', 'postgres://relayer:***@db:5432/relayer'],
    [
      'postgres://relayer@db/relayer?password=hunter2&sslmode=require',
      'postgres://relayer@db/relayer?password=***&sslmode=require',
    ],
    [
      'postgresql://u:a%40b@db/x?sslpassword=k3y&application_name=relayer',
      'postgresql://u:***@db/x?sslpassword=***&application_name=relayer',
    ],
    ['POSTGRES://u:hunter2@db/x?PASSWORD=hunter2', 'postgres://u:***@db/x?PASSWORD=***'],
    ['postgress://u:hunter2@db/x', 'postgress://u:***@db/x'],
    ['mysql://root:hunter2@localhost/x?password=hunter2', 'mysql://root:***@localhost/x?password=***'],
    ['postgres://u:hunter2@[::1/x', 'postgres://(unparsable URL)'],
    ['./data/relayer.db', './data/relayer.db'],
    [':memory:', ':memory:'],
  ];
  for (const [given, expected] of cases) {
    test(`${expected}`, () => {
      assert.equal(redactDatabaseUrl(given), expected);
      assert.ok(!redactDatabaseUrl(given).includes('hunter2'));
    });
  }
  test('a driver message that quoted the URL, the password or its decoded form is scrubbed', () => {
    const db = 'postgres://u:p%40ss-w0rd@db/x?password=other-s3cret';
    const text = `failed for ${db}: p@ss-w0rd, p%40ss-w0rd and other-s3cret`;
    const scrubbed = redactDatabaseSecrets(text, db);
    assert.equal(scrubbed, 'failed for postgres://u:***@db/x?password=***: ***, *** and ***');
  });
  test('a mistyped scheme is refused; postgres, postgresql, file URIs and paths are not', () => {
    assert.equal(unsupportedDatabaseScheme('postgress://u:pw@h/db'), 'postgress');
    assert.equal(unsupportedDatabaseScheme('mysql://h/db'), 'mysql');
    for (const ok of [
      'postgres://h/db',
      'PostgreSQL://h/db',
      'file:///tmp/relayer.db',
      './relayer.db',
      ':memory:',
      'C:\\relayer.db',
      'data/postgres:/x.db',
    ]) {
      assert.equal(unsupportedDatabaseScheme(ok), undefined, ok);
    }
  });
});

/**
 * Each kind of refusal is seen once through the process (the mistyped scheme from --db: exit 2;
 * the failed connection: exit 1; --help): the message is what it prints. The other places are
 * checked in this process (relayerServerRefusal): the refusal the bin would print, from the same
 * code, without a process each.
 */
describe('relayer-server prints no database password (SECURITY.md)', () => {
  const typo = 'postgress://relayer:S3cret-typo-1@127.0.0.1:5432/relayer';
  const typoMessage =
    /is a URL of scheme "postgress:", which no store here opens: a PostgreSQL URL starts with postgres:\/\/ or postgresql:\/\//;

  test('a mistyped scheme in --db is refused with exit 2, redacted, and creates no file', async () => {
    const cwd = emptyDir();
    const run = await runRelayerServer(['--port', '0', '--db', typo], { cwd, env: env() });
    assert.equal(run.code, 2, run.output);
    assert.match(run.output, typoMessage);
    assert.match(run.output, /postgress:\/\/relayer:\*\*\*@127\.0\.0\.1:5432\/relayer/);
    assertClean(run.output, ['S3cret-typo-1']);
    assert.deepEqual(readdirSync(cwd), [], 'nothing opened as a SQLite file');
  });

  test('… and from RELAYER_DB, and from the config file (a password in the query too)', async () => {
    const fromEnv = await relayerServerRefusal(['--port', '0'], {
      env: { RELAYER_DB: 'mysql://root:S3cret-env-2@127.0.0.1/relayer' },
      openStore: true,
    });
    assert.equal(fromEnv.code, 2, fromEnv.output ?? 'accepted');
    assert.match(fromEnv.output ?? '', /scheme "mysql:"/);
    const fromConfig = await relayerServerRefusal(
      ['--port', '0', '--config', configFile('postgress://relayer@127.0.0.1/relayer?password=S3cret-config-3')],
      { openStore: true },
    );
    assert.equal(fromConfig.code, 2, fromConfig.output ?? 'accepted');
    assert.match(fromConfig.output ?? '', /postgress:\/\/relayer@127\.0\.0\.1\/relayer\?password=\*\*\*/);
    assertClean(`${fromEnv.output}${fromConfig.output}`, ['S3cret-env-2', 'S3cret-config-3']);
  });

  test('a connection that fails, with the password in the query: exit 1, the URL shown redacted', async () => {
    const run = await runRelayerServer(
      ['--port', '0', '--db', 'postgres://relayer@127.0.0.1:1/nowhere?password=S3cret-query-4&sslmode=disable'],
      { env: env() },
    );
    assert.equal(run.code, 1, run.output);
    assert.match(
      run.output,
      /cannot open database postgres:\/\/relayer@127\.0\.0\.1:1\/nowhere\?password=\*\*\*&sslmode=disable: /,
    );
    assertClean(run.output, ['S3cret-query-4']);
  });

  test('a URL that does not parse: exit 1, only its scheme shown', async () => {
    const run = await relayerServerRefusal(['--port', '0', '--db', 'postgres://relayer:S3cret-parse-5@[::1/x'], {
      openStore: true,
    });
    assert.equal(run.code, 1, run.output ?? 'opened');
    assert.match(run.output ?? '', /cannot open database postgres:\/\/\(unparsable URL\)/);
    assertClean(run.output ?? '', ['S3cret-parse-5']);
  });

  test("a config file that is not JSON: the parser's quote of the text around the error is not repeated", async () => {
    const path = configFile(undefined, '{"server": {}, "db": postgres://u:S3cret-json-6@h/db}');
    const run = await relayerServerRefusal(['--port', '0', '--config', path]);
    assert.equal(run.code, 2, run.output ?? 'accepted');
    assert.match(run.output ?? '', /is not valid JSON: Unexpected token 'p' \(the text around it is not repeated/);
    assertClean(run.output ?? '', ['S3cret-json-6', 'S3cret', 'postgres:/']);
  });

  test('a database URL given as a stray argument (a forgotten --db): exit 2, the URL cut to scheme://host', async () => {
    const run = await relayerServerRefusal(['--port', '0', 'postgres://relayer:S3cret-arg-7@127.0.0.1:5432/relayer']);
    assert.equal(run.code, 2, run.output ?? 'accepted');
    assert.match(run.output ?? '', /postgres:\/\/127\.0\.0\.1:5432/);
    assertClean(run.output ?? '', ['S3cret-arg-7']);
  });

  test('--help with RELAYER_DB set prints no part of it', async () => {
    const run = await runRelayerServer(['--help'], {
      env: env({ RELAYER_DB: 'postgres://relayer:S3cret-help-8@db.internal:5432/relayer' }),
    });
    assert.equal(run.code, 0);
    assertClean(run.output, ['S3cret-help-8', 'db.internal']);
  });

  test('the started line on a real PostgreSQL, with the password given as ?password=', async () => {
    const url = new URL(await sharedPostgresUrl());
    const password = decodeURIComponent(url.password);
    assert.ok(password.length >= 8);
    url.password = '';
    url.searchParams.set('password', password);
    const server = await launchRelayerServer([], {
      env: env({ RELAYER_DB: url.href, RELAYER_LOG_LEVEL: 'info' }),
      graceMs: 5_000,
    });
    try {
      assert.equal(
        (await httpRequest(server.url, { path: '/ready' })).status,
        200,
        'the password in the query did reach the server',
      );
      const started = server.stdout.find((line) => line.includes('"msg":"started"'));
      assert.ok(started, server.output());
      assert.match(started, /"db":"postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\?password=\*\*\*"/);
    } finally {
      await server.stop();
    }
    assertClean(server.output(), [password]);
  });
});

describe('relayer-worker prints no database password', () => {
  const WORKER_BIN = join(REPO_ROOT, 'bin', 'relayer-worker.ts');
  const ID = `0x${'ab'.repeat(32)}`;

  async function runWorkerBin(args: string[]): Promise<{ code: number | null; output: string }> {
    const tracked = spawnTracked(process.execPath, [WORKER_BIN, ...args], { cwd: emptyDir(), env: env() });
    const [code] = (await once(tracked.child, 'exit')) as [number | null];
    return { code, output: tracked.output() };
  }

  test('a refused or failed command names the database without its password', async () => {
    // A mistyped scheme (exit 2), a failing connection with ?password= (exit 1), a stray URL as the command
    // (exit 2), a config file that is not JSON (exit 2).
    const typo = await runWorkerBin(['requeue', ID, '--db', 'postgress://u:S3cret-b1@127.0.0.1/x']);
    assert.equal(typo.code, 2, typo.output);
    assert.match(typo.output, /postgress:\/\/u:\*\*\*@127\.0\.0\.1\/x is a URL of scheme "postgress:"/);
    const refused = await runWorkerBin(['requeue', ID, '--db', 'postgres://u@127.0.0.1:1/x?password=S3cret-b2']);
    assert.equal(refused.code, 1, refused.output);
    assert.match(refused.output, /cannot open database postgres:\/\/u@127\.0\.0\.1:1\/x\?password=\*\*\*: /);
    const stray = await runWorkerBin(['postgres://u:S3cret-b3@127.0.0.1/x']);
    assert.equal(stray.code, 2, stray.output);
    assert.match(stray.output, /unknown command "postgres:\/\/127\.0\.0\.1"/);
    const json = await runWorkerBin([
      'requeue',
      ID,
      '--config',
      configFile(undefined, '{"server": {}, "db": postgres://u:S3cret-b4@h/db}'),
    ]);
    assert.equal(json.code, 2, json.output);
    for (const run of [typo, refused, stray, json])
      assertClean(run.output, ['S3cret-b1', 'S3cret-b2', 'S3cret-b3', 'S3cret-b4']);
  });
});
