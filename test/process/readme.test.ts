/**
 * docs/getting-started.md#try-it: the README runs as written. Every fenced shell block of the README and of the
 * published docs is either run here or listed below as a command the suite itself covers; a
 * command in neither fails the test, so a new example cannot slip in unrun.
 *
 * What runs, as a new user would on a fresh clone: the repository's files are copied to an empty
 * directory (with node_modules linked, `npm install` standing for itself), the README's
 * `relayer.json` is saved there, and the README's `npm start …` line starts the real server. Then
 * every other command runs in one bash session, in document order, and what it prints must equal
 * the `# …` lines that follow it in the README (`…` there matches anything). Two substitutions, both
 * because a test may not do otherwise: the RPC endpoints of `relayer.json` become an unreachable
 * loopback address (tests never touch the network), and the server listens on a free port, which
 * replaces 9090 in the commands.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, test, type TestContext } from 'node:test';
import { onExitCleanup, waitForStart } from '../helpers/harness/processes.ts';
import { packedFiles } from '../helpers/harness/packed.ts';

const root = new URL('../..', import.meta.url).pathname;

/** Commands the suite runs in other ways (or that would run the suite inside itself). */
const NOT_RUN_HERE = new Map<string, string>([
  [
    'npm install          # also Node 24, pinned as a devDependency: every npm script runs on it',
    'the shared node_modules of this checkout stands for it',
  ],
  [
    'npm start            # the API on http://127.0.0.1:9090: built-in mainnet chains, ./relayer.db',
    "the walkthrough's npm start (docs/getting-started.md) starts the server the quick start's curl lines run against; test/process/bin.test.ts starts it on the built-in default",
  ],
  [
    'npm run devnet:send              # one transfer: relayed, delivered; --revert: failed',
    'test/e2e/devnet.e2e.test.ts runs it against a devnet',
  ],
  ['npm run devnet', 'runs until Ctrl-C; test/e2e/devnet.e2e.test.ts runs it through npm'],
  [
    'npm run devnet:send                   # one transfer: relayed, then delivered',
    'test/e2e/devnet.e2e.test.ts runs it against a devnet',
  ],
  [
    'npm run devnet:send -- --revert       # one to the recipient that always reverts: failed',
    'test/e2e/devnet.e2e.test.ts runs it against a devnet',
  ],
  [
    'npm run devnet:send -- --multisig     # one through the mainnet ISM shape, signed by validators',
    'test/e2e/devnet.e2e.test.ts runs it against a devnet',
  ],
  [
    'npm run worker -- list --config .devnet/relayer.json',
    'test/e2e/devnet.e2e.test.ts runs list on a devnet; test/process/worker-bin.test.ts each flag',
  ],
  [
    'npm run worker -- requeue --status failed --config .devnet/relayer.json',
    'test/process/worker-bin.test.ts runs requeue --status failed on a real SQLite file',
  ],
  [
    'npm run worker -- list --config relayer.json                      # every message not delivered, oldest first',
    'test/process/worker-bin.test.ts runs list and requeue --status failed on a real SQLite file',
  ],
  [
    'npm run worker -- list --status failed --destination base --limit 20 --config relayer.json',
    'test/process/worker-bin.test.ts runs list with each filter',
  ],
  [
    'npm run worker -- requeue --status failed --destination base --config relayer.json',
    'test/process/worker-bin.test.ts runs requeue --status failed --destination',
  ],
  [
    'npm run worker -- signers --config relayer.json --db postgres://relayer:relayer@127.0.0.1:54329/postgres',
    'test/e2e/worker-signers.e2e.test.ts runs signers (text and json) on anvil with a stuck nonce',
  ],
  ['npm install', 'the shared node_modules of this checkout stands for it'],
  ['npm test', 'this is npm test'],
  [
    'npm test            # lint, dist/, then the typecheck beside scripts/test.ts: node:test on test/**/*.test.ts, e2e on anvil included',
    'this is npm test',
  ],
  [
    'npm run bench       # benchmarks against peers, ratios printed; results in BENCHMARKS.md',
    'minutes of load; bench/ is its own check',
  ],
  [
    'npm run soak        # 60 s load run; results in RELIABILITY.md',
    'a minute of load; test/process/load.test.ts runs 3 s of the same',
  ],
  [
    'npm run mutate      # mutation testing of the money paths (StrykerJS); scores in BENCHMARKS.md',
    'minutes per module, a mutant at a time; CONTRIBUTING.md#mutation-testing says when to run it',
  ],
  [
    'npm run mutate                                      # the modules your branch changed',
    'mutation testing runs each mutant against the unit files (minutes): CONTRIBUTING.md#mutation-testing',
  ],
  [
    'npm run mutate -- lib/worker/tx/nonces.ts           # one module',
    'mutation testing runs each mutant against the unit files (minutes): CONTRIBUTING.md#mutation-testing',
  ],
  [
    "npm run mutate -- 'lib/net/ip-address.ts:1-162'     # part of one (a Stryker line range)",
    'mutation testing runs each mutant against the unit files (minutes): CONTRIBUTING.md#mutation-testing',
  ],
  [
    'npm run mutate -- lib/worker/loop/ -- --concurrency 2   # a folder, module by module; after --, options for Stryker',
    'mutation testing runs each mutant against the unit files (minutes): CONTRIBUTING.md#mutation-testing',
  ],
  [
    'nice -n 19 npm run repeat -- 20                   # 20 fresh-clone runs of HEAD (npm ci once)',
    'the flake hunt (CONTRIBUTING.md#finding-a-flaky-test) runs the whole suite, which cannot run inside itself',
  ],
  [
    'nice -n 19 npm run repeat -- 5 --link-modules     # node_modules of this checkout, no npm ci (no network)',
    'the flake hunt (CONTRIBUTING.md#finding-a-flaky-test) runs the whole suite, which cannot run inside itself',
  ],
  [
    'awk \'/^test at /{at=$3; getline; sub(/ \\([0-9.]+ms\\)$/, ""); print at, $0}\' /tmp/train-*.log | sort | uniq -c | sort -rn',
    "reads the merge train's logs, which exist only on the shared machine",
  ],
  [
    'for i in $(seq 10); do npx node scripts/test.ts test/unit/http/hostile.test.ts > /tmp/one-$i.log 2>&1 || echo "run $i failed"; done',
    'one file ten times under load: npm test runs test/unit/http/hostile.test.ts',
  ],
  [
    'npm run demo        # end-to-end demo on two local chains: relay, then delivery',
    'test/e2e/demo.e2e.test.ts runs the demo itself',
  ],
  [
    'npm run build       # dist/ (JS + .d.ts), also run by npm test and npm pack (prepack)',
    'npm test builds dist/ before the tests',
  ],
  [
    'npm pack                    # in the clone: dist/ built, relayer-api-0.1.0.tgz written',
    'test/process/install.test.ts runs npm pack (its prepack builds dist/)',
  ],
  [
    'npm install --omit=dev --no-audit --no-fund ./relayer-api-0.1.0.tgz viem@2.57.20 pg@8.23.1',
    'test/process/install.test.ts installs the tarball with these flags (the peers linked: no network in tests); test/unit/dockerfile.test.ts keeps this line',
  ],
  [
    'npm run bench:pg    # POST /relay on PostgreSQL with 1 and 2 replicas, liveness during an outage',
    'minutes of load; bench/ is its own check',
  ],
  [
    'npm run bench:delivery  # delivery throughput on anvil (1 s blocks): relayer-worker vs a minimal sender',
    'minutes on a chain with 1 s blocks; bench/ is its own check',
  ],
  [
    'npm run lint        # biome only (npm test runs it first); npm run format fixes formatting',
    'npm test runs it first',
  ],
  [
    'npx node scripts/test.ts test/unit/codec/keccak.test.ts   # with the setup of npm test (PostgreSQL, compile cache)',
    'this is npm test (scripts/test.ts)',
  ],
  ["npx node scripts/test.ts 'test/unit/outbox/*'          # a glob", 'this is npm test (scripts/test.ts)'],
  [
    'npx node --test test/unit/codec/keccak.test.ts           # plain node:test, for a file that needs no PostgreSQL',
    'npm test runs test/unit/codec/keccak.test.ts',
  ],
  [
    'npm run pg          # a PostgreSQL server from npm for trying several replicas (README)',
    'runs until Ctrl-C; test/helpers/harness/postgres.ts starts the same server (scripts/embedded-postgres.ts) for the suite',
  ],
  [
    'RELAYER_DB=postgres://relayer:relayer@127.0.0.1:54329/postgres npm start -- --port 9090',
    'test/process/replicas.test.ts starts replicas with RELAYER_DB on a real PostgreSQL',
  ],
  [
    'npm start -- --port 9092 --db postgres://relayer:relayer@127.0.0.1:54329/postgres',
    'test/process/replicas.test.ts starts relayer-server with --db postgres://… on a real PostgreSQL',
  ],
  [
    'npm run pg                                                                                     # PostgreSQL on 127.0.0.1:54329',
    'runs until Ctrl-C; test/helpers/harness/postgres.ts starts the same server (scripts/embedded-postgres.ts) for the suite',
  ],
  [
    'RELAYER_DB=postgres://relayer:relayer@127.0.0.1:54329/postgres npm start -- --config relayer.json   # the server, port 9090',
    'test/process/replicas.test.ts starts relayer-server with RELAYER_DB on a real PostgreSQL',
  ],
  [
    'npm run worker -- list --status failed --config relayer.json --db postgres://relayer:relayer@127.0.0.1:54329/postgres',
    'test/process/worker-bin.test.ts runs list with each filter; test/e2e/devnet.e2e.test.ts on a devnet',
  ],
  [
    'RELAYER_DB=postgres://relayer:relayer@127.0.0.1:54329/postgres RELAYER_SIGNER_KEY=0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d npm run worker -- --config relayer.json --port 9091',
    'test/e2e/worker.e2e.test.ts runs two relayer-workers on one PostgreSQL database (RELAYER_DB in worker-bin.test.ts)',
  ],
  [
    'RELAYER_DB=postgres://relayer:relayer@127.0.0.1:54329/postgres RELAYER_SIGNER_KEY=0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a npm run worker -- --config relayer.json --port 9092',
    'test/e2e/worker.e2e.test.ts runs two relayer-workers on one PostgreSQL database',
  ],
  [
    'npm run worker -- requeue 0x9e0d7c5a1f0a4a3b5b5e2f6b0c8a1d2e3f405162738495a6b7c8d9e0f1a2b3c4 --config relayer.json --db postgres://relayer:relayer@127.0.0.1:54329/postgres',
    'test/e2e/worker-cctp.e2e.test.ts and worker.e2e.test.ts run relayer-worker requeue',
  ],
]);

