/**
 * docs/deploy.md#the-container: the image cannot be built here (no container daemon), so the
 * Dockerfile is checked as text: a thin wrapper around the package install that
 * test/process/install.test.ts runs, on Node 24, as a user that is not root, the database on a
 * volume, a health check on /ready, the command in exec form so that it gets SIGTERM as PID 1.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { INSTALL_FLAGS } from '../helpers/harness/packed.ts';

const root = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** The instructions of a Dockerfile: comments dropped, `\` continuations joined. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*(#|$)/.test(lines[i])) continue;
    const line = i + 1;
    let joined = lines[i];
    while (joined.endsWith('\\') && i + 1 < lines.length) {
      i++;
      if (/^\s*#/.test(lines[i])) continue;
      joined = `${joined.slice(0, -1)} ${lines[i].trim()}`;
    }
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(joined);
    assert.ok(match, `Dockerfile:${line}: not an instruction: ${joined}`);
    out.push({ keyword: match[1].toUpperCase(), args: match[2].trim(), line });
  }
  return out;
}

const all = instructions(readFileSync(join(root, 'Dockerfile'), 'utf8'));
const only = (keyword: string) => all.filter((i) => i.keyword === keyword);

test('docs/deploy.md#the-container: one stage on a Node 24 image, nothing copied in but the npm pack tarball', () => {
  const from = only('FROM');
  assert.equal(from.length, 1, 'one stage: the image adds nothing to the package path but its base');
  assert.match(from[0].args, /^node:24(-[a-z0-9.-]+)?$/, 'the official Node 24 image');
  assert.deepEqual(
    [...only('COPY'), ...only('ADD')].map((i) => i.args),
    ['relayer-api-*.tgz /tmp/'],
  );
  const ignore = readFileSync(join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));
  assert.deepEqual(ignore, ['*', '!relayer-api-*.tgz'], 'the build context is the tarball alone');
});

test('docs/deploy.md#the-container: the install is the tested one, with the peers the suite pins', () => {
  const install = only('RUN')
    .map((i) => /npm install ([^&]*)/.exec(i.args)?.[1].trim())
    .filter((args) => args !== undefined);
  const expected = [
    ...INSTALL_FLAGS,
    '/tmp/relayer-api-*.tgz',
    `viem@${pkg.devDependencies.viem}`,
    `pg@${pkg.devDependencies.pg}`,
  ];
  assert.deepEqual(install, [expected.join(' ')]);
  // docs/deploy.md shows the same line for a host.
  const deploy = readFileSync(join(root, 'docs', 'deploy.md'), 'utf8');
  assert.ok(
    deploy.includes(`npm install ${[...INSTALL_FLAGS, './relayer-api-0.1.0.tgz', ...expected.slice(-2)].join(' ')}\n`),
    'docs/deploy.md#the-package shows the install line',
  );
  assert.equal(pkg.version, '0.1.0', 'docs/deploy.md names the tarball of this version');
});

test('docs/deploy.md#the-container: not root, the database on the /data volume, /ready as the health check', () => {
  const users = only('USER');
  assert.ok(users.length >= 1, 'a USER instruction');
  assert.doesNotMatch(users.at(-1)!.args, /^(root|0)(:|$)/, 'the command does not run as root');
  assert.ok(
    users.at(-1)!.line > Math.max(...only('RUN').map((i) => i.line)),
    'USER comes after the install (root only for it)',
  );
  assert.ok(
    only('VOLUME').some((i) => i.args.includes('/data')),
    '/data is a volume',
  );
  assert.equal(only('WORKDIR').at(-1)?.args, '/data', 'the default ./relayer.db lands on the volume');
  const health = only('HEALTHCHECK');
  assert.equal(health.length, 1);
  assert.match(health[0].args, /CMD .*http:\/\/127\.0\.0\.1:9090\/ready/);
  assert.match(health[0].args, /RELAYER_HEALTH_URL/, 'a worker container points it at its ops port');
});

test('docs/deploy.md#the-container: the command is in exec form, so it is PID 1 and gets SIGTERM itself', () => {
  const cmd = only('CMD');
  assert.equal(cmd.length, 1);
  const args = JSON.parse(cmd[0].args) as string[];
  assert.ok(Array.isArray(args), 'exec form (a JSON array), not a shell that would keep the signal');
  assert.equal(args[0], 'relayer-server');
  assert.deepEqual(args.slice(1, 3), ['--host', '0.0.0.0'], 'reachable from outside the container');
  assert.equal(only('ENTRYPOINT').length, 0, 'docker run IMAGE relayer-worker … runs the worker');
  assert.ok(
    only('ENV').some((i) => i.args.includes('/opt/relayer/node_modules/.bin')),
    'both commands on PATH',
  );
});

test('docs/deploy.md#the-container: the instruction reader joins continuations and fails on a stray line', () => {
  const parsed = instructions('# c\nFROM node:24\nRUN a \\\n    # inner\n    b\n');
  assert.deepEqual(
    parsed.map((i) => [i.keyword, i.args, i.line]),
    [
      ['FROM', 'node:24', 2],
      ['RUN', 'a  b', 3],
    ],
  );
  assert.throws(() => instructions('FROM node:24\n???\n'), /Dockerfile:2/);
});
