// Throwaway measurement (not committed): the store cost of the required-gas write per delivery.
import { rmSync } from 'node:fs';
import { openSqliteStore } from './lib/sqlite/index.ts';
import { outboxMessage } from './test/helpers/outbox-contract.ts';

const N = Number(process.env.N ?? 2000);
const CONC = 32;
async function run(label: string, withRequired: boolean, round: number) {
  const file = `/tmp/gb/bench-${label}-${round}.db`;
  rmSync(file, { force: true });
  const store = await openSqliteStore(file);
  const base = round * 100_000 + (withRequired ? 50_000 : 0);
  const msgs = Array.from({ length: N }, (_, i) => outboxMessage(base + i));
  for (let i = 0; i < N; i += 500) await store.outbox.enqueue(msgs.slice(i, i + 500));
  const claimed = await store.outbox.claim(N, 600_000);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      while (next < claimed.length) {
        const m = claimed[next++];
        if (withRequired) await store.outbox.setRequiredGas(m.id, 50_000n);
        await store.outbox.markDelivered(m.id, { destinationTxHash: `0x${'de'.repeat(32)}`, lease: m.lease });
      }
    }),
  );
  const ms = performance.now() - t0;
  await store.close();
  rmSync(file, { force: true });
  return N / (ms / 1000);
}
for (let round = 0; round < 3; round++) {
  const a = await run('plain', false, round);
  const b = await run('required', true, round);
  console.log(
    `round ${round}: markDelivered only ${a.toFixed(0)}/s, setRequiredGas + markDelivered ${b.toFixed(0)}/s, ratio ${(b / a).toFixed(2)}`,
  );
}
