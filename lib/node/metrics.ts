/**
 * A small Prometheus registry writing the text exposition format (version 0.0.4) by hand: counters
 * and histograms with labels, and gauges read at scrape time. No dependency. The relay API's own
 * metric families are lib/http/relay-metrics.ts's; the worker's ops server uses this registry too.
 */
import { InvalidArgumentError } from '../errors/classes.ts';

export type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  render(): string[];
}

export interface Counter {
  inc(labels?: Labels, by?: number): void;
}

export interface Histogram {
  observe(labels: Labels, seconds: number): void;
}

export interface MetricsRegistry {
  counter(name: string, help: string): Counter;
  histogram(name: string, help: string, buckets?: readonly number[]): Histogram;
  /** A gauge whose value is read when /metrics is scraped. */
  gauge(name: string, help: string, read: () => number | Array<[Labels, number]>): void;
  /** The exposition text. */
  render(): string;
}

export const DEFAULT_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const parts: string[] = [];
  for (const key of Object.keys(labels).sort()) {
    if (!LABEL.test(key) || key.startsWith('__')) throw new InvalidArgumentError(`invalid label name ${key}`);
    parts.push(`${key}="${escapeLabelValue(labels[key])}"`);
  }
  if (extra) parts.push(`${extra[0]}="${extra[1]}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/**
 * The series of a family by labels. The canonical key (sorted, validated, escaped label text) is
 * built once per distinct labels object shape and values; later lookups use a cheap key made of
 * the names and values in the caller's order, so counting a request costs a string join and one
 * map lookup instead of a sort, regex checks and escaping (bench/http.ts: about 1 us a request).
 */
function seriesTable<T extends { labels: Labels }>(
  create: (labels: Labels) => T,
): { get(labels: Labels): T; values(): IterableIterator<T> } {
  const canonical = new Map<string, T>();
  const fast = new Map<string, T>();
  return {
    get(labels) {
      let key = '';
      // Length-prefixed, so no name or value, whatever it contains, can make two label sets meet.
      for (const name in labels) {
        const value = labels[name];
        key += `${name.length}:${name}${value.length}:${value}`;
      }
      let entry = fast.get(key);
      if (entry === undefined) {
        const text = labelText(labels);
        entry = canonical.get(text);
        if (entry === undefined) {
          entry = create({ ...labels });
          canonical.set(text, entry);
        }
        // Bounded like the canonical map: only distinct label sets (and their key orders) land here.
        fast.set(key, entry);
      }
      return entry;
    },
    values: () => canonical.values(),
  };
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

export function createMetricsRegistry(): MetricsRegistry {
  const families = new Map<string, Family>();

  function register(family: Family): void {
    if (!NAME.test(family.name)) throw new InvalidArgumentError(`invalid metric name ${family.name}`);
    if (families.has(family.name)) throw new InvalidArgumentError(`metric ${family.name} registered twice`);
    families.set(family.name, family);
  }

  return {
    counter(name, help) {
      const series = seriesTable((labels) => ({ labels, value: 0 }));
      register({
        name,
        help,
        type: 'counter',
        render: () => [...series.values()].map((s) => `${name}${labelText(s.labels)} ${formatNumber(s.value)}`),
      });
      return {
        inc(labels = {}, by = 1) {
          // A counter that goes down breaks rate() and increase() for every scraper.
          if (!(by >= 0 && by !== Infinity)) throw new InvalidArgumentError(`counter ${name}: invalid increment ${by}`);
          series.get(labels).value += by;
        },
      };
    },

    histogram(name, help, buckets = DEFAULT_BUCKETS) {
      const bounds = [...buckets].sort((a, b) => a - b);
      const series = seriesTable((labels) => ({
        labels,
        counts: new Array<number>(bounds.length).fill(0),
        sum: 0,
        count: 0,
      }));
      register({
        name,
        help,
        type: 'histogram',
        render() {
          const lines: string[] = [];
          for (const s of series.values()) {
            let cumulative = 0;
            bounds.forEach((bound, i) => {
              cumulative += s.counts[i];
              lines.push(`${name}_bucket${labelText(s.labels, ['le', formatNumber(bound)])} ${cumulative}`);
            });
            lines.push(`${name}_bucket${labelText(s.labels, ['le', '+Inf'])} ${s.count}`);
            lines.push(`${name}_sum${labelText(s.labels)} ${formatNumber(s.sum)}`);
            lines.push(`${name}_count${labelText(s.labels)} ${s.count}`);
          }
          return lines;
        },
      });
      return {
        observe(labels, seconds) {
          if (Object.hasOwn(labels, 'le'))
            throw new InvalidArgumentError(`histogram ${name}: "le" is the bucket label`);
          const entry = series.get(labels);
          const i = bounds.findIndex((bound) => seconds <= bound);
          if (i >= 0) entry.counts[i]++;
          entry.sum += seconds;
          entry.count++;
        },
      };
    },

    gauge(name, help, read) {
      register({
        name,
        help,
        type: 'gauge',
        render() {
          const value = read();
          if (typeof value === 'number') return [`${name} ${formatNumber(value)}`];
          return value.map(([labels, v]) => `${name}${labelText(labels)} ${formatNumber(v)}`);
        },
      });
    },

    render() {
      const out: string[] = [];
      for (const family of families.values()) {
        out.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
        out.push(`# TYPE ${family.name} ${family.type}`);
        out.push(...family.render());
      }
      return out.join('\n') + '\n';
    },
  };
}
