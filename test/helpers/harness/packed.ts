/**
 * What `npm pack` publishes, for the tests of the package and of its documents, asked of npm once
 * per test run: the answer depends only on the tree, which no test changes.
 * - `packedFiles()`: the list `npm pack --dry-run` gives (package.json "files", .npmignore, the
 *   files npm always includes). npm takes about a second of CPU to answer. The run's global setup
 *   names a file (PACKED_FILE_ENV) where the first process to ask keeps the answer for the others.
 * - `packedTarball()`: the tarball itself, made by `npm pack` with its `prepack` (the incremental
 *   build of dist/), 2-3 s of CPU. The run's global setup names a directory (TARBALL_DIR_ENV): the
 *   first process to ask packs into it, the others wait for it (test/process/install.test.ts and
 *   test/process/package-types.test.ts often run at the same time). Nothing writes to the tarball.
 * A process outside `npm test` asks npm itself (the tarball in a directory removed at its exit).
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { onExitCleanup } from './processes.ts';

/** The environment variable naming the file that keeps the answer for one test run. */
export const PACKED_FILE_ENV = 'RELAYER_TEST_PACKED_FILE';

const root = join(import.meta.dirname, '..', '..', '..');
let files: readonly string[] | undefined;

/** The paths `npm pack --dry-run` lists, relative to the repository. */
export function packedFiles(): readonly string[] {
  if (files === undefined) {
    const kept = process.env[PACKED_FILE_ENV];
    let paths: string[] | undefined;
    try {
      if (kept) paths = JSON.parse(readFileSync(kept, 'utf8')) as string[];
    } catch {
      // not asked yet in this run
    }
    if (paths === undefined) {
      paths = askNpm();
      if (kept) {
        writeFileSync(`${kept}.${process.pid}`, JSON.stringify(paths));
        renameSync(`${kept}.${process.pid}`, kept);
      }
    }
    files = Object.freeze(paths);
  }
  return files;
}

/** npm on the Node that runs the tests: npm_execpath (the npm that runs `npm test`), else the npm on PATH. */
function npmCommand(): string[] {
  return process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
}

function askNpm(): string[] {
  const npm = npmCommand();
  const out = execFileSync(npm[0], [...npm.slice(1), 'pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return (JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0].files.map((f) => f.path);
}

/**
 * The flags of the production install (docs/deploy.md#the-package): test/process/install.test.ts
 * installs the tarball with them, and the Dockerfile and docs/deploy.md must say the same.
 */
export const INSTALL_FLAGS: readonly string[] = ['--omit=dev', '--no-audit', '--no-fund'];

/** The environment variable naming the directory that holds the run's one tarball. */
export const TARBALL_DIR_ENV = 'RELAYER_TEST_TARBALL_DIR';

let tarball: Promise<string> | undefined;

/**
 * The path of the tarball `npm pack` makes of the repository (its `prepack` builds dist/ first),
 * one for the whole test run: the first process to ask packs it, the others wait for its answer.
 */
export function packedTarball(): Promise<string> {
  tarball ??= findTarball();
  return tarball;
}

async function findTarball(): Promise<string> {
  const shared = process.env[TARBALL_DIR_ENV];
  if (!shared) {
    const dir = mkdtempSync(join(tmpdir(), 'relayer-tarball-'));
    onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    return join(dir, await pack(dir));
  }
  mkdirSync(shared, { recursive: true });
  const answer = join(shared, 'answer.json');
  let lock: number | undefined;
  try {
    lock = openSync(join(shared, 'lock'), 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if (lock !== undefined) {
    writeFileSync(lock, String(process.pid));
    closeSync(lock);
    let kept: { filename?: string; error?: string };
    try {
      kept = { filename: await pack(shared) };
    } catch (error) {
      kept = { error: (error as Error).message };
    }
    writeFileSync(`${answer}.${process.pid}`, JSON.stringify(kept));
    renameSync(`${answer}.${process.pid}`, answer);
  }
  // The packing process writes its answer once, whatever happens; if it died first, say so.
  const packer = Number(readFileSync(join(shared, 'lock'), 'utf8')) || undefined;
  for (;;) {
    let kept: { filename?: string; error?: string } | undefined;
    try {
      kept = JSON.parse(readFileSync(answer, 'utf8'));
    } catch {
      // not packed yet
    }
    if (kept?.filename) return join(shared, kept.filename);
    if (kept) throw new Error(`npm pack failed (in process ${packer}): ${kept.error}`);
    if (packer !== undefined && !isAlive(packer)) throw new Error(`process ${packer} died while packing the tarball`);
    await delay(100);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** `npm pack` into `dir` (its prepack included); the tarball's file name. */
async function pack(dir: string): Promise<string> {
  const npm = npmCommand();
  // --silent: the JSON is all that goes to stdout; prepack's `tsc -b` is incremental (dist/ is up to date under npm test).
  const { stdout } = await promisify(execFile)(
    npm[0],
    [...npm.slice(1), 'pack', '--silent', '--json', '--pack-destination', dir],
    { cwd: root, encoding: 'utf8', env: { ...process.env, PATH: nodeFirstPath() }, maxBuffer: 16 * 1024 * 1024 },
  );
  return (JSON.parse(stdout) as Array<{ filename: string }>)[0].filename;
}

/** Node 24's directory first on PATH, as npm scripts have it: prepack's `tsc` runs on it. */
function nodeFirstPath(): string {
  return `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`;
}
