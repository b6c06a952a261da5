/**
 * Structured logs: one JSON object per line, written to an injected sink. Fields are chosen by the
 * caller; nothing here adds stacks or error causes, so secrets and internals stay out unless a
 * caller puts them in (callers must not).
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface LoggerOptions {
  level?: LogLevel;
  write: (line: string) => void;
  now?: () => number;
}

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

export function createLogger(options: LoggerOptions): Logger {
  const threshold = LOG_LEVELS.indexOf(options.level ?? 'info');
  const now = options.now ?? Date.now;
  // Under load many lines share a millisecond: format its timestamp once.
  let lastMs = NaN;
  let lastTime = '';
  const emit = (level: LogLevel) => {
    if (LOG_LEVELS.indexOf(level) < threshold) return () => {};
    return (msg: string, fields?: Record<string, unknown>) => {
      const ms = now();
      if (ms !== lastMs) {
        lastMs = ms;
        lastTime = new Date(ms).toISOString();
      }
      options.write(JSON.stringify({ time: lastTime, level, msg, ...fields }) + '\n');
    };
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** A logger that takes the fields first, as pino's `info(obj, msg)` (docs/embedding.md#options). */
export interface FieldsFirstLogger {
  debug(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

/** The package's Logger (`info(msg, fields)`) writing to a pino-style one: `logger: fromPinoLogger(pino())`. */
export function fromPinoLogger(target: FieldsFirstLogger): Logger {
  return {
    debug: (msg, fields) => target.debug({ ...fields }, msg),
    info: (msg, fields) => target.info({ ...fields }, msg),
    warn: (msg, fields) => target.warn({ ...fields }, msg),
    error: (msg, fields) => target.error({ ...fields }, msg),
  };
}
