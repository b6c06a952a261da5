/**
 * The package as docs/design.md#package promises it: a pure core (no node:* import, no Node
 * globals), adapters that depend on the core and never the reverse, no runtime dependencies, and
 * an exports map whose entry points (built by `npm test` before this runs) export what the README
 * documents.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { test } from 'node:test';
import { packedFiles } from '../helpers/harness/packed.ts';

const root = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** The .ts files under a folder of the repository, its subfolders included, as paths from the root. */
function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => posix.join(posix.relative(root, e.parentPath), e.name));
}

/** The folders of lib/ that are entry points or adapters; every other file of lib/ is the core. */
const NOT_CORE = ['client', 'http', 'node', 'postgres', 'sqlite', 'testing', 'worker'];

/** The core: lib/index.ts and every file below it, the files of lib/ outside the adapters' folders. */
function coreSources(): string[] {
  return sources('lib').filter((file) => {
    const parts = file.split('/');
    return parts.length === 2 || !NOT_CORE.includes(parts[1]);
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2]);
}

test('docs/design.md#package: the core in lib/ imports no node:* module and no adapter', () => {
  const core = coreSources();
  assert.ok(core.length >= 15, 'core files found');
  const inCore = new Set(core);
  for (const file of core) {
    for (const spec of importsOf(file)) {
      assert.ok(spec.startsWith('.') && inCore.has(posix.join(posix.dirname(file), spec)), `${file} imports ${spec}`);
      assert.ok(!spec.startsWith('node:'), `${file} imports ${spec}`);
    }
    const text = readFileSync(join(root, file), 'utf8');
    assert.doesNotMatch(text, /\b(?:process|Buffer|require|__dirname)\s*[.(]/, `${file} uses a Node global`);
  }
});

test('docs/design.md#package: adapters import only the core, Node built-ins and each other', () => {
  for (const file of [...sources('lib/http'), ...sources('lib/node'), ...sources('lib/sqlite')]) {
    for (const spec of importsOf(file)) {
      assert.ok(spec.startsWith('node:') || spec.startsWith('./') || spec.startsWith('../'), `${file} imports ${spec}`);
    }
  }
});

test('docs/design.md#delivery: the worker imports the core, Node built-ins, lib/node and viem, never the other adapters', () => {
  // lib/node holds the Prometheus registry and the listen helper the worker's ops server shares with the HTTP
  // server.
  for (const file of sources('lib/worker')) {
    for (const spec of importsOf(file)) {
      const ok =
        spec.startsWith('node:') ||
        spec.startsWith('./') ||
        spec === 'viem' ||
        spec.startsWith('viem/') ||
        (spec.startsWith('../') && !/^(\.\.\/)+(http|sqlite|postgres|client)\//.test(spec));
      assert.ok(ok, `${file} imports ${spec}`);
    }
  }
});

test('docs/design.md#postgresql: the PostgreSQL store imports only the core', () => {
  // No driver (the caller brings a pool), no Node built-in.
  const files = sources('lib/postgres');
  assert.ok(files.length >= 5, 'postgres store files found');
  for (const file of files) {
    for (const spec of importsOf(file)) {
      assert.ok(
        spec.startsWith('./') ||
          (spec.startsWith('../') && !spec.startsWith('../http/') && !spec.startsWith('../sqlite/')),
        `${file} imports ${spec}`,
      );
    }
  }
  // pg is an optional peer (relayer-server loads it for a postgres:// URL) and a devDependency.
  assert.ok(pkg.peerDependencies.pg, 'pg is a peer dependency');
  assert.deepEqual(pkg.peerDependenciesMeta.pg, { optional: true });
  assert.ok(pkg.devDependencies.pg, 'pg is a devDependency (tests, relayer-server in development)');
});

test('docs/design.md#package: package.json has no runtime dependencies, pins Node 24 and maps the documented entry points', () => {
  assert.equal(pkg.dependencies, undefined);
  assert.equal(pkg.type, 'module');
  assert.equal(pkg.engines.node, '>=22.13');
  assert.match(pkg.devDependencies.node, /^24\./);
  assert.deepEqual(Object.keys(pkg.exports).sort(), [
    '.',
    './client',
    './package.json',
    './postgres',
    './server',
    './sqlite',
    './testing',
    './worker',
  ]);
  assert.equal(pkg.bin['relayer-server'], './dist/bin/relayer-server.js');
  assert.equal(pkg.bin['relayer-worker'], './dist/bin/relayer-worker.js');
  assert.match(process.version, /^v24\./, 'npm scripts run on the pinned Node 24');
});

test('docs/design.md#package: the built entry points export the documented API', async () => {
  const core = await import('relayer-api');
  for (const name of [
    'keccak256',
    'createRelayPipeline',
    'RelayError',
    'parseConfig',
    'defaultConfig',
    'createMemoryOutbox',
    'claimedMessage',
    'deadLetterError',
    'REASON_STATUS',
  ]) {
    assert.equal(typeof core[name as keyof typeof core] === 'undefined', false, `relayer-api exports ${name}`);
  }
  const hash = core.keccak256(new TextEncoder().encode('abc'));
  assert.equal(core.bytesToHex(hash), '0x4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45');
  const error = new core.RelayError('duplicate_tx', 'x');
  assert.equal(error.status, 429);
  const server = await import('relayer-api/server');
  assert.equal(typeof server.createRelayServer, 'function');
  assert.equal(typeof server.createRelayApi, 'function');
  const sqlite = await import('relayer-api/sqlite');
  assert.equal(typeof sqlite.openSqliteStore, 'function');
  const postgres = await import('relayer-api/postgres');
  assert.equal(typeof postgres.openPostgresStore, 'function');
  const worker = await import('relayer-api/worker');
  for (const name of [
    'createRelayerWorker',
    'createDeliveryWorker',
    'createMailboxDestination',
    'buildMetadata',
    'createOpsServer',
    'DeliveryError',
  ]) {
    assert.equal(typeof worker[name as keyof typeof worker], 'function', `relayer-api/worker exports ${name}`);
  }
  const testing = await import('relayer-api/testing');
  for (const name of ['outboxContract', 'createFakeClock', 'outboxMessage', 'queuedRecord', 'hyperlaneMessage']) {
    assert.equal(typeof testing[name as keyof typeof testing], 'function', `relayer-api/testing exports ${name}`);
  }
  const client = await import('relayer-api/client');
  assert.equal(typeof client.createRelayClient, 'function');
  const apiError = new client.RelayApiError('rate_limited', 'x', {
    status: 429,
    retryAfterSeconds: 3,
    requestId: 'r-1',
  });
  assert.deepEqual(
    [apiError.status, apiError.code, apiError.retryAfterSeconds, apiError.requestId],
    [429, 'rate_limited', 3, 'r-1'],
  );
  assert.ok(apiError instanceof Error);
});

test('docs/design.md#delivery: the worker imports the core, its adapters, Node built-ins and viem only', () => {
  // viem is an optional peer that only the worker and its bin load.
  const files = sources('lib/worker');
  assert.ok(files.length >= 4, 'worker files found');
  for (const file of files) {
    for (const spec of importsOf(file)) {
      assert.ok(
        spec.startsWith('./') ||
          spec.startsWith('../') ||
          spec.startsWith('node:') ||
          spec === 'viem' ||
          spec.startsWith('viem/'),
        `${file} imports ${spec}`,
      );
    }
  }
  for (const file of [
    ...coreSources(),
    ...sources('lib/http'),
    ...sources('lib/sqlite'),
    ...sources('lib/postgres'),
    ...sources('lib/client'),
    'bin/relayer-server.ts',
    ...sources('bin/lib'),
  ]) {
    for (const spec of importsOf(file)) assert.ok(!/(^|\/)worker\/|^viem/.test(spec), `${file} imports ${spec}`);
  }
  // relayer-worker loads lib/worker (and so viem) with a dynamic import, to say what is missing.
  const bin = importsOf('bin/relayer-worker.ts');
  assert.ok(bin.includes('../lib/worker/index.ts'), 'relayer-worker loads lib/worker');
  assert.doesNotMatch(
    readFileSync(join(root, 'bin/relayer-worker.ts'), 'utf8'),
    /^import (?!type)[^;]*from '\.\.\/lib\/worker\//m,
    'only type imports of lib/worker are static',
  );
  assert.deepEqual(pkg.peerDependenciesMeta.viem, { optional: true });
  assert.ok(pkg.peerDependencies.viem && pkg.devDependencies.viem);
});

/** Relative imports of a built file and of everything it imports, with the file they come from. */
function importClosure(entry: string): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const specs = importsOf(file);
    seen.set(file, specs);
    for (const spec of specs) if (spec.startsWith('.')) visit(posix.join(posix.dirname(file), spec));
  };
  visit(entry);
  return seen;
}