interface Command {
  file: string;
  line: number;
  text: string;
  expected: string[];
}

/** Whether a shell string is still open at the end of `text` ('…' takes everything literally, "…" honours \\"). */
function openQuote(text: string): boolean {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote === '"' && c === '\\') i++;
    else if (quote === undefined && (c === "'" || c === '"')) quote = c;
    else if (c === quote) quote = undefined;
  }
  return quote !== undefined;
}

/** The fenced shell blocks of `file`, cut into commands (with `\` continuations and open quotes joined) and the `# ` lines after each. */
function shellCommands(file: string): Command[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const commands: Command[] = [];
  let inShell = false;
  let inOther = false;
  let outputMayFollow = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^```(\S*)/.exec(line);
    if (fence) {
      outputMayFollow = false;
      if (inShell || inOther) {
        inShell = inOther = false;
      } else if (['sh', 'bash', 'shell', 'console'].includes(fence[1])) {
        inShell = true;
      } else {
        inOther = true;
      }
      continue;
    }
    if (!inShell) continue;
    if (line.trim() === '') {
      outputMayFollow = false;
      continue;
    }
    if (line.startsWith('#')) {
      // Right under a command: what it prints. After a blank line or first in a block: prose.
      if (outputMayFollow) commands.at(-1)!.expected.push(line.replace(/^# ?/, ''));
      continue;
    }
    outputMayFollow = true;
    let text = line;
    const start = i;
    // A command goes on while a line ends with "\" or a single-quoted string is still open.
    while ((text.endsWith('\\') || openQuote(text)) && i + 1 < lines.length) text += '\n' + lines[++i];
    commands.push({ file, line: start + 1, text, expected: [] });
  }
  return commands;
}

function publishedMarkdown(): string[] {
  return packedFiles().filter((p) => p.endsWith('.md'));
}

/** The walkthrough's configuration (docs/getting-started.md#try-it): the ```json block that has "chains" and an admin token. */
function readmeConfig(): Record<string, any> {
  const blocks = [
    ...readFileSync(join(root, 'docs', 'getting-started.md'), 'utf8').matchAll(/```json\n([\s\S]*?)```/g),
  ].map((m) => m[1]);
  const config = blocks.map((b) => JSON.parse(b)).find((c) => c.chains && c.server?.adminToken);
  assert.ok(config, 'docs/getting-started.md has a relayer.json with chains and an admin token');
  return config;
}

function wildcard(expected: string): RegExp {
  return new RegExp(
    `^${expected
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
      .join('[\\s\\S]*?')}$`,
  );
}

/**
 * The clone's directory is the same on every run of this checkout (named after its path), emptied
 * first: Node's compile cache is keyed by file path, so a new directory each run compiled all of
 * the server's TypeScript again (most of its start-up CPU).
 */
const clone = join(tmpdir(), `relayer-readme-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`);
rmSync(clone, { recursive: true, force: true });
mkdirSync(clone);
after(() => rmSync(clone, { recursive: true, force: true }));

test('docs/getting-started.md#try-it: every shell example of the README and the docs runs as written against the real server', async (t) => {
  const commands = publishedMarkdown().flatMap(shellCommands);
  assert.ok(commands.length >= 15, `found ${commands.length} shell commands`);
  // A --check-config line runs in the session below like any other command: it starts nothing.
  const checks = (c: Command) => /^npm start --silent -- .*--check-config$/.test(c.text);
  const starts = commands.filter((c) => /^npm start\b/.test(c.text) && !NOT_RUN_HERE.has(c.text) && !checks(c));
  assert.equal(starts.length, 1, 'one npm start line starts the walkthrough server');
  const toRun: Command[] = [];
  for (const c of commands) {
    if (c === starts[0]) continue;
    if (NOT_RUN_HERE.has(c.text)) continue;
    assert.ok(
      // `nice -n 19 npm …` is an npm command too.
      c.file === BACKUP_DOC || checks(c) || !/^(nice (-n \d+ )?)?(npm|node) /.test(c.text),
      `${c.file}:${c.line}: "${c.text}" is neither run here nor listed as covered elsewhere`,
    );
    toRun.push(c);
  }
  assert.ok(toRun.length >= 10, `${toRun.length} commands to run`);

  // A fresh clone: the files git knows, nothing built, no database, no data/ directory.
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const file of files) {
    if (!existsSync(join(root, file))) continue;
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    cpSync(join(root, file), join(clone, file));
  }
  symlinkSync(join(root, 'node_modules'), join(clone, 'node_modules'));
  const config = readmeConfig();
  for (const chain of Object.values<any>(config.chains))
    chain.rpcUrls = chain.rpcUrls.map(() => ({ http: 'http://127.0.0.1:9/' }));
  config.server.port = 0;
  writeFileSync(join(clone, 'relayer.json'), JSON.stringify(config, null, 2));

  const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
  const startArgs = starts[0].text.split(/\s+/).slice(1); // after "npm": start -- --config …
  // In its own process group, signalled as a whole: as Ctrl-C in a terminal reaches npm and the
  // server together (npm itself exits on SIGTERM without waiting for its child).
  const child = spawn(npm[0], [...npm.slice(1), ...startArgs], {
    cwd: clone,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d));
  child.stderr.on('data', (d: Buffer) => (output += d));
  // Closed once npm and the server (which shares the pipe) have both exited.
  const exited = once(child.stdout, 'close');
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  const forget = onExitCleanup(() => signalGroup('SIGKILL'));
  const server = { child, output: () => output };
  const ready = await waitForStart(server, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  const port = ready[1];
  assert.ok(
    existsSync(join(clone, 'data', 'relayer.db')),
    "the config's db, ./data/relayer.db, created its directory on a fresh clone",
  );

  try {
    const readme = toRun.filter((c) => c.file !== BACKUP_DOC);
    await runInOneSession(readme, clone, port);
    await runBackups(
      toRun.filter((c) => c.file === BACKUP_DOC),
      join(clone, 'data'),
      t,
    );
  } finally {
    signalGroup('SIGTERM');
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 15_000)))]);
    clearTimeout(timer);
    forget();
  }
  // npm forwards SIGTERM to the server, which shuts down cleanly.
  assert.match(server.output(), /"msg":"stopped"/);
});

