/**
 * SIGTERM with status streams open (docs/api.md#status-events): relayer-server ends every stream
 * at once and exits 0, instead of waiting out its 10 s grace for requests that never end. The
 * message is written by another connection to the server's SQLite file, as a relayer-worker would.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { openSqliteStore } from '../../lib/sqlite/index.ts';
import { outboxMessage } from '../../lib/testing/index.ts';
import { startRelayerServer } from '../helpers/harness/server.ts';
import { openEvents } from '../helpers/harness/sse.ts';
import { tempDir } from '../helpers/harness/temp-dir.ts';

const dir = tempDir('relayer-events-shutdown-');

test('SIGTERM ends the open status streams at once and the server exits 0 well within its grace period', async (t) => {
  const db = join(dir, 'relayer.db');
  const server = await startRelayerServer(t, ['--db', db]);
  const worker = await openSqliteStore(db);
  t.after(() => worker.close());
  const m = outboxMessage(1);
  await worker.outbox.enqueue([m]);
  const streams = await Promise.all([1, 2].map(() => openEvents(server.url, `/relay/${m.id}/events`)));
  for (const s of streams) assert.equal((await s.next('the current status')).json().status, 'queued');
  const started = Date.now();
  server.child.kill('SIGTERM');
  await Promise.all(streams.map((s) => s.ended));
  assert.equal((await server.exited).code, 0);
  const ms = Date.now() - started;
  assert.ok(ms < 5_000, `exited ${ms} ms after SIGTERM (the grace period is 10 s)`);
});
