/**
 * A delivery worker in its own process, for the cross-process claim test (test/process/outbox.test.ts):
 * opens the SQLite file given as argv[2], says `ready`, waits for a line on stdin so that every
 * worker starts claiming at the same moment, claims `limit` (argv[3]) at a time, 1 ms apart, until
 * nothing is left, and prints the ids it got as one JSON line.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { openSqliteStore } from '../../../lib/sqlite/index.ts';

const [file, limit] = process.argv.slice(2);
const store = await openSqliteStore(file, { busyTimeoutMs: 30_000 });
process.stdout.write('ready\n');
process.stdin.once('data', async () => {
  const ids: string[] = [];
  for (;;) {
    const got = await store.outbox.claim(Number(limit), 600_000);
    if (got.length === 0) break;
    for (const m of got) ids.push(m.id);
    // A real worker delivers between claims; without a pause the first process to start would
    // take everything before the others get the lock, and nothing would race.
    await delay(1);
  }
  await store.close();
  process.stdout.write(JSON.stringify(ids) + '\n', () => process.exit(0));
});