/**
 * docs/operations.md's backup commands, each run in the database's directory while the server
 * runs; each backup must hold the merkle row the README's examples wrote, and is removed before
 * the next alternative (VACUUM INTO refuses an existing target).
 */
const BACKUP_DOC = 'docs/operations.md';

async function runBackups(commands: Command[], directory: string, t: TestContext): Promise<void> {
  assert.ok(commands.length >= 3, 'the backup commands of docs/operations.md');
  // The sqlite3 shell is not part of the package; docs/operations.md says which version each line needs.
  const version = spawnSync('sqlite3', ['-version'], { encoding: 'utf8' });
  const [major, minor] = version.status === 0 ? version.stdout.split(/[. ]/).map(Number) : [0, 0];
  for (const c of commands) {
    const needs = c.text.includes('VACUUM INTO') ? [3, 41] : [3, 0];
    if (c.text.startsWith('sqlite3 ') && (major < needs[0] || (major === needs[0] && minor < needs[1]))) {
      t.diagnostic(
        `${c.file}:${c.line}: needs the sqlite3 shell >= ${needs.join('.')}, this machine has ${version.stdout?.split(' ')[0] || 'none'}; not run: ${c.text}`,
      );
      continue;
    }
    const result = spawnSync('bash', ['-c', c.text], { cwd: directory, encoding: 'utf8' });
    assert.equal(result.status, 0, `${c.file}:${c.line}: ${c.text}\n${result.stderr}`);
    assert.match(result.stdout.replace(/\n$/, ''), wildcard(c.expected.join('\n')), `${c.file}:${c.line}`);
    const backup = join(directory, 'relayer-backup.db');
    const db = new DatabaseSync(backup, { readOnly: true });
    try {
      assert.equal(db.prepare('PRAGMA integrity_check').get()?.integrity_check, 'ok', `${c.file}:${c.line}`);
      assert.equal(
        db.prepare('SELECT count(*) AS n FROM merkle_insertions').get()?.n,
        1,
        `${c.file}:${c.line}: the backup has the row written before it`,
      );
    } finally {
      db.close();
    }
    rmSync(backup);
  }
}

