/**
 * An independent reader of the Prometheus text exposition format 0.0.4
 * (prometheus.io/docs/instrumenting/exposition_formats), written from the format's rules rather
 * than from lib/node/metrics.ts: it parses every line and lists each rule the text breaks.
 */

export interface Sample {
  /** The sample's own name (with _bucket/_sum/_count for histograms). */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help?: string;
  type?: string;
  samples: Sample[];
}

export interface Exposition {
  families: Map<string, Family>;
  /** Every rule broken, in line order; empty for a valid text. */
  violations: string[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'];

/** Go's ParseFloat as Prometheus uses it: decimal/exponent forms, NaN and ±Inf. */
function parseValue(text: string): number | undefined {
  if (text === 'NaN') return NaN;
  if (/^[+-]?Inf$/.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return undefined;
  return Number(text);
}

/** Reads `{a="x",b="y"}` from `text` at `i`; label values may hold only the escapes \\ \" \n. */
function parseLabels(text: string, problems: string[]): { labels: Record<string, string>; rest: string } | undefined {
  const labels: Record<string, string> = {};
  let i = 1;
  for (;;) {
    if (text[i] === '}') return { labels, rest: text.slice(i + 1) };
    const eq = text.indexOf('=', i);
    if (eq < 0) return undefined;
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) problems.push(`invalid label name ${JSON.stringify(name)}`);
    if (name.startsWith('__')) problems.push(`reserved label name ${name}`);
    if (Object.hasOwn(labels, name)) problems.push(`label ${name} repeated`);
    if (text[eq + 1] !== '"') return undefined;
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        const next = text[++j];
        if (next === '\\') value += '\\';
        else if (next === '"') value += '"';
        else if (next === 'n') value += '\n';
        else problems.push(`invalid escape \\${next} in label ${name}`);
      } else {
        value += text[j];
      }
    }
    if (j >= text.length) return undefined;
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') return undefined;
  }
}

/** The family a sample belongs to: histogram samples carry a suffix, other samples none. */
function familyOf(name: string, families: Map<string, Family>): string {
  for (const suffix of HISTOGRAM_SUFFIXES) {
    const base = name.slice(0, -suffix.length);
    if (name.endsWith(suffix) && families.get(base)?.type === 'histogram') return base;
  }
  return name;
}

function seriesKey(name: string, labels: Record<string, string>): string {
  return name + JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
}

export function parseExposition(text: string): Exposition {
  const families = new Map<string, Family>();
  const violations: string[] = [];
  const series = new Set<string>();
  const closed = new Set<string>();
  let current: string | undefined;
  const enter = (name: string, line: number) => {
    if (current === name) return;
    if (closed.has(name)) violations.push(`line ${line}: lines of ${name} are not one group`);
    if (current !== undefined) closed.add(current);
    current = name;
  };
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, samples: [] }));
    return f;
  };

  if (!text.endsWith('\n')) violations.push('the text does not end with a line feed');
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  // biome-ignore lint/suspicious/useIterableCallbackReturn: the callback's returns only end a line's checks early
  lines.forEach((line, index) => {
    const n = index + 1;
    if (line.trim() === '') return;
    const meta = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
    if (meta) {
      const [, kind, name, rest = ''] = meta;
      if (!METRIC_NAME.test(name)) violations.push(`line ${n}: invalid metric name ${name}`);
      enter(name, n);
      const f = family(name);
      if (f.samples.length > 0) violations.push(`line ${n}: ${kind} of ${name} after its samples`);
      if (kind === 'HELP') {
        if (f.help !== undefined) violations.push(`line ${n}: second HELP for ${name}`);
        if (/\\[^\\n]/.test(rest.replace(/\\\\/g, ''))) violations.push(`line ${n}: invalid escape in HELP of ${name}`);
        f.help = rest;
      } else {
        if (f.type !== undefined) violations.push(`line ${n}: second TYPE for ${name}`);
        if (!TYPES.has(rest)) violations.push(`line ${n}: unknown type ${rest}`);
        f.type = rest;
      }
      return;
    }
    if (line.startsWith('#')) return;
    const nameMatch = /^[^\s{]+/.exec(line);
    if (!nameMatch) return void violations.push(`line ${n}: no metric name`);
    const name = nameMatch[0];
    if (!METRIC_NAME.test(name)) violations.push(`line ${n}: invalid metric name ${name}`);
    let rest = line.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) {
      const problems: string[] = [];
      const parsed = parseLabels(rest, problems);
      for (const p of problems) violations.push(`line ${n}: ${p}`);
      if (!parsed) return void violations.push(`line ${n}: malformed labels`);
      ({ labels, rest } = parsed);
    }
    const parts = rest.trim().split(/\s+/);
    if (!/^\s/.test(rest) || parts.length < 1 || parts.length > 2)
      return void violations.push(`line ${n}: malformed sample`);
    const value = parseValue(parts[0]);
    if (value === undefined) return void violations.push(`line ${n}: invalid value ${parts[0]}`);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1]))
      violations.push(`line ${n}: invalid timestamp ${parts[1]}`);
    const base = familyOf(name, families);
    enter(base, n);
    const key = seriesKey(name, labels);
    if (series.has(key)) violations.push(`line ${n}: duplicate series ${name}${JSON.stringify(labels)}`);
    series.add(key);
    family(base).samples.push({ name, labels, value });
  });

  for (const f of families.values()) violations.push(...checkFamily(f));
  return { families, violations };
}

