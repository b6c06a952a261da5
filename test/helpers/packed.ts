/**
 * What `npm pack` would publish, as npm itself computes it (package.json "files", .npmignore, the
 * files npm always includes), for the tests of the package and of its documents. npm takes about a
 * second of CPU to answer, so a process asks it once: the answer depends only on the tree, which
 * no test changes.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
let files: readonly string[] | undefined;

/** The paths `npm pack --dry-run` lists, relative to the repository. */
export function packedFiles(): readonly string[] {
  if (files === undefined) {
    // npm_execpath: the npm that runs `npm test`, on the Node that runs the tests.
    const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
    const out = execFileSync(npm[0], [...npm.slice(1), 'pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    files = Object.freeze((JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0].files.map((f) => f.path));
  }
  return files;
}
