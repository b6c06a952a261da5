/**
 * What `npm pack` would publish, as npm itself computes it (package.json "files", .npmignore, the
 * files npm always includes), for the tests of the package and of its documents. npm takes about a
 * second of CPU to answer, so a test run asks it once: the answer depends only on the tree, which
 * no test changes. The run's global setup names a file (PACKED_FILE_ENV) where the first process to
 * ask keeps the answer for the others; a process outside `npm test` asks npm itself.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The environment variable naming the file that keeps the answer for one test run. */
export const PACKED_FILE_ENV = 'RELAYER_TEST_PACKED_FILE';

const root = join(import.meta.dirname, '..', '..');
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

function askNpm(): string[] {
  // npm_execpath: the npm that runs `npm test`, on the Node that runs the tests.
  const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
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