function checkFamily(f: Family): string[] {
  const out: string[] = [];
  if (f.type === 'counter') {
    for (const s of f.samples)
      if (!(s.value >= 0)) out.push(`${f.name}: counter value ${s.value} is not a non-negative number`);
  }
  if (f.type !== 'histogram') {
    for (const s of f.samples)
      if (s.name !== f.name) out.push(`${s.name}: sample name differs from its family ${f.name}`);
    return out;
  }
  // Histogram: per label set (without le), buckets ascending by le, cumulative, +Inf = _count, _sum present.
  const groups = new Map<string, { buckets: Array<[number, number]>; sum?: number; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = seriesKey('', rest);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { buckets: [] }));
    if (s.name === `${f.name}_bucket`) {
      const bound = le === undefined ? undefined : parseValue(le);
      if (bound === undefined) out.push(`${f.name}: bucket without a valid le`);
      else g.buckets.push([bound, s.value]);
    } else if (s.name === `${f.name}_sum`) {
      g.sum = s.value;
      if (le !== undefined) out.push(`${f.name}_sum has an le label`);
    } else if (s.name === `${f.name}_count`) {
      g.count = s.value;
      if (le !== undefined) out.push(`${f.name}_count has an le label`);
    } else {
      out.push(`${s.name}: not a sample of histogram ${f.name}`);
    }
  }
  for (const [key, g] of groups) {
    const where = `${f.name}${key}`;
    for (let i = 1; i < g.buckets.length; i++) {
      if (!(g.buckets[i][0] > g.buckets[i - 1][0])) out.push(`${where}: le not ascending`);
      if (g.buckets[i][1] < g.buckets[i - 1][1]) out.push(`${where}: buckets not cumulative`);
    }
    const inf = g.buckets.find(([bound]) => bound === Infinity);
    if (!inf) out.push(`${where}: no le="+Inf" bucket`);
    if (g.count === undefined) out.push(`${where}: no _count`);
    if (g.sum === undefined) out.push(`${where}: no _sum`);
    if (inf && g.count !== undefined && inf[1] !== g.count)
      out.push(`${where}: +Inf bucket ${inf[1]} differs from _count ${g.count}`);
  }
  return out;
}

/** The value of the one sample named `name` whose labels include `labels`, or undefined. */
export function sampleValue(
  exposition: Exposition,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const matches: number[] = [];
  for (const f of exposition.families.values()) {
    for (const s of f.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) matches.push(s.value);
    }
  }
  if (matches.length > 1) throw new Error(`${matches.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return matches[0];
}
