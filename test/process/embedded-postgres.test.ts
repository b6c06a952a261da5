/**
 * The test PostgreSQL server (scripts/embedded-postgres.ts) starts wherever the checkout is. As
 * root it runs as another user (PostgreSQL refuses root), who cannot enter a directory of mode 700
 * such as /root or a `mktemp -d` directory: the binaries installed there failed with EACCES. Here
 * the platform package is copied into such a directory (under a version of its own, so the copy
 * the fix makes under os.tmpdir() is made by this test, by two starts racing to make it) and two
 * servers are started from it and queried.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../scripts/embedded-postgres.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const isRoot = process.getuid?.() === 0;

test('as root, PostgreSQL starts from binaries in a directory only root can enter (mode 700)', {
  skip: !isRoot && 'only root runs the server as another user',
}, async (t) => {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  const installed = dirname(dirname(fileURLToPath(import.meta.resolve(name))));
  const closed = tempDir('relayer-pg-closed-', t);
  assert.equal(statSync(closed).mode & 0o777, 0o700);
  const packageDir = join(closed, 'package');
  cpSync(installed, packageDir, { recursive: true, verbatimSymlinks: true });
  const version = `0.0.0-test-${randomBytes(4).toString('hex')}`;
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  writeFileSync(join(packageDir, 'package.json'), JSON.stringify({ ...manifest, version }));
  const copy = join(tmpdir(), `relayer-pg-bin-${process.platform}-${process.arch}-${version}`);
  t.after(() => rmSync(copy, { recursive: true, force: true }));

  // The fault as it was: the server's user cannot run the binaries where they are.
  const postgresUser = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).status === 0 ? 'postgres' : 'nobody';
  const uid = Number(spawnSync('id', ['-u', postgresUser], { encoding: 'utf8' }).stdout);
  const gid = Number(spawnSync('id', ['-g', postgresUser], { encoding: 'utf8' }).stdout);
  const direct = spawnSync(join(packageDir, 'native', 'bin', 'postgres'), ['--version'], { uid, gid });
  assert.equal(
    (direct.error as NodeJS.ErrnoException | undefined)?.code,
    'EACCES',
    "the installed binaries are out of the server user's reach",
  );

  const servers: EmbeddedPostgres[] = [];
  t.after(() => Promise.all(servers.map((s) => s.remove())));
  const started = await Promise.allSettled([0, 1].map(() => startEmbeddedPostgres({ packageDir, fast: true })));
  for (const result of started) if (result.status === 'fulfilled') servers.push(result.value);
  for (const result of started) if (result.status === 'rejected') throw result.reason;

  for (const server of servers) {
    const client = new pg.Client({ connectionString: server.url() });
    await client.connect();
    try {
      assert.equal((await client.query('SELECT 1 + 1 AS two')).rows[0].two, 2);
    } finally {
      await client.end();
    }
  }
  // They ran from one copy, made once, that only root may change and the server's user can reach.
  assert.ok(existsSync(join(copy, 'bin', 'postgres')));
  const stat = statSync(copy);
  assert.equal(stat.uid, 0);
  assert.equal(stat.mode & 0o777, 0o755);
});
