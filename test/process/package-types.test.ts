/**
 * The package's type surface as an embedder meets it (docs/embedding.md#typescript): every type an
 * exported signature uses and every error class an entry point throws can be imported, `code`
 * narrows after `instanceof`, and a consumer file compiles against the packed tarball's `.d.ts`
 * with the settings the docs state. Reads dist/ (built by `npm test` before this runs).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { before, test } from 'node:test';
import { packedTarball } from '../helpers/harness/packed.ts';
import ts from 'typescript';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const root = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const entries = Object.entries(pkg.exports as Record<string, { types: string; default: string } | string>).filter(
  (e): e is [string, { types: string; default: string }] => typeof e[1] === 'object',
);

/** The entry point a built file's exports belong to: the core's files and folders (every folder of lib/ but an entry point's) are `relayer-api`. */
function home(dist: string, file: string): string {
  const rel = posix.relative(join(dist, 'lib'), file);
  const folder = rel.includes('/') ? rel.split('/')[0] : '';
  // The folders of an entry point of their own; every other folder of lib/ is the core's.
  const byFolder: Record<string, string> = {
    http: './server',
    node: './server',
    sqlite: './sqlite',
    postgres: './postgres',
    client: './client',
    worker: './worker',
    testing: './testing',
  };
  return byFolder[folder] ?? '.';
}

const work = tempDir('relayer-consumer-');

/** The run's one tarball (test/helpers/harness/packed.ts), shared with test/process/install.test.ts. */
let tarball: string;
before(async () => {
  tarball = await packedTarball();
});

/** A project outside the repository with the packed tarball installed as node_modules/relayer-api. */
function consumerProject(): string {
  const installed = join(work, 'node_modules', 'relayer-api');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  // What a consumer installs beside it: @types/node (relayer-api/server) and viem (relayer-api/worker).
  mkdirSync(join(work, 'node_modules', '@types'), { recursive: true });
  symlinkSync(join(root, 'node_modules', '@types', 'node'), join(work, 'node_modules', '@types', 'node'));
  symlinkSync(join(root, 'node_modules', 'viem'), join(work, 'node_modules', 'viem'));
  writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
  writeFileSync(
    join(work, 'consumer.ts'),
    readFileSync(join(root, 'test', 'helpers', 'fixtures', 'consumer.ts'), 'utf8'),
  );
  return work;
}

let built: { program: ts.Program; dir: string; installed: string } | undefined;

/** One program for the tests below: the consumer file and every entry point's .d.ts, from the tarball. */
function consumerProgram(): { program: ts.Program; dir: string; installed: string } {
  if (built) return built;
  const dir = consumerProject();
  const installed = join(dir, 'node_modules', 'relayer-api');
  // The settings docs/embedding.md#typescript states.
  const program = ts.createProgram([join(dir, 'consumer.ts'), ...entries.map(([, t]) => join(installed, t.types))], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    types: ['node'],
  });
  built = { program, dir, installed };
  return built;
}

/**
 * The package's named types and values that an entry point's exports reach (following each into its
 * own declaration) but that the entry point they belong to does not export.
 */
function unexportedReachable(): string[] {
  const { program, installed } = consumerProgram();
  const checker = program.getTypeChecker();
  const resolve = (s: ts.Symbol) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const exportsOf = new Map<string, Set<ts.Symbol>>();
  for (const [key, target] of entries) {
    const source = program.getSourceFile(join(installed, target.types));
    assert.ok(source, `${target.types} is in the tarball`);
    exportsOf.set(key, new Set(checker.getExportsOfModule(checker.getSymbolAtLocation(source)!).map(resolve)));
  }
  const dist = join(installed, 'dist');
  const problems = new Set<string>();
  for (const [key] of entries) {
    const seen = new Set<ts.Symbol>();
    const queue = [...exportsOf.get(key)!];
    while (queue.length > 0) {
      const symbol = queue.pop()!;
      if (seen.has(symbol)) continue;
      seen.add(symbol);
      for (const declaration of symbol.declarations ?? []) {
        const visit = (node: ts.Node): void => {
          let name: ts.Node | undefined;
          if (ts.isTypeReferenceNode(node)) name = node.typeName;
          else if (ts.isTypeQueryNode(node)) name = node.exprName;
          else if (ts.isExpressionWithTypeArguments(node)) name = node.expression;
          const found = name && checker.getSymbolAtLocation(name);
          const used = found && resolve(found);
          const file = used?.declarations?.[0]?.getSourceFile().fileName;
          if (used && file?.startsWith(`${dist}/`) && !(used.flags & ts.SymbolFlags.TypeParameter)) {
            const owner = home(dist, file);
            if (!exportsOf.get(owner)?.has(used)) {
              problems.add(
                `${used.name} (${posix.relative(dist, file)}), used by ${key} ${symbol.name}: not exported by ${owner}`,
              );
            }
            queue.push(used);
          }
          ts.forEachChild(node, visit);
        };
        visit(declaration);
      }
    }
  }
  return [...problems].sort();
}

test('docs/embedding.md#typescript: every type an exported signature uses is exported by the entry point it belongs to', () => {
  // The core's types (lib/*.ts, lib/outbox/) from relayer-api, an adapter's from its own entry point.
  assert.deepEqual(unexportedReachable(), []);
});

test('docs/embedding.md#typescript: every entry point exports the whole error family, the same classes', async () => {
  // BaseError and every class extending it (lib/errors/classes.ts), so a catch tests instanceof with the
  // entry point it calls.
  const core = await import('relayer-api');
  const family = Object.entries(core)
    .filter(
      ([, value]) =>
        value === core.BaseError || (typeof value === 'function' && value.prototype instanceof core.BaseError),
    )
    .map(([name]) => name)
    .sort();
  assert.ok(family.includes('InvalidArgumentError') && family.includes('OutOfRangeError'), family.join(', '));
  assert.equal(family.length, 14, family.join(', '));
  const missing: string[] = [];
  for (const [key] of entries) {
    const module = await import(key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`);
    for (const name of family) if (module[name] !== core[name as keyof typeof core]) missing.push(`${key} ${name}`);
  }
  assert.deepEqual(missing, []);
});

test('docs/embedding.md#typescript: a consumer file compiles against the packed tarball, code narrowing after instanceof', () => {
  // The package's own .d.ts files are checked too (skipLibCheck off): they must compile as shipped.
  const { program, dir, installed } = consumerProgram();
  const files = program
    .getSourceFiles()
    .filter((f) => f.fileName === join(dir, 'consumer.ts') || f.fileName.startsWith(`${installed}/`));
  assert.ok(files.length > 50, `${files.length} files checked`);
  const diagnostics = files.flatMap((file) =>
    ts.getPreEmitDiagnostics(program, file).map((d) => {
      const line = d.file ? d.file.getLineAndCharacterOfPosition(d.start!).line + 1 : 0;
      return `${posix.relative(dir, file.fileName)}:${line} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
    }),
  );
  assert.deepEqual(diagnostics, []);
});
