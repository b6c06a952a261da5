/**
 * Checks an HTTP response against docs/openapi.json: the status is documented for the path and
 * method, every required header is present and matches its schema, the media type is documented and
 * the body matches its JSON Schema (ajv, draft 2020-12, the dialect of OpenAPI 3.1). The raw HTTP
 * helper runs it on every response, so every HTTP suite checks the document as a side effect.
 */
import { AssertionError } from 'node:assert';
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

type Json = any;

export const OPENAPI_URL = new URL('../../../docs/openapi.json', import.meta.url);
export const openapi: Json = JSON.parse(readFileSync(OPENAPI_URL, 'utf8'));

const DOC_ID = 'https://relayer-api.invalid/openapi.json';
// strict: false because the document is added whole, and its OpenAPI keys (paths, info…) are not
// JSON Schema keywords; schemas are compiled from JSON pointers into it, so their $refs resolve.
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(openapi, DOC_ID);
const compiled = new Map<string, ValidateFunction>();

export interface CheckedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function pointer(segments: string[]): string {
  return '#/' + segments.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

/** Follows `$ref`s inside the document; returns the node and its JSON pointer segments. */
export function resolve(node: Json, at: string[]): { node: Json; at: string[] } {
  while (node && typeof node.$ref === 'string') {
    const ref: string = node.$ref;
    if (!ref.startsWith('#/')) throw new Error(`external $ref ${ref} is not supported`);
    at = ref
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    node = at.reduce((n: Json, key) => (n !== undefined && Object.hasOwn(n, key) ? n[key] : undefined), openapi);
    if (node === undefined) throw new Error(`dangling $ref ${ref}`);
  }
  return { node, at };
}

function validator(at: string[]): ValidateFunction {
  const key = pointer(at);
  let fn = compiled.get(key);
  if (!fn) {
    fn = ajv.compile({ $ref: DOC_ID + key });
    compiled.set(key, fn);
  }
  return fn;
}

function fail(where: string, problem: string, res: CheckedResponse): never {
  throw new AssertionError({
    message: `openapi: ${where}: ${problem}\n  status ${res.status}, body: ${res.text.slice(0, 300)}`,
  });
}

function schemaErrors(fn: ValidateFunction): string {
  return (fn.errors ?? [])
    .map((e) => `${e.instancePath || '(root)'} ${e.message} ${JSON.stringify(e.params)}`)
    .join('; ');
}

/** Header values arrive as text; numeric schemas are checked on the number they spell. */
function headerValue(raw: string, schema: Json): unknown {
  const type = resolve(schema, []).node.type;
  if ((type === 'integer' || type === 'number') && /^-?[0-9]+(\.[0-9]+)?$/.test(raw)) return Number(raw);
  return raw;
}

/** Path templates of the document ("/relay/{message_id}") as patterns; one segment per parameter. */
const templates: Array<[RegExp, string]> = Object.keys(openapi.paths)
  .filter((path) => path.includes('{'))
  .map((path) => [
    new RegExp('^' + path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$'),
    path,
  ]);

/** The document's path for a request path: itself, else the template it fills. */
export function documentedPath(pathname: string): string | undefined {
  if (Object.hasOwn(openapi.paths, pathname)) return pathname;
  return templates.find(([pattern]) => pattern.test(pathname))?.[1];
}

/** The documented response object for this exchange, and its pointer. */
function documentedResponse(
  method: string,
  requestPath: string,
  res: CheckedResponse,
): { node: Json; at: string[]; where: string } {
  const where = `${method} ${requestPath}`;
  const pathname = documentedPath(requestPath);
  const pathItem = pathname === undefined ? undefined : openapi.paths[pathname];
  if (pathItem === undefined) {
    if (res.status !== 404) fail(where, 'a path not in the document must answer 404', res);
    return { ...resolve(openapi['x-unmatched-path-response'], []), where };
  }
  const op = pathItem[method.toLowerCase()];
  if (op === undefined) {
    if (res.status !== 405) fail(where, 'a method not in the document must answer 405', res);
    return { ...resolve(openapi['x-undocumented-method-response'], []), where };
  }
  const opAt = ['paths', pathname!, method.toLowerCase(), 'responses'];
  const status = String(res.status);
  const key = Object.hasOwn(op.responses, status)
    ? status
    : Object.hasOwn(op.responses, 'default')
      ? 'default'
      : undefined;
  if (key === undefined)
    fail(where, `status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`, res);
  return { ...resolve(op.responses[key], [...opAt, key]), where };
}

function checkHeaders(response: Json, at: string[], where: string, res: CheckedResponse): void {
  for (const [name, raw] of Object.entries(response.headers ?? {})) {
    const header = resolve(raw, [...at, 'headers', name]);
    const value = res.headers[name.toLowerCase()];
    if (value === undefined) {
      if (header.node.required) fail(where, `required header ${name} is missing`, res);
      continue;
    }
    const fn = validator([...header.at, 'schema']);
    const text = Array.isArray(value) ? value.join(', ') : value;
    if (!fn(headerValue(text, header.node.schema)))
      fail(where, `header ${name}: ${JSON.stringify(text)}: ${schemaErrors(fn)}`, res);
  }
}

function checkBody(response: Json, at: string[], method: string, where: string, res: CheckedResponse): void {
  if (method === 'HEAD' || response.content === undefined) {
    if (res.text !== '') fail(where, 'no body is documented, but one was sent', res);
    if (method === 'HEAD' || res.status === 204) return;
  }
  if (response.content === undefined) return;
  const type = String(res.headers['content-type'] ?? '');
  const media = type.split(';')[0].trim().toLowerCase();
  if (!Object.hasOwn(response.content, media)) {
    fail(
      where,
      `Content-Type ${JSON.stringify(type)} is not documented (documented: ${Object.keys(response.content).join(', ')})`,
      res,
    );
  }
  let body: unknown = res.text;
  if (media === 'application/json') {
    try {
      body = JSON.parse(res.text);
    } catch {
      fail(where, 'the body is not JSON', res);
    }
  }
  const fn = validator([...at, 'content', media, 'schema']);
  if (!fn(body)) fail(where, `body does not match the schema: ${schemaErrors(fn)}`, res);
}

/** Throws an AssertionError naming the first way the response departs from docs/openapi.json. */
export function checkAgainstOpenApi(method: string, pathname: string, res: CheckedResponse): void {
  const { node, at, where } = documentedResponse(method.toUpperCase(), pathname, res);
  checkHeaders(node, at, where, res);
  checkBody(node, at, method.toUpperCase(), where, res);
}
