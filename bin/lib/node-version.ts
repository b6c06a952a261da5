/**
 * Imported first by relayer-server and relayer-worker, so it runs before anything that needs a newer Node. On an
 * older Node the other modules would fail to link (`node:sqlite` does not exist before 22.13) with
 * a stack trace that does not say what to do; this prints one line instead.
 *
 * Keep this file to syntax and APIs every Node since 14 has: it must run where the rest cannot.
 */
/** package.json `engines.node` (test/process/bin.test.ts checks they agree). */
export const REQUIRED_NODE = '22.13';

const [major, minor] = process.versions.node.split('.').map(Number);
const [needMajor, needMinor] = REQUIRED_NODE.split('.').map(Number);
if (major < needMajor || (major === needMajor && minor < needMinor)) {
  // Both commands import this file: name the one that was run, and its npm script.
  const worker = /relayer-worker(\.[jt]s)?$/.test(process.argv[1] || '');
  const program = worker ? 'relayer-worker' : 'relayer-server';
  const script = worker ? 'npm run worker' : 'npm start';
  process.stderr.write(
    `${program}: Node.js >= ${REQUIRED_NODE} is required (for node:sqlite), this is ${process.version}; ` +
      `install a newer Node, or run it with \`${script}\` in the package, which uses the Node 24 it pins\n`,
  );
  process.exit(1);
}
