/**
 * Database strings as the commands take them (docs/configuration.md#command-line): which are
 * PostgreSQL URLs, and which are URLs of a scheme no store opens (refused rather than taken for a
 * SQLite file name, which would print the password). What is shown of them: lib/redact.ts.
 */
import { redactDatabaseUrl } from '../redact.ts';

export function isPostgresUrl(db: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(db);
}

/** `scheme://…`: a URL, not a file path (a SQLite path never has a scheme; `file:` URIs aside). */
const URL_LIKE = /^([a-z][a-z0-9+.-]*):\/\//i;

/**
 * The scheme of a database string that is a URL no store here opens (`postgress://…`, `mysql://…`),
 * else undefined. Such a string is refused rather than opened as a SQLite file of that name: it
 * is a typo, and as a "path" it would be printed whole, password and all (docs/configuration.md).
 */
export function unsupportedDatabaseScheme(db: string): string | undefined {
  const scheme = URL_LIKE.exec(db)?.[1];
  if (scheme === undefined || isPostgresUrl(db) || scheme.toLowerCase() === 'file') return undefined;
  return scheme;
}

/** The refusal of an unsupported database URL, redacted. */
export function unsupportedDatabaseMessage(db: string, scheme: string): string {
  return `the database ${redactDatabaseUrl(db)} is a URL of scheme "${scheme}:", which no store here opens: a PostgreSQL URL starts with postgres:// or postgresql://, a SQLite database is a file path or :memory:`;
}