/** Runs the commands in one bash session (variables carry over) and checks what each printed. */
async function runInOneSession(toRun: Command[], cwd: string, port: string): Promise<void> {
  {
    const marker = (n: number) => `@@readme-command-${n}@@`;
    const script =
      toRun
        .map((c, n) => `echo '${marker(n)}'\n${c.text.replaceAll('127.0.0.1:9090', `127.0.0.1:${port}`)}\n`)
        .join('') + `echo '${marker(toRun.length)}'\n`;
    const bash = spawn('bash', ['-c', script], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    bash.stdout.on('data', (d: Buffer) => (out += d));
    bash.stderr.on('data', (d: Buffer) => (err += d));
    await once(bash, 'exit');
    for (let n = 0; n < toRun.length; n++) {
      const c = toRun[n];
      const from = out.indexOf(marker(n));
      const to = out.indexOf(marker(n + 1));
      assert.ok(from >= 0 && to > from, `${c.file}:${c.line}: the command ran (stderr: ${err})`);
      const printed = out.slice(from + marker(n).length + 1, to).replace(/\n$/, '');
      assert.match(printed, wildcard(c.expected.join('\n')), `${c.file}:${c.line}: ${c.text}`);
    }
  }
}

test('docs/getting-started.md#try-it: what the README and npm run devnet create is ignored by git and biome', () => {
  // relayer.json, data/, .devnet/ in the package: npm test passes after following them.
  const paths = ['relayer.json', 'data/relayer.db', '.devnet/relayer.json', '.devnet/worker.log'];
  const ignored = spawnSync('git', ['check-ignore', '--no-index', ...paths], { cwd: root, encoding: 'utf8' });
  assert.deepEqual(ignored.stdout.trim().split('\n'), paths, ignored.stderr);
  const biome = JSON.parse(readFileSync(join(root, 'biome.json'), 'utf8'));
  assert.deepEqual(
    biome.vcs,
    { enabled: true, clientKind: 'git', useIgnoreFile: true },
    'biome skips what git ignores',
  );
});
