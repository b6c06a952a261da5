/**
 * Checkpoint storage (lib/worker/ism/storage.ts, docs/isms.md#checkpoint-storage): what an
 * announced location may name (a bucket, region and folder; never a host, scheme or a path out of
 * its folder), `file://` only when allowed, and every read bounded and anonymous, against a
 * loopback server standing in for S3 path-style.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createObjectReader, parseLocation, type StorageLocation } from '../../../../lib/worker/ism/storage.ts';

let server: Server;
let endpoint: string;
const seen: IncomingMessage[] = [];

before(async () => {
  server = createServer((req, res) => {
    seen.push(req);
    if (req.url === '/bucket/folder/checkpoint_3_with_id.json') return res.end('{"ok":true}');
    if (req.url === '/bucket/big') return res.end('x'.repeat(2000));
    if (req.url === '/bucket/chunked-big') {
      res.write('x'.repeat(600));
      return res.end('x'.repeat(600));
    }
    if (req.url === '/bucket/moved') {
      res.writeHead(302, { location: '/bucket/folder/checkpoint_3_with_id.json' });
      return res.end();
    }
    if (req.url === '/bucket/broken') res.writeHead(500);
    else res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const location = (announced: string, o: Parameters<typeof parseLocation>[1] = {}) => {
  const parsed = parseLocation(announced, o);
  assert.ok(!('refused' in parsed), `refused ${announced}: ${'refused' in parsed ? parsed.refused : ''}`);
  return parsed as StorageLocation;
};

test('docs/isms.md#checkpoint-storage: s3 and gs locations name the public hosts, or the configured endpoints path-style', () => {
  const s3 = location('s3://hyperlane-validator-1/us-east-1/folder');
  assert.equal(
    s3.object(s3.checkpointName(7)),
    'https://hyperlane-validator-1.s3.us-east-1.amazonaws.com/folder/checkpoint_7_with_id.json',
  );
  assert.equal(
    s3.object(s3.reorgFlagName),
    'https://hyperlane-validator-1.s3.us-east-1.amazonaws.com/folder/reorg_flag.json',
  );
  const gs = location('gs://bucket-a/sub/gcsAnnouncementKey');
  assert.equal(
    gs.object(gs.checkpointName(0)),
    'https://storage.googleapis.com/bucket-a/sub/checkpoint_0_with_id.json',
  );
  assert.equal(gs.object(gs.latestIndexName), 'https://storage.googleapis.com/bucket-a/sub/gcsLatestIndexKey');
  const mine = location('s3://bucket-b/eu-west-1', { endpoints: { s3: 'http://minio.internal:9000/' } });
  assert.equal(mine.object(mine.checkpointName(1)), 'http://minio.internal:9000/bucket-b/checkpoint_1_with_id.json');
  const gcs = location('gs://bucket-c', { endpoints: { gcs: 'http://127.0.0.1:1' } });
  assert.equal(gcs.object(gcs.reorgFlagName), 'http://127.0.0.1:1/bucket-c/gcsReorgFlagKey');
});

test('docs/isms.md#what-a-recipient-can-make-us-read: a location cannot choose a host, a scheme or leave its folder', () => {
  for (const announced of [
    's3://evil.com#/us-east-1',
    's3://bucket/us-east-1.evil.com',
    's3://bucket@evil.com/us-east-1',
    's3://bucket/us-east-1/../../other',
    's3://bucket/us-east-1/a%2f..',
    'gs://bucket/..',
    'gs://Bucket:80/x',
    'http://127.0.0.1/bucket',
    'https://storage.googleapis.com/bucket',
    'file://relative/path',
  ]) {
    const parsed = parseLocation(announced, { allowLocal: true });
    assert.ok('refused' in parsed, `${announced} must be refused`);
  }
});

test('docs/isms.md#what-a-recipient-can-make-us-read: file:// is refused unless allowLocalCheckpointSyncers', () => {
  const refused = parseLocation('file:///etc', {});
  assert.ok('refused' in refused);
  assert.match(refused.refused, /allowLocalCheckpointSyncers/);
  const allowed = location('file:///var/checkpoints/', { allowLocal: true });
  assert.equal(allowed.object(allowed.checkpointName(4)), '/var/checkpoints/4_with_id.json');
});

test('docs/isms.md#checkpoint-storage: reads are anonymous, bounded, and follow no redirect', async () => {
  const read = createObjectReader({});
  const loc = location('s3://bucket/us-east-1/folder', { endpoints: { s3: endpoint } });
  const o = { timeoutMs: 5_000, maxBytes: 1_000 };
  assert.deepEqual(await read(loc, loc.checkpointName(3), o), { found: true, text: '{"ok":true}' });
  assert.deepEqual(await read(loc, loc.checkpointName(4), o), { found: false }, '404 is not published yet');
  assert.equal(seen.at(-1)?.headers.authorization, undefined, 'no credentials sent');
  const root = location('s3://bucket/us-east-1', { endpoints: { s3: endpoint } });
  await assert.rejects(read(root, 'big', o), /larger than 1000 bytes/);
  await assert.rejects(read(root, 'chunked-big', o), /larger than 1000 bytes/);
  await assert.rejects(read(root, 'moved', o), /s3 read failed/);
  await assert.rejects(read(root, 'broken', o), /HTTP 500/);
});
