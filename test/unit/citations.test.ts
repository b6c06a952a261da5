/**
 * Every citation resolves (docs/design.md#design-decisions: the repository stands alone). Comments, test
 * titles and messages in lib/, bin/, test/, bench/ and scripts/ cite the documents of this
 * repository, `docs/outbox.md#leases` style (or `docs/outbox.md, Leases`): the file must exist and
 * the section must be one of its headings, anchored the way GitHub anchors them. Citations of
 * documents that are not in the repository (the design draft, a shared folder, issue numbers,
 * numbered sections of the upstream specification) are refused: they cannot be followed by a
 * reader of this repository. README.md, the other top-level documents and docs/ link only to files
 * and sections inside the repository.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { describe, test } from 'node:test';

const root = normalize(join(import.meta.dirname, '..', '..'));
const SOURCE_DIRS = ['lib', 'bin', 'test', 'bench', 'scripts'];
const SOURCE_EXTENSIONS = /\.(?:ts|mts|cts|js|mjs|cjs|sol|json|sh)$/;

/** Builds a string from parts, so that this file's own examples are not citations themselves. */
const j = (...parts: string[]): string => parts.join('');

/**
 * The anchor GitHub gives a heading: its text without markup, lower-case, every character that is
 * not a letter, a mark, a digit, `_`, `-` or a space removed, each space a hyphen; a repeated anchor
 * gets `-1`, `-2`… (GitHub Docs, "Basic writing and formatting syntax", Section links).
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const text of headingTexts(markdown)) {
    const base = slug(text);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  // Explicit anchors: <a name="x"></a>, <a id="x">.
  for (const m of markdown.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]);
  return anchors;
}

/** The plain text of each ATX heading outside fenced code blocks, in order. */
export function headingTexts(markdown: string): string[] {
  const texts: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (opening) {
      if (fence === undefined) fence = opening[1][0];
      else if (opening[1][0] === fence) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (heading) texts.push(plainText(heading[1]));
  }
  return texts;
}

