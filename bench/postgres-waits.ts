/**
 * What replicas on one PostgreSQL wait for (BENCHMARKS.md#what-replicas-wait-for-node-benchpostgres-waitsts): POST
 * /relay load on 1, 2 and 3 replicas (relay server children on one embedded PostgreSQL with its
 * durable defaults, receipts answered in process, a new transaction and message per request),
 * while a separate connection samples every 10 ms what each of the replicas' backends is doing:
 * `pg_stat_activity`'s wait event (none: running on a CPU or waiting for the client), and, for a
 * backend waiting on a lock, which lock from `pg_locks` (`object` on the database class is the
 * NOTIFY queue's lock, `transactionid`/`tuple` a row another transaction holds). Prints req/s
 * (the ratio to one replica, measured in the same run, rounds alternating), the share of
 * samples per wait, the CPU per request of the replicas' processes and of the database's (from
 * /proc), and how busy the machine's cores were meanwhile (all processes, /proc/stat): when the
 * cores are busy throughout, replicas that cost more CPU per request cannot serve more.
 *
 *   node bench/postgres-waits.ts [--replicas 1,2,3] [--seconds 5] [--rounds 3]
 */
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres } from '../scripts/embedded-postgres.ts';
import { median, provenance } from './lib.ts';
import {
  cpuSeconds,
  databaseCpu,
  databaseCpuSince,
  findPostmaster,
  POST_RELAY,
  startServer,
  UNLIMITED,
  type ServerHandle,
} from './load.ts';

/** The machine's busy and total CPU ticks so far (every core, every process), from /proc/stat. */
function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - fields[3] - (fields[4] ?? 0), total }; // idle, iowait
}

const { values: args } = parseArgs({
  options: {
    replicas: { type: 'string', default: '1,2,3' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '40' },
  },
});
const counts = args.replicas!.split(',').map(Number);
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const CONNECTIONS = Number(args.connections);

console.log(provenance('node bench/postgres-waits.ts'));
const server = await startEmbeddedPostgres();
await server.start();
const replicas: ServerHandle[] = [];
try {
  const url = server.url();
  await findPostmaster(url);
  for (let i = 0; i < Math.max(...counts); i++)
    replicas.push(await startServer('relay', { relayApi: UNLIMITED, postgres: url, distinctMessages: true }));
  const sampler = new pg.Client({ connectionString: url });
  await sampler.connect();
  const me = (await sampler.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const sample = async (waits: Map<string, number>) => {
    const { rows } = await sampler.query<{ wait: string }>(
      `SELECT coalesce(a.wait_event_type || ':' || a.wait_event, a.state) ||
         coalesce(' (' || (SELECT string_agg(DISTINCT l.locktype || coalesce(' class ' || l.classid::text, '') ||
           coalesce(' ' || l.relation::regclass::text, ''), ', ')
           FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted) || ')', '') AS wait
       FROM pg_stat_activity a
       WHERE a.backend_type = 'client backend' AND a.pid <> $1 AND a.datname = current_database()`,
      [me],
    );
    for (const { wait } of rows) waits.set(wait, (waits.get(wait) ?? 0) + 1);
  };
  const rps = new Map<number, number[]>();
  /** Per replica count and round: server and database CPU µs per request, the cores' busy share. */
  const cpu = new Map<number, { server: number; database: number; busy: number }[]>();
  const waits = new Map<number, Map<string, number>>();
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of r % 2 === 0 ? counts : [...counts].reverse()) {
      const running = replicas.slice(0, n);
      const into = waits.get(n) ?? new Map<string, number>();
      waits.set(n, into);
      let sampling = true;
      const sampled = (async () => {
        while (sampling) {
          await sample(into);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      const server0 = running.reduce((sum, s) => sum + cpuSeconds(s.pid), 0);
      const database0 = databaseCpu();
      const ticks0 = machineTicks();
      const results = await Promise.all(
        running.map((s) =>
          autocannon({
            url: s.url,
            connections: Math.ceil(CONNECTIONS / n),
            duration: SECONDS,
            requests: POST_RELAY.requests,
          }),
        ),
      );
      const ticks1 = machineTicks();
      const serverSeconds = running.reduce((sum, s) => sum + cpuSeconds(s.pid), 0) - server0;
      const databaseSeconds = databaseCpuSince(database0);
      sampling = false;
      await sampled;
      const ok = results.reduce((sum, res) => sum + (res['2xx'] ?? 0), 0);
      const answered = results.reduce((sum, res) => sum + res.requests.total, 0);
      cpu.set(n, [
        ...(cpu.get(n) ?? []),
        {
          server: (serverSeconds / answered) * 1e6,
          database: (databaseSeconds / answered) * 1e6,
          busy: (ticks1.busy - ticks0.busy) / (ticks1.total - ticks0.total),
        },
      ]);
      const errors = results.reduce((sum, res) => sum + res.non2xx + res.errors, 0);
      if (errors > 0) console.log(`  ${n} replicas: ${errors} answers not 2xx or errors`);
      rps.set(n, [...(rps.get(n) ?? []), ok / SECONDS]);
    }
  }
  await sampler.end();
  const one = median(rps.get(counts[0])!);
  console.log(
    `\n| replicas | POST /relay req/s (median of ${ROUNDS}) | ratio to ${counts[0]} | server / database CPU µs per request | cores busy | backend samples: share per wait |`,
  );
  console.log('|---|---|---|---|---|---|');
  for (const n of counts) {
    const into = waits.get(n)!;
    const total = [...into.values()].reduce((a, b) => a + b, 0);
    const shares = [...into]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([wait, k]) => `${wait} ${((100 * k) / total).toFixed(0)} %`)
      .join('; ');
    const c = cpu.get(n)!;
    const used = `${median(c.map((x) => x.server)).toFixed(0)} / ${median(c.map((x) => x.database)).toFixed(0)}`;
    const busy = `${(100 * median(c.map((x) => x.busy))).toFixed(0)} %`;
    console.log(
      `| ${n} | ${median(rps.get(n)!).toFixed(0)} | ${(median(rps.get(n)!) / one).toFixed(2)}x | ${used} | ${busy} | ${shares} |`,
    );
  }
  console.log(`\nend: ${provenance('node bench/postgres-waits.ts')}`);
} finally {
  for (const s of replicas) await s.stop();
  await server.remove();
}
