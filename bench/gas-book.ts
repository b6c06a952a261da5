/**
 * What the gas book costs the store per delivery (docs/gas.md#gas-already-spent): under
 * onChainFeeQuoting the worker writes the required gas once per message (setRequiredGas, not
 * awaited) before its send, besides the delivery's own writes (here markDelivered). Both contenders take the same claimed
 * messages through `CONCURRENCY` concurrent loops, as the worker's slots do: markDelivered alone,
 * and setRequiredGas then markDelivered. On a SQLite file (synchronous=FULL, group commit in the
 * store's worker) and on PostgreSQL (an embedded server from npm, a fresh schema per contender).
 * Messages per second of store writes, the median of the rounds, and their ratio. Run alone:
 * node bench/gas-book.ts (BENCH_GAS_BOOK_COUNT messages per round, default 5000; 5 rounds).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hexToBytes } from '../lib/codec/hex.ts';
import { parseHyperlaneMessage } from '../lib/codec/message.ts';
import type { Outbox, OutboxMessage } from '../lib/outbox/index.ts';
import { DEFAULTS } from '../lib/config/parse.ts';
import { openPostgresStore } from '../lib/postgres/index.ts';
import { openSqliteStore } from '../lib/sqlite/index.ts';
import { startEmbeddedPostgres } from '../scripts/embedded-postgres.ts';
import { formatOps, median, printTable, provenance } from './lib.ts';

const COUNT = Number(process.env.BENCH_GAS_BOOK_COUNT ?? 5000);
const ROUNDS = 5;
/** The worker's default worker.concurrency. */
const CONCURRENCY = 32;
const DEST_TX = `0x${'de'.repeat(32)}`;

/** Message `n` of round `round`: a version 3 Hyperlane message with a distinct nonce. */
function message(n: number): OutboxMessage {
  const raw = new Uint8Array(77 + 8);
  raw[0] = 3;
  const view = new DataView(raw.buffer);
  view.setUint32(1, n);
  view.setUint32(5, 1);
  view.setUint32(41, 8453);
  const m = parseHyperlaneMessage(raw);
  return {
    id: m.id,
    originChain: 'ethereum',
    txHash: `0x${n.toString(16).padStart(64, '0')}`,
    origin: 1,
    destination: 8453,
    nonce: n,
    raw: hexToBytes(`0x${Buffer.from(raw).toString('hex')}`)!,
    enqueuedAt: Date.now(),
  };
}

let next = 0;

/** Messages per second through `CONCURRENCY` loops of (setRequiredGas?) + markDelivered. */
async function deliver(outbox: Outbox, withRequired: boolean): Promise<number> {
  const batch = Array.from({ length: COUNT }, () => message(next++));
  for (let i = 0; i < batch.length; i += 500) await outbox.enqueue(batch.slice(i, i + 500));
  const claimed = await outbox.claim(COUNT, 600_000);
  let i = 0;
  const written: Promise<unknown>[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (i < claimed.length) {
        const m = claimed[i++];
        // As the gas gate does: not awaited, the next write follows at once.
        if (withRequired) written.push(Promise.resolve(outbox.setRequiredGas(m.id, 50_000n)));
        if (!(await outbox.markDelivered(m.id, { destinationTxHash: DEST_TX, lease: m.lease })))
          throw new Error(`not delivered: ${m.id}`);
      }
    }),
  );
  await Promise.all(written);
  return claimed.length / ((performance.now() - t0) / 1000);
}

async function engine(open: () => Promise<{ outbox: Outbox; close(): Promise<void> }>) {
  const plain: number[] = [];
  const book: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // The order alternates each round; each contender on a store of its own.
    for (const withRequired of round % 2 ? [true, false] : [false, true]) {
      const store = await open();
      try {
        (withRequired ? book : plain).push(await deliver(store.outbox, withRequired));
      } finally {
        await store.close();
      }
    }
  }
  return { plain: median(plain), book: median(book) };
}

const dir = mkdtempSync(join(tmpdir(), 'relayer-bench-gas-book-'));
const pg = await startEmbeddedPostgres({ password: 'bench' });
try {
  console.log(provenance('node bench/gas-book.ts'));
  let files = 0;
  const sqlite = await engine(async () => openSqliteStore(join(dir, `book-${++files}.db`)));
  const { default: pgDriver } = await import('pg');
  const pool = new pgDriver.Pool({ connectionString: pg.url(), max: 10 });
  let schemas = 0;
  const postgres = await engine(async () => {
    const store = await openPostgresStore(pool, { relayApi: DEFAULTS.relayApi, schema: `book_${++schemas}` });
    return { outbox: store.outbox, close: () => store.close() };
  }).finally(() => pool.end());
  printTable(
    ['store', 'markDelivered (msg/s)', 'setRequiredGas + markDelivered (msg/s)', 'ratio'],
    [
      ['SQLite file', formatOps(sqlite.plain), formatOps(sqlite.book), (sqlite.book / sqlite.plain).toFixed(2)],
      ['PostgreSQL', formatOps(postgres.plain), formatOps(postgres.book), (postgres.book / postgres.plain).toFixed(2)],
    ],
  );
  console.log(provenance('node bench/gas-book.ts (end)'));
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