/** Inline markup removed: links become their text, code spans their content, emphasis markers go. */
function plainText(inline: string): string {
  return inline
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`+/g, '')
    .replace(/\*+/g, '')
    .replace(/(^|[^\p{L}\p{N}])_+|_+(?=$|[^\p{L}\p{N}])/gu, '$1')
    .trim();
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Files under `dir` (relative to the root), recursively, without node_modules and build output. */
function walk(dir: string): string[] {
  const out: string[] = [];
  const full = join(root, dir);
  if (!existsSync(full)) return out;
  for (const name of readdirSync(full)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) out.push(...walk(path));
    else out.push(path.split(sep).join('/'));
  }
  return out;
}

/** The documents readers follow: the top-level Markdown files and everything under docs/. */
function documents(): string[] {
  const top = readdirSync(root).filter((name) => name.endsWith('.md'));
  return [...top, ...walk('docs')].sort();
}

const anchorCache = new Map<string, Set<string> | undefined>();
/** The anchors of a repository file (relative path), or undefined when it does not exist. */
function anchorsOfFile(path: string): Set<string> | undefined {
  if (!anchorCache.has(path)) {
    const full = join(root, path);
    anchorCache.set(
      path,
      existsSync(full) && statSync(full).isFile() ? headingAnchors(readFileSync(full, 'utf8')) : undefined,
    );
  }
  return anchorCache.get(path);
}

const headingCache = new Map<string, string[]>();
function headingsOfFile(path: string): string[] {
  if (!headingCache.has(path)) headingCache.set(path, headingTexts(readFileSync(join(root, path), 'utf8')));
  return headingCache.get(path)!;
}

export interface Problem {
  line: number;
  text: string;
}

/** Where `index` of `text` is, 1-based. */
function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** References to documents outside this repository, anywhere: in sources and in documents alike. */
const FOREIGN: Array<[RegExp, string]> = [
  [/\bD[E]SIGN\b/g, 'cites the design draft: cite a section of docs/design.md instead'],
  [/\.\.\/shared\b|\/work\/shared\b/g, 'points outside the repository'],
  [/relayer-http-api\.md/g, 'cites the upstream specification file: cite docs/api.md instead'],
  [/\bissues?\s+#?\d/gi, 'cites an issue number: say what the rule is, and cite docs/ for it'],
  [
    /\bspec(?:ification)?(?:'s)?\s*(?:§|\d)/gi,
    'cites a numbered section of the upstream specification: cite docs/api.md instead',
  ],
  // A numbered section of anything but an RFC or an EIP is a section of a document that is not here.
  [
    /(?<!\b(?:RFC|EIP|ERC)[- ]?\d+,?\s?)§\s?\d/g,
    'cites a numbered section of a document that is not in the repository',
  ],
];

/** Problems of one source or document text: foreign references, and citations of docs that do not resolve. */
export function citationProblems(
  text: string,
  anchorsOf: (path: string) => Set<string> | undefined = anchorsOfFile,
  headingsOf: (path: string) => string[] = headingsOfFile,
): Problem[] {
  const problems: Problem[] = [];
  const report = (index: number, message: string) => problems.push({ line: lineOf(text, index), text: message });
  // One problem per line for foreign references: a draft's name and its section number are one reference.
  const foreign = new Map<number, string[]>();
  for (const [pattern, why] of FOREIGN) {
    for (const m of text.matchAll(pattern)) {
      const line = lineOf(text, m.index);
      const found = foreign.get(line) ?? [];
      if (found.length === 0) foreign.set(line, found);
      found.push(`"${m[0]}" ${why}`);
    }
  }
  for (const [line, found] of foreign) problems.push({ line, text: found.join('; ') });
  // docs/<file>[#anchor], and the top-level documents by name.
  const citation =
    /(?<![\w/.-])((?:docs\/[\w./-]*\w)|(?:README|RELIABILITY|BENCHMARKS|SECURITY)\.md)(?:#([\p{L}\p{N}_-]+))?/gu;
  for (const m of text.matchAll(citation)) {
    const [whole, path, anchor] = m;
    const anchors = anchorsOf(path);
    if (anchors === undefined) {
      report(m.index, `${whole}: no such file in the repository`);
      continue;
    }
    if (anchor !== undefined) {
      // `docs/design.md#storage, docs/replicas.md#how-replicas-agree`: the anchors that follow name sections of the same file.
      const more = /^(?:(?:,\s*|\s+and\s+)#[\p{L}\p{N}_-]+)*/u.exec(text.slice(m.index + whole.length))![0];
      for (const a of [anchor, ...[...more.matchAll(/#([\p{L}\p{N}_-]+)/gu)].map((x) => x[1])]) {
        if (!anchors.has(a.toLowerCase())) report(m.index, `${path}#${a}: ${path} has no such section`);
      }
      continue;
    }
    // `docs/outbox.md, Leases` or `docs/api.md, "POST /relay"`: the words after the comma name a heading.
    if (!path.endsWith('.md')) continue;
    // The words may run onto the next line of a comment: join the lines without their comment marks.
    const after = text
      .slice(m.index + whole.length, m.index + whole.length + 300)
      .split('\n')
      .slice(0, 3)
      .map((line, i) => (i === 0 ? line : line.replace(/^\s*(?:\*|\/\/|#)?\s*/, ' ')))
      .join('');
    const quoted = /^, "([^"]+)"/.exec(after);
    const named = quoted ? undefined : /^, ([A-Z].*)$/.exec(after);
    const headings = headingsOf(path);
    // The heading's words, then nothing more of a word (`"Delivery workers"` names "Delivery workers (the outbox lifecycle)").
    const startsWithHeading = (words: string) =>
      headings.some((h) => h !== '' && words.startsWith(h) && !/^[\p{L}\p{N}]/u.test(words.slice(h.length)));
    if (quoted) {
      const q = quoted[1];
      if (!headings.some((h) => h.startsWith(q) && !/^[\p{L}\p{N}]/u.test(h.slice(q.length))))
        report(m.index, `${whole}, "${q}": ${path} has no such heading`);
    } else if (named) {
      // `docs/outbox.md, Leases: a call without…`, or the first words of a heading
      // (`docs/api.md, GET /relay)` names "GET /relay, GET /ready").
      const phrase = named[1].split(/[);:]|\.(?:\s|$)/)[0].trim();
      const startsAHeading = headings.some(
        (h) => h.startsWith(phrase) && !/^[\p{L}\p{N}]/u.test(h.slice(phrase.length)),
      );
      if (!startsWithHeading(named[1]) && !startsAHeading) {
        report(m.index, `${whole}, ${named[1].slice(0, 40)}…: ${path} has no heading these words start with`);
      }
    }
  }
  return problems;
}

/** Problems of the links of one Markdown document (`path` relative to the root). */
export function linkProblems(
  path: string,
  markdown: string,
  anchorsOf: (path: string) => Set<string> | undefined = anchorsOfFile,
): Problem[] {
  const problems: Problem[] = [];
  // Code spans and fenced blocks hold examples, not links.
  const text = markdown
    .replace(/^ {0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
  const targets = [
    ...[...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => ({ index: m.index, target: m[1] })),
    ...[...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => ({ index: m.index, target: m[1] })),
    ...[...text.matchAll(/<a\s[^>]*href="([^"]+)"/g)].map((m) => ({ index: m.index, target: m[1] })),
  ];
  for (const { index, target } of targets) {
    const report = (message: string) =>
      problems.push({ line: lineOf(markdown, index), text: `(${target}): ${message}` });
    if (/^file:/i.test(target)) {
      report('a file: link leaves the repository');
      continue;
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // a web address (https:, mailto:)
    const [file, anchor] = target.split('#', 2) as [string, string | undefined];
    if (file.startsWith('/')) {
      report('an absolute path leaves the repository');
      continue;
    }
    const resolved =
      file === ''
        ? path
        : normalize(join(dirname(path), decodeURIComponent(file)))
            .split(sep)
            .join('/');
    if (resolved === '..' || resolved.startsWith('../')) {
      report('links outside the repository');
      continue;
    }
    if (!existsSync(join(root, resolved))) {
      report(`${resolved} does not exist`);
      continue;
    }
    if (anchor !== undefined && anchor !== '' && resolved.endsWith('.md')) {
      const anchors = anchorsOf(resolved);
      if (anchors === undefined || !anchors.has(decodeURIComponent(anchor).toLowerCase()))
        report(`${resolved} has no section #${anchor}`);
    }
  }
  return problems;
}

function format(file: string, problems: Problem[]): string[] {
  return problems.map((p) => `${file}:${p.line}: ${p.text}`);
}

describe('anchors and the checker itself', () => {
  test('headings are anchored the way GitHub anchors them (GitHub Docs, Section links examples)', () => {
    const markdown = [
      '# Example headings',
      '## Sample Section',
      "## This'll  be a _Helpful_ Section About the Greek Letter Θ!",
      '## This heading is not unique in the file',
      '## This heading is not unique in the file',
      '```markdown',
      '# not a heading inside a fence',
      '```',
    ].join('\n');
    assert.deepEqual(
      [...headingAnchors(markdown)],
      [
        'example-headings',
        'sample-section',
        'thisll--be-a-helpful-section-about-the-greek-letter-θ',
        'this-heading-is-not-unique-in-the-file',
        'this-heading-is-not-unique-in-the-file-1',
      ],
    );
    // Headings of this repository's own shape: paths, code spans, identifiers with underscores.
    assert.deepEqual(
      [
        ...headingAnchors(
          '## GET /relay, GET /ready\n### `GET /relay/{message_id}`\n## Delivery (example worker)\n## Leases ##',
        ),
      ],
      ['get-relay-get-ready', 'get-relaymessage_id', 'delivery-example-worker', 'leases'],
    );
  });

  test('the checker refuses each kind of broken or foreign citation, and accepts good ones', () => {
    const docs = new Map([[j('docs/', 'design.md'), new Set(['leases', 'check-order'])]]);
    const headings = new Map([[j('docs/', 'design.md'), ['Leases', 'Check order']]]);
    const check = (text: string) =>
      citationProblems(
        text,
        (p) => docs.get(p),
        (p) => headings.get(p) ?? [],
      ).map((p) => p.text);
    const refused = [
      j('see DES', 'IGN.md ', '§', '11'),
      j('DES', 'IGN 3: a test title'),
      j('the ../', 'shared folder'),
      j('relayer-http-', 'api.md'),
      j('as is', 'sue 16.2 asks'),
      j('spec ', '§', '4.5'),
      j('spec ', '4.5.4'),
      j('section ', '§', '7'),
      j('docs/', 'design.md#no-such-section'),
      j('docs/', 'design.md#leases, #no-such-section'),
      j('docs/', 'design.md#leases and #no-such-section'),
      j('docs/', 'nowhere.md'),
      j('docs/', 'design.md, ', 'Nothing like it'),
      j('docs/', 'design.md, "', 'Lease"'),
      j('docs/', 'design.md, ', 'Lease: a heading the words only start'),
    ];
    for (const text of refused) assert.equal(check(text).length, 1, `${text} is refused: ${check(text).join('; ')}`);
    const accepted = [
      j('docs/', 'design.md#leases'),
      j('docs/', 'design.md#leases, #check-order and #leases'),
      j('(docs/', 'design.md#check-order).'),
      j('docs/', 'design.md, ', 'Leases: a call without the lease'),
      j('docs/', 'design.md, ', 'Check\n * order).'),
      j('docs/', 'design.md, "', 'Check order"'),
      j('docs/', 'design.md, "', 'Check"'),
      j('docs/', 'design.md, ', 'Check). More words'),
      j('docs/', 'design.md, and more'),
      j('RFC 9110 ', '§', '11.1: the scheme is case-insensitive'),
      'design decisions, an issue of time, the specification says',
    ];
    for (const text of accepted) assert.deepEqual(check(text), [], `${text} is accepted`);
  });

  test('the link checker refuses links that leave the repository or do not resolve', () => {
    const anchors = (p: string) =>
      p === 'docs/api.md' ? new Set(['errors']) : p === 'README.md' ? new Set(['quick-start']) : undefined;
    const check = (markdown: string) => linkProblems('README.md', markdown, anchors).map((p) => p.text);
    assert.equal(check(j('[d](../', 'shared/x.md)')).length, 1);
    assert.equal(check('[d](/etc/passwd)').length, 1);
    assert.equal(check('[d](file:///etc/passwd)').length, 1);
    assert.equal(check(j('[d](docs/', 'nowhere.md)')).length, 1);
    assert.equal(check(j('[d](docs/', 'api.md#no-such)')).length, 1);
    assert.equal(check('[d](#no-such)').length, 1);
    assert.equal(check('[d]: ../outside.md').length, 1);
    assert.deepEqual(check('[d](docs/api.md#errors) [e](#quick-start) [w](https://hyperlane.xyz) `[x](../no)`'), []);
  });
});

describe('the repository cites only itself', () => {
  test('every source in lib/, bin/, test/, bench/ and scripts/ cites docs and sections that exist, nothing outside', () => {
    const files = SOURCE_DIRS.flatMap(walk).filter((f) => SOURCE_EXTENSIONS.test(f));
    assert.ok(files.length > 100, `${files.length} source files scanned`);
    const problems = files.flatMap((file) => format(file, citationProblems(readFileSync(join(root, file), 'utf8'))));
    assert.deepEqual(problems, []);
  });

  test('README.md, the other top-level documents and docs/ cite nothing outside the repository', () => {
    const files = documents();
    assert.ok(files.includes('README.md') && files.includes('docs/design.md'), files.join(', '));
    const problems = files.flatMap((file) => format(file, citationProblems(readFileSync(join(root, file), 'utf8'))));
    assert.deepEqual(problems, []);
  });

  test('their links stay inside the repository and reach files and sections that exist', () => {
    const files = documents().filter((f) => f.endsWith('.md'));
    const problems = files.flatMap((file) => format(file, linkProblems(file, readFileSync(join(root, file), 'utf8'))));
    assert.deepEqual(problems, []);
  });

  test('docs/ has a section for each decision the code cites, one page a topic', () => {
    const anchors = anchorsOfFile('docs/design.md')!;
    for (const section of [
      'errors',
      'check-order',
      'deduplication',
      'receipt',
      'extraction-and-eligibility',
      'policy',
      'enqueue',
      'merkle-tree-insertions',
      'configuration',
      'storage',
      'sqlite',
      'postgresql',
      'timeouts',
      'delivery',
    ]) {
      assert.ok(anchors.has(section), `docs/design.md#${section}`);
    }
    // One page a topic: the outbox, replicas, delivery and its transactions, hostile recipients, gas,
    // the worker's configuration.
    const pages: Array<[string, string[]]> = [
      ['docs/outbox.md', ['message-lifecycle', 'leases', 'change-feed']],
      ['docs/replicas.md', ['how-replicas-agree', 'capacity-on-postgresql', 'coalesced-statements']],
      ['docs/delivery.md', ['the-delivery-loop', 'retries-pending-proofs-dead-letters', 'ccip-read']],
      ['docs/transactions.md', ['transactions', 'gaps', 'the-transaction-journal', 'one-worker-per-key']],
      ['docs/hostile-recipients.md', ['hostile-recipients', 'slow-gateways']],
      ['docs/gas.md', ['gas-payment-enforcement', 'gas-already-spent', 'gas-limit-and-fee-ceiling']],
      [
        'docs/worker-configuration.md',
        ['relayer-worker', 'stated-gas-policy', 'the-worker-section', 'checkpoint-storage', 'gas-payment-enforcement'],
      ],
    ];
    for (const [page, sections] of pages) {
      const anchors = anchorsOfFile(page)!;
      assert.ok(anchors, `${page} exists`);
      for (const section of sections) assert.ok(anchors.has(section), `${page}#${section}`);
    }
    assert.equal(relative(root, join(root, 'docs', 'design.md')), join('docs', 'design.md'));
  });
});