test('docs/design.md#client: relayer-api/client is browser-safe: no node:* module, no package, no Node global', () => {
  // This holds for its built module and for all it imports.
  const entry = pkg.exports['./client'].default.replace(/^\.\//, '');
  const closure = importClosure(entry);
  assert.ok(closure.size >= 2, `files loaded: ${[...closure.keys()].join(', ')}`);
  for (const [file, specs] of closure) {
    for (const spec of specs) assert.ok(spec.startsWith('./') || spec.startsWith('../'), `${file} imports ${spec}`);
    const text = readFileSync(join(root, file), 'utf8');
    assert.doesNotMatch(text, /\b(?:process|Buffer|require|__dirname|global)\s*[.(]/, `${file} uses a Node global`);
  }
  // Type declarations too: a browser project type-checks against them without @types/node.
  const types = readFileSync(join(root, pkg.exports['./client'].types), 'utf8');
  assert.doesNotMatch(types, /from ['"]node:|NodeJS\./);
});

test('docs/embedding.md#test-tooling: relayer-api/testing loads only the package and node:*; no other entry point loads it', () => {
  // It is for node:test users (node:test, node:assert); the core and the adapters stay free of it.
  const testingEntry = pkg.exports['./testing'].default.replace(/^\.\//, '');
  const closure = importClosure(testingEntry);
  assert.ok(closure.size >= 5, `files loaded: ${[...closure.keys()].join(', ')}`);
  for (const [file, specs] of closure) {
    for (const spec of specs) {
      assert.ok(spec.startsWith('./') || spec.startsWith('../') || spec.startsWith('node:'), `${file} imports ${spec}`);
    }
  }
  for (const [key, target] of Object.entries(pkg.exports as Record<string, { default: string } | string>)) {
    if (key === './testing' || typeof target === 'string') continue;
    for (const [file, specs] of importClosure(target.default.replace(/^\.\//, ''))) {
      assert.ok(!file.includes('/testing/'), `${key} loads ${file}`);
      for (const spec of specs)
        assert.ok(!spec.startsWith('node:test') && !spec.startsWith('node:assert'), `${file} imports ${spec}`);
    }
  }
});

/** Relative link targets of a Markdown file (inline links and images), anchors and queries dropped. */
function markdownLinks(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?[^)]*\)|<([a-z][a-z0-9+.-]*:[^>\s]+)>/gi)].map(
    (m) => m[1] ?? m[2],
  );
}

function relativeLinks(file: string): string[] {
  return markdownLinks(file)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('#'))
    .map((target) => target.replace(/[?#].*$/, ''));
}

test('docs/design.md#package: a LICENSE file with the full Apache License 2.0 text, as package.json declares', () => {
  assert.equal(pkg.license, 'Apache-2.0');
  const text = readFileSync(join(root, 'LICENSE'), 'utf8');
  // SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt, the text SPDX "Apache-2.0" names.
  assert.equal(
    createHash('sha256').update(text).digest('hex'),
    'cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30',
  );
  assert.match(text, /^\s*Apache License\s+Version 2\.0, January 2004/);
  assert.match(text, /END OF TERMS AND CONDITIONS/);
});

test('docs/design.md#package: the package publishes LICENSE and every document its Markdown links', () => {
  // No link leaves the package.
  const files = new Set(packedFiles());
  assert.ok(files.has('LICENSE'), 'LICENSE is published');
  assert.ok(files.has('README.md'), 'README.md is published');
  const docs = [...files].filter((f) => f.endsWith('.md'));
  assert.ok(docs.length >= 2, `Markdown files published: ${docs.join(', ')}`);
  for (const doc of docs) {
    // The documents are read where the package is, often offline: no link to a web page either.
    const external = markdownLinks(doc).filter((target) => /^[a-z][a-z0-9+.-]*:/i.test(target));
    assert.deepEqual(external, [], `${doc} links outside the package`);
    for (const target of relativeLinks(doc)) {
      const resolved = posix.normalize(posix.join(posix.dirname(doc), target));
      assert.ok(!resolved.startsWith('../') && resolved !== '..', `${doc} links outside the package: ${target}`);
      if (target === '' || target.endsWith('/')) continue;
      assert.ok(files.has(resolved), `${doc} links ${target}, which npm pack does not publish`);
    }
  }
});

test('README.md#map-of-the-package: the README opens with the quick start, a table of contents and a map of the entry points', () => {
  // The map has a row for every entry point of package.json, each row naming code that exists.
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const sections = readme.split('\n## ').slice(1);
  assert.deepEqual(
    sections.map((s) => s.split('\n')[0]),
    ['Quick start', 'Documentation', 'Map of the package'],
    'the quick start first, on one screen; the rest in docs/',
  );
  assert.ok(
    readme.split('\n## Documentation')[0].split('\n').length <= 50,
    'the intro and the quick start fit one screen',
  );
  const first = sections[2];
  const rows = first.split('\n').filter((line) => line.startsWith('| `'));
  const entry = (row: string) => /^\| `([^`]+)`/.exec(row)![1];
  const exportsMap = Object.entries(pkg.exports as Record<string, { default: string } | string>).filter(
    ([key]) => key !== './package.json',
  );
  // Where each entry point's source lives: the built file's path in dist/, as a .ts file.
  const source = (built: string) => built.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts');
  const expected = new Map<string, string>([
    ...Object.entries(pkg.bin as Record<string, string>).map(([name, built]): [string, string] => [
      name,
      source(built),
    ]),
    ...exportsMap.map(([key, target]): [string, string] => [
      key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`,
      source(typeof target === 'string' ? target : target.default),
    ]),
  ]);
  assert.deepEqual(rows.map(entry).sort(), [...expected.keys()].sort(), 'one row per entry point');
  for (const row of rows) {
    const code = row.split('|').at(-2)!;
    const paths = [...code.matchAll(/`((?:lib|bin)\/[^`*]*)`/g)].map((m) => m[1]);
    const file = expected.get(entry(row))!;
    assert.ok(
      paths.some((p) => p === file || p === `${dirname(file)}/`),
      `the row of ${entry(row)} names ${file} or its folder: ${code}`,
    );
    for (const p of paths) assert.ok(existsSync(join(root, p)), `${p}, named by the map, exists`);
  }
});

test('no file in lib/ is over 300 lines (a file that grows past it is split into modules of one concern each)', () => {
  const long: string[] = [];
  for (const entry of readdirSync(join(root, 'lib'), { recursive: true })) {
    const path = `lib/${String(entry)}`;
    if (!path.endsWith('.ts')) continue;
    const lines = readFileSync(join(root, path), 'utf8').split('\n').length - 1;
    if (lines > 300) long.push(`${path}: ${lines} lines`);
  }
  assert.deepEqual(long, []);
});
