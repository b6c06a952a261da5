/**
 * Test titles are a line long (CONTRIBUTING.md#adding-a-check): every test, describe, it and suite
 * title in test/ is at most LIMIT characters, one line that states the rule; the details go in the
 * test's body and its assertion messages. A template title is measured by its literal parts (what
 * its substitutions give is not known without running it).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, normalize, relative, sep } from 'node:path';
import { test } from 'node:test';

const root = normalize(join(import.meta.dirname, '..', '..'));
const LIMIT = 120;

/** The files whose titles are checked: test files and the contract suites of test/helpers/. */
function testFiles(dir = join(root, 'test')): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'vectors') out.push(...testFiles(full));
    } else if (/\.test\.ts$/.test(entry.name) || (dir.endsWith(`${sep}helpers`) && /-contract\.ts$/.test(entry.name))) {
      out.push(full);
    }
  }
  return out.sort();
}

export interface Title {
  line: number;
  /** The title's literal text; a template's substitutions are left out. */
  text: string;
  template: boolean;
}

/**
 * The titles of the test/describe/it/suite calls in `source` (also `t.test`, `describe.skip`…)
 * whose first argument is a string or template literal. A call on a regular expression
 * (`/x/.test('y')`) is not a title.
 */
export function titlesOf(source: string): Title[] {
  const titles: Title[] = [];
  const call = /(?<![\w$.])(?:[A-Za-z_$][\w$]*\.)?(?:describe|test|it|suite)(?:\.(?:only|skip|todo))?\(\s*(['"`])/g;
  for (let m = call.exec(source); m !== null; m = call.exec(source)) {
    const quote = m[1];
    let i = m.index + m[0].length;
    let text = '';
    while (i < source.length && source[i] !== quote) {
      if (source[i] === '\\') {
        text += source[i + 1];
        i += 2;
      } else if (quote === '`' && source.startsWith('${', i)) {
        let depth = 0;
        for (; i < source.length; i++) {
          if (source[i] === '{') depth++;
          else if (source[i] === '}' && --depth === 0) break;
        }
        i++;
      } else {
        text += source[i++];
      }
    }
    const line = source.slice(0, m.index).split('\n').length;
    titles.push({ line, text, template: quote === '`' });
  }
  return titles;
}

test('titlesOf finds literal and template titles and skips regular expression calls', () => {
  const source = [
    "test('a plain title', () => {});",
    // `@` stands for `$`, so that this file holds no template placeholder in a string.
    '  describe(`a @{kind} title of @{n > 1 ? `@{n} items` : "one"} items`, () => {'.replaceAll('@', '$'),
    "    t.test('it\\'s nested', async () => {});",
    '    it.skip("double", () => {}); if (/x/.test(\'not a title\')) return;',
  ].join('\n');
  assert.deepEqual(titlesOf(source), [
    { line: 1, text: 'a plain title', template: false },
    { line: 2, text: 'a  title of  items', template: true },
    { line: 3, text: "it's nested", template: false },
    { line: 4, text: 'double', template: false },
  ]);
});

test(`every test and describe title in test/ is at most ${LIMIT} characters`, () => {
  const files = testFiles();
  assert.ok(files.length > 50, `found only ${files.length} test files`);
  const long: string[] = [];
  let count = 0;
  for (const file of files) {
    for (const title of titlesOf(readFileSync(file, 'utf8'))) {
      count++;
      if (title.text.length > LIMIT)
        long.push(
          `${relative(root, file)}:${title.line}: ${title.text.length} characters${title.template ? ' (literal parts of a template)' : ''}: ${title.text}`,
        );
    }
  }
  assert.ok(count > 500, `found only ${count} titles`);
  assert.deepEqual(
    long,
    [],
    `titles longer than ${LIMIT} characters: keep one line that states the rule, move the details to the test's body`,
  );
});
