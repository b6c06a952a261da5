/**
 * `npm run demo` as a user runs it (the README promises what it prints): it exits 0 and shows
 * the message going queued → delivered while the destination Mailbox's delivered(id) turns true,
 * delivered by bin/relayer-worker.ts through the bridge's CCIP-read ISM (the URL it followed).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT, spawnTracked } from '../helpers/harness/processes.ts';

test('npm run demo: POST /relay, then relayer-worker delivers through the CCIP-read gateway', {
  timeout: 180_000,
}, async () => {
  // GET /relay/{id} goes queued → delivered, and Mailbox.delivered(id) goes false → true.
  const demo = spawnTracked(process.execPath, [join(REPO_ROOT, 'scripts', 'demo.ts')], { cwd: REPO_ROOT });
  const [code] = (await once(demo.child, 'exit')) as [number | null];
  const output = demo.output();
  assert.equal(code, 0, output);
  assert.match(output, /"status": "queued"/);
  assert.match(output, /"status": "delivered"/);
  assert.match(output, /status\s+queued → delivered/);
  assert.match(output, /Mailbox\.delivered\(id\)\s+false → true/);
  assert.match(output, /destination tx\s+0x[0-9a-f]{64}/);
  assert.match(output, /relayer-server exit\s+0/);
  // The shipped worker, not a script: it followed the router's OffchainLookup to the gateway and stopped cleanly.
  assert.match(output, /relayer-worker ops on http:\/\/127\.0\.0\.1:\d+/);
  assert.match(output, /OffchainLookup URL\s+http:\/\/127\.0\.0\.1:\d+\/cctp\/getCctpAttestation \(answer\)/);
  assert.match(output, /relayer-worker exit\s+0 \(SIGTERM\)/);
  assert.match(output, /^\s+relayer_worker_delivered_total\{already="false",destination="anvil2"\} 1$/m);
});
