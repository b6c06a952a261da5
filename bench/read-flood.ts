/**
 * Do status reads starve writes? On each engine (memory, the SQLite outbox, PostgreSQL), POST /relay
 * from 10 connections alone, then the same while 100 more connections poll the store as hard as
 * they can: GET /relay/{id}, GET /relay?origin_chain=&tx_hash= and GET /metrics in turn; and, as
 * the control, while 100 connections send GET /relay (liveness, which never touches the store): what
 * any flood costs on an event loop shared per connection. Rounds alternate; medians. The RPC answers at once in process, so the figures are the
 * server's and the store's. Run alone: node bench/read-flood.ts [rounds] [seconds]
 */
import autocannon, { type Request } from 'autocannon';
import { startEmbeddedPostgres } from '../scripts/embedded-postgres.ts';
import { formatOps, printTable } from './lib.ts';
import {
  freshTxHash,
  medianRun,
  POST_RELAY,
  relayOnce,
  type Run,
  runOf,
  type ServerHandle,
  startServer,
  statusText,
  UNLIMITED,
} from './load.ts';

const WRITERS = 10;
const READERS = 100;

/** One relay accepted, so the reads find a message (a 200 with a body, not a cheap 404). */
async function seed(server: ServerHandle): Promise<Request[]> {
  const hash = freshTxHash();
  const messages = await relayOnce(server.url, hash);
  return [
    { method: 'GET', path: `/relay/${messages[0].message_id}` },
    { method: 'GET', path: `/relay?origin_chain=ethereum&tx_hash=${hash}` },
    { method: 'GET', path: '/metrics' },
  ];
}

export async function run(options: { rounds?: number; seconds?: number; engines?: string[] } = {}): Promise<void> {
  const count = options.rounds ?? 3;
  const seconds = options.seconds ?? 3;
  const db = await startEmbeddedPostgres({ password: 'bench' });
  const engines: [string, ServerHandle][] = [];
  for (const [name, engine] of [
    ['memory', {}],
    ['SQLite', { outbox: 'sqlite' }],
    ['PostgreSQL', { postgres: db.url() }],
  ] as const) {
    if (options.engines !== undefined && !options.engines.includes(name)) continue;
    // The read budget (server.readRateLimit, on by default) off: the flood measures the store itself.
    const server = { readRateLimit: null };
    engines.push([
      name,
      await startServer('relay', { relayApi: UNLIMITED, server, distinctMessages: true, ...engine }),
    ]);
  }
  try {
    const rows: string[][] = [];
    for (const [name, server] of engines) {
      const reads = await seed(server);
      const post = () =>
        autocannon({ url: server.url, connections: WRITERS, duration: seconds, requests: POST_RELAY.requests });
      const flood = () => autocannon({ url: server.url, connections: READERS, duration: seconds, requests: reads });
      await post();
      const liveness = () =>
        autocannon({
          url: server.url,
          connections: READERS,
          duration: seconds,
          requests: [{ method: 'GET', path: '/relay' }],
        });
      const alone: Run[] = [];
      const flooded: Run[] = [];
      const readers: Run[] = [];
      const control: Run[] = [];
      for (let round = 0; round < count; round++) {
        const measures = [
          async () => alone.push(runOf(await post())),
          async () => {
            const [w, r] = await Promise.all([post(), flood()]);
            flooded.push(runOf(w));
            readers.push(runOf(r));
          },
          async () => control.push(runOf((await Promise.all([post(), liveness()]))[0])),
        ];
        for (let k = 0; k < measures.length; k++) await measures[(round + k) % measures.length]();
      }
      const a = medianRun(alone);
      const f = medianRun(flooded);
      const r = medianRun(readers);
      const c = medianRun(control);
      const row = (load: string, x: Run) => [
        name,
        load,
        formatOps(x.rps),
        String(x.p50),
        String(x.p99),
        statusText(x.statuses),
        String(x.errors),
      ];
      rows.push(
        row('POST alone', a),
        row('POST, liveness flood', c),
        row('POST, status-read flood', f),
        row('the status reads', r),
        [name, 'read flood / alone', `${(f.rps / a.rps).toFixed(2)}x`, '', `${(f.p99 / a.p99).toFixed(1)}x`, '', ''],
        [
          name,
          'read flood / liveness flood',
          `${(f.rps / c.rps).toFixed(2)}x`,
          '',
          `${(f.p99 / c.p99).toFixed(1)}x`,
          '',
          '',
        ],
      );
    }
    console.log(
      `\n## POST /relay (${WRITERS} connections) alone and under ${READERS} connections of status reads; ${count} rounds of ${seconds} s, medians`,
    );
    printTable(['engine', 'load', 'req/s', 'p50 ms', 'p99 ms', 'statuses', 'errors'], rows);
  } finally {
    for (const [, server] of engines) await server.stop();
    await db.remove();
  }
}

if (import.meta.main) {
  // node bench/read-flood.ts [rounds] [seconds] [engines, e.g. SQLite,PostgreSQL]
  const [rounds, seconds, engines] = process.argv.slice(2);
  await run({
    rounds: Number(rounds) || undefined,
    seconds: Number(seconds) || undefined,
    engines: engines?.split(','),
  });
}
