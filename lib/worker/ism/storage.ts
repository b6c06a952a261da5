/**
 * Where validators publish their signed checkpoints (docs/isms.md#checkpoint-storage), from the
 * locations they announce on the origin's ValidatorAnnounce:
 * - `s3://{bucket}/{region}[/{folder}]`: `https://{bucket}.s3.{region}.amazonaws.com/{key}`, or
 *   path-style `{worker.checkpointEndpoints.s3}/{bucket}/{key}`;
 * - `gs://{bucket}[/{folder}]`: `https://storage.googleapis.com/{bucket}/{key}`, or
 *   `{worker.checkpointEndpoints.gcs}/{bucket}/{key}`;
 * - `file://{path}`: a local directory, only with `allowLocalCheckpointSyncers`.
 * The announcement is the recipient's choice (its ISM names the validators): it picks a bucket,
 * region and key only, never a host, a scheme or a path outside the folder it names. Every read
 * is bounded in size and time; credentials are never sent.
 */
import { DeliveryError } from '../errors.ts';

export type StorageKind = 's3' | 'gcs' | 'file';

export interface CheckpointEndpoints {
  s3?: string;
  gcs?: string;
}

export interface StorageLocation {
  kind: StorageKind;
  /** The object's URL (s3, gcs) or file path (file) for an object name. */
  object(name: string): string;
  /** Object names: a checkpoint with its message id, the latest index, the reorg flag. */
  checkpointName(index: number): string;
  latestIndexName: string;
  reorgFlagName: string;
}

const BUCKET = /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/;
const REGION = /^[a-z]{2}(?:-[a-z0-9]+)+$/;
const SEGMENT = /^[A-Za-z0-9._-]+$/;
const GCS_ANNOUNCEMENT_KEY = 'gcsAnnouncementKey';

/** A folder's segments, each safe in a URL path and none `.` or `..`; undefined when one is not. */
function folderOf(segments: readonly string[]): string[] | undefined {
  const out = segments.filter((s) => s !== '');
  return out.every((s) => SEGMENT.test(s) && s !== '.' && s !== '..') ? out : undefined;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/**
 * The location an announcement names, or why it is refused (`file://` without
 * `allowLocalCheckpointSyncers`, an unknown scheme, a bucket, region or folder that is not a plain name).
 */
export function parseLocation(
  announced: string,
  o: { endpoints?: CheckpointEndpoints; allowLocal?: boolean },
): StorageLocation | { refused: string } {
  const scheme = /^([a-z0-9]+):\/\/(.*)$/.exec(announced);
  if (!scheme) return { refused: 'not a storage location' };
  const [, kind, rest] = scheme;
  if (kind === 's3') {
    const [bucket, region, ...folder] = rest.split('/');
    const segments = folderOf(folder);
    if (!BUCKET.test(bucket ?? '') || !REGION.test(region ?? '') || !segments)
      return { refused: 'malformed s3 location' };
    const base = o.endpoints?.s3
      ? `${trimSlash(o.endpoints.s3)}/${bucket}`
      : `https://${bucket}.s3.${region}.amazonaws.com`;
    return httpLocation('s3', base, segments, 'checkpoint_latest_index.json', 'reorg_flag.json');
  }
  if (kind === 'gs') {
    const [bucket, ...folder] = rest.split('/');
    if (folder.at(-1) === GCS_ANNOUNCEMENT_KEY) folder.pop();
    const segments = folderOf(folder);
    if (!BUCKET.test(bucket ?? '') || !segments) return { refused: 'malformed gs location' };
    const base = `${trimSlash(o.endpoints?.gcs ?? 'https://storage.googleapis.com')}/${bucket}`;
    return httpLocation('gcs', base, segments, 'gcsLatestIndexKey', 'gcsReorgFlagKey');
  }
  if (kind === 'file') {
    if (!o.allowLocal) return { refused: 'file:// locations are not allowed (allowLocalCheckpointSyncers)' };
    const path = trimSlash(rest);
    if (!path.startsWith('/') || path.split('/').some((s) => s === '..')) return { refused: 'malformed file location' };
    return {
      kind: 'file',
      object: (name) => `${path}/${name}`,
      checkpointName: (index) => `${index}_with_id.json`,
      latestIndexName: 'index.json',
      reorgFlagName: 'reorg_flag.json',
    };
  }
  return { refused: `unsupported storage scheme ${kind}` };
}

function httpLocation(
  kind: StorageKind,
  base: string,
  folder: readonly string[],
  latestIndexName: string,
  reorgFlagName: string,
): StorageLocation {
  const prefix = folder.map((s) => `${encodeURIComponent(s)}/`).join('');
  return {
    kind,
    object: (name) => `${base}/${prefix}${name}`,
    checkpointName: (index) => `checkpoint_${index}_with_id.json`,
    latestIndexName,
    reorgFlagName,
  };
}

/** What a read found: the object's text, or that there is none (yet). */
export type ObjectRead = { found: true; text: string } | { found: false };

/** Reads one object; throws DeliveryError on a transport failure, a timeout or an object over `maxBytes`. */
export type ObjectReader = (
  location: StorageLocation,
  name: string,
  o: { timeoutMs: number; maxBytes: number; signal?: AbortSignal },
) => Promise<ObjectRead>;

/**
 * Reads over HTTP(S) with `fetch` (no credentials, no redirects: a redirect is a failure) and,
 * for `file` locations, with `readFile` (given by the worker, which may use node:fs; absent: file
 * locations fail). 404 (and 403, which S3 answers for a missing key of a bucket that forbids
 * listing) is "no object"; a file that does not exist likewise.
 */
export function createObjectReader(o: {
  fetch?: typeof fetch;
  readFile?: (path: string, maxBytes: number) => Promise<string | undefined>;
}): ObjectReader {
  const fetchFn = o.fetch ?? fetch;
  return async (location, name, { timeoutMs, maxBytes, signal }) => {
    const target = location.object(name);
    if (location.kind === 'file') {
      if (!o.readFile) throw new DeliveryError('config', 'file:// checkpoint locations are not available here');
      const text = await o.readFile(target, maxBytes);
      return text === undefined ? { found: false } : { found: true, text };
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await fetchFn(target, { redirect: 'error', credentials: 'omit', signal: both });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new DeliveryError(
        'gateway',
        timeout.aborted ? `${location.kind} read timed out` : `${location.kind} read failed`,
        {
          cause: error,
        },
      );
    }
    if (response.status === 404 || response.status === 403) {
      await response.body?.cancel();
      return { found: false };
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new DeliveryError('gateway', `${location.kind} read answered HTTP ${response.status}`);
    }
    return { found: true, text: await readCapped(response, maxBytes, location.kind) };
  };
}

async function readCapped(response: Response, maxBytes: number, kind: StorageKind): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new DeliveryError('gateway', `${kind} object larger than ${maxBytes} bytes`);
  }
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel();
      throw new DeliveryError('gateway', `${kind} object larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
}
