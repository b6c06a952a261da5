/**
 * No import cycles in lib/ (CONTRIBUTING.md, Layout): a module's imports, type-only ones
 * included, never lead back to it. A cycle makes load order matter and ties two modules that
 * should depend on each other one way only.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const root = resolve(import.meta.dirname, '..', '..');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** The relative imports and re-exports of a file, resolved to absolute paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = text.matchAll(/^\s*(?:import|export)\b[^'";]*?['"](\.\.?\/[^'"]+)['"]/gm);
  return [...specs].map((m) => resolve(dirname(file), m[1]));
}

/** One cycle of the graph, as a path that starts and ends at the same file, or undefined. */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === 'done') return undefined;
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(file, 'done');
    return undefined;
  };
  for (const file of graph.keys()) {
    const cycle = visit(file);
    if (cycle) return cycle;
  }
  return undefined;
}

test('CONTRIBUTING.md#layout: lib/ has no import cycle', () => {
  const files = sourcesUnder(join(root, 'lib'));
  assert.ok(files.length > 50, `found ${files.length} files under lib/`);
  const known = new Set(files);
  const graph = new Map(files.map((f) => [f, importsOf(f).filter((target) => known.has(target))]));
  const cycle = findCycle(graph);
  assert.equal(cycle, undefined, `import cycle: ${cycle?.map((f) => relative(root, f)).join(' -> ')}`);
});

test('CONTRIBUTING.md#layout: the cycle finder finds a cycle of three and none in a chain', () => {
  const chain = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', []],
  ]);
  assert.equal(findCycle(chain), undefined);
  const ring = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
  ]);
  assert.deepEqual(findCycle(ring), ['a', 'b', 'c', 'a']);
});
