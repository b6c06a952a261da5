/**
 * The package as DESIGN.md §1 promises it: a pure core (no node:* import, no Node globals), adapters
 * that depend on the core and never the reverse, no runtime dependencies, and an exports map whose
 * entry points (built by `npm test` before this runs) export what the README documents.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const root = new URL('..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(dir, e.name));
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2]);
}

test('DESIGN 1: the core in lib/ imports no node:* module and no adapter', () => {
  const core = sources('lib');
  assert.ok(core.length >= 15, 'core files found');
  for (const file of core) {
    for (const spec of importsOf(file)) {
      assert.ok(spec.startsWith('./') && !spec.includes('/http/') && !spec.includes('/sqlite/'), `${file} imports ${spec}`);
      assert.ok(!spec.startsWith('node:'), `${file} imports ${spec}`);
    }
    const text = readFileSync(join(root, file), 'utf8');
    assert.doesNotMatch(text, /\b(?:process|Buffer|require|__dirname)\s*[.(]/, `${file} uses a Node global`);
  }
});

test('DESIGN 1: adapters import only the core, Node built-ins and each other', () => {
  for (const file of [...sources('lib/http'), ...sources('lib/sqlite')]) {
    for (const spec of importsOf(file)) {
      assert.ok(spec.startsWith('node:') || spec.startsWith('./') || spec.startsWith('../'), `${file} imports ${spec}`);
    }
  }
});

test('DESIGN 1: package.json has no runtime dependencies, pins Node 24 and maps the documented entry points', () => {
  assert.equal(pkg.dependencies, undefined);
  assert.equal(pkg.type, 'module');
  assert.equal(pkg.engines.node, '>=22.13');
  assert.match(pkg.devDependencies.node, /^24\./);
  assert.deepEqual(Object.keys(pkg.exports).sort(), ['.', './package.json', './server', './sqlite']);
  assert.equal(pkg.bin['relayer-server'], './dist/bin/relayer-server.js');
  assert.match(process.version, /^v24\./, 'npm scripts run on the pinned Node 24');
});

test('DESIGN 1: the built entry points export the documented API', async () => {
  const core = await import('relayer-api');
  for (const name of ['keccak256', 'createRelayPipeline', 'RelayError', 'parseConfig', 'defaultConfig', 'createMemoryOutbox', 'REASON_STATUS']) {
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
  assert.equal(typeof sqlite.openStore, 'function');
});
