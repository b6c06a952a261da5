/**
 * The configuration keys of validators' checkpoint storage (docs/worker-configuration.md#checkpoint-storage):
 * `worker.checkpointEndpoints {s3, gcs}` and the top-level `allowLocalCheckpointSyncers`.
 */
import { ConfigError } from '../errors/classes.ts';
import { join, nonEmptyString, object, typeName } from './fields.ts';

export function optionalBoolean(value: unknown, key: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new ConfigError(key, `expected a boolean, got ${typeName(value)}`);
  return value;
}

/** `worker.checkpointEndpoints {s3, gcs}`: http(s) base URLs without credentials, query or fragment. */
export function parseCheckpointEndpoints(value: unknown, key: string): { s3?: string; gcs?: string } {
  if (value === undefined) return {};
  const obj = object(value, key, ['s3', 'gcs']);
  const out: { s3?: string; gcs?: string } = {};
  for (const name of ['s3', 'gcs'] as const) {
    if (obj[name] === undefined) continue;
    const where = join(key, name);
    const text = nonEmptyString(obj[name], where);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new ConfigError(where, `not a URL: ${JSON.stringify(text)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new ConfigError(where, `expected an http(s) URL, got ${url.protocol}`);
    if (url.username || url.password || url.search || url.hash)
      throw new ConfigError(where, 'a base URL without credentials, query or fragment');
    out[name] = text.replace(/\/+$/, '');
  }
  return out;
}
