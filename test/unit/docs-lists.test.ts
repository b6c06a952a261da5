/**
 * Lists in docs/ that must name what the code has (CONTRIBUTING.md#adding-a-check); each fails
 * naming the file and the entry that is missing:
 * - the gas policy types the config parser accepts (lib/gas/policy.ts GAS_POLICY_TYPES) are those
 *   of docs/config.schema.json and docs/openapi.json (CONTRIBUTING.md#adding-a-gas-policy-type);
 * - docs/embedding.md#the-outbox-contract, what an embedder reads to know what the suite checks,
 *   names every section `skip` takes, has one line per test of each section (`- \`section\`: what
 *   the test checks`), and its table of roles names every method of the outbox
 *   (CONTRIBUTING.md#adding-a-method-to-the-outbox).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { GAS_POLICY_TYPES } from '../../lib/gas/policy.ts';
import { createMemoryOutbox } from '../../lib/outbox/index.ts';
import { createFakeClock } from '../../lib/testing/clock.ts';
import { OUTBOX_CONTRACT_SECTIONS } from '../../lib/testing/outbox-contract/index.ts';

const root = join(import.meta.dirname, '..', '..');

/** Where `listed` (a list of types, null ignored) differs from the parser's gas policy types. */
function typesDiffer(listed: readonly unknown[], where: string): string[] {
  const have = [...new Set(listed.filter((t) => t !== null))].sort();
  const types = [...GAS_POLICY_TYPES].sort();
  return JSON.stringify(have) === JSON.stringify(types)
    ? []
    : [`${where} lists ${JSON.stringify(have)}, the parser accepts ${JSON.stringify(types)} (lib/gas/policy.ts)`];
}

test("CONTRIBUTING.md#adding-a-gas-policy-type: the config schema and openapi.json list the parser's gas policy types", () => {
  const read = (file: string) => JSON.parse(readFileSync(join(root, 'docs', file), 'utf8'));
  assert.deepEqual(
    [
      ...typesDiffer(
        read('config.schema.json').$defs.gasPolicy.properties.type.enum,
        'docs/config.schema.json gasPolicy.type',
      ),
      ...typesDiffer(
        read('openapi.json').components.schemas.GasPayment.properties.policy.enum,
        'docs/openapi.json GasPayment.policy',
      ),
    ],
    [],
  );
  assert.deepEqual(typesDiffer([...GAS_POLICY_TYPES, null], 'x'), []);
  // The checker itself: a list without the first type is named, with the type it lacks.
  const [problem, ...more] = typesDiffer(GAS_POLICY_TYPES.slice(1), 'x');
  assert.deepEqual(more, []);
  assert.match(problem, /^x lists \[.*\], the parser accepts \[.*\] \(lib\/gas\/policy\.ts\)$/);
  assert.ok(problem.split('accepts')[1].includes(`"${GAS_POLICY_TYPES[0]}"`), problem);
});

/** What the page lacks: `doc` is docs/embedding.md, `sources` each section's file by section name. */
function unlisted(doc: string, sources: Record<string, string>): string[] {
  const start = doc.indexOf('\n## The outbox contract\n');
  if (start < 0) return ['docs/embedding.md: no "## The outbox contract" section'];
  const end = doc.indexOf('\n## ', start + 1);
  const contract = doc.slice(start, end < 0 ? undefined : end);
  const skip = /`skip` leaves sections out by name \(([^)]*)\)/.exec(doc)?.[1] ?? '';
  const problems: string[] = [];
  for (const [section, source] of Object.entries(sources)) {
    if (!skip.includes(`\`${section}\``)) {
      problems.push(`docs/embedding.md#checking-your-own-outbox: \`${section}\` is not among the names \`skip\` takes`);
    }
    const tests = source.match(/^\s*test\(/gm)?.length ?? 0;
    const lines = contract.match(new RegExp(`^- \`${section}\``, 'gm'))?.length ?? 0;
    if (tests !== lines) {
      problems.push(
        `docs/embedding.md#the-outbox-contract: ${lines} lines for \`${section}\`, ` +
          `lib/testing/outbox-contract/${section}.ts has ${tests} tests (one line per test)`,
      );
    }
  }
  return problems;
}

test('CONTRIBUTING.md#adding-a-method-to-the-outbox: docs/embedding.md lists every contract section and test', () => {
  const doc = readFileSync(join(root, 'docs', 'embedding.md'), 'utf8');
  const sources = Object.fromEntries(
    Object.keys(OUTBOX_CONTRACT_SECTIONS).map((section) => [
      section,
      readFileSync(join(root, 'lib', 'testing', 'outbox-contract', `${section}.ts`), 'utf8'),
    ]),
  );
  assert.deepEqual(unlisted(doc, sources), []);
});

/** The outbox methods the table of roles (the rows after `| role |`) does not name. */
function roleless(doc: string, methods: readonly string[]): string[] {
  const table = /(?:^|\n)\| role \|[^\n]*\n((?:\|[^\n]*\n)*)/.exec(doc)?.[1] ?? '';
  return methods
    .filter((m) => !table.includes(`\`${m}\``))
    .map((m) => `docs/embedding.md#the-outbox-contract: \`${m}\` is in no row of the table of roles`);
}

test('CONTRIBUTING.md#adding-a-method-to-the-outbox: the table of roles in docs/embedding.md names every outbox method', () => {
  const doc = readFileSync(join(root, 'docs', 'embedding.md'), 'utf8');
  const methods = Object.keys(createMemoryOutbox({ clock: createFakeClock(0) }));
  assert.ok(methods.length >= 25, `${methods.length} methods`);
  assert.deepEqual(roleless(doc, methods), []);
});

test('CONTRIBUTING.md#adding-a-check: the listing check names a section left out and a test without its line', () => {
  const doc = [
    '`skip` leaves sections out by name (`enqueue`), for an outbox that does not serve a role.',
    '',
    '## The outbox contract',
    '',
    '- `enqueue`: enqueue stores the batch',
    '',
    '## Next',
    '- `gas`: a line outside the section does not count',
  ].join('\n');
  const one = "  test('docs/design.md#enqueue: enqueue stores the batch', async () => {});\n";
  assert.deepEqual(unlisted(doc, { enqueue: one }), []);
  assert.deepEqual(unlisted(doc, { enqueue: one + one, gas: one }), [
    'docs/embedding.md#the-outbox-contract: 1 lines for `enqueue`, lib/testing/outbox-contract/enqueue.ts has 2 tests (one line per test)',
    'docs/embedding.md#checking-your-own-outbox: `gas` is not among the names `skip` takes',
    'docs/embedding.md#the-outbox-contract: 0 lines for `gas`, lib/testing/outbox-contract/gas.ts has 1 tests (one line per test)',
  ]);
  const table =
    '| role | who | methods |\n|---|---|---|\n| queue | POST /relay | `enqueue` |\n\n`depth` after the table\n';
  assert.deepEqual(roleless(table, ['enqueue']), []);
  assert.deepEqual(roleless(table, ['enqueue', 'depth']), [
    'docs/embedding.md#the-outbox-contract: `depth` is in no row of the table of roles',
  ]);
});
