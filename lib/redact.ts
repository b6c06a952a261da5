/**
 * Every redaction of the package in one place (docs/operations.md#logs, SECURITY.md): what may be
 * shown of a URL, of a text that quotes URLs, and of a database string. RPC endpoints, CCIP-read
 * gateways and database URLs carry API keys and passwords in their userinfo, paths and query
 * strings; logs, error answers and `last_error` never show those parts. Web APIs only (URL).
 */

/** A URL inside a text: a scheme, `://`, then everything up to a space, a quote or a bracket. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>()]+/gi;
/** `scheme://…` at the start: a URL, not a file path (a SQLite path never has a scheme). */
const URL_LIKE = /^([a-z][a-z0-9+.-]*):\/\//i;
/** Query parameters whose value is a secret: `password`, `sslpassword`, `sslkey`, a token… */
const SECRET_PARAM = /pass|secret|token|key/i;

/** scheme://host[:port]: drops userinfo, path, query and fragment, where API keys live. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '<invalid url>';
  }
}

/** Every URL in `text` reduced to its origin: errors and causes often quote the URL they called. */
export function redactUrls(text: string): string {
  return text.replace(URL_IN_TEXT, redactUrl);
}

/** Every URL in `text` replaced by `<url>`: for texts shown to anyone (a message's last_error). */
export function hideUrls(text: string): string {
  return text.replace(URL_IN_TEXT, '<url>');
}

/** Longest text of an error kept in last_error (the outbox keeps 1000 characters in all). */
const MAX_DETAIL = 600;

/**
 * `text` without control characters (C0, DEL, C1) nor invisible format characters (bidi
 * overrides, zero-width), which could rewrite how last_error reads on a terminal or a page:
 * line and paragraph breaks and tabs become a space, the rest are dropped.
 */
export function stripControls(text: string): string {
  return text.replace(/[\t\n\v\f\r\u0085\u2028\u2029]/g, ' ').replace(/[\p{Cc}\p{Cf}]/gu, '');
}

/** A text we keep, URLs (with their credentials, paths, keys in query strings) cut out (hideUrls), at most MAX_DETAIL long. */
export function scrub(text: string): string {
  return stripControls(hideUrls(text)).slice(0, MAX_DETAIL);
}

/**
 * A URL as logged when its path matters (a CCIP-read gateway's `{sender}/{data}` template): scheme,
 * host and path, without credentials, query string or fragment.
 */
export function urlForLog(url: string): string {
  const match = url.match(/^([a-z][a-z0-9+.-]*:\/\/)(?:[^@/?#]*@)?([^/?#]*)([^?#]*)/i);
  return match ? `${match[1]}${match[2]}${match[3]}` : '(unparsable URL)';
}

/**
 * `text` with every piece of the endpoint `url` that may hold a key (userinfo, path segments,
 * query values) replaced by "…": a node may quote the request back in its error message, with
 * the key in the path. Pieces shorter than 3 characters ("v2") carry no key and stay.
 */
export function redactEndpoint(text: string, url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return text;
  }
  const pieces = new Set<string>();
  for (const piece of [
    u.username,
    u.password,
    u.pathname,
    u.search.slice(1),
    ...u.pathname.split('/'),
    ...u.searchParams.values(),
  ]) {
    for (const form of decodedForms(piece)) pieces.add(form);
  }
  return replaceAll(text, pieces, () => '…', 3);
}

/**
 * What may be printed of a database string: a URL (any scheme, a mistyped one included) with its
 * password and every secret query parameter (`?password=`, `sslpassword=`…) replaced by `***`,
 * or only its scheme if it does not parse; a file path or `:memory:` as it is.
 */
export function redactDatabaseUrl(db: string): string {
  const scheme = URL_LIKE.exec(db)?.[1];
  if (scheme === undefined) return db;
  let url: URL;
  try {
    url = new URL(db);
  } catch {
    return `${scheme}://(unparsable URL)`;
  }
  if (url.password !== '') url.password = '***';
  for (const name of new Set(url.searchParams.keys())) {
    if (SECRET_PARAM.test(name)) url.searchParams.set(name, '***');
  }
  return url.href;
}

/**
 * `text` (a driver's error message) with anything secret of `db` in it replaced: the URL itself,
 * its password and its secret query parameters, as written, encoded and decoded. Drivers do not
 * put them in their messages; this makes sure of it.
 */
export function redactDatabaseSecrets(text: string, db: string): string {
  if (!URL_LIKE.test(db)) return text;
  const secrets = new Set<string>([db]);
  try {
    const url = new URL(db);
    for (const value of [
      url.password,
      ...[...url.searchParams].filter(([name]) => SECRET_PARAM.test(name)).map(([, v]) => v),
    ]) {
      if (value === '') continue;
      secrets.add(encodeURIComponent(value));
      for (const form of decodedForms(value)) secrets.add(form);
    }
  } catch {
    // unparsable: only the whole string is known to be secret
  }
  return replaceAll(text, secrets, (secret) => (secret === db ? redactDatabaseUrl(db) : '***'), 1);
}

/** `value` and, when it is percent-encoded text, its decoded form. */
function decodedForms(value: string): string[] {
  try {
    return [value, decodeURIComponent(value)];
  } catch {
    return [value];
  }
}

/** `text` with each of `pieces` (at least `minLength` long) replaced, longest first, so a whole goes before its parts. */
function replaceAll(
  text: string,
  pieces: ReadonlySet<string>,
  replacement: (piece: string) => string,
  minLength: number,
): string {
  let out = text;
  for (const piece of [...pieces].filter((p) => p.length >= minLength).sort((a, b) => b.length - a.length)) {
    out = out.split(piece).join(replacement(piece));
  }
  return out;
}
